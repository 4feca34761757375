//! Polar's webhooks at `/v2/provider/polar/notify`: the link records the user's Polar id (the
//! token answer's `x_user_id`); a message naming it, signed as Polar signs
//! (`Polar-Webhook-Signature`: the hex HMAC-SHA256 of the raw body, keyed with the webhook's
//! `signature_secret_key`, here the deployment application's `verification_token`), queues the
//! connection's incremental pull now; the creation's `PING` answers 200 and queues nothing; a
//! forged message answers 401 and queues nothing.

use axum::body::Body;
use axum::http::Request;
use base64::Engine as _;
use chrono::Utc;
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;

use super::end_to_end::{POLAR_USER, fake_polar, pulled};
use super::fake_polar::fixture;
use crate::link::fake_oauth::CLIENT_SECRET;
use crate::link::oauth::VERIFICATION_TOKEN;
use crate::support::{Answer, TestApp};
use crate::sync::support::incremental_jobs;

/// Polar's signature, written here from the documentation's HMAC SHA-256 example.
fn sign(key: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

async fn notify(app: &TestApp, body: &[u8], signature: Option<String>, event: &str) -> Answer {
    let mut req = Request::builder()
        .method("POST")
        .uri("/v2/provider/polar/notify")
        .header("content-type", "application/json")
        .header("polar-webhook-event", event);
    if let Some(value) = signature {
        req = req.header("polar-webhook-signature", value);
    }
    app.raw(req.body(Body::from(body.to_vec())).unwrap()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_webhook_queues_the_users_pull_and_a_forged_one_is_refused() {
    let polar = fake_polar().await;
    let l = pulled(&polar).await;
    let (app, user) = (&l.app, &l.user);
    let body = serde_json::to_vec(&fixture("webhook_exercise.json")).unwrap();
    assert_eq!(
        fixture("webhook_exercise.json")["user_id"].to_string(),
        POLAR_USER
    );

    // Forged: unsigned, another key, the client secret as key, another body's signature,
    // WHOOP's base64 form. Each answers 401 and moves no pull.
    let before = incremental_jobs(app).await;
    let base64 = {
        let mut mac = Hmac::<Sha256>::new_from_slice(VERIFICATION_TOKEN.as_bytes()).unwrap();
        mac.update(&body);
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    };
    for signature in [
        None,
        Some(sign("not-the-key", &body)),
        Some(sign(CLIENT_SECRET, &body)),
        Some(sign(VERIFICATION_TOKEN, b"{}")),
        Some(base64),
    ] {
        let a = notify(app, &body, signature.clone(), "EXERCISE").await;
        assert_eq!(a.status, 401, "{signature:?}: {}", a.json);
    }
    assert_eq!(incremental_jobs(app).await, before, "nothing queued");

    // The creation's ping: answered 200 when signed, nothing queued.
    let ping = br#"{"timestamp": "2025-03-01T18:40:30Z", "event": "PING"}"#;
    let a = notify(app, ping, None, "PING").await;
    assert_eq!(a.status, 401, "{}", a.json);
    let a = notify(app, ping, Some(sign(VERIFICATION_TOKEN, ping)), "PING").await;
    assert_eq!(
        (a.status.as_u16(), a.json.clone()),
        (200, json!({"queued": 0}))
    );
    assert_eq!(incremental_jobs(app).await, before, "a ping queues nothing");

    // Signed: the connection's incremental pull is due now.
    let sent = Utc::now();
    let a = notify(
        app,
        &body,
        Some(sign(VERIFICATION_TOKEN, &body)),
        "EXERCISE",
    )
    .await;
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

    // Signed, for a Polar user nobody linked; signed but not a payload.
    let other = br#"{"event": "SLEEP", "user_id": 475, "date": "2025-03-02"}"#;
    let a = notify(app, other, Some(sign(VERIFICATION_TOKEN, other)), "SLEEP").await;
    assert_eq!(
        (a.status.as_u16(), a.json.clone()),
        (200, json!({"queued": 0}))
    );
    for bad in [
        &br#"{"event": "SLEEP"}"#[..],
        br#"{"user_id": 2278512}"#,
        b"not json",
    ] {
        let a = notify(app, bad, Some(sign(VERIFICATION_TOKEN, bad)), "SLEEP").await;
        assert_eq!(a.status, 422, "{}", a.json);
    }

    // Polar has no subscription handshake.
    let a = app
        .send("GET", "/v2/provider/polar/notify?challenge=c", None, None)
        .await;
    assert_eq!(a.status, 422, "{}", a.json);
}
