//! Tenancy and validation of `/v2/team/keys`: a team key manages only its own team's keys
//! (another team's key id answers exactly as an unknown one, on SQLite and PostgreSQL), and each
//! malformed request is a 422 at its location that changes nothing.

use serde_json::{Value, json};

use super::{instant, listed, status_of};
use crate::support::{TestApp, assert_422_at};

on_both_backends!(
    another_teams_key_is_not_found_on_sqlite,
    another_teams_key_is_not_found_on_postgres,
    tenancy
);

async fn tenancy(app: &TestApp) {
    let ours = app.post("/v2/team/keys", json!({"name": "ours"})).await;
    assert_eq!(ours.status, 200, "{}", ours.json);
    let (id, secret) = (
        ours.json["id"].as_str().unwrap().to_owned(),
        ours.json["secret"].as_str().unwrap().to_owned(),
    );
    let theirs = app
        .send("GET", "/v2/team/keys", Some(&app.other_key), None)
        .await;
    assert_eq!(theirs.status, 200, "{}", theirs.json);
    let their_keys = theirs.json["keys"].as_array().unwrap();
    assert_eq!(their_keys.len(), 1, "{}", theirs.json);
    assert!(their_keys.iter().all(|k| k["id"] != id.as_str()));

    let unknown = uuid::Uuid::new_v4();
    for (method, path, body) in [
        ("GET", format!("/v2/team/keys/{id}"), None),
        ("POST", format!("/v2/team/keys/{id}/revoke"), None),
        (
            "POST",
            format!("/v2/team/keys/{id}/rotate"),
            Some(json!({"overlap_seconds": 0})),
        ),
    ] {
        let foreign = app
            .send(method, &path, Some(&app.other_key), body.clone())
            .await;
        assert_eq!(foreign.status, 404, "{method} {path}: {}", foreign.json);
        assert_eq!(foreign.json, json!({"detail": "API key not found"}));
        let missing_path = path.replace(&id, &unknown.to_string());
        let missing = app.send(method, &missing_path, Some(&app.key), body).await;
        assert_eq!(missing.status, 404, "{method} {missing_path}");
        assert_eq!(missing.json, foreign.json, "another team's id leaks");
    }
    // None of it touched the key.
    assert_eq!(status_of(app, &secret).await, 200);
    let after = listed(app, &id).await;
    assert_eq!(after["status"], "active", "{after}");
    assert_eq!(after["expires_at"], Value::Null);
    assert_eq!(
        app.get("/v2/team/keys").await.json["keys"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn malformed_requests_are_422_and_change_nothing() {
    let app = TestApp::new().await;
    let default_id = app.get("/v2/team/keys").await.json["keys"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let create = |body: Value| app.post("/v2/team/keys", body);
    assert_422_at(&create(json!({})).await, &[json!("body"), json!("name")]);
    assert_422_at(
        &create(json!({"name": "  "})).await,
        &[json!("body"), json!("name")],
    );
    assert_422_at(
        &create(json!({"name": "x".repeat(101)})).await,
        &[json!("body"), json!("name")],
    );
    assert_422_at(
        &create(json!({"name": 7})).await,
        &[json!("body"), json!("name")],
    );
    assert_422_at(
        &create(json!({"name": "ok", "scopes": ["all"]})).await,
        &[json!("body"), json!("scopes")],
    );
    let rotate_path = format!("/v2/team/keys/{default_id}/rotate");
    let rotate = |body: Value| app.post(&rotate_path, body);
    for bad in [json!(-1), json!(2_592_001), json!("soon"), json!(1.5)] {
        assert_422_at(
            &rotate(json!({ "overlap_seconds": bad })).await,
            &[json!("body"), json!("overlap_seconds")],
        );
    }
    assert_422_at(
        &app.get("/v2/team/keys/not-a-uuid").await,
        &[json!("path"), json!("key_id")],
    );
    let text = axum::http::Request::builder()
        .method("POST")
        .uri("/v2/team/keys")
        .header("x-service-api-key", &app.key)
        .header("content-type", "text/plain")
        .body(axum::body::Body::from("name=ci"))
        .unwrap();
    assert_eq!(app.raw(text).await.status, 422);
    // Nothing was created or rotated.
    let keys = app.get("/v2/team/keys").await.json;
    assert_eq!(keys["keys"].as_array().unwrap().len(), 1, "{keys}");
    assert_eq!(keys["keys"][0]["status"], "active");
    // Without a key: 401 before any of the above is looked at.
    let anonymous = app
        .send("POST", "/v2/team/keys", None, Some(json!({})))
        .await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.json["detail"], "Missing API key");
    let wrong = app
        .send("GET", "/v2/team/keys", Some("wh_not_a_key"), None)
        .await;
    assert_eq!(wrong.json, json!({"detail": "Invalid API key"}));
}

#[tokio::test]
async fn a_rotation_without_a_body_or_with_null_takes_a_day() {
    let app = TestApp::new().await;
    for body in [None, Some("null")] {
        let made = app.post("/v2/team/keys", json!({"name": "n"})).await;
        let id = made.json["id"].as_str().unwrap();
        let mut request = axum::http::Request::builder()
            .method("POST")
            .uri(format!("/v2/team/keys/{id}/rotate"))
            .header("x-service-api-key", &app.key);
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let request = request
            .body(axum::body::Body::from(body.unwrap_or_default()))
            .unwrap();
        let rotated = app.raw(request).await;
        assert_eq!(rotated.status, 200, "{body:?}: {}", rotated.json);
        let left = instant(&rotated.json["previous"]["expires_at"]) - chrono::Utc::now();
        let off = (left - chrono::Duration::hours(24)).num_seconds().abs();
        assert!(off < 60, "{body:?}: {left}");
    }
    // A body that is not an object is still refused.
    let first = app.get("/v2/team/keys").await.json["keys"][0]["id"].clone();
    let list = app
        .post(
            &format!("/v2/team/keys/{}/rotate", first.as_str().unwrap()),
            json!([]),
        )
        .await;
    assert_422_at(&list, &[json!("body")]);
}
