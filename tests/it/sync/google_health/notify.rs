//! Google Health's webhooks at `/v2/provider/google_health/notify`, as
//! `developers.google.com/health/webhooks` and the `projects.subscribers` reference describe
//! them: the subscriber's secret (`endpointAuthorization.secret`, here the deployment's
//! `verification_token`) comes as the whole `Authorization` header; the verification posts
//! `{"type": "verification"}` with it (201 wanted) and without it (401 wanted); a notification
//! `[{"data": {"healthUserId", "dataType", "operation", "intervals"}}]` naming the user the
//! first pull recorded queues the connection's incremental pull now; a forged one answers 401
//! and queues nothing.

use axum::body::Body;
use axum::http::Request;
use chrono::Utc;
use serde_json::{Value, json};

use super::end_to_end::{fake_google, pulled};
use crate::link::oauth::VERIFICATION_TOKEN;
use crate::support::{Answer, TestApp};
use crate::sync::support::incremental_jobs;

async fn notify(app: &TestApp, body: &Value, authorization: Option<&str>) -> Answer {
    let mut req = Request::builder()
        .method("POST")
        .uri("/v2/provider/google_health/notify")
        .header("content-type", "application/json")
        // Google signs too; the signature is not what is checked (see the webhook module).
        .header("x-healthapi-signature", "MEUCIQDfakefakefake");
    if let Some(value) = authorization {
        req = req.header("authorization", value);
    }
    app.raw(req.body(Body::from(body.to_string())).unwrap())
        .await
}

fn change(user: &str) -> Value {
    json!([{"data": {
        "healthUserId": user, "dataType": "sleep", "operation": "UPSERT",
        "clientProvidedSubscriptionName": "wearhouse",
        "intervals": [{"physicalTimeInterval": {
            "startTime": "2026-11-27T23:10:00Z", "endTime": "2026-11-28T06:48:00Z"}}]
    }}])
}

#[tokio::test(flavor = "multi_thread")]
async fn the_subscriber_secret_verifies_and_a_forged_notification_is_refused() {
    let google = fake_google().await;
    let l = pulled(&google).await;
    let (app, user) = (&l.app, &l.user);

    // The subscriber verification: 201 with the secret, 401 without it or with another.
    let verification = json!({"type": "verification"});
    let a = notify(app, &verification, Some(VERIFICATION_TOKEN)).await;
    assert_eq!(a.status, 201, "{}", a.json);
    for forged in [None, Some("Bearer nope"), Some("")] {
        let a = notify(app, &verification, forged).await;
        assert_eq!(a.status, 401, "{forged:?}: {}", a.json);
    }

    // Forged notifications: no secret, another secret, the secret with a prefix or cut short.
    let body = change("4k2Zq9hT");
    let before = incremental_jobs(app).await;
    let prefixed = format!("Bearer {VERIFICATION_TOKEN}");
    let short = &VERIFICATION_TOKEN[..VERIFICATION_TOKEN.len() - 1];
    for forged in [
        None,
        Some("Bearer nope"),
        Some(prefixed.as_str()),
        Some(short),
    ] {
        let a = notify(app, &body, forged).await;
        assert_eq!(a.status, 401, "{forged:?}: {}", a.json);
    }
    assert_eq!(incremental_jobs(app).await, before, "nothing queued");

    // With the secret: the connection's incremental pull is due now.
    let sent = Utc::now();
    let a = notify(app, &body, Some(VERIFICATION_TOKEN)).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json, json!({"queued": 1}));
    let jobs = incremental_jobs(app).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].0, json!(user));
    assert!(
        jobs[0].1 <= sent + chrono::Duration::seconds(1),
        "due {}, sent {sent}",
        jobs[0].1
    );

    // A user nobody linked queues nothing; a body that is not a notification is a 422.
    let a = notify(app, &change("someone-else"), Some(VERIFICATION_TOKEN)).await;
    assert_eq!(
        (a.status.as_u16(), a.json.clone()),
        (200, json!({"queued": 0}))
    );
    for bad in [
        json!({"data": {"dataType": "sleep"}}),
        json!([]),
        json!("x"),
    ] {
        let a = notify(app, &bad, Some(VERIFICATION_TOKEN)).await;
        assert_eq!(a.status, 422, "{bad}: {}", a.json);
    }
}
