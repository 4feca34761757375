//! The Oura connector (issue 15) against [`fake_oura`], a fake Oura API v2 on a loopback port:
//! pulls over several pages and chunks, and every failure kind (429 with `Retry-After`, 401,
//! 500, timeouts, refused connections, unknown paths).

pub mod fake_oura;

use std::collections::HashMap;
use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};

use crate::sync::support::{all_march, pull, utc};
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
    let body = &pulled.body.to_json();
    let expected = |file: &str, pointer: &str| fixture(file).pointer(pointer).cloned().unwrap();
    assert_eq!(body["sleep"], expected("sleep.expected.json", "/sleep"));
    assert_eq!(
        body["timeseries"]["hrv"],
        expected("sleep.expected.json", "/timeseries/hrv")
    );
    assert_eq!(
        body["activity"],
        expected("daily_activity.expected.json", "/activity")
    );
    assert_eq!(
        body["workouts"],
        expected("workout.expected.json", "/workouts")
    );
    assert_eq!(
        body["timeseries"]["heartrate"],
        expected("heartrate.expected.json", "/timeseries/heartrate")
    );
    assert_eq!(
        body["timeseries"]["blood_oxygen"],
        expected("daily_spo2.expected.json", "/timeseries/blood_oxygen")
    );
    assert_eq!(
        body["profile"],
        expected("personal_info.expected.json", "/profile")
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
    let got = pulled.body.to_json()["timeseries"]["heartrate"]
        .as_array()
        .unwrap();
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
    let got = pulled.body.to_json()["timeseries"]["heartrate"]
        .as_array()
        .unwrap();
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

#[tokio::test]
async fn a_refused_token_is_unauthorised() {
    let fake = FakeOura::start(fixture_collections(), 2).await;
    let oura = Oura::new(&fake.base).unwrap();
    fake.fail(Fault::Unauthorised, 0);
    let err = oura.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");

    // The fake's own check: a token it never issued.
    let fake = FakeOura::start(fixture_collections(), 2).await;
    let oura = Oura::new(&fake.base).unwrap();
    let err = oura.pull("revoked", &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
}

#[tokio::test]
async fn server_errors_timeouts_and_refused_connections_are_transient() {
    let fake = FakeOura::start(fixture_collections(), 2).await;
    let oura = Oura::new(&fake.base).unwrap();
    fake.fail(Fault::ServerError, 1);
    let err = oura.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");

    fake.fail(Fault::Hang, 0);
    let quick = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let impatient = Oura::with_client(url::Url::parse(&fake.base).unwrap(), quick);
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
    let err = Oura::new(&closed)
        .unwrap()
        .pull(TOKEN, &all_march())
        .await
        .unwrap_err();
    assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");
}

#[tokio::test]
async fn an_unknown_path_is_permanent() {
    // A fake without the collections: every collection answers 404.
    let fake = FakeOura::start(HashMap::new(), 2).await;
    let oura = Oura::new(&fake.base).unwrap();
    let err = oura
        .pull(
            TOKEN,
            &pull(&[Resource::Sleep], utc(2025, 3, 1), utc(2025, 3, 2)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, SyncError::Permanent { .. }), "{err:?}");
}
