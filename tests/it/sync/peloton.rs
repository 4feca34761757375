//! The Peloton connector against [`FakePeloton`] (the link tests' fake: Peloton's Auth0 sign-in
//! and its API): the fixture's workouts page by page, paging that stops once a page reaches
//! before the window, the bearer token, and every failure kind (an expired access token, 429
//! with `Retry-After`, 500). (The sign-in's own outcomes: `link::peloton_sign_in`.)
//!
//! End to end, against the real app and job runner: a user links Peloton with a username and
//! password (`POST /v2/link/provider/password/peloton`: the PKCE sign-in), the
//! `sync.historical` job pulls the fake (through a 429 and a 500) and `GET /v2/summary/workouts`
//! answers exactly the fixture's workouts; a wrong password answers the credential error; an
//! expired access token is renewed with the refresh token (no new sign-in); a revoked refresh
//! token makes the pull sign in again with the sealed password; a changed password (that
//! sign-in refused) puts the connection in `error` with its details, while an outage of the
//! Auth0 host is only retried.
//!
//! The fixtures are dated March 2025; a pull covers the last 90 days, so the fake serves them
//! moved forward by whole days ([`offset_days`]) to end ten days ago.

use std::sync::Arc;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::link::fake_oauth::FakeOAuth;
use crate::link::fake_peloton::{
    ACCESS_TOKEN, FakePeloton, Fault, PASSWORD, REFRESH_TOKEN, USER_ID, USERNAME,
};
use crate::link::{password_app, password_link};
use crate::sync::support::linked::{Linked, instant, offset_days, shifted};
use crate::sync::support::{pull, utc};
use wearhouse::jobs::JobState;
use wearhouse::link::password::{Login, PasswordLogin, SignIn};
use wearhouse::store::metadata::ConnectionStatus;
use wearhouse::sync::connectors::peloton::Peloton;
use wearhouse::sync::{Connector, Resource, SyncError};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/testdata/providers/peloton/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The fixture page's workouts, their unix seconds moved forward by `days`.
fn workouts(days: i64) -> Vec<Value> {
    let mut data = fixture("workouts.json")["data"].as_array().unwrap().clone();
    for w in &mut data {
        for key in ["created_at", "start_time", "end_time"] {
            if let Some(at) = w[key].as_i64() {
                w[key] = json!(at + days * 86_400);
            }
        }
    }
    data
}

/// The expected rows, their dates moved forward by `days`.
fn expected(days: i64) -> Vec<Value> {
    shifted(&fixture("workouts.expected.json"), days)["workouts"]
        .as_array()
        .unwrap()
        .clone()
}

/// Peloton's sign-in at `fake` (both hosts).
fn sign_in_at(fake: &FakePeloton) -> wearhouse::sync::connectors::peloton::access::Peloton {
    wearhouse::sync::connectors::peloton::access::Peloton::new(&fake.base, &fake.base).unwrap()
}

fn login<'a>(password: &'a str) -> Login<'a> {
    Login {
        username: USERNAME,
        password,
        region: None,
    }
}

/// A fake serving the fixture (two workouts a page) and an access token signed in at it.
async fn signed_in() -> (FakePeloton, String) {
    let fake = FakePeloton::start().await;
    fake.serve(workouts(0), 2);
    match sign_in_at(&fake).sign_in(login(PASSWORD)).await {
        SignIn::Accepted {
            provider_user_id,
            session,
            refresh_token,
        } => {
            assert_eq!(provider_user_id, USER_ID);
            assert_eq!(session, ACCESS_TOKEN);
            assert_eq!(refresh_token.as_deref(), Some(REFRESH_TOKEN));
            (fake, session)
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_pull_gives_the_fixture_body_page_by_page() {
    let (fake, session) = signed_in().await;
    let peloton = Peloton::new(&fake.base).unwrap();
    let pulled = peloton
        .pull(
            &session,
            &pull(&[Resource::Workouts], utc(2025, 3, 1), utc(2025, 3, 4)),
        )
        .await
        .unwrap();
    assert_eq!(pulled.body.to_json(), fixture("workouts.expected.json"));
    assert_eq!(pulled.skipped, 1, "the malformed record");
    assert_eq!(fake.pages(), 3, "six workouts, two a page");
    assert_eq!(
        peloton.account(&session).await.unwrap().as_deref(),
        Some(crate::link::fake_peloton::USER_ID)
    );
}

#[tokio::test]
async fn paging_stops_at_the_first_page_older_than_the_window() {
    let (fake, session) = signed_in().await;
    let peloton = Peloton::new(&fake.base).unwrap();
    // From 2025-03-02 12:00: the first page (03-03 07:00, 03-02 18:30) stays inside; the
    // second reaches 03-02 06:15, before it: no third page.
    let start = utc(2025, 3, 2) + chrono::Duration::hours(12);
    let pulled = peloton
        .pull(
            &session,
            &pull(&[Resource::Workouts], start, utc(2025, 3, 4)),
        )
        .await
        .unwrap();
    assert_eq!(fake.pages(), 2);
    let json = pulled.body.to_json();
    let ids: Vec<&str> = json["workouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "c0a1e2f3a4b5c6d7e8f9a0b1c2d3e4f5",
            "d1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"
        ]
    );

    // A pull of nothing Peloton has asks nothing.
    let none = peloton
        .pull(&session, &pull(&[Resource::Sleep], start, utc(2025, 3, 4)))
        .await
        .unwrap();
    assert!(
        none.body.to_json().get("workouts").is_none(),
        "{}",
        none.body.to_json()
    );
    assert_eq!(fake.pages(), 2);
}

#[tokio::test]
async fn every_failure_has_its_kind() {
    let (fake, session) = signed_in().await;
    let peloton = Peloton::new(&fake.base).unwrap();
    let march = pull(&[Resource::Workouts], utc(2025, 3, 1), utc(2025, 3, 4));

    let err = peloton.pull("not-a-token", &march).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");

    fake.fail(&[Fault::RateLimited(7)]);
    let err = peloton.pull(&session, &march).await.unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(7)
            }
        ),
        "{err:?}"
    );

    fake.fail(&[Fault::ServerError]);
    let err = peloton.pull(&session, &march).await.unwrap_err();
    assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");

    fake.expire_access_tokens();
    let err = peloton.pull(&session, &march).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
    assert!(
        !err.to_string().contains(&session),
        "the token is never in an error"
    );
}

/// The app (Peloton's sign-in and connector at `fake`), a user linked to Peloton through the
/// link API (the PKCE sign-in), and the link's answer checked. The harness's authorisation server stays idle:
/// Peloton has no OAuth.
async fn linked(fake: &FakePeloton) -> Linked {
    let app = password_app(
        Arc::new(sign_in_at(fake)),
        Arc::new(Peloton::new(&fake.base).unwrap()),
    )
    .await;
    let user = app.user("peloton-user").await;
    let credentials = json!({"username": USERNAME, "password": PASSWORD});
    let outcome = password_link(&app, &user, "peloton", credentials).await;
    assert_eq!(outcome["state"], "success", "{outcome}");
    Linked {
        app,
        oauth: FakeOAuth::start().await,
        user,
        provider: "peloton",
    }
}

/// A fake serving the moved fixture, a linked user, and the historical pull run to success
/// (through a 429 and a 500); the getter checked against the fixture.
async fn pulled() -> (FakePeloton, Linked) {
    let days = offset_days();
    let fake = FakePeloton::start().await;
    fake.serve(workouts(days), 2);
    let l = linked(&fake).await;
    assert_eq!(fake.logins(), 1);
    fake.fail(&[Fault::RateLimited(1), Fault::ServerError]);
    let done = l.run_until(JobState::Succeeded).await;
    // The 429 is waited out without costing an attempt; the 500 costs one.
    assert_eq!(done.attempts, 2, "{done:?}");

    let got = l.summary("workouts", "id").await;
    let mut want = expected(days);
    want.sort_by_key(|w| w["id"].to_string());
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (got, want) in got.iter().zip(&want) {
        assert_eq!(got["id"], want["id"]);
        assert_eq!(instant(&got["time_start"]), instant(&want["time_start"]));
        assert_eq!(instant(&got["time_end"]), instant(&want["time_end"]));
        assert_eq!(got["sport"]["slug"], want["sport"]["slug"]);
        assert_eq!(got["sport"]["name"], want["sport"]["name"]);
        assert_eq!(got["title"].as_str(), want["title"].as_str(), "{got}");
        for field in ["moving_time", "average_watts"] {
            assert_eq!(got[field].as_f64(), want[field].as_f64(), "{got} {field}");
        }
        assert_eq!(got["provider_id"], want["id"]);
    }
    (fake, l)
}

/// The connection's stored credentials, opened.
async fn stored(l: &Linked) -> wearhouse::sync::credentials::Credentials {
    let uuid: Uuid = l.user.parse().unwrap();
    let state = &l.app.state;
    wearhouse::link::lifecycle::credentials(&state.meta, state.secret.as_ref(), uuid, "peloton")
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_password_answers_the_credential_error() {
    let fake = FakePeloton::start().await;
    let app = password_app(
        Arc::new(sign_in_at(&fake)),
        Arc::new(Peloton::new(&fake.base).unwrap()),
    )
    .await;
    let user = app.user("peloton-user").await;
    let credentials = json!({"username": USERNAME, "password": "not-the-password"});
    let outcome = password_link(&app, &user, "peloton", credentials).await;
    assert_eq!(outcome["state"], "error", "{outcome}");
    assert_eq!(
        outcome["error_type"], "provider_credential_error",
        "{outcome}"
    );
    assert_eq!((fake.attempts(), fake.logins()), (1, 0));
    let connection = app
        .state
        .meta
        .connection(user.parse().unwrap(), "peloton")
        .await
        .unwrap();
    assert!(connection.is_none(), "{connection:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_access_token_is_renewed_by_the_refresh_token() {
    let (fake, l) = pulled().await;
    let before = l.summary("workouts", "id").await;
    let first = stored(&l).await;
    assert_eq!(first.access_token.as_deref(), Some(ACCESS_TOKEN));
    assert_eq!(first.refresh_token.as_deref(), Some(REFRESH_TOKEN));

    fake.expire_access_tokens();
    l.refreshed().await;
    assert_eq!(fake.refreshes(), (1, 1), "one refresh grant, accepted");
    assert_eq!(fake.logins(), 1, "no new sign-in");
    assert_eq!(
        l.summary("workouts", "id").await,
        before,
        "re-pulls replace"
    );

    // The new access token is what the connection now holds (sealed); the refresh token, not
    // rotated, and the password stay.
    let renewed = stored(&l).await;
    assert_ne!(renewed.access_token, first.access_token);
    assert_eq!(renewed.refresh_token.as_deref(), Some(REFRESH_TOKEN));
    assert_eq!(renewed.password.as_deref(), Some(PASSWORD));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_refresh_token_falls_back_to_signing_in_with_the_stored_password() {
    let (fake, l) = pulled().await;
    fake.expire_access_tokens();
    fake.revoke_refresh_tokens();
    l.refreshed().await;
    assert_eq!(fake.refreshes(), (1, 0), "the refresh was refused");
    assert_eq!(fake.logins(), 2, "the pull signed in again");

    // The sign-in's new tokens are kept: the next expiry is renewed by the new refresh token.
    let fresh = stored(&l).await;
    assert_ne!(fresh.access_token.as_deref(), Some(ACCESS_TOKEN));
    let refresh = fresh.refresh_token.clone().unwrap();
    assert_ne!(refresh, REFRESH_TOKEN);
    fake.expire_access_tokens();
    l.refreshed().await;
    assert_eq!(fake.refreshes(), (2, 1));
    assert_eq!(fake.logins(), 2);
    assert_eq!(stored(&l).await.refresh_token, Some(refresh));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_password_puts_the_connection_in_error() {
    let (fake, l) = pulled().await;
    fake.change_password("a-new-one-the-user-chose");
    fake.expire_access_tokens();
    fake.revoke_refresh_tokens();
    let attempts = fake.attempts();

    let connection = l.refresh_until_disconnected().await;
    assert_eq!(connection.status, ConnectionStatus::Error);
    let details = l.assert_errored("provider_credential_error").await;
    assert!(details.error_message.contains("Peloton"), "{details:?}");
    assert!(
        !details.error_message.contains(PASSWORD),
        "no password in the details"
    );
    assert_eq!(fake.refreshes(), (1, 0));
    assert_eq!(fake.attempts(), attempts + 1, "one sign-in, refused");
    assert_eq!(fake.logins(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_auth_outage_is_retried_and_the_connection_stays_connected() {
    let (fake, l) = pulled().await;
    fake.expire_access_tokens();
    fake.sign_in_down(true);

    let runner = l.runner();
    let a = l.refresh("5").await;
    runner.shutdown().await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["success"], false, "{}", a.json);
    let (asked, accepted) = fake.refreshes();
    assert!(asked > 1, "retried, not given up: {asked}");
    assert_eq!(accepted, 0);
    assert_eq!(
        fake.attempts(),
        1,
        "an outage never falls back to the password"
    );
    let connection = l.connection().await;
    assert_eq!(connection.status, ConnectionStatus::Connected);
    assert!(connection.error_details.is_none(), "{connection:?}");

    // Auth0 is back: the next pull refreshes and succeeds.
    fake.sign_in_down(false);
    l.refreshed().await;
    assert_eq!(fake.refreshes().1, 1);
    assert_eq!(fake.logins(), 1);
}
