//! The Polar AccessLink connector (issue 37) against [`fake_polar`], a fake AccessLink API v3
//! on a loopback port: registration, a pull of every resource into the fixtures' bodies, the
//! date ranges asked, and the failure kinds (429 with Polar's `RateLimit-*` headers, 401, 500).
//! [`end_to_end`] runs the same fake behind the app: OAuth link in Polar's token wire,
//! historical pull job, getters, an aggregate query, incremental pulls; [`notify`] Polar's
//! signed webhooks.

pub(super) mod end_to_end;
pub mod fake_polar;
mod notify;

use chrono::Utc;
use serde_json::{Value, json};

use crate::sync::support::linked::{offset_days, shifted};
use crate::sync::support::{all_march, assert_parts, pull, utc};
use end_to_end::fake_polar;
use fake_polar::{Data, FakePolar, Fault, TOKEN, fixture, fixture_data};
use wearhouse::ingest::PushUser;
use wearhouse::schema::Table;
use wearhouse::sync::Pull;
use wearhouse::sync::connectors::polar::Polar;
use wearhouse::sync::{Connector, Resource, SyncError, screen};

/// A fixture's expected body, moved as [`fake_polar`] moves the documents (Polar answers no
/// activity older than a year).
fn moved_fixture(file: &str) -> Value {
    shifted(&fixture(file), offset_days())
}

/// The fixtures' days, 2025-03-01 to 03-03, moved as [`fake_polar`] moves them.
fn fixture_days() -> Pull {
    let days = chrono::Duration::days(offset_days());
    pull(
        &Resource::ALL,
        utc(2025, 3, 1) + days,
        utc(2025, 3, 4) + days,
    )
}

/// 2025-03-01 moved by `plus` more days.
fn day(plus: i64) -> String {
    (utc(2025, 3, 1) + chrono::Duration::days(offset_days() + plus))
        .date_naive()
        .to_string()
}

#[tokio::test]
async fn a_registered_user_is_pulled_into_the_fixtures_bodies() {
    let fake = fake_polar().await;
    let polar = Polar::new(&fake.base).unwrap();
    assert_eq!(polar.provider(), "polar");
    polar.register(TOKEN, "member-1").await.unwrap();
    // Registered before: Polar's 409 is no failure.
    polar.register(TOKEN, "member-1").await.unwrap();
    assert_eq!(fake.members(), ["member-1".to_owned()].into());

    let pulled = polar.pull(TOKEN, &fixture_days()).await.unwrap();
    assert_eq!(pulled.skipped, 0);
    let body = &pulled.body.to_json();
    assert_parts(
        body,
        moved_fixture,
        &[
            ("exercises.expected.json", "/workouts"),
            ("sleep.expected.json", "/sleep"),
            ("activities.expected.json", "/activity"),
            (
                "continuous_heart_rate.expected.json",
                "/timeseries/heartrate",
            ),
        ],
    );
    assert!(body.get("profile").is_none());

    // The days asked: activities as one range, heart rate from the day before the window.
    let log = fake.log();
    let asked: Vec<&String> = log.iter().filter(|l| l.contains("activities")).collect();
    let range = format!("GET /v3/users/activities?from={}&to={}", day(0), day(2));
    assert_eq!(asked, [&range]);
    let days: Vec<&str> = log
        .iter()
        .filter_map(|l| l.strip_prefix("GET /v3/users/continuous-heart-rate/"))
        .collect();
    assert_eq!(days, [day(-1), day(0), day(1), day(2)]);

    let screened = screen(pulled.body.clone(), &PushUser::default(), Utc::now()).unwrap();
    assert!(screened.dropped.is_empty(), "{:?}", screened.dropped);
    assert_eq!(
        screened.batches.counts(),
        json!({"sleep": 2, "activity": 3, "workouts": 3, "timeseries": {"heartrate": 6}})
    );
}

#[tokio::test]
async fn before_registration_polar_serves_nothing() {
    let fake = fake_polar().await;
    let polar = Polar::new(&fake.base).unwrap();
    let pulled = polar.pull(TOKEN, &fixture_days()).await.unwrap();
    assert_eq!(
        pulled.body.to_json(),
        json!({"provider": "polar", "source": {"type": "watch"}})
    );
}

#[tokio::test]
async fn a_long_window_is_asked_in_ranges_polar_accepts() {
    let fake = FakePolar::start(Data::default()).await;
    fake.register(TOKEN, "member-1");
    let polar = Polar::new(&fake.base).unwrap();
    let today = Utc::now().date_naive();
    let start = (today - chrono::Duration::days(60))
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc();
    let end = (today + chrono::Duration::days(1))
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc();
    polar
        .pull(TOKEN, &pull(&[Resource::Activity], start, end))
        .await
        .unwrap();
    let asked: Vec<String> = fake.log();
    assert_eq!(asked.len(), 3, "61 days in ranges of 28: {asked:#?}");
    let day = |d: i64| (today - chrono::Duration::days(d)).to_string();
    assert_eq!(
        asked[0],
        format!("GET /v3/users/activities?from={}&to={}", day(60), day(33))
    );
    assert_eq!(
        asked[2],
        format!("GET /v3/users/activities?from={}&to={}", day(4), day(0))
    );

    // A window older than a year asks nothing: Polar would refuse the range.
    let old = |d: i64| {
        (today - chrono::Duration::days(d))
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc()
    };
    let pulled = polar
        .pull(TOKEN, &pull(&[Resource::Activity], old(400), old(370)))
        .await;
    assert!(pulled.unwrap().body.records(Table::Activity).is_none());
    assert_eq!(fake.log().len(), 3, "no request");
}

#[tokio::test]
async fn rate_limits_wait_for_the_spent_window() {
    let fake = FakePolar::start(fixture_data()).await;
    fake.register(TOKEN, "member-1");
    let polar = Polar::new(&fake.base).unwrap();
    fake.fail_times(Fault::RateLimited { day: false }, 1, 1);
    let err = polar.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(7)
            }
        ),
        "{err:?}"
    );
    fake.fail_times(Fault::RateLimited { day: true }, 0, 1);
    let err = polar.register(TOKEN, "member-1").await.unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(61_230)
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn refused_tokens_and_server_errors_surface_by_kind() {
    let fake = FakePolar::start(fixture_data()).await;
    let polar = Polar::new(&fake.base).unwrap();
    let err = polar.pull("revoked", &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
    let err = polar.register("revoked", "member-1").await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");

    fake.fail_times(Fault::ServerError, 0, 1);
    let err = polar.register(TOKEN, "member-1").await.unwrap_err();
    assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");
    fake.fail_times(Fault::Unauthorised, 1, 1);
    let err = polar
        .pull(
            TOKEN,
            &pull(&[Resource::Sleep], utc(2025, 3, 1), utc(2025, 3, 2)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
}
