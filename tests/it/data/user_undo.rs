//! Deleting a user within the undo window (issue 42): the user and its data invisible at once
//! everywhere (read, resolve, list, team counts, getters, aggregate queries, pushes), its
//! `client_user_id` still taken, and `POST /v2/user/undo_delete` brings everything back as it
//! was; the soft delete and the undo on SQLite and PostgreSQL. The removal once the window is
//! over is `jobs_api.rs`'s test.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use wearhouse::data::{Undo, delete_user, undo_delete};
use wearhouse::store::metadata::deleted_users::{Purge, UserRef, any_user, purge};
use wearhouse::store::metadata::{MetadataError, MetadataStore, NewUser};

use crate::support::{TestApp, full_push};

const WINDOW: &str = "start_date=2025-03-01&end_date=2025-03-03";

/// Every answer about the user that must vanish with it and come back with the undo.
async fn views(app: &TestApp, id: &str) -> Vec<(String, StatusCode, Value)> {
    let mut out = Vec::new();
    for uri in [
        format!("/v2/user/{id}"),
        "/v2/user/resolve/undoable".to_owned(),
        format!("/v2/user/{id}/info/latest"),
        format!("/v2/user/providers/{id}"),
        format!("/v2/summary/sleep/{id}?{WINDOW}"),
        format!("/v2/summary/profile/{id}"),
        format!("/v2/timeseries/{id}/heartrate?{WINDOW}"),
    ] {
        let a = app.get(&uri).await;
        out.push((uri, a.status, a.json));
    }
    let query = json!({
        "timeframe": {"type": "relative", "anchor": "2025-03-03", "past": {"value": 3, "unit": "day"}},
        "queries": [{"select": [{"group_key": "*"},
                                {"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}}],
                     "group_by": [{"source": "source_provider"}]}]
    });
    let req = Request::builder()
        .method("POST")
        .uri(format!("/aggregate/v1/user/{id}/query"))
        .header("x-service-api-key", &app.key)
        .header("content-type", "application/json")
        .body(Body::from(query.to_string()))
        .unwrap();
    let a = app.raw(req).await;
    out.push(("aggregate query".to_owned(), a.status, a.json));
    out
}

/// Whether the team's list and counts hold the user.
async fn listed(app: &TestApp, id: &str) -> (bool, i64) {
    let list = app.get("/v2/user").await.json;
    let holds = list["users"]
        .as_array()
        .unwrap()
        .iter()
        .any(|u| u["user_id"] == id);
    let metrics = app.get("/v2/user/metrics").await.json;
    (holds, metrics["number_of_users"].as_i64().unwrap())
}

#[tokio::test]
async fn delete_hides_everything_and_undo_brings_it_all_back() {
    let app = TestApp::new().await;
    let id = app.user("undoable").await;
    let pushed = app.post(&format!("/v2/user/{id}/data"), full_push()).await;
    assert_eq!(pushed.status, StatusCode::OK, "{}", pushed.json);
    let info = json!({"first_name": "Ada", "last_name": "Lovelace", "dob": "1985-12-10",
        "gender": "female", "phone_number": "+16025550123", "email": "ada@example.com",
        "address": {"first_line": "100 N 1st Ave", "city": "Phoenix", "state": "AZ",
                    "zip_code": "85004", "country": "US"}});
    assert_eq!(
        app.patch(&format!("/v2/user/{id}/info"), info).await.status,
        StatusCode::OK
    );
    let before = views(&app, &id).await;
    for (what, status, body) in &before {
        assert_eq!(*status, StatusCode::OK, "{what}: {body}");
    }
    assert_eq!(listed(&app, &id).await, (true, 1));

    for round in ["user_id", "client_user_id"] {
        let gone = app
            .send("DELETE", &format!("/v2/user/{id}"), Some(&app.key), None)
            .await;
        assert_eq!(gone.json, json!({"success": true}));
        for (what, status, body) in views(&app, &id).await {
            assert_eq!(status, StatusCode::NOT_FOUND, "{round}: {what}: {body}");
            assert!(body["detail"].is_string(), "{what}: {body}");
        }
        assert_eq!(listed(&app, &id).await, (false, 0));
        // No new data (so no new events) reaches a deleted user; its client id stays taken.
        let push = app.post(&format!("/v2/user/{id}/data"), full_push()).await;
        assert_eq!(push.status, StatusCode::NOT_FOUND, "{}", push.json);
        let taken = app
            .post("/v2/user", json!({"client_user_id": "undoable"}))
            .await;
        assert_eq!(taken.status, StatusCode::BAD_REQUEST, "{}", taken.json);
        let again = app
            .send("DELETE", &format!("/v2/user/{id}"), Some(&app.key), None)
            .await;
        assert_eq!(again.status, StatusCode::NOT_FOUND);
        // Another team cannot undo it.
        let param = if round == "user_id" {
            format!("user_id={id}")
        } else {
            "client_user_id=undoable".to_owned()
        };
        let uri = format!("/v2/user/undo_delete?{param}");
        let other = app.other_key.clone();
        let foreign = app.send("POST", &uri, Some(&other), None).await;
        assert_eq!(foreign.status, StatusCode::NOT_FOUND, "{}", foreign.json);

        let undo = app.send("POST", &uri, Some(&app.key), None).await;
        assert_eq!(undo.status, StatusCode::OK, "{round}: {}", undo.json);
        assert_eq!(undo.json, json!({"success": true}));
        assert_eq!(views(&app, &id).await, before, "{round}: nothing lost");
        assert_eq!(listed(&app, &id).await, (true, 1));
        let live = app.send("POST", &uri, Some(&app.key), None).await;
        assert_eq!(live.status, StatusCode::BAD_REQUEST, "{}", live.json);
    }
}

/// What the team's lab routes show of an order: the order, the list (all and by user), its
/// and its transaction.
async fn order_views(app: &TestApp, user: &str, order: &str, transaction: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for uri in [
        format!("/v3/order/{order}"),
        "/v3/orders".to_owned(),
        format!("/v3/orders?user_id={user}"),
        format!("/v3/order_transaction/{transaction}"),
    ] {
        let a = app.get(&uri).await;
        out.push(json!({"uri": uri, "status": a.status.as_u16(), "body": a.json}));
    }
    out
}

#[tokio::test]
async fn a_deleted_users_lab_orders_vanish_and_come_back_with_the_undo() {
    let app = TestApp::new().await;
    let id = app.user("orders-undo").await;
    let keep = app.user("orders-keep").await;
    let order = crate::lab::order(&app, &id, "testkit").await;
    let kept = crate::lab::order(&app, &keep, "testkit").await;
    let (order_id, transaction) = (
        order["id"].as_str().unwrap().to_owned(),
        order["order_transaction"]["id"]
            .as_str()
            .unwrap()
            .to_owned(),
    );
    let before = order_views(&app, &id, &order_id, &transaction).await;
    for view in &before {
        assert_eq!(view["status"], 200, "{view}");
    }
    assert_eq!(before[1]["body"]["total"], 2, "{}", before[1]);

    let gone = app
        .send("DELETE", &format!("/v2/user/{id}"), Some(&app.key), None)
        .await;
    assert_eq!(gone.json, json!({"success": true}));
    let during = order_views(&app, &id, &order_id, &transaction).await;
    for i in [0, 3] {
        assert_eq!(during[i]["status"], 404, "{}", during[i]);
    }
    // The list keeps the other user's order only.
    let listed = &during[1]["body"];
    assert_eq!(listed["total"], 1, "{listed}");
    assert_eq!(listed["orders"][0]["id"], kept["id"], "{listed}");
    assert_eq!(during[2]["body"]["total"], 0, "{}", during[2]);
    // Nor can the order be changed meanwhile.
    let cancel = app
        .send(
            "POST",
            &format!("/v3/order/{order_id}/cancel"),
            Some(&app.key),
            None,
        )
        .await;
    assert_eq!(cancel.status, StatusCode::NOT_FOUND, "{}", cancel.json);

    let undo = app
        .send(
            "POST",
            &format!("/v2/user/undo_delete?user_id={id}"),
            Some(&app.key),
            None,
        )
        .await;
    assert_eq!(undo.status, StatusCode::OK, "{}", undo.json);
    assert_eq!(
        order_views(&app, &id, &order_id, &transaction).await,
        before
    );
}

/// The soft delete and its undo in the metadata store alone.
async fn exercise(meta: &MetadataStore) {
    let (team, _) = meta.create_team("acme").await.unwrap();
    let new = NewUser {
        client_user_id: "c1".into(),
        ..NewUser::default()
    };
    let user = meta.create_user(team.id, new.clone()).await.unwrap();
    meta.set_user_info(user.id, &json!({"first_name": "Ada"}))
        .await
        .unwrap();
    let hour = std::time::Duration::from_secs(3600);
    assert!(delete_user(meta, team.id, user.id, hour).await.unwrap());
    assert!(!delete_user(meta, team.id, user.id, hour).await.unwrap());
    assert_eq!(meta.user(team.id, user.id).await.unwrap(), None);
    assert_eq!(meta.user_by_client_id(team.id, "c1").await.unwrap(), None);
    assert_eq!(meta.list_users(team.id, 0, 10).await.unwrap().1, 0);
    assert_eq!(meta.team_counts(team.id).await.unwrap().0, 0);
    assert!(matches!(
        meta.create_user(team.id, new.clone()).await,
        Err(MetadataError::ClientUserIdTaken { existing }) if existing.id == user.id
    ));
    let by_id = UserRef::Id(user.id);
    let by_client = UserRef::Client("c1".into());
    assert_eq!(
        undo_delete(meta, team.id, &by_client, hour).await.unwrap(),
        Undo::Restored
    );
    assert_eq!(
        meta.user(team.id, user.id).await.unwrap(),
        Some(user.clone())
    );
    assert_eq!(
        meta.user_info(user.id).await.unwrap(),
        Some(json!({"first_name": "Ada"}))
    );
    assert_eq!(
        undo_delete(meta, team.id, &by_id, hour).await.unwrap(),
        Undo::NotDeleted
    );
    // A deletion whose window is over cannot be undone.
    assert!(
        delete_user(meta, team.id, user.id, std::time::Duration::ZERO)
            .await
            .unwrap()
    );
    assert_eq!(
        undo_delete(meta, team.id, &by_id, std::time::Duration::ZERO)
            .await
            .unwrap(),
        Undo::NotFound
    );
    assert_eq!(
        undo_delete(meta, team.id, &UserRef::Client("nobody".into()), hour)
            .await
            .unwrap(),
        Undo::NotFound
    );
    // The purge of that deletion (what the job runs once the window is over): the rows go and
    // the client id is free again; a purge of another deletion would have kept the user.
    let mut tx = meta.begin().await.unwrap();
    let (_, stamp) = any_user(&mut tx, team.id, &by_id).await.unwrap().unwrap();
    let stamp = stamp.expect("deleted");
    assert_eq!(
        purge(&mut tx, team.id, user.id, "2000-01-01T00:00:00.000000Z")
            .await
            .unwrap(),
        Purge::Kept
    );
    assert_eq!(
        purge(&mut tx, team.id, user.id, &stamp).await.unwrap(),
        Purge::Removed
    );
    assert_eq!(
        purge(&mut tx, team.id, user.id, &stamp).await.unwrap(),
        Purge::Gone
    );
    tx.commit().await.unwrap();
    assert!(
        any_user(&mut meta.writer().await.unwrap(), team.id, &by_id)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(meta.user_info(user.id).await.unwrap(), None);
    let again = meta.create_user(team.id, new).await.unwrap();
    assert_ne!(again.id, user.id);
}

crate::support::backends::on_both_metadata_backends!(
    soft_delete_and_undo_on_sqlite,
    soft_delete_and_undo_on_postgres,
    exercise,
    "wearhouse_undo"
);
