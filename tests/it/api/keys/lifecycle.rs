//! A key's whole life through `/v2/team/keys`, the same steps on SQLite and on PostgreSQL:
//! created (its secret answered once), listed without secrets, used (`last_used_at` recorded,
//! at most once a minute), rotated with a short overlap (both keys work, then the old one is
//! 401), rotated with the default overlap, revoked (401 at once, even while expiring), and a key
//! revoking itself.

use std::time::Duration;

use serde_json::{Value, json};

use super::{assert_no_secret, instant, list_with, listed, status_of, wait_until};
use crate::support::TestApp;

on_both_backends!(lifecycle_on_sqlite, lifecycle_on_postgres, lifecycle);

/// The secret of a create or rotate answer, checked for its shape.
fn secret_of(a: &Value) -> String {
    let secret = a["secret"]
        .as_str()
        .unwrap_or_else(|| panic!("no secret: {a}"));
    assert!(secret.starts_with("wh_") && secret.len() == 67, "{secret}");
    assert_eq!(a["hint"], format!("wh_...{}", &secret[63..]), "{a}");
    secret.to_owned()
}

async fn lifecycle(app: &TestApp) {
    // The team's first key, listed without its secret.
    let first = list_with(app, &app.key).await;
    assert_eq!(first.status, 200, "{}", first.json);
    let keys = first.json["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1, "{}", first.json);
    assert_eq!(keys[0]["name"], "default");
    assert_eq!(keys[0]["status"], "active");
    assert_no_secret(&first, &[&app.key]);
    let default_id = keys[0]["id"].as_str().unwrap().to_owned();

    // Created: the secret is answered once, the name stored trimmed.
    let created = app.post("/v2/team/keys", json!({"name": "  ci  "})).await;
    assert_eq!(created.status, 200, "{}", created.json);
    let ci_secret = secret_of(&created.json);
    let ci = created.json["id"].as_str().unwrap().to_owned();
    assert_eq!(created.json["name"], "ci");
    assert_eq!(created.json["status"], "active");
    assert_eq!(created.json["last_used_at"], Value::Null);
    assert_ne!(ci, default_id);

    // Listed (and read alone) without any secret.
    let all = app.get("/v2/team/keys").await;
    assert_eq!(
        all.json["keys"].as_array().unwrap().len(),
        2,
        "{}",
        all.json
    );
    assert_no_secret(&all, &[&app.key, &ci_secret]);
    let one = app.get(&format!("/v2/team/keys/{ci}")).await;
    assert_eq!(one.status, 200, "{}", one.json);
    assert_eq!(one.json["name"], "ci");
    assert!(one.json.get("secret").is_none(), "{}", one.json);

    // Used: it authenticates as the team, and its use is recorded (not the other key's use).
    assert_eq!(listed(app, &ci).await["last_used_at"], Value::Null);
    let users = app.send("GET", "/v2/user/", Some(&ci_secret), None).await;
    assert_eq!(users.status, 200, "{}", users.json);
    wait_until(Duration::from_secs(10), "last_used_at recorded", || async {
        listed(app, &ci).await["last_used_at"].is_string()
    })
    .await;
    let used = instant(&listed(app, &ci).await["last_used_at"]);
    assert!(used >= instant(&created.json["created_at"]));
    assert!(used <= chrono::Utc::now());
    // A second use within the minute writes nothing.
    assert_eq!(status_of(app, &ci_secret).await, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(instant(&listed(app, &ci).await["last_used_at"]), used);

    // Rotated with a two-second overlap: a new key of the same name; both work meanwhile.
    let rotated = app
        .post(
            &format!("/v2/team/keys/{ci}/rotate"),
            json!({"overlap_seconds": 2}),
        )
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.json);
    let next_secret = secret_of(&rotated.json);
    let next = rotated.json["id"].as_str().unwrap().to_owned();
    assert_ne!(next_secret, ci_secret);
    assert_ne!(next, ci);
    assert_eq!(rotated.json["name"], "ci");
    let previous = &rotated.json["previous"];
    assert_eq!(previous["id"], ci.as_str());
    assert_eq!(previous["status"], "expiring");
    assert_eq!(previous["replaced_by"], next.as_str());
    assert!(previous.get("secret").is_none(), "{previous}");
    let expires = instant(&previous["expires_at"]);
    let left = expires - chrono::Utc::now();
    assert!(
        left > chrono::Duration::zero() && left <= chrono::Duration::seconds(2),
        "{left}"
    );
    assert_eq!(status_of(app, &ci_secret).await, 200);
    assert_eq!(status_of(app, &next_secret).await, 200);
    // A rotated key is not rotated twice: its replacement is.
    let again = app
        .post(&format!("/v2/team/keys/{ci}/rotate"), json!({}))
        .await;
    assert_eq!(again.status, 400, "{}", again.json);
    assert!(
        again.json["detail"].as_str().unwrap().contains(&next),
        "{}",
        again.json
    );

    // After the overlap the old key answers 401, not before; the new one still works.
    wait_until(Duration::from_secs(10), "the old key refused", || async {
        status_of(app, &ci_secret).await == 401
    })
    .await;
    assert!(chrono::Utc::now() >= expires, "refused before it expired");
    let refused = list_with(app, &ci_secret).await;
    assert_eq!(refused.json["detail"], "Invalid API key");
    assert_eq!(status_of(app, &next_secret).await, 200);
    assert_eq!(listed(app, &ci).await["status"], "expired");

    // Rotated without a body: the old key gets the default day.
    let request = axum::http::Request::builder()
        .method("POST")
        .uri(format!("/v2/team/keys/{next}/rotate"))
        .header("x-service-api-key", &app.key)
        .body(axum::body::Body::empty())
        .unwrap();
    let daily = app.raw(request).await;
    assert_eq!(daily.status, 200, "{}", daily.json);
    let third_secret = secret_of(&daily.json);
    let third = daily.json["id"].as_str().unwrap().to_owned();
    let day = instant(&daily.json["previous"]["expires_at"]) - chrono::Utc::now();
    assert!(
        (day - chrono::Duration::hours(24)).num_seconds().abs() < 60,
        "{day}"
    );

    // Revoked while expiring: 401 at once; revoking again changes nothing.
    let revoked = app
        .send(
            "POST",
            &format!("/v2/team/keys/{next}/revoke"),
            Some(&app.key),
            None,
        )
        .await;
    assert_eq!(revoked.status, 200, "{}", revoked.json);
    assert_eq!(revoked.json["status"], "revoked");
    assert!(revoked.json["revoked_at"].is_string(), "{}", revoked.json);
    let refused = list_with(app, &next_secret).await;
    assert_eq!(refused.status, 401, "{}", refused.json);
    assert_eq!(refused.json["detail"], "Invalid API key");
    let twice = app
        .send(
            "POST",
            &format!("/v2/team/keys/{next}/revoke"),
            Some(&app.key),
            None,
        )
        .await;
    assert_eq!(twice.status, 200, "{}", twice.json);
    assert_eq!(twice.json["revoked_at"], revoked.json["revoked_at"]);
    let dead = app
        .post(&format!("/v2/team/keys/{next}/rotate"), json!({}))
        .await;
    assert_eq!(dead.status, 400, "{}", dead.json);
    assert!(
        dead.json["detail"].as_str().unwrap().contains("revoked"),
        "{}",
        dead.json
    );

    // A key revokes itself: that request succeeds, the next is refused.
    assert_eq!(status_of(app, &third_secret).await, 200);
    let own = app
        .send(
            "POST",
            &format!("/v2/team/keys/{third}/revoke"),
            Some(&third_secret),
            None,
        )
        .await;
    assert_eq!(own.status, 200, "{}", own.json);
    assert_eq!(status_of(app, &third_secret).await, 401);
    // The team's first key was never touched by any of it.
    assert_eq!(status_of(app, &app.key).await, 200);
    assert_eq!(listed(app, &default_id).await["status"], "active");
}
