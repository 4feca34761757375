//! The Fitbit connector (issue 15) against [`fake_fitbit`], a fake Fitbit Web API on a loopback
//! port: a pull of every resource from the fixtures, a pull long enough to need several ranges
//! per endpoint, and every failure kind (429 with `Retry-After` or only
//! `Fitbit-Rate-Limit-Reset`, 401, 500). [`end_to_end`] runs the same fake behind the app:
//! link, historical pull job, getters, refresh.

pub(super) mod end_to_end;
pub mod fake_fitbit;

use std::collections::BTreeSet;

use chrono::{Days, NaiveDate, Utc};
use serde_json::{Value, json};

use crate::sync::support::failures::assert_refused_tokens_unauthorised;
use crate::sync::support::{all_march, assert_parts, pull, utc};
use fake_fitbit::{Data, FakeFitbit, Fault, TOKEN, fixture, fixture_data};
use wearhouse::ingest::PushUser;
use wearhouse::sync::connectors::fitbit::Fitbit;
use wearhouse::sync::{Connector, Resource, SyncError, screen};

#[tokio::test]
async fn a_pull_of_every_resource_gives_the_fixture_bodies() {
    let fake = FakeFitbit::start(fixture_data()).await;
    let fitbit = Fitbit::new(&fake.base).unwrap();
    assert_eq!(fitbit.provider(), "fitbit");
    let pulled = fitbit.pull(TOKEN, &all_march()).await.unwrap();
    assert_eq!(pulled.skipped, 0);

    let body = &pulled.body.to_json();
    assert_parts(
        body,
        fixture,
        &[
            ("sleep.expected.json", "/sleep"),
            ("activities.expected.json", "/activity"),
            ("heart_intraday.expected.json", "/timeseries/heartrate"),
            ("steps_intraday.expected.json", "/timeseries/steps"),
            ("profile.expected.json", "/profile"),
            ("weight.expected.json", "/timeseries/weight"),
        ],
    );
    assert_eq!(body["body"].as_array().unwrap().len(), 3);

    // The profile first (its zone reads every other answer), then the documented paths: the
    // window's four local days (2025-03-04 00:00 UTC is 01:00 in Berlin), sleep and body logs
    // one day more on each side.
    let log = fake.log();
    assert_eq!(log[0], "/1/user/-/profile.json");
    assert_eq!(log[1], "/1.2/user/-/sleep/date/2025-02-28/2025-03-05.json");
    assert!(log.contains(&"/1/user/-/activities/date/2025-03-04.json".to_owned()));
    assert!(log.contains(&"/1/user/-/activities/heart/date/2025-03-01/1d/1min.json".to_owned()));
    assert!(log.contains(&"/1/user/-/activities/steps/date/2025-03-02/1d/15min.json".to_owned()));
    assert!(log.contains(&"/1/user/-/body/log/fat/date/2025-02-28/2025-03-05.json".to_owned()));
    assert_eq!(log.len(), 1 + 1 + 4 * 3 + 2, "{log:#?}");

    let screened = screen(pulled.body.clone(), &PushUser::default(), Utc::now()).unwrap();
    assert!(screened.dropped.is_empty());
    let steps = body["timeseries"]["steps"].as_array().unwrap().len();
    assert_eq!(
        screened.batches.counts(),
        json!({
            "sleep": 4, "activity": 2, "body": 3, "profile": 1,
            "timeseries": {"heartrate": 20, "steps": steps, "weight": 2, "fat": 2}
        })
    );
}

/// A classic sleep log ending at 07:00 local on `day`, and a weight log at 07:00 (and a fat
/// log every other day).
fn night_and_weigh_in(day: NaiveDate, i: u64) -> (Value, Value, Option<Value>) {
    let before = day.checked_sub_days(Days::new(1)).unwrap();
    let sleep = json!({
        "dateOfSleep": day.to_string(), "duration": 28_800_000, "efficiency": 93,
        "endTime": format!("{day}T07:00:00.000"), "infoCode": 0, "isMainSleep": true,
        "levels": {"data": [], "summary": {}}, "logId": 40_000_000_000u64 + i,
        "logType": "auto_detected", "minutesAfterWakeup": 0, "minutesAsleep": 440,
        "minutesAwake": 40, "minutesToFallAsleep": 5,
        "startTime": format!("{before}T23:00:00.000"), "timeInBed": 480, "type": "classic"
    });
    let weight = json!({
        "bmi": 22.3, "date": day.to_string(), "logId": 1_700_000_000_000u64 + i,
        "source": "Aria", "time": "07:00:00", "weight": 63.0 + (i % 10) as f64 / 10.0
    });
    let fat = i.is_multiple_of(2).then(|| {
        json!({"date": day.to_string(), "fat": 24.0, "logId": 1_700_000_000_000u64 + i,
               "source": "Aria", "time": "07:00:00"})
    });
    (sleep, weight, fat)
}

#[tokio::test]
async fn a_multi_chunk_pull_returns_every_record_exactly_once() {
    // 123 nights and weigh-ins, 2024-12-31 … 2025-05-02; the fake refuses sleep ranges over 100
    // days and body-log ranges over 31 (weight) and 30 (fat).
    let mut data = Data {
        profile: fixture("profile.json"),
        ..Data::default()
    };
    let first: NaiveDate = "2024-12-31".parse().unwrap();
    for i in 0..123 {
        let day = first.checked_add_days(Days::new(i)).unwrap();
        let (sleep, weight, fat) = night_and_weigh_in(day, i);
        data.sleep.push(sleep);
        data.weight.push(weight);
        data.fat.extend(fat);
    }
    let fake = FakeFitbit::start(data).await;
    let fitbit = Fitbit::new(&fake.base).unwrap();
    let window = pull(
        &[Resource::Sleep, Resource::Body],
        utc(2025, 1, 1),
        utc(2025, 5, 1),
    );
    let pulled = fitbit.pull(TOKEN, &window).await.unwrap();
    assert_eq!(pulled.skipped, 0);

    let ids = |part: &str| -> Vec<String> {
        pulled.body.to_json()[part]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };
    // Nights ending (and weigh-ins) 2025-01-01 … 2025-04-30, 07:00 local: 120 each, once.
    for part in ["sleep", "body"] {
        let got = ids(part);
        let unique: BTreeSet<_> = got.iter().collect();
        assert_eq!((got.len(), unique.len()), (120, 120), "{part}");
    }
    assert_eq!(ids("sleep")[0], "40000000001");
    assert_eq!(ids("body")[119], "1700000000120");
    let json = pulled.body.to_json();
    let weights = json["timeseries"]["weight"].as_array().unwrap();
    assert_eq!(weights.len(), 120);
    assert_eq!(weights[0]["timestamp"], json!("2025-01-01T07:00:00+01:00"));
    // Berlin is on summer time from 2025-03-30.
    assert_eq!(
        weights[119]["timestamp"],
        json!("2025-04-30T07:00:00+02:00")
    );
    assert_eq!(weights[119]["timezone_offset"], json!(7200));

    let log = fake.log();
    let sleep: Vec<_> = log.iter().filter(|l| l.contains("/sleep/")).collect();
    assert_eq!(
        sleep,
        [
            "/1.2/user/-/sleep/date/2024-12-31/2025-04-09.json",
            "/1.2/user/-/sleep/date/2025-04-10/2025-05-02.json"
        ],
        "{log:#?}"
    );
    assert_eq!(log.iter().filter(|l| l.contains("/weight/")).count(), 5);
    assert_eq!(log.iter().filter(|l| l.contains("/fat/")).count(), 5);

    let screened = screen(pulled.body.clone(), &PushUser::default(), Utc::now()).unwrap();
    assert!(screened.dropped.is_empty());
    assert_eq!(
        screened.batches.counts(),
        json!({"sleep": 120, "body": 120, "timeseries": {"weight": 120, "fat": 60}})
    );
}

#[tokio::test]
async fn rate_limiting_surfaces_with_its_retry_after() {
    let fake = FakeFitbit::start(fixture_data()).await;
    let fitbit = Fitbit::new(&fake.base).unwrap();
    // On the second request: the sleep range after the profile.
    fake.fail(
        Fault::RateLimited {
            retry_after: 37,
            reset: 1800,
        },
        1,
    );
    let err = fitbit.pull(TOKEN, &all_march()).await.unwrap_err();
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

    // Without `Retry-After`, Fitbit's own reset header names the wait.
    let fake = FakeFitbit::start(fixture_data()).await;
    let fitbit = Fitbit::new(&fake.base).unwrap();
    fake.fail(Fault::RateLimitedResetOnly { reset: 1234 }, 0);
    let err = fitbit.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(
        matches!(
            err,
            SyncError::RateLimited {
                retry_after_seconds: Some(1234)
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_refused_token_is_unauthorised() {
    let faulted = FakeFitbit::start(fixture_data()).await;
    faulted.fail(Fault::Unauthorised, 3);
    let fresh = FakeFitbit::start(fixture_data()).await;
    assert_refused_tokens_unauthorised(
        &Fitbit::new(&faulted.base).unwrap(),
        TOKEN,
        &Fitbit::new(&fresh.base).unwrap(),
    )
    .await;
}

#[tokio::test]
async fn server_errors_are_transient() {
    let fake = FakeFitbit::start(fixture_data()).await;
    let fitbit = Fitbit::new(&fake.base).unwrap();
    fake.fail(Fault::ServerError, 5);
    let err = fitbit.pull(TOKEN, &all_march()).await.unwrap_err();
    assert!(
        matches!(&err, SyncError::Transient { source: None, .. }),
        "{err:?}"
    );
    assert_eq!(fake.log().len(), 6);
}

#[tokio::test]
async fn an_unknown_path_is_permanent() {
    // A base URL under which the fake serves nothing: every path answers 404.
    let fake = FakeFitbit::start(fixture_data()).await;
    let err = Fitbit::new(&format!("{}/nowhere", fake.base))
        .unwrap()
        .pull(TOKEN, &all_march())
        .await
        .unwrap_err();
    assert!(matches!(err, SyncError::Permanent { .. }), "{err:?}");
}
