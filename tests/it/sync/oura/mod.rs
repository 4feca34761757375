//! The Oura connector (issue 15) against [`fake_oura`], a fake Oura API v2 on a loopback port:
//! pulls over several pages and chunks, and every failure kind (429 with `Retry-After`, 401,
//! 500, timeouts, refused connections, unknown paths).

pub mod fake_oura;

use std::collections::HashMap;

use chrono::Utc;
use serde_json::{Value, json};

use crate::sync::support::failures::failure_kinds;
use crate::sync::support::{all_march, assert_parts, pull, utc};
use fake_oura::{FakeOura, Fault, TOKEN, fixture, fixture_collections};
use wearhouse::ingest::PushUser;
use wearhouse::sync::connectors::oura::Oura;
use wearhouse::sync::{Connector, Resource, SyncError, screen};

#[tokio::test]
async fn a_multi_page_pull_returns_every_record_exactly_once() {
    let fake = FakeOura::start(fixture_collections(), 2).await;
    let oura = Oura::new(&fake.base).unwrap();
    assert_eq!(oura.provider(), "oura");
    let pulled = oura.pull(TOKEN, &all_march()).await.unwrap();
    assert_eq!(pulled.skipped, 0);

    // Every collection's documents, normalised, exactly as the fixture tests expect them.
    assert_parts(
        &pulled.body.to_json(),
        fixture,
        &[
            ("sleep.expected.json", "/sleep"),
            ("sleep.expected.json", "/timeseries/hrv"),
            ("daily_activity.expected.json", "/activity"),
            ("workout.expected.json", "/workouts"),
            ("heartrate.expected.json", "/timeseries/heartrate"),
            ("daily_spo2.expected.json", "/timeseries/blood_oxygen"),
            ("personal_info.expected.json", "/profile"),
        ],
    );

    // Paging was exercised: 10 heart-rate samples at 2 per page are 5 requests.
    let log = fake.log();
    let heartrate: Vec<_> = log.iter().filter(|l| l.starts_with("heartrate?")).collect();
    assert_eq!(heartrate.len(), 5, "{log:#?}");
    assert!(heartrate[0].contains("end_datetime=2025-03-04T00:00:00Z"));
    assert!(heartrate[0].contains("start_datetime=2025-03-01T00:00:00Z"));
    assert!(heartrate[1..].iter().all(|l| l.contains("next_token=")));
    assert!(
        log.iter()
            .any(|l| l.starts_with("sleep?") && l.contains("next_token="))
    );

    // And ingest takes the body as it is.
    let screened = screen(pulled.body.clone(), &PushUser::default(), Utc::now()).unwrap();
    assert!(screened.dropped.is_empty());
    assert_eq!(
        screened.batches.counts(),
        json!({
            "sleep": 2, "activity": 2, "workouts": 2, "profile": 1,
            "timeseries": {"heartrate": 10, "hrv": 86, "blood_oxygen": 2}
        })
    );
}

#[tokio::test]
async fn a_day_of_heart_rate_over_many_pages_is_cut_to_the_window() {
    // One sample a minute from 2025-03-01 00:00 to 2025-03-02 23:59 UTC; the fake's bounds
    // are inclusive, the window's end is not.
    let samples: Vec<Value> = (0..2 * 1440)
        .map(|i| {
            let at = utc(2025, 3, 1) + chrono::TimeDelta::minutes(i);
            json!({
                "bpm": 55 + i % 40,
                "source": "awake",
                "timestamp": at.to_rfc3339(),
                "timestamp_unix": at.timestamp_millis(),
            })
        })
        .collect();
    let fake = FakeOura::start(HashMap::from([("heartrate".to_owned(), samples)]), 100).await;
    let oura = Oura::new(&fake.base).unwrap();
    let window = pull(&[Resource::Heartrate], utc(2025, 3, 1), utc(2025, 3, 2));
    let pulled = oura.pull(TOKEN, &window).await.unwrap();
    let json = pulled.body.to_json();
    let got = json["timeseries"]["heartrate"].as_array().unwrap();
    assert_eq!(got.len(), 1440);
    let stamps: std::collections::BTreeSet<&str> = got
        .iter()
        .map(|s| s["timestamp"].as_str().unwrap())
        .collect();
    assert_eq!(stamps.len(), 1440, "a sample came twice");
    assert_eq!(stamps.first(), Some(&"2025-03-01T00:00:00Z"));
    assert_eq!(stamps.last(), Some(&"2025-03-01T23:59:00Z"));
    // 1441 samples match the fake's inclusive bounds: 15 pages of 100.
    assert_eq!(fake.log().len(), 15);
}

#[tokio::test]
async fn a_long_heart_rate_window_is_asked_in_chunks_the_api_accepts() {
    // One sample every 6 hours for 45 days; the fake refuses ranges over 30 days.
    let samples: Vec<Value> = (0..45 * 4)
        .map(|i| {
            let at = utc(2025, 1, 1) + chrono::TimeDelta::hours(6 * i);
            json!({"bpm": 60, "source": "rest", "timestamp": at.to_rfc3339()})
        })
        .collect();
    let fake = FakeOura::start(HashMap::from([("heartrate".to_owned(), samples)]), 50).await;
    let oura = Oura::new(&fake.base).unwrap();
    let window = pull(&[Resource::Heartrate], utc(2025, 1, 1), utc(2025, 2, 15));
    let pulled = oura.pull(TOKEN, &window).await.unwrap();
    let json = pulled.body.to_json();
    let got = json["timeseries"]["heartrate"].as_array().unwrap();
    let stamps: std::collections::BTreeSet<&str> = got
        .iter()
        .map(|s| s["timestamp"].as_str().unwrap())
        .collect();
    // 180 samples, the one on the chunk boundary (2025-01-31 00:00) once.
    assert_eq!((got.len(), stamps.len()), (180, 180));
    assert!(stamps.contains("2025-01-31T00:00:00Z"));
    let log = fake.log();
    // 121 then 60 samples match the two chunks at the fake's inclusive bounds: 3 + 2 pages.
    assert_eq!(log.len(), 5, "{log:#?}");
    assert!(
        log[0].contains("end_datetime=2025-01-31T00:00:00Z"),
        "{log:#?}"
    );
    assert!(
        log.iter()
            .any(|l| l.contains("start_datetime=2025-01-31T00:00:00Z")
                && l.contains("end_datetime=2025-02-15T00:00:00Z")),
        "{log:#?}"
    );
}

#[tokio::test]
async fn rate_limiting_surfaces_with_its_retry_after() {
    let fake = FakeOura::start(fixture_collections(), 2).await;
    let oura = Oura::new(&fake.base).unwrap();
    // On the second request: the second page of sleep periods.
    fake.fail(Fault::RateLimited { retry_after: 37 }, 1);
    let err = oura.pull(TOKEN, &all_march()).await.unwrap_err();
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
    connector: Oura,
    fake: FakeOura::start(fixture_collections(), 2),
    fault: Fault,
    token: TOKEN,
    server_error_after: 1,
    // A fake without the collections: every collection answers 404.
    empty: FakeOura::start(HashMap::new(), 2),
    resource: Resource::Sleep,
}
