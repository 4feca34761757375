//! The Peloton connector against [`FakePeloton`] (the link tests' fake, which also serves
//! `/api/me` and the workouts pages): the fixture's workouts page by page, paging that stops
//! once a page reaches before the window, the session cookie, and every failure kind (an
//! expired session, 429 with `Retry-After`, 500).
//!
//! End to end, against the real app and job runner: a user links Peloton with a username and
//! password (`POST /v2/link/provider/password/peloton`), the `sync.historical` job pulls the
//! fake (through a 429 and a 500) and `GET /v2/summary/workouts` answers exactly the fixture's
//! workouts; an expired session makes the next pull sign in again and succeed; a changed
//! password (the sign-in refused) puts the connection in `error` with its details, while a
//! sign-in outage is only retried.
//!
//! The fixtures are dated March 2025; a pull covers the last 90 days, so the fake serves them
//! moved forward by whole days ([`offset_days`]) to end ten days ago.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::link::fake_oauth::FakeOAuth;
use crate::link::fake_peloton::{FakePeloton, Fault, PASSWORD, SESSION_ID, USERNAME};
use crate::link::{password_app, password_link};
use crate::sync_support::linked::{LONG, Linked, instant, offset_days, shifted};
use crate::sync_support::{pull, utc};
use wearhouse::jobs::JobState;
use wearhouse::store::metadata::ConnectionStatus;
use wearhouse::sync::peloton::Peloton;
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

/// A fake serving the fixture (two workouts a page) and a session signed in at it.
async fn signed_in() -> (FakePeloton, String) {
    let fake = FakePeloton::start().await;
    fake.serve(workouts(0), 2);
    let answer = reqwest::Client::new()
        .post(format!("{}/auth/login", fake.base))
        .json(&json!({"username_or_email": USERNAME, "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    let session: Value = answer.json().await.unwrap();
    (fake, session["session_id"].as_str().unwrap().to_owned())
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
    assert_eq!(pulled.body, fixture("workouts.expected.json"));
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
    let ids: Vec<&str> = pulled.body["workouts"]
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
    assert!(none.body.get("workouts").is_none(), "{}", none.body);
    assert_eq!(fake.pages(), 2);
}

#[tokio::test]
async fn every_failure_has_its_kind() {
    let (fake, session) = signed_in().await;
    let peloton = Peloton::new(&fake.base).unwrap();
    let march = pull(&[Resource::Workouts], utc(2025, 3, 1), utc(2025, 3, 4));

    let err = peloton.pull("not-a-session", &march).await.unwrap_err();
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

    fake.expire_sessions();
    let err = peloton.pull(&session, &march).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
    assert!(
        !err.to_string().contains(&session),
        "the session is never in an error"
    );
}

/// The app (Peloton's sign-in and connector at `fake`), a user linked to Peloton through the
/// link API, and the link's answer checked. The harness's authorisation server stays idle:
/// Peloton has no OAuth.
async fn linked(fake: &FakePeloton) -> Linked {
    let app = password_app(
        Arc::new(wearhouse::link::password::peloton::Peloton::new(&fake.base).unwrap()),
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

#[tokio::test(flavor = "multi_thread")]
async fn a_linked_account_is_pulled_and_an_expired_session_is_renewed() {
    let (fake, l) = pulled().await;
    let before = l.summary("workouts", "id").await;

    fake.expire_sessions();
    l.refreshed().await;
    assert_eq!(fake.logins(), 2, "the pull signed in again");
    assert_eq!(
        l.summary("workouts", "id").await,
        before,
        "re-pulls replace"
    );

    // The renewed session is what the connection now holds (sealed), not the first one.
    let uuid: Uuid = l.user.parse().unwrap();
    let state = &l.app.state;
    let credentials = wearhouse::link::connections::credentials(
        &state.meta,
        state.secret.as_ref(),
        uuid,
        "peloton",
    )
    .await
    .unwrap()
    .unwrap();
    let session = credentials.access_token.unwrap();
    assert_ne!(session, SESSION_ID);
    assert_eq!(credentials.password.as_deref(), Some(PASSWORD));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_password_puts_the_connection_in_error() {
    let (fake, l) = pulled().await;
    fake.change_password("a-new-one-the-user-chose");
    fake.expire_sessions();
    let attempts = fake.attempts();

    let runner = l.runner();
    let a = l.refresh("20").await;
    assert_eq!(a.status, 200, "{}", a.json);
    let uuid: Uuid = l.user.parse().unwrap();
    let deadline = tokio::time::Instant::now() + LONG;
    let connection = loop {
        let c = l
            .app
            .state
            .meta
            .connection(uuid, "peloton")
            .await
            .unwrap()
            .unwrap();
        if c.status != ConnectionStatus::Connected || tokio::time::Instant::now() > deadline {
            break c;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    runner.shutdown().await;

    assert_eq!(connection.status, ConnectionStatus::Error);
    let details = connection.error_details.unwrap();
    assert_eq!(details.error_type, "provider_credential_error");
    assert!(details.error_message.contains("Peloton"), "{details:?}");
    assert!(
        !details.error_message.contains(PASSWORD),
        "no password in the details"
    );
    assert_eq!(fake.attempts(), attempts + 1, "one sign-in, refused");
    assert_eq!(fake.logins(), 1);
    let types = l.event_types().await;
    assert!(
        types.iter().any(|t| t == "provider.connection.error"),
        "{types:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sign_in_outage_is_retried_and_the_connection_stays_connected() {
    let (fake, l) = pulled().await;
    fake.expire_sessions();
    fake.sign_in_down(true);
    let attempts = fake.attempts();

    let runner = l.runner();
    let a = l.refresh("5").await;
    runner.shutdown().await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["success"], false, "{}", a.json);
    assert!(fake.attempts() > attempts + 1, "retried, not given up");
    let uuid: Uuid = l.user.parse().unwrap();
    let connection = l
        .app
        .state
        .meta
        .connection(uuid, "peloton")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(connection.status, ConnectionStatus::Connected);
    assert!(connection.error_details.is_none(), "{connection:?}");

    // Peloton is back: the next pull signs in and succeeds.
    fake.sign_in_down(false);
    l.refreshed().await;
    assert_eq!(fake.logins(), 2);
}
