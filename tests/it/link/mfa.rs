//! Abbott LibreView's password link with its second factor, through the link API, against
//! [`FakeLibreView`]: `pending_provider_mfa` with where the code went (SMS and e-mail),
//! `complete_mfa` with the same link token (a wrong code, then the right one; the bounds of
//! tries and minutes; a resend), `provider_password_expired` at link and at pull time, the
//! pulled readings, the sealed pending state, and the token and tenancy rules of both routes.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use serde_json::{Value, json};
use uuid::Uuid;
use wearhouse::jobs::JobState;
use wearhouse::store::metadata::ConnectionStatus;
use wearhouse::sync::connectors::libre::access::Hosts;
use wearhouse::sync::connectors::libre::libreview::LibreView;

use super::fake_libreview::{
    EMAIL, EMAIL_HINT, Factor, FakeLibreView, PASSWORD, PATIENT, SMS_HINT,
};
use super::fake_oauth::FakeOAuth;
use super::{password_app, sqlite_bytes};
use crate::support::{Answer, TestApp};
use crate::sync::support::linked::Linked;

const BACK: &str = "https://app.example.com/linked";
const PROVIDER: &str = "abbott_libreview";

async fn app(fake: &FakeLibreView) -> TestApp {
    let hosts = Hosts::template(&fake.template());
    password_app(
        Arc::new(LibreView::new(hosts.clone()).unwrap()),
        Arc::new(wearhouse::sync::connectors::libre::Libre::libreview(hosts).unwrap()),
    )
    .await
}

async fn token_with(app: &TestApp, key: &str, user: &str, extra: Value) -> String {
    let mut body = json!({"user_id": user});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let a = app
        .send("POST", "/v2/link/token", Some(key), Some(body))
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["link_token"].as_str().unwrap().to_owned()
}

async fn token(app: &TestApp, user: &str) -> String {
    token_with(app, &app.key.clone(), user, json!({"redirect_url": BACK})).await
}

/// `POST path` with the link token.
pub async fn with_token(app: &TestApp, token: &str, path: &str, body: Value) -> Answer {
    let req = axum::http::Request::builder()
        .method("POST")
        .uri(path)
        .header("x-link-token", token)
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    app.raw(req).await
}

async fn sign_in(app: &TestApp, token: &str, body: Value) -> Value {
    let path = format!("/v2/link/provider/password/{PROVIDER}");
    let a = with_token(app, token, &path, body).await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json
}

fn right() -> Value {
    json!({"username": EMAIL, "password": PASSWORD, "region": "us"})
}

async fn code(app: &TestApp, token: &str, code: &str) -> Answer {
    let path = format!("/v2/link/provider/password/{PROVIDER}/complete_mfa");
    with_token(app, token, &path, json!({"mfa_code": code})).await
}

async fn status(app: &TestApp, user: &str) -> Option<ConnectionStatus> {
    let uuid: Uuid = user.parse().unwrap();
    let c = app.state.meta.connection(uuid, PROVIDER).await.unwrap();
    c.map(|c| c.status)
}

/// An app on a fake LibreView whose second factor is `factor`, a user of it (`client_user_id`)
/// and its link token, signed in with the right password: the answer (also answered) asks for
/// the code, sent by that factor to `hint`.
async fn asked_for_a_code(
    factor: Factor,
    client_user_id: &str,
    hint: &str,
) -> (FakeLibreView, TestApp, String, String, Value) {
    let fake = FakeLibreView::start(factor).await;
    let app = app(&fake).await;
    let user = app.user(client_user_id).await;
    let t = token(&app, &user).await;
    let a = sign_in(&app, &t, right()).await;
    assert_eq!(a["state"], "pending_provider_mfa", "{a}");
    let method = match factor {
        Factor::Sms => "sms",
        Factor::Email => "email",
        Factor::Off => panic!("no second factor to ask for"),
    };
    assert_eq!(a["provider_mfa"], json!({"method": method, "hint": hint}));
    (fake, app, user, t, a)
}

#[tokio::test]
async fn a_second_factor_by_sms_takes_a_wrong_code_then_the_right_one() {
    // Asked in the US, the account lives in the EU: followed; then a code goes by SMS.
    let (fake, app, user, t, a) = asked_for_a_code(Factor::Sms, "sms-patient", SMS_HINT).await;
    assert_eq!(a["connected"], false);
    assert_eq!(a["provider"], PROVIDER);
    assert!(a.get("redirect_url").is_none(), "not landed yet: {a}");
    assert!(a.get("error_type").is_none(), "{a}");
    assert_eq!(fake.codes_sent(), 1);
    assert_eq!(status(&app, &user).await, None);

    // While the code is awaited, nothing readable is at rest.
    let bytes = sqlite_bytes(app.dir.path());
    for secret in [PASSWORD.as_bytes(), b"lv-temp-"] {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret),
            "{} in the database",
            String::from_utf8_lossy(secret)
        );
    }

    let wrong = code(&app, &t, "000000").await;
    assert_eq!(wrong.status, 200, "{}", wrong.json);
    assert_eq!(wrong.json["state"], "error", "{}", wrong.json);
    assert_eq!(wrong.json["error_type"], "incorrect_mfa_code");
    assert!(
        wrong.json["error"]
            .as_str()
            .unwrap()
            .contains("4 tries left"),
        "{}",
        wrong.json
    );
    assert_eq!(
        wrong.json["provider_mfa"]["hint"], SMS_HINT,
        "still pending"
    );
    assert_eq!(status(&app, &user).await, None);

    let ok = code(&app, &t, &format!(" {} ", fake.last_code())).await;
    assert_eq!(ok.status, 200, "{}", ok.json);
    assert_eq!(ok.json["state"], "success", "{}", ok.json);
    assert_eq!(ok.json["connected"], true);
    assert_eq!(ok.json["provider_id"], PATIENT);
    let landed = ok.json["redirect_url"].as_str().unwrap();
    assert!(
        landed.starts_with(BACK) && landed.contains("state=success"),
        "{landed}"
    );
    assert!(ok.json.get("provider_mfa").is_none(), "{}", ok.json);
    assert_eq!(status(&app, &user).await, Some(ConnectionStatus::Connected));
    let session = wearhouse::link::lifecycle::credentials(
        &app.state.meta,
        app.state.secret.as_ref(),
        user.parse().unwrap(),
        PROVIDER,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(session.password.as_deref(), Some(PASSWORD));
    assert!(session.access_token.unwrap().contains("lv-session-"));

    // The token is spent: the code route says so like every link route.
    let again = code(&app, &t, &fake.last_code()).await;
    assert_eq!(again.status, 401, "{}", again.json);
    assert_eq!(again.json["detail"]["error_type"], "token_consumed");
    let types = app.event_types(&user).await;
    assert!(
        types.iter().any(|t| t == "provider.connection.created"),
        "{types:?}"
    );
}

#[tokio::test]
async fn a_second_factor_by_email_says_where_the_code_went_and_a_new_code_can_be_sent() {
    let (fake, app, _, t, _) = asked_for_a_code(Factor::Email, "email-patient", EMAIL_HINT).await;
    let first = fake.last_code();

    // A new code (the page's "send a new code"): the first one no longer works.
    let session = wearhouse::link::tokens::check(&app.state.meta, &t, chrono::Utc::now())
        .await
        .unwrap();
    let provider = wearhouse::providers::provider(PROVIDER).unwrap();
    let resent = wearhouse::link::password::mfa::resend(
        &app.state.meta,
        app.state.secret.as_ref(),
        &app.state.link.password,
        &session,
        provider,
        chrono::Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(resent.state(), "pending_provider_mfa");
    assert_eq!(fake.codes_sent(), 2);
    let second = fake.last_code();
    assert_ne!(first, second);
    let old = code(&app, &t, &first).await;
    assert_eq!(old.json["error_type"], "incorrect_mfa_code", "{}", old.json);
    let ok = code(&app, &t, &second).await;
    assert_eq!(ok.json["state"], "success", "{}", ok.json);
}

#[tokio::test]
async fn a_code_after_the_sign_in_expired_or_after_the_last_try_asks_to_sign_in_again() {
    let fake = FakeLibreView::start(Factor::Sms).await;
    let app = app(&fake).await;
    let user = app.user("slow-patient").await;

    // Ten minutes pass between the sign-in and the code.
    let t = token(&app, &user).await;
    sign_in(&app, &t, right()).await;
    let mut conn = app.state.meta.writer().await.unwrap();
    sqlx::query("UPDATE link_pending_sign_ins SET expires_at = '2020-01-01T00:00:00.000000Z'")
        .execute(&mut *conn)
        .await
        .unwrap();
    drop(conn);
    let late = code(&app, &t, &fake.last_code()).await;
    assert_eq!(late.status, 200);
    assert_eq!(late.json["state"], "error", "{}", late.json);
    assert_eq!(late.json["error_type"], "provider_credential_error");
    assert!(
        late.json["error"]
            .as_str()
            .unwrap()
            .contains("Sign in again"),
        "{}",
        late.json
    );
    assert!(late.json.get("provider_mfa").is_none());

    // Signing in again with the same token works; five wrong codes end the sign-in.
    let a = sign_in(&app, &t, right()).await;
    assert_eq!(a["state"], "pending_provider_mfa", "{a}");
    let right_code = fake.last_code();
    for left in (0..5).rev() {
        let wrong = code(&app, &t, "111111").await;
        assert_eq!(
            wrong.json["error_type"], "incorrect_mfa_code",
            "{}",
            wrong.json
        );
        assert_eq!(
            wrong.json.get("provider_mfa").is_some(),
            left > 0,
            "{}",
            wrong.json
        );
    }
    let after = code(&app, &t, &right_code).await;
    assert_eq!(
        after.json["error_type"], "provider_credential_error",
        "{}",
        after.json
    );
    assert_eq!(status(&app, &user).await, None);

    // A code without any sign-in waiting.
    let other = app.user("no-sign-in").await;
    let t = token(&app, &other).await;
    let none = code(&app, &t, "123456").await;
    assert_eq!(
        none.json["error_type"], "provider_credential_error",
        "{}",
        none.json
    );
}

#[tokio::test]
async fn refusals_of_the_sign_in_are_link_errors() {
    let fake = FakeLibreView::start(Factor::Off).await;
    let app = app(&fake).await;
    let user = app.user("refused-patient").await;
    let t = token(&app, &user).await;
    let outcome = |a: &Value| a["error_type"].as_str().unwrap_or_default().to_owned();

    let wrong = json!({"username": EMAIL, "password": "nope"});
    assert_eq!(
        outcome(&sign_in(&app, &t, wrong).await),
        "provider_credential_error"
    );
    let mars = json!({"username": EMAIL, "password": PASSWORD, "region": "mars"});
    assert_eq!(
        outcome(&sign_in(&app, &t, mars).await),
        "unsupported_region"
    );
    assert_eq!(fake.logins(), 0, "neither got past the password");
    fake.terms(true);
    let a = sign_in(&app, &t, right()).await;
    assert_eq!(outcome(&a), "provider_credential_error");
    assert!(a["error"].as_str().unwrap().contains("terms"), "{a}");
    fake.terms(false);
    fake.password_expired(true);
    let a = sign_in(&app, &t, right()).await;
    assert_eq!(a["state"], "error");
    assert_eq!(outcome(&a), "provider_password_expired", "{a}");
    assert!(a["error"].as_str().unwrap().contains("new password"), "{a}");
    assert!(
        a["redirect_url"]
            .as_str()
            .unwrap()
            .contains("error_type=provider_password_expired")
    );
    assert_eq!(status(&app, &user).await, None);
}

/// A patient linked without a second factor, pulled, then LibreView forces a password change:
/// the next pull meets it, the connection goes to `error` with `provider_password_expired` and
/// `provider.connection.error` is emitted.
#[tokio::test(flavor = "multi_thread")]
async fn a_linked_patient_is_pulled_and_a_password_change_at_pull_time_is_a_connection_error() {
    let fake = FakeLibreView::start(Factor::Off).await;
    let app = app(&fake).await;
    let user = app.user("pulled-patient").await;
    let t = token(&app, &user).await;
    let a = sign_in(&app, &t, right()).await;
    assert_eq!(a["state"], "success", "{a}");
    let l = Linked {
        app,
        oauth: FakeOAuth::start().await,
        user,
        provider: PROVIDER,
    };
    let done = l.run_until(JobState::Succeeded).await;
    assert_eq!(done.state, JobState::Succeeded, "{done:?}");
    let got = l.series("glucose").await;
    assert_eq!(got.len(), fake.readings().len(), "{got:#?}");
    let (at, mg) = fake.readings()[0];
    let first = &got[0];
    assert_eq!(
        crate::sync::support::linked::instant(&first["timestamp"]).timestamp(),
        at.timestamp()
    );
    let mmol = (f64::from(mg) / 18.0182 * 100.0).round() / 100.0;
    assert_eq!(first["value"].as_f64(), Some(mmol), "{first}");
    assert_eq!(first["timezone_offset"], 7200, "{first}");

    fake.expire_sessions();
    fake.password_expired(true);
    let connection = l.refresh_until_disconnected().await;
    assert_eq!(connection.status, ConnectionStatus::Error);
    let details = l.assert_errored("provider_password_expired").await;
    assert!(details.error_message.contains("password"), "{details:?}");
    assert!(!details.error_message.contains(PASSWORD));
}

#[tokio::test]
async fn both_new_routes_keep_the_token_and_tenancy_rules() {
    let fake = FakeLibreView::start(Factor::Sms).await;
    let app = app(&fake).await;
    let user = app.user("tenant-patient").await;
    let t = token(&app, &user).await;
    let a = sign_in(&app, &t, right()).await;
    assert_eq!(a["state"], "pending_provider_mfa", "{a}");
    let the_code = fake.last_code();

    // Another team's token (for its own user) cannot finish this sign-in.
    let other_key = app.other_key.clone();
    let theirs = app
        .send(
            "POST",
            "/v2/user/",
            Some(&other_key),
            Some(json!({"client_user_id": "their-user"})),
        )
        .await;
    let their_user = theirs.json["user_id"].as_str().unwrap().to_owned();
    let their_token = token_with(&app, &other_key, &their_user, json!({})).await;
    let stolen = code(&app, &their_token, &the_code).await;
    assert_eq!(
        stolen.json["error_type"], "provider_credential_error",
        "{}",
        stolen.json
    );
    let email = with_token(
        &app,
        &their_token,
        "/v2/link/provider/email/freestyle_libre",
        json!({"email": EMAIL}),
    )
    .await;
    assert_eq!(email.status, 200, "{}", email.json);
    assert_eq!(email.json["state"], "error");

    // No token, an unknown one, an expired one: 401 on both routes.
    let paths = [
        (
            format!("/v2/link/provider/password/{PROVIDER}/complete_mfa"),
            json!({"mfa_code": "1"}),
        ),
        (
            "/v2/link/provider/email/freestyle_libre".to_owned(),
            json!({"email": EMAIL}),
        ),
    ];
    for (path, body) in &paths {
        let unknown = with_token(&app, "not-a-token", path, body.clone()).await;
        assert_eq!(unknown.status, 401, "{path}: {}", unknown.json);
        assert_eq!(unknown.json["detail"]["error_type"], "invalid_token");
    }
    let mut conn = app.state.meta.writer().await.unwrap();
    sqlx::query("UPDATE link_tokens SET expires_at = '2020-01-01T00:00:00.000000Z'")
        .execute(&mut *conn)
        .await
        .unwrap();
    drop(conn);
    for (path, body) in &paths {
        let expired = with_token(&app, &t, path, body.clone()).await;
        assert_eq!(expired.status, 401, "{path}: {}", expired.json);
        assert_eq!(expired.json["detail"]["error_type"], "token_expired");
    }

    // The body and the path are checked: 422s.
    let fresh = token(&app, &user).await;
    let path = format!("/v2/link/provider/password/{PROVIDER}/complete_mfa");
    let bad = with_token(&app, &fresh, &path, json!({"code": "1"})).await;
    assert_eq!(bad.status, 422, "{}", bad.json);
    let not_password = with_token(
        &app,
        &fresh,
        "/v2/link/provider/password/freestyle_libre/complete_mfa",
        json!({"mfa_code": "1"}),
    )
    .await;
    assert_eq!(not_password.status, 422, "{}", not_password.json);
    let not_email = with_token(
        &app,
        &fresh,
        &format!("/v2/link/provider/email/{PROVIDER}"),
        json!({"email": EMAIL}),
    )
    .await;
    assert_eq!(not_email.status, 422, "{}", not_email.json);
}

/// A restart between the sign-in and the code: a new state (its own metadata pool, its own
/// LibreView client, the same database and secret key) finishes the sign-in.
#[tokio::test]
async fn a_restart_between_the_two_calls_loses_nothing() {
    let fake = FakeLibreView::start(Factor::Sms).await;
    let before = app(&fake).await;
    let user = before.user("restarted-patient").await;
    let t = token(&before, &user).await;
    let a = sign_in(&before, &t, right()).await;
    assert_eq!(a["state"], "pending_provider_mfa", "{a}");

    let url = format!(
        "sqlite://{}?mode=rwc",
        before.dir.path().join("meta.db").display()
    );
    let meta = wearhouse::store::metadata::MetadataStore::connect(&url)
        .await
        .unwrap();
    let health_dir = before.dir.path().join("health").display().to_string();
    let health =
        wearhouse::store::health::HealthStore::open(&health_dir, Default::default()).unwrap();
    let hosts = Hosts::template(&fake.template());
    let state = wearhouse::http::AppState::new(meta, health, Default::default())
        .unwrap()
        .with_secret_key(before.state.secret.clone().unwrap())
        .with_link_config(wearhouse::link::LinkConfig {
            password: wearhouse::link::password::PasswordLogins::default()
                .with(Arc::new(LibreView::new(hosts).unwrap())),
            ..Default::default()
        });
    let after = TestApp {
        state,
        key: before.key.clone(),
        other_key: before.other_key.clone(),
        dir: tempfile::tempdir().unwrap(),
    };
    let ok = code(&after, &t, &fake.last_code()).await;
    assert_eq!(ok.json["state"], "success", "{}", ok.json);
    assert_eq!(
        status(&after, &user).await,
        Some(ConnectionStatus::Connected)
    );
}
