//! The WHOOP connector (issue 37) against [`fake_whoop`], a fake WHOOP API v2 on a loopback
//! port: pulls over several pages, the cut to the window, the account id, and every failure
//! kind (429 with `Retry-After` or only `X-RateLimit-Reset`, 401, 500, timeouts, refused
//! connections, unknown paths). [`end_to_end`] runs the same fake behind the app: OAuth link,
//! historical pull job, getters, refresh; [`notify`] WHOOP's signed webhooks.

pub(super) mod end_to_end;
pub mod fake_whoop;
mod notify;

use std::collections::HashMap;

use chrono::Utc;
use serde_json::{Value, json};

use crate::sync::support::failures::failure_kinds;
use crate::sync::support::{all_march, pull, utc};
use fake_whoop::{FakeWhoop, Fault, TOKEN, fixture, fixture_collections};
use wearhouse::ingest::PushUser;
use wearhouse::sync::connectors::whoop::Whoop;
use wearhouse::sync::{Connector, Resource, SyncError, screen};

/// A push body with its tables' rows sorted by `id`.
fn by_id(body: &Value) -> Value {
    let mut body = body.clone();
    for part in ["sleep", "activity", "workouts", "body"] {
        if let Some(rows) = body.get_mut(part).and_then(Value::as_array_mut) {
            rows.sort_by_key(|r| r["id"].to_string());
        }
    }
    body
}

#[tokio::test]
async fn a_multi_page_pull_returns_every_record_exactly_once() {
    let fake = FakeWhoop::start(fixture_collections(), 2).await;
    let whoop = Whoop::new(&fake.base).unwrap();
    assert_eq!(whoop.provider(), "whoop_v2");
    let pulled = whoop.pull(TOKEN, &all_march()).await.unwrap();
    assert_eq!(pulled.skipped, 0);

    // Every resource, normalised exactly as the fixture tests expect it (the body
    // measurement stamped with the pull's end, as its expected file is), in whatever order
    // WHOOP's pages (newest first) brought it.
    let body = &by_id(&pulled.body.to_json());
    let expected =
        |file: &str, pointer: &str| by_id(&fixture(file)).pointer(pointer).cloned().unwrap();
    assert_eq!(body["sleep"], expected("sleep.expected.json", "/sleep"));
    for series in ["heartrate", "hrv", "blood_oxygen", "body_temperature"] {
        assert_eq!(
            body["timeseries"][series],
            expected("recovery.expected.json", &format!("/timeseries/{series}")),
            "{series}"
        );
    }
    assert_eq!(
        body["activity"],
        expected("cycle.expected.json", "/activity")
    );
    assert_eq!(
        body["workouts"],
        expected("workout.expected.json", "/workouts")
    );
    assert_eq!(
        body["body"],
        expected("body_measurement.expected.json", "/body")
    );
    assert_eq!(
        body["profile"],
        expected("body_measurement.expected.json", "/profile")
    );

    // Paging was exercised: 3 sleeps at 2 a page are 2 requests, the second with the token,
    // each asking WHOOP's largest page over the window.
    let log = fake.log();
    let sleeps: Vec<_> = log
        .iter()
        .filter(|l| l.starts_with("activity/sleep?"))
        .collect();
    assert_eq!(sleeps.len(), 2, "{log:#?}");
    assert!(sleeps[0].contains("limit=25"), "{log:#?}");
    assert!(
        sleeps[0].contains("start=2025-03-01T00:00:00.000Z"),
        "{log:#?}"
    );
    assert!(
        sleeps[0].contains("end=2025-03-04T00:00:00.000Z"),
        "{log:#?}"
    );
    assert!(sleeps[1].contains("nextToken="), "{log:#?}");

    // And ingest takes the body as it is.
    let screened = screen(pulled.body.clone(), &PushUser::default(), Utc::now()).unwrap();
    assert!(screened.dropped.is_empty(), "{:?}", screened.dropped);
    assert_eq!(
        screened.batches.counts(),
        json!({
            "sleep": 3, "activity": 2, "workouts": 3, "body": 1, "profile": 1,
            "timeseries": {"heartrate": 1, "hrv": 1, "blood_oxygen": 1, "body_temperature": 1}
        })
    );
}

#[tokio::test]
async fn records_are_cut_to_the_window_by_their_start() {
    // 2025-03-02 only: the night begun on 03-02 04:25 UTC (pending) and the cycle begun then;
    // the night and cycle begun on 03-01 04:10 UTC intersect nothing of it.
    let fake = FakeWhoop::start(fixture_collections(), 25).await;
    let whoop = Whoop::new(&fake.base).unwrap();
    let window = pull(
        &[Resource::Sleep, Resource::Activity, Resource::Workouts],
        utc(2025, 3, 2),
        utc(2025, 3, 3),
    );
    let pulled = whoop.pull(TOKEN, &window).await.unwrap();
    let ids = |part: &str| -> Vec<String> {
        pulled.body.to_json()[part]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|r| r["id"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(ids("sleep"), ["b1d5c0a7-93e4-4f0c-8d61-7a2e4c9f0b12"]);
    assert_eq!(ids("activity"), ["93846"]);
    // The weightlifting session begun 03-02 23:30 UTC; the run of 03-01 is out.
    assert_eq!(ids("workouts"), ["9a7e6d5c-4b3a-4c21-8f0e-1d2c3b4a5f60"]);
    // No profile asked: no body measurement.
    assert!(
        pulled.body.to_json().get("profile").is_none()
            && pulled.body.to_json().get("body").is_none()
    );
    assert!(!fake.log().iter().any(|l| l.starts_with("user/")));
}

#[tokio::test]
async fn the_account_is_the_basic_profiles_user_id() {
    let fake = FakeWhoop::start(fixture_collections(), 2).await;
    let whoop = Whoop::new(&fake.base).unwrap();
    assert_eq!(
        whoop.account(TOKEN).await.unwrap().as_deref(),
        Some("10129")
    );
}

#[tokio::test]
async fn rate_limiting_surfaces_with_its_wait() {
    let fake = FakeWhoop::start(fixture_collections(), 2).await;
    let whoop = Whoop::new(&fake.base).unwrap();
    // On the second request: the second page of sleeps.
    let limited = Fault::RateLimited {
        retry_after: Some(37),
        reset: Some(50),
    };
    fake.fail(limited, 1);
    let err = whoop.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(37)
            }
        ),
        "Retry-After wins: {err:?}"
    );
    // The first failing request ends the pull.
    assert_eq!(fake.log().len(), 2);

    // Without Retry-After, WHOOP's X-RateLimit-Reset names the wait.
    let fake = FakeWhoop::start(fixture_collections(), 2).await;
    let whoop = Whoop::new(&fake.base).unwrap();
    let reset_only = Fault::RateLimited {
        retry_after: None,
        reset: Some(42),
    };
    fake.fail(reset_only, 0);
    let err = whoop.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(42)
            }
        ),
        "{err:?}"
    );
}

failure_kinds! {
    connector: Whoop,
    fake: FakeWhoop::start(fixture_collections(), 2),
    fault: Fault,
    token: TOKEN,
    server_error_after: 3,
    // A fake without the collections: every collection answers 404.
    empty: FakeWhoop::start(HashMap::new(), 2),
    resource: Resource::Workouts,
}
