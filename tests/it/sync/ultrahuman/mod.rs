//! The Ultrahuman connector (issue 37) against [`fake_ultrahuman`], a fake Ultrahuman partner
//! API on a loopback port: a pull of every metric into the fixtures' bodies, the 7-day ranges it
//! asks, and the failure kinds (429 with `Retry-After`, 401, 500, timeouts, refused
//! connections, a refused range). [`end_to_end`] runs the same fake behind the app: OAuth link,
//! historical pull job, getters, an aggregate query, incremental pulls.

pub(super) mod end_to_end;
pub mod fake_ultrahuman;

use chrono::Utc;
use serde_json::json;

use crate::sync::support::failures::failure_kinds;
use crate::sync::support::{assert_parts, pull, utc};
use fake_ultrahuman::{FakeUltrahuman, Fault, TOKEN, fixture, fixture_days};
use wearhouse::ingest::PushUser;
use wearhouse::sync::connectors::ultrahuman::Ultrahuman;
use wearhouse::sync::{Connector, Resource, SyncError, screen};

/// The fixtures' days with a margin: 2025-02-28 … 03-04 UTC (the zone is +05:30).
fn fixture_window() -> wearhouse::sync::Pull {
    pull(&Resource::ALL, utc(2025, 2, 28), utc(2025, 3, 5))
}

#[tokio::test]
async fn a_pull_returns_every_metric_as_the_fixture_tests_expect_it() {
    let fake = FakeUltrahuman::start(fixture_days()).await;
    let ultrahuman = Ultrahuman::new(&fake.base).unwrap();
    assert_eq!(ultrahuman.provider(), "ultrahuman");
    let pulled = ultrahuman.pull(TOKEN, &fixture_window()).await.unwrap();
    assert_eq!(pulled.skipped, 0);
    let body = &pulled.body.to_json();
    assert_eq!(body["provider"], "ultrahuman");
    assert_eq!(body["source"], json!({"type": "ring"}));
    assert_parts(
        body,
        fixture,
        &[
            ("sleep.expected.json", "/sleep"),
            ("steps.expected.json", "/activity"),
            ("heart_rate.expected.json", "/timeseries/heartrate"),
            ("hrv.expected.json", "/timeseries/hrv"),
            ("temperature.expected.json", "/timeseries/body_temperature"),
            ("spo2.expected.json", "/timeseries/blood_oxygen"),
            ("vo2_max.expected.json", "/timeseries/vo2_max"),
            ("glucose.expected.json", "/timeseries/glucose"),
        ],
    );
    assert!(body.get("profile").is_none());

    // One request: five days fit in one range, asked as unix seconds.
    let log = fake.log();
    assert_eq!(log.len(), 1, "{log:#?}");
    let (from, to) = (utc(2025, 2, 28).timestamp(), utc(2025, 3, 5).timestamp());
    assert_eq!(
        log[0],
        format!("daily_metrics?end_epoch={to}&start_epoch={from}")
    );

    // Ingest takes the body as it is.
    let screened = screen(pulled.body.clone(), &PushUser::default(), Utc::now()).unwrap();
    assert!(screened.dropped.is_empty(), "{:?}", screened.dropped);
    assert_eq!(
        screened.batches.counts(),
        json!({
            "sleep": 3, "activity": 3,
            "timeseries": {"heartrate": 11, "hrv": 8, "body_temperature": 5,
                           "blood_oxygen": 5, "vo2_max": 3, "glucose": 5}
        })
    );
}

#[tokio::test]
async fn a_long_window_is_asked_in_ranges_of_at_most_seven_days() {
    let fake = FakeUltrahuman::start(fixture_days()).await;
    let ultrahuman = Ultrahuman::new(&fake.base).unwrap();
    // 2025-02-01 … 03-31: 58 days, 9 ranges; the fake refuses any longer than 7 days.
    let window = pull(&Resource::ALL, utc(2025, 2, 1), utc(2025, 3, 31));
    let pulled = ultrahuman.pull(TOKEN, &window).await.unwrap();
    assert_eq!(pulled.body.to_json()["sleep"].as_array().unwrap().len(), 3);
    let json = pulled.body.to_json();
    let hr = json["timeseries"]["heartrate"].as_array().unwrap();
    assert_eq!(
        hr.len(),
        11,
        "each reading once, though two ranges answer its day"
    );
    let log = fake.log();
    assert_eq!(log.len(), 9, "{log:#?}");
    assert!(log[8].contains(&format!("end_epoch={}", utc(2025, 3, 31).timestamp())));
}

#[tokio::test]
async fn only_the_profile_asks_nothing() {
    let fake = FakeUltrahuman::start(fixture_days()).await;
    let ultrahuman = Ultrahuman::new(&fake.base).unwrap();
    let window = pull(&[Resource::Profile], utc(2025, 3, 1), utc(2025, 3, 4));
    let pulled = ultrahuman.pull(TOKEN, &window).await.unwrap();
    assert!(
        pulled.body.to_json().get("timeseries").is_none()
            && pulled.body.to_json().get("sleep").is_none()
    );
    assert!(fake.log().is_empty());
}

#[tokio::test]
async fn rate_limiting_surfaces_with_its_wait() {
    let fake = FakeUltrahuman::start(fixture_days()).await;
    let ultrahuman = Ultrahuman::new(&fake.base).unwrap();
    fake.fail(Fault::RateLimited { retry_after: 37 }, 1);
    let window = pull(&Resource::ALL, utc(2025, 2, 1), utc(2025, 3, 31));
    let err = ultrahuman.pull(TOKEN, &window).await.unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(37)
            }
        ),
        "{err:?}"
    );
    // The first failing request ends the pull.
    assert_eq!(fake.log().len(), 2);
}

failure_kinds! {
    connector: Ultrahuman,
    fake: FakeUltrahuman::start(fixture_days()),
    fault: Fault,
    token: TOKEN,
    server_error_after: 0,
    empty: FakeUltrahuman::start(fixture_days()),
    // A base without the partner API's path: every request answers 404.
    unknown_below: "/nowhere",
    resource: Resource::Sleep,
}

#[tokio::test]
async fn a_malformed_entry_is_skipped_and_the_rest_kept() {
    let fake = FakeUltrahuman::start(fixture_days()).await;
    let ultrahuman = Ultrahuman::new(&fake.base).unwrap();
    fake.malform_next();
    let pulled = ultrahuman.pull(TOKEN, &fixture_window()).await.unwrap();
    assert_eq!(pulled.skipped, 1);
    assert_eq!(pulled.body.to_json()["sleep"].as_array().unwrap().len(), 3);
}
