//! `POST /v2/link/bulk_pause`, `/v2/link/bulk_trigger_historical_pull` and `/v2/link/bulk_export`
//! on the real server: connections imported with the team's own OAuth application are exported
//! with their tokens, re-pulled by a listed durable operation and paused; another team's users
//! are never touched or shown; the answers parse with the reference's models.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{Live, case, check_against_reference};

const SECRET: &str = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";

fn ids(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap().to_owned())
        .collect()
}

fn set(items: &[&String]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).clone()).collect()
}

#[tokio::test]
async fn bulk_export_trigger_and_pause_act_on_the_teams_own_connections_only() {
    // Pulls of the imported connections go nowhere (a closed local port), never to Oura.
    let live = Live::start_with(
        "warn",
        &["--secret-key", SECRET],
        &[(
            wearhouse::sync::connectors::oura::API_URL_ENV,
            "http://127.0.0.1:9",
        )],
    );
    let (key, other) = (live.key.clone(), live.other.clone());
    let creds = json!({"client_id": "team-own-client", "client_secret": "team-own-secret"});
    let a = live
        .call(
            "PUT",
            "/v2/team/provider/oura/credentials",
            Some(&key),
            Some(creds.clone()),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let u1 = live.user(&key, "one").await;
    let u2 = live.user(&key, "two").await;
    let u3 = live.user(&key, "three").await;
    let theirs = live.user(&other, "theirs").await;
    let expires = chrono::Utc::now().timestamp() + 3600;
    let recipe = |user: &str, n: u32| {
        json!({"user_id": user, "access_token": format!("access-{n}"),
               "refresh_token": format!("refresh-{n}"), "provider_id": format!("oura-{n}"),
               "expires_at": expires, "oauth_scopes": ["personal", "daily"]})
    };
    let a = live
        .post(
            "/v2/link/bulk_import",
            json!({"provider": "oura", "connections": [recipe(&u1, 1), recipe(&u2, 2)],
                   "wait_for_completion": true}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(ids(&a.json["user_ids_imported"]), set(&[&u1, &u2]));
    let mut cases = Vec::new();

    // Export: the imported tokens, by user id; one user when asked; never the other team's.
    let a = live
        .post("/v2/link/bulk_export", json!({"provider": "oura"}))
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let data = a.json["data"].as_array().unwrap();
    assert_eq!(data.len(), 2, "{}", a.json);
    assert!(a.json["next_token"].is_null());
    for row in data {
        let n = if row["user_id"] == u1.as_str() { 1 } else { 2 };
        assert_eq!(row["access_token"], format!("access-{n}"));
        assert_eq!(row["refresh_token"], format!("refresh-{n}"));
        assert_eq!(row["provider_id"], format!("oura-{n}"));
        assert_eq!(row["expires_at"], expires);
    }
    assert!(data[0]["user_id"].as_str() < data[1]["user_id"].as_str());
    cases.push(case(
        "export",
        "BulkExportConnectionsResponse",
        Some("BulkExportConnectionsResponse"),
        &a.json,
    ));
    let a = live
        .post(
            "/v2/link/bulk_export",
            json!({"provider": "oura", "user_ids": [u2, u3, theirs]}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["data"].as_array().unwrap().len(), 1, "{}", a.json);
    assert_eq!(a.json["data"][0]["user_id"], u2.as_str());
    // The other team: disabled without its own application, then empty with it.
    let a = live
        .call(
            "POST",
            "/v2/link/bulk_export",
            Some(&other),
            Some(json!({"provider": "oura"})),
        )
        .await;
    assert_eq!(a.status, 422, "{}", a.json);
    assert_eq!(a.json["detail"][0]["loc"], json!(["body", "provider"]));
    assert!(
        a.json["detail"][0]["msg"]
            .as_str()
            .unwrap()
            .contains("bulk export is disabled")
    );
    let a = live
        .call(
            "PUT",
            "/v2/team/provider/oura/credentials",
            Some(&other),
            Some(creds),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let a = live
        .call(
            "POST",
            "/v2/link/bulk_export",
            Some(&other),
            Some(json!({"provider": "oura", "user_ids": [u1]})),
        )
        .await;
    assert_eq!(
        a.json["data"],
        json!([]),
        "another team's user is not exported"
    );
    let a = live
        .post(
            "/v2/link/bulk_export",
            json!({"provider": "oura", "next_token": "nope"}),
        )
        .await;
    assert_eq!(a.status, 422, "{}", a.json);
    assert_eq!(a.json["detail"][0]["loc"], json!(["body", "next_token"]));

    // Historical trigger: a listed operation; the connected user is pulled again, the
    // unconnected one and the other team's fail with reasons.
    let a = live
        .post(
            "/v2/link/bulk_trigger_historical_pull",
            json!({"user_ids": [u1, u3, theirs], "provider": "oura", "wait_for_completion": true}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(ids(&a.json["user_ids_triggered"]), set(&[&u1]));
    assert_eq!(ids(&a.json["user_ids_failed"]), set(&[&u3, &theirs]));
    let ops = live.get("/v2/link/bulk_op").await;
    assert_eq!(ops.status, 200, "{}", ops.json);
    let op = &ops.json["data"][0];
    assert_eq!(op["type"], "link_bulk_historical_trigger", "{}", ops.json);
    assert_eq!(op["status"], "failure");
    assert_eq!(
        (
            op["processed"].as_i64(),
            op["failed"].as_i64(),
            op["pending"].as_i64()
        ),
        (Some(3), Some(2), Some(0))
    );
    let reasons: Vec<&str> = op["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["reason"].as_str().unwrap())
        .collect();
    assert!(reasons[0].contains("no connected oura"), "{reasons:?}");
    assert!(
        reasons[1].contains("not a user of this team"),
        "{reasons:?}"
    );
    assert_eq!(ops.json["data"][1]["type"], "link_bulk_import");
    cases.push(case(
        "bulk ops",
        "BulkOpsResponse",
        Some("BulkOpsResponse"),
        &ops.json,
    ));
    // Without waiting: 202, stored, then worked.
    let a = live
        .post(
            "/v2/link/bulk_trigger_historical_pull",
            json!({"user_ids": [u2], "provider": "oura"}),
        )
        .await;
    assert_eq!(a.status, 202, "{}", a.json);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let op = live.get("/v2/link/bulk_op").await.json["data"][0].clone();
        if op["status"] == "success" {
            assert_eq!(op["processed"], 1);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{op}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // Pause: the other team's key touches nothing of this team; this team's pauses its own.
    let a = live
        .call(
            "POST",
            "/v2/link/bulk_pause",
            Some(&other),
            Some(json!({"user_ids": [u1], "provider": "oura"})),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["user_ids_paused"], json!([]));
    let status = |user: String| {
        let live = &live;
        async move {
            let p = live.get(&format!("/v2/user/providers/{user}")).await.json;
            p["providers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["slug"] == "oura")
                .map(|p| p["status"].as_str().unwrap().to_owned())
        }
    };
    assert_eq!(status(u1.clone()).await.as_deref(), Some("connected"));
    let a = live
        .post(
            "/v2/link/bulk_pause",
            json!({"user_ids": [u1, u2, u3], "provider": "oura"}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(ids(&a.json["user_ids_paused"]), set(&[&u1, &u2]));
    assert_eq!(ids(&a.json["user_ids_skipped"]), set(&[&u3]));
    assert_eq!(status(u1.clone()).await.as_deref(), Some("paused"));
    let a = live
        .post(
            "/v2/link/bulk_trigger_historical_pull",
            json!({"user_ids": [u1], "provider": "oura", "wait_for_completion": true}),
        )
        .await;
    assert_eq!(
        ids(&a.json["user_ids_failed"]),
        set(&[&u1]),
        "a paused connection is not pulled"
    );

    // Validation.
    for (path, body, at) in [
        (
            "/v2/link/bulk_pause",
            json!({"user_ids": [u1], "provider": "nope"}),
            json!(["body", "provider"]),
        ),
        (
            "/v2/link/bulk_pause",
            json!({"user_ids": [], "provider": "oura"}),
            json!(["body", "user_ids"]),
        ),
        (
            "/v2/link/bulk_trigger_historical_pull",
            json!({"user_ids": [u1, u1], "provider": "oura"}),
            json!(["body", "user_ids", 1]),
        ),
        (
            "/v2/link/bulk_export",
            json!({"provider": "apple_health_kit"}),
            json!(["body", "provider"]),
        ),
    ] {
        let a = live.post(path, body).await;
        assert_eq!(a.status, 422, "{path}: {}", a.json);
        assert_eq!(a.json["detail"][0]["loc"], at, "{path}: {}", a.json);
    }

    check_against_reference(&cases);
}
