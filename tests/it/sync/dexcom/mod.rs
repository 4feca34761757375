//! The Dexcom connector (issue 15) against [`fake_dexcom`], a fake Dexcom API v3 on a loopback
//! port: pulls over several 30-day chunks, the unit conversion, and every failure kind (429
//! with `Retry-After`, 401, 500, refused connections, unknown paths). [`end_to_end`] runs the
//! same fake behind the app: link, historical pull job, glucose getter, refresh.

pub(super) mod end_to_end;
pub mod fake_dexcom;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};

use crate::sync::support::failures::{
    assert_refused_tokens_unauthorised, pull_err, refused_connection,
};
use crate::sync::support::{all_march, pull, utc};
use fake_dexcom::{EGVS_PATH, FakeDexcom, Fault, TOKEN, fixture, fixture_records};
use wearhouse::ingest::PushUser;
use wearhouse::sync::connectors::dexcom::Dexcom;
use wearhouse::sync::{Connector, Resource, SyncError, screen};

/// An EGV record as Dexcom's iOS app sends it: `systemTime` in UTC, `displayTime` in −05:00.
fn egv(n: usize, at: DateTime<Utc>, mg_dl: i64) -> Value {
    let local = at.with_timezone(&chrono::FixedOffset::west_opt(5 * 3600).unwrap());
    json!({
        "recordId": format!("00000000-0000-4000-8000-{n:012}"),
        "systemTime": at.format("%Y-%m-%dT%H:%M:%S+00:00").to_string(),
        "displayTime": local.format("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        "transmitterId": "3F7K2Q",
        "transmitterTicks": 1_000_000 + 300 * n,
        "value": mg_dl,
        "status": "ok",
        "trend": "flat",
        "trendRate": 0.1,
        "unit": "mg/dL",
        "rateUnit": "mg/dL/min",
        "displayDevice": "iOS",
        "transmitterGeneration": "g7",
    })
}

fn samples(body: &Value) -> &Vec<Value> {
    body["timeseries"]["glucose"].as_array().unwrap()
}

#[tokio::test]
async fn a_multi_chunk_pull_returns_every_record_exactly_once() {
    // A reading every 5 minutes for 45 days; the fake refuses windows over 30 days.
    let start = utc(2025, 1, 1);
    let records: Vec<Value> = (0..45 * 288)
        .map(|i| {
            egv(
                i,
                start + TimeDelta::minutes(5 * i as i64),
                80 + (i % 120) as i64,
            )
        })
        .collect();
    let fake = FakeDexcom::start(records).await;
    let dexcom = Dexcom::new(&fake.base).unwrap();
    assert_eq!(dexcom.provider(), "dexcom_v3");
    let window = pull(&[Resource::Glucose], start, utc(2025, 2, 15));
    let pulled = dexcom.pull(TOKEN, &window).await.unwrap();
    assert_eq!(pulled.skipped, 0);

    let json = pulled.body.to_json();
    let got = samples(&json);
    let stamps: std::collections::BTreeSet<&str> = got
        .iter()
        .map(|s| s["timestamp"].as_str().unwrap())
        .collect();
    // 12,960 readings, the one on the chunk boundary (2025-01-31 00:00) once.
    assert_eq!((got.len(), stamps.len()), (12_960, 12_960));
    assert!(stamps.contains("2025-01-31T00:00:00Z"));
    assert_eq!(stamps.first(), Some(&"2025-01-01T00:00:00Z"));
    assert_eq!(stamps.last(), Some(&"2025-02-14T23:55:00Z"));
    assert!(got.iter().all(|s| s["timezone_offset"] == json!(-18_000)));

    let log = fake.log();
    assert_eq!(
        log,
        [
            "egvs?endDate=2025-01-31T00:00:00&startDate=2025-01-01T00:00:00",
            "egvs?endDate=2025-02-15T00:00:00&startDate=2025-01-31T00:00:00",
        ]
    );

    let screened = screen(pulled.body, &PushUser::default(), Utc::now()).unwrap();
    assert!(screened.dropped.is_empty());
    assert_eq!(
        screened.batches.counts(),
        json!({"timeseries": {"glucose": 12_960}})
    );
}

#[tokio::test]
async fn the_fixture_pull_gives_the_fixture_body() {
    let fake = FakeDexcom::start(fixture_records()).await;
    let dexcom = Dexcom::new(&fake.base).unwrap();
    let pulled = dexcom.pull(TOKEN, &all_march()).await.unwrap();
    assert_eq!(pulled.skipped, 0);
    assert_eq!(pulled.body.to_json(), fixture("egvs.expected.json"));
    assert_eq!(
        fake.log(),
        ["egvs?endDate=2025-03-04T00:00:00&startDate=2025-03-01T00:00:00"]
    );
    let screened = screen(pulled.body, &PushUser::default(), Utc::now()).unwrap();
    assert_eq!(
        screened.batches.counts(),
        json!({"timeseries": {"glucose": 36}})
    );
}

#[tokio::test]
async fn glucose_arrives_in_mmol_per_litre() {
    let at = |m: i64| utc(2025, 3, 1) + TimeDelta::minutes(m);
    let mut in_mmol = egv(4, at(20), 0);
    in_mmol["value"] = json!(7.2);
    in_mmol["unit"] = json!("mmol/L");
    let records = vec![
        egv(0, at(0), 100),
        egv(1, at(5), 180),
        egv(2, at(10), 40),
        egv(3, at(15), 400),
        in_mmol,
    ];
    let fake = FakeDexcom::start(records).await;
    let dexcom = Dexcom::new(&fake.base).unwrap();
    let pulled = dexcom.pull(TOKEN, &all_march()).await.unwrap();
    let got: Vec<(Value, Value)> = samples(&pulled.body.to_json())
        .iter()
        .map(|s| (s["unit"].clone(), s["value"].clone()))
        .collect();
    let mmol = |v: f64| (json!("mmol/L"), json!(v));
    assert_eq!(
        got,
        [mmol(5.55), mmol(9.99), mmol(2.22), mmol(22.2), mmol(7.2)]
    );
}

#[tokio::test]
async fn the_fake_refuses_windows_over_thirty_days() {
    let fake = FakeDexcom::start(fixture_records()).await;
    let ask = |start: &str, end: &str| {
        let url = format!("{}{EGVS_PATH}", fake.base);
        let query = [("startDate", start.to_owned()), ("endDate", end.to_owned())];
        async move {
            reqwest::Client::new()
                .get(url)
                .query(&query)
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(ask("2025-03-01T00:00:00", "2025-03-31T00:00:00").await, 200);
    assert_eq!(ask("2025-03-01T00:00:00", "2025-03-31T00:00:01").await, 400);
    assert_eq!(
        ask("2025-03-01T00:00:00Z", "2025-03-02T00:00:00Z").await,
        400
    );
}

#[tokio::test]
async fn rate_limiting_surfaces_with_its_retry_after() {
    let fake = FakeDexcom::start(fixture_records()).await;
    let dexcom = Dexcom::new(&fake.base).unwrap();
    // On the second request: the second 30-day chunk of a 45-day window.
    fake.fail_times(Fault::RateLimited { retry_after: 37 }, 1, 1);
    let long = pull(&[Resource::Glucose], utc(2025, 2, 1), utc(2025, 3, 18));
    let err = dexcom.pull(TOKEN, &long).await.unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(37)
            }
        ),
        "{err:?}"
    );
    // The first failing request ends the pull; once the limit has passed, it succeeds.
    assert_eq!(fake.log().len(), 2);
    let pulled = dexcom.pull(TOKEN, &long).await.unwrap();
    assert_eq!(samples(&pulled.body.to_json()).len(), 36);
}

#[tokio::test]
async fn a_refused_token_is_unauthorised() {
    let faulted = FakeDexcom::start(fixture_records()).await;
    faulted.fail(Fault::Unauthorised, 0);
    let fresh = FakeDexcom::start(fixture_records()).await;
    let dexcom = Dexcom::new(&fresh.base).unwrap();
    assert_refused_tokens_unauthorised(&Dexcom::new(&faulted.base).unwrap(), TOKEN, &dexcom).await;
    fresh.accept_when(|t| t == "revoked");
    assert!(dexcom.pull("revoked", &all_march()).await.is_ok());
}

#[tokio::test]
async fn server_errors_and_refused_connections_are_transient() {
    let fake = FakeDexcom::start(fixture_records()).await;
    fake.fail(Fault::ServerError, 0);
    let err = pull_err(&Dexcom::new(&fake.base).unwrap(), TOKEN).await;
    assert!(
        matches!(&err, SyncError::Transient { source: None, .. }),
        "{err:?}"
    );

    let err = refused_connection(Dexcom::new, TOKEN).await;
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
}

#[tokio::test]
async fn an_unknown_path_is_permanent() {
    let fake = FakeDexcom::start(fixture_records()).await;
    let dexcom = Dexcom::new(&format!("{}/not-dexcom", fake.base)).unwrap();
    let err = dexcom.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(matches!(err, SyncError::Permanent { .. }), "{err:?}");
}

#[tokio::test]
async fn a_pull_without_glucose_asks_nothing() {
    let fake = FakeDexcom::start(fixture_records()).await;
    let dexcom = Dexcom::new(&fake.base).unwrap();
    let sleep_only = pull(&[Resource::Sleep], utc(2025, 3, 1), utc(2025, 3, 4));
    let pulled = dexcom.pull(TOKEN, &sleep_only).await.unwrap();
    assert_eq!(
        pulled.body.to_json(),
        json!({"provider": "dexcom_v3", "source": {"type": "automatic"}})
    );
    assert!(fake.log().is_empty());
}
