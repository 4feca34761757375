//! The Ultrahuman connector (issue 37) against [`fake_ultrahuman`], a fake Ultrahuman partner
//! API on a loopback port: a pull of every metric into the fixtures' bodies, the 7-day ranges it
//! asks, and the failure kinds (429 with `Retry-After`, 401, 500, timeouts, refused
//! connections, a refused range). [`end_to_end`] runs the same fake behind the app: OAuth link,
//! historical pull job, getters, an aggregate query, incremental pulls.

pub(super) mod end_to_end;
pub mod fake_ultrahuman;

use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};

use crate::sync::support::{all_march, pull, utc};
use fake_ultrahuman::{FakeUltrahuman, Fault, TOKEN, fixture, fixture_days};
use wearhouse::ingest::PushUser;
use wearhouse::sync::connectors::ultrahuman::Ultrahuman;
use wearhouse::sync::{Connector, Resource, SyncError, screen};

/// The fixtures' days with a margin: 2025-02-28 … 03-04 UTC (the zone is +05:30).
fn fixture_window() -> wearhouse::sync::Pull {
    pull(&Resource::ALL, utc(2025, 2, 28), utc(2025, 3, 5))
}

/// The part at `pointer` of a fixture's expected body.
fn expected(file: &str, pointer: &str) -> Value {
    fixture(file).pointer(pointer).cloned().unwrap()
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
    assert_eq!(body["sleep"], expected("sleep.expected.json", "/sleep"));
    assert_eq!(
        body["activity"],
        expected("steps.expected.json", "/activity")
    );
    for (file, series) in [
        ("heart_rate", "heartrate"),
        ("hrv", "hrv"),
        ("temperature", "body_temperature"),
        ("spo2", "blood_oxygen"),
        ("vo2_max", "vo2_max"),
        ("glucose", "glucose"),
    ] {
        assert_eq!(
            body["timeseries"][series],
            expected(
                &format!("{file}.expected.json"),
                &format!("/timeseries/{series}")
            ),
            "{series}"
        );
    }
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

#[tokio::test]
async fn a_refused_token_is_unauthorised() {
    let fake = FakeUltrahuman::start(fixture_days()).await;
    let ultrahuman = Ultrahuman::new(&fake.base).unwrap();
    fake.fail(Fault::Unauthorised, 0);
    let err = ultrahuman.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");

    let fake = FakeUltrahuman::start(fixture_days()).await;
    let ultrahuman = Ultrahuman::new(&fake.base).unwrap();
    let err = ultrahuman.pull("revoked", &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
}

#[tokio::test]
async fn server_errors_timeouts_and_refused_connections_are_transient() {
    let fake = FakeUltrahuman::start(fixture_days()).await;
    let ultrahuman = Ultrahuman::new(&fake.base).unwrap();
    fake.fail(Fault::ServerError, 0);
    let err = ultrahuman.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");

    fake.fail(Fault::Hang, 0);
    let quick = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let impatient = Ultrahuman::with_client(url::Url::parse(&fake.base).unwrap(), quick);
    let err = impatient.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(
        matches!(
            &err,
            SyncError::Transient {
                source: Some(_),
                ..
            }
        ),
        "{err:?}"
    );

    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let err = Ultrahuman::new(&closed)
        .unwrap()
        .pull(TOKEN, &all_march())
        .await
        .unwrap_err();
    assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");
}

#[tokio::test]
async fn a_refused_request_is_permanent() {
    // A base without the partner API's path: every request answers 404.
    let fake = FakeUltrahuman::start(fixture_days()).await;
    let elsewhere = Ultrahuman::new(&format!("{}/nowhere", fake.base)).unwrap();
    let err = elsewhere.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Permanent { .. }), "{err:?}");
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
