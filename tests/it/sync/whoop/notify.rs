//! WHOOP's webhooks at `/v2/provider/whoop_v2/notify`: the first historical pull records the
//! user's WHOOP id (the basic profile's `user_id`); a webhook naming it, signed as WHOOP signs
//! (`X-WHOOP-Signature`: base64 HMAC-SHA256 of `X-WHOOP-Signature-Timestamp` then the raw body,
//! keyed with the client secret), queues the connection's incremental pull now; a forged one
//! answers 401 and queues nothing.

use axum::body::Body;
use axum::http::Request;
use base64::Engine as _;
use chrono::Utc;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::end_to_end::{fake_whoop, pulled};
use crate::link::fake_oauth::CLIENT_SECRET;
use crate::support::{Answer, TestApp};
use crate::sync::support::incremental_jobs;

/// WHOOP's signature, written here from WHOOP's webhook documentation.
fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(timestamp.as_bytes());
    mac.update(body);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

async fn notify(app: &TestApp, body: &[u8], signature: Option<String>, timestamp: &str) -> Answer {
    let mut req = Request::builder()
        .method("POST")
        .uri("/v2/provider/whoop_v2/notify")
        .header("content-type", "application/json")
        .header("x-whoop-signature-timestamp", timestamp);
    if let Some(value) = signature {
        req = req.header("x-whoop-signature", value);
    }
    app.raw(req.body(Body::from(body.to_vec())).unwrap()).await
}

fn event(user: Value) -> Vec<u8> {
    json!({"user_id": user, "id": "ecfc6a15-4661-442f-a9a4-f160dd7afae8",
           "type": "sleep.updated", "trace_id": "e369c784-5100-49e8-8098-75d35c47b31b"})
    .to_string()
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_webhook_queues_the_users_pull_and_a_forged_one_is_refused() {
    let whoop = fake_whoop().await;
    let l = pulled(&whoop).await;
    let (app, user) = (&l.app, &l.user);
    let ts = Utc::now().timestamp_millis().to_string();
    let body = event(json!(10129));

    // Forged: unsigned, signed with another secret, Oura's scheme, another body's signature,
    // another timestamp's. Each answers 401 and moves no pull.
    let before = incremental_jobs(app).await;
    let oura_style = {
        let mut mac = Hmac::<Sha256>::new_from_slice(CLIENT_SECRET.as_bytes()).unwrap();
        mac.update(ts.as_bytes());
        mac.update(&body);
        hex::encode_upper(mac.finalize().into_bytes())
    };
    for (signature, timestamp) in [
        (None, ts.clone()),
        (Some(sign("not-the-secret", &ts, &body)), ts.clone()),
        (Some(oura_style), ts.clone()),
        (Some(sign(CLIENT_SECRET, &ts, b"{}")), ts.clone()),
        (Some(sign(CLIENT_SECRET, "1", &body)), ts.clone()),
    ] {
        let a = notify(app, &body, signature.clone(), &timestamp).await;
        assert_eq!(a.status, 401, "{signature:?}: {}", a.json);
    }
    assert_eq!(incremental_jobs(app).await, before, "nothing queued");

    // Signed: the connection's incremental pull is due now.
    let sent = Utc::now();
    let a = notify(app, &body, Some(sign(CLIENT_SECRET, &ts, &body)), &ts).await;
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

    // Signed, for a WHOOP user nobody linked; signed but not a webhook.
    let other = event(json!(777));
    let a = notify(app, &other, Some(sign(CLIENT_SECRET, &ts, &other)), &ts).await;
    assert_eq!(
        (a.status.as_u16(), a.json.clone()),
        (200, json!({"queued": 0}))
    );
    for bad in [
        br#"{"type": "sleep.updated"}"#.to_vec(),
        event(json!(null)),
        b"not json".to_vec(),
    ] {
        let a = notify(app, &bad, Some(sign(CLIENT_SECRET, &ts, &bad)), &ts).await;
        assert_eq!(a.status, 422, "{}", a.json);
    }

    // WHOOP has no subscription handshake.
    let a = app
        .send(
            "GET",
            "/v2/provider/whoop_v2/notify?challenge=c",
            None,
            None,
        )
        .await;
    assert_eq!(a.status, 422, "{}", a.json);
}
