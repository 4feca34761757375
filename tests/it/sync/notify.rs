//! Provider change notifications (issue 15): Oura's subscription handshake and its signed
//! notifications at `/v2/provider/oura/notify`. The first historical pull records the user's
//! Oura account id (`personal_info.id`); a notification naming that account, signed as Oura
//! signs, queues the connection's incremental pull now; anything unverifiable queues nothing.
//! Withings' Notify API: its `HEAD` check and its form-encoded, unsigned notifications.

#![allow(clippy::unwrap_used)]

use axum::body::Body;
use axum::http::Request;
use chrono::Utc;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::link::fake_oauth::CLIENT_SECRET;
use crate::link::oauth::VERIFICATION_TOKEN;
use crate::support::{Answer, TestApp};
use crate::sync::pull::{fake_oura, linked_with};
use crate::sync::support::incremental_jobs;
use wearhouse::jobs::JobState;

/// Oura's signature: upper-case hex HMAC-SHA256 of timestamp then body, keyed with a client
/// secret. Written here from Oura's documentation, not taken from wearhouse.
fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(timestamp.as_bytes());
    mac.update(body);
    hex::encode_upper(mac.finalize().into_bytes())
}

/// How a test notification is signed.
#[derive(Debug, Clone, Copy)]
enum Sig<'a> {
    /// No `x-oura-signature`.
    Unsigned,
    /// This header value.
    Raw(&'a str),
    /// Oura's signature under this client secret.
    By(&'a str),
}

async fn notify(app: &TestApp, body: &[u8], sig: Sig<'_>) -> Answer {
    let timestamp = Utc::now().timestamp().to_string();
    let mut req = Request::builder()
        .method("POST")
        .uri("/v2/provider/oura/notify")
        .header("content-type", "application/json")
        .header("x-oura-timestamp", &timestamp);
    let signature = match sig {
        Sig::Unsigned => None,
        Sig::Raw(value) => Some(value.to_owned()),
        Sig::By(secret) => Some(sign(secret, &timestamp, body)),
    };
    if let Some(value) = signature {
        req = req.header("x-oura-signature", value);
    }
    app.raw(req.body(Body::from(body.to_vec())).unwrap()).await
}

fn event(account: &str) -> Vec<u8> {
    json!({"event_type": "update", "data_type": "sleep", "object_id": "sleep-1",
           "event_time": "2026-11-24T06:00:00+00:00", "user_id": account})
    .to_string()
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_notification_for_a_pulled_account_queues_its_pull_now() {
    let oura = fake_oura().await;
    // Oura's token answer names no user: the pull has to ask.
    let l = linked_with(&oura, &[("x_account", "")]).await;
    oura.accept_when(l.issued_tokens(None));
    l.run_until(JobState::Succeeded).await;
    let (app, user) = (&l.app, &l.user);

    // The pull recorded the account Oura's notifications name.
    let account = crate::sync::oura::fake_oura::fixture("personal_info.json")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let connection = app
        .state
        .meta
        .connection(user.parse().unwrap(), "oura")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        connection.provider_user_id.as_deref(),
        Some(account.as_str())
    );

    // Unsigned, wrongly signed, signed for another body: nothing queued sooner.
    let before: Vec<_> = incremental_jobs(app).await;
    let other_body = sign(CLIENT_SECRET, "1", b"{}");
    for sig in [Sig::Unsigned, Sig::Raw("00FF"), Sig::Raw(&other_body)] {
        let a = notify(app, &event(&account), sig).await;
        assert_eq!(a.status, 401, "{sig:?}: {}", a.json);
    }
    assert_eq!(incremental_jobs(app).await, before);

    // Signed: the connection's incremental pull is due now.
    let sent = Utc::now();
    let a = notify(app, &event(&account), Sig::By(CLIENT_SECRET)).await;
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

    // Signed for an account nobody has; signed but not a notification.
    let a = notify(app, &event("someone-else"), Sig::By(CLIENT_SECRET)).await;
    assert_eq!(a.json, json!({"queued": 0}), "{}", a.json);
    let a = notify(app, b"{\"user_id\": 7}", Sig::By(CLIENT_SECRET)).await;
    assert_eq!(a.status, 422, "{}", a.json);
    let a = notify(app, b"not json", Sig::By(CLIENT_SECRET)).await;
    assert_eq!(a.status, 422, "{}", a.json);

    // A team's own Oura application: its signature queues its own users, another team's
    // verifies but queues nobody of this team, an unknown secret verifies nothing.
    for (key, secret) in [
        (&app.key, "our-team-secret"),
        (&app.other_key, "their-team-secret"),
    ] {
        let a = app
            .send(
                "PUT",
                "/v2/team/provider/oura/credentials",
                Some(key),
                Some(json!({"client_id": "team-client", "client_secret": secret})),
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.json);
    }
    let a = notify(app, &event(&account), Sig::By("our-team-secret")).await;
    assert_eq!(a.json, json!({"queued": 1}), "{}", a.json);
    let a = notify(app, &event(&account), Sig::By("their-team-secret")).await;
    assert_eq!(a.json, json!({"queued": 0}), "{}", a.json);
    let a = notify(app, &event(&account), Sig::By("nobody's-secret")).await;
    assert_eq!(a.status, 401, "{}", a.json);
}

#[tokio::test]
async fn the_subscription_handshake_echoes_the_challenge_only_for_the_configured_token() {
    let (app, _oauth) = crate::link::oauth::setup().await;
    let get = |q: String| {
        let app = &app;
        async move {
            app.send("GET", &format!("/v2/provider/oura/notify?{q}"), None, None)
                .await
        }
    };
    let a = get(format!(
        "verification_token={VERIFICATION_TOKEN}&challenge=c-42"
    ))
    .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json, json!({"challenge": "c-42"}));
    let a = get("verification_token=guess&challenge=c-42".into()).await;
    assert_eq!(a.status, 401, "{}", a.json);
    let a = get("challenge=c-42".into()).await;
    assert_eq!(a.status, 422, "{}", a.json);
    let a = app
        .send(
            "GET",
            &format!(
                "/v2/provider/fitbit/notify?verification_token={VERIFICATION_TOKEN}&challenge=c"
            ),
            None,
            None,
        )
        .await;
    assert_eq!(a.status, 422, "{}", a.json);
}

/// A team's own Oura application carries the verification token of the team's own
/// subscription: the handshake answers for it (and for the deployment's), not for another
/// provider or a guess; the token is shown nowhere and stored only as its hash.
#[tokio::test]
async fn a_teams_own_verification_token_is_answered_and_kept_only_as_a_hash() {
    let (app, _oauth) = crate::link::oauth::setup().await;
    let handshake = |token: &str| {
        let app = &app;
        let uri = format!("/v2/provider/oura/notify?verification_token={token}&challenge=c-7");
        async move { app.send("GET", &uri, None, None).await }
    };
    let team_token = "team-own-subscription-token-51";
    assert_eq!(handshake(team_token).await.status, 401);
    let a = app
        .send(
            "PUT",
            "/v2/team/provider/oura/credentials",
            Some(&app.key),
            Some(
                json!({"client_id": "team-client", "client_secret": "team-secret",
                        "verification_token": team_token}),
            ),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["verification_token_set"], true, "{}", a.json);
    assert!(!a.json.to_string().contains(team_token), "{}", a.json);
    let a = handshake(team_token).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json, json!({"challenge": "c-7"}));
    assert_eq!(handshake(VERIFICATION_TOKEN).await.status, 200);
    assert_eq!(handshake("team-own-subscription-token-5").await.status, 401);
    let bytes = crate::link::sqlite_bytes(app.dir.path());
    assert!(
        !bytes
            .windows(team_token.len())
            .any(|w| w == team_token.as_bytes())
    );

    // Only a provider whose handshake has a token takes one (not Fitbit, which notifies
    // nothing here, nor Withings, whose check is a HEAD), and it is checked.
    let put = |provider: &str, body: Value| {
        let app = &app;
        let uri = format!("/v2/team/provider/{provider}/credentials");
        async move { app.send("PUT", &uri, Some(&app.key), Some(body)).await }
    };
    for provider in ["fitbit", "withings"] {
        let body = json!({"client_id": "c", "client_secret": "s", "verification_token": "t"});
        let a = put(provider, body).await;
        crate::support::assert_422_at(&a, &[json!("body"), json!("verification_token")]);
    }
    let a = put(
        "oura",
        json!({"client_id": "c", "client_secret": "s", "verification_token": " "}),
    )
    .await;
    crate::support::assert_422_at(&a, &[json!("body"), json!("verification_token")]);

    // Setting the application again without a token removes it.
    let a = put(
        "oura",
        json!({"client_id": "team-client", "client_secret": "team-secret"}),
    )
    .await;
    assert_eq!(a.json["verification_token_set"], false, "{}", a.json);
    assert_eq!(handshake(team_token).await.status, 401);
}

/// Withings' Notify API: the callback's `HEAD` check answers 2xx; a form-encoded notification
/// naming a linked account's `userid` queues that connection's incremental pull now (Withings
/// signs nothing), an unknown `userid` queues nothing, and a form without one is a 422.
#[tokio::test]
async fn a_withings_notification_queues_the_named_accounts_pull() {
    let app = crate::link::keyed_app().await;
    let user = app.user("withings-notified").await;
    let linked = wearhouse::link::lifecycle::Linked {
        provider_user_id: Some("363".into()),
        scopes_granted: vec!["user.metrics".into()],
        scopes_denied: Vec::new(),
        credentials: wearhouse::sync::credentials::Credentials {
            access_token: Some("withings-access".into()),
            ..Default::default()
        },
    };
    crate::link::link(&app, &user, "withings", &linked).await;

    let head = Request::builder()
        .method("HEAD")
        .uri("/v2/provider/withings/notify")
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.raw(head).await.status, 200);

    let post = |form: &str| {
        let req = Request::builder()
            .method("POST")
            .uri("/v2/provider/withings/notify")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(form.to_owned()))
            .unwrap();
        app.raw(req)
    };
    // Linked here through the domain function, which schedules no pull: none is pending.
    let before = incremental_jobs(&app).await;
    assert_eq!(before, vec![]);

    let a = post("userid=999&appli=1&startdate=1530576000&enddate=1530698753").await;
    assert_eq!(
        (a.status.as_u16(), a.json.clone()),
        (200, json!({"queued": 0}))
    );
    let a = post("appli=1").await;
    crate::support::assert_422_at(&a, &[json!("body"), json!("userid")]);
    assert_eq!(incremental_jobs(&app).await, before);

    let sent = Utc::now();
    let a = post("userid=363&appli=1&startdate=1530576000&enddate=1530698753").await;
    assert_eq!(
        (a.status.as_u16(), a.json.clone()),
        (200, json!({"queued": 1}))
    );
    let jobs = incremental_jobs(&app).await;
    assert_eq!(jobs.len(), 1, "one job per connection: {jobs:?}");
    assert_eq!(jobs[0].0, json!(user));
    assert!(
        jobs[0].1 <= Utc::now() && jobs[0].1 >= sent - chrono::Duration::seconds(1),
        "{jobs:?}"
    );
}
