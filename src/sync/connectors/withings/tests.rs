//! Fixture tests of the Withings normalisers (`testdata/providers/withings/`: each
//! `<endpoint>.json` is an answer in Withings' documented `{status, body}` shape, each
//! `<endpoint>.expected.json` the push body it must give; each answer holds one malformed record
//! that is skipped while its neighbours are kept), and of the envelope, status mapping and
//! date chunks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{NaiveDate, TimeZone, Utc};
use serde_json::{Value, json};

use super::normalise::Body;
use super::{MAX_RANGE_DAYS, around, envelope, status_error};
use crate::sync::date_chunks;
use crate::sync::ingest_counts;
use crate::sync::{SyncError, Window};

fn fixture(name: &str) -> Value {
    crate::sync::fixture("withings", name)
}

/// A fixture answer's `body`, through the envelope check the connector makes.
fn answer(name: &str) -> serde_json::Map<String, Value> {
    envelope(fixture(&format!("{name}.json")), name).unwrap()
}

fn records(name: &str, member: &str) -> Vec<Value> {
    answer(name)[member].as_array().unwrap().clone()
}

/// Normalises one fixture with `fill` and checks the body against the expected file, the
/// number of malformed records skipped, and that ingest accepts it with `expected_counts`.
fn check(name: &str, fill: impl FnOnce(&mut Body), skipped: usize, expected_counts: Value) {
    let mut body = Body::new(None);
    fill(&mut body);
    crate::sync::assert_fixture("withings", name, &body.finish(), skipped, expected_counts);
}

#[test]
fn intraday_heart_rate_becomes_heartrate_samples_in_the_users_zone() {
    // Six minutes with a heart rate over three days in Paris; a minute of steps only and a 0
    // (no reading) are left out; a heart rate that is not a number is skipped.
    let series: Vec<(String, Value)> = answer("intraday")["series"]
        .as_object()
        .unwrap()
        .clone()
        .into_iter()
        .collect();
    check(
        "intraday",
        |b| b.intraday(&series, Some("Europe/Paris")),
        1,
        json!({"timeseries": {"heartrate": 6}}),
    );
}

#[test]
fn an_instant_a_scale_already_gave_is_kept_once() {
    let at = Utc
        .with_ymd_and_hms(2025, 3, 1, 6, 0, 0)
        .unwrap()
        .timestamp();
    let group = json!({"grpid": 1, "date": at, "category": 1, "attrib": 0,
        "measures": [{"value": 64, "type": 11, "unit": 0}]});
    let mut body = Body::new(None);
    body.measure_groups(&[group], Some("Europe/Paris"), (false, true));
    body.intraday(
        &[
            (at.to_string(), json!({"heart_rate": 58})),
            ((at + 60).to_string(), json!({"heart_rate": 59})),
        ],
        Some("Europe/Paris"),
    );
    let pulled = body.finish();
    let values: Vec<i64> = pulled.body.to_json()["timeseries"]["heartrate"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["value"].as_i64().unwrap())
        .collect();
    assert_eq!(
        values,
        vec![64, 59],
        "the scale's pulse stays, the watch's minute after joins"
    );
}

#[test]
fn a_nights_states_become_its_hypnogram_a_minute_a_code() {
    // The first Paris night's states: light, deep, REM and awake minutes; an unspecified state
    // and a ten-minute gap with no segment are -1; a segment without a state is skipped.
    let states = records("sleep_states", "series");
    check(
        "sleep_states",
        |b| {
            b.sleep(&records("sleep", "series"));
            let (night, _, _) = b.nights()[0];
            b.stages(night, &states);
        },
        2,
        json!({"sleep": 3}),
    );
}

#[test]
fn sleep_summaries_become_sleep_rows() {
    // Two nights in Paris, a nap in New York (its own offset, no heart rate: Withings' 0s are
    // left out); the third record's `startdate` is not a number: skipped, neighbours kept.
    check(
        "sleep",
        |b| b.sleep(&records("sleep", "series")),
        1,
        json!({"sleep": 3}),
    );
}

#[test]
fn activities_become_activity_rows() {
    // The second day has no heart rate (0s), the third record's date is unreadable.
    check(
        "activity",
        |b| b.activity(&records("activity", "activities")),
        1,
        json!({"activity": 3}),
    );
}

#[test]
fn workouts_become_workout_rows() {
    // A run with a pause (moving time less it), a weights session (hr_min 0 left out), a
    // record without `category` (skipped) and an unknown category (`other`).
    check(
        "workouts",
        |b| b.workouts(&records("workouts", "series")),
        1,
        json!({"workouts": 3}),
    );
}

#[test]
fn measure_groups_become_body_rows_and_samples() {
    // A body-composition weigh-in, a cuff reading, a group whose weight has no value
    // (skipped), a weigh-in with fat mass but no fat ratio, and an objective (left out).
    let body = answer("measures");
    let zone = body["timezone"].as_str();
    check(
        "measures",
        |b| b.measure_groups(body["measuregrps"].as_array().unwrap(), zone, (true, true)),
        1,
        json!({
            "body": 2,
            "timeseries": {"weight": 2, "fat": 2, "blood_pressure": 1, "heartrate": 2}
        }),
    );
}

#[test]
fn heart_pulses_come_only_with_heartrate_and_body_only_with_body() {
    let body = answer("measures");
    let groups = body["measuregrps"].as_array().unwrap();
    let mut b = Body::new(None);
    b.measure_groups(groups, Some("Europe/Paris"), (false, true));
    let pulled = b.finish();
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({"timeseries": {"heartrate": 2}})
    );
    let mut b = Body::new(None);
    b.measure_groups(groups, Some("Europe/Paris"), (true, false));
    let pulled = b.finish();
    assert!(
        pulled.body.to_json()["timeseries"]
            .get("heartrate")
            .is_none()
    );
    assert_eq!(pulled.body.to_json()["body"].as_array().unwrap().len(), 2);
}

#[test]
fn a_window_cuts_records_by_their_instant_and_days_by_overlap() {
    // 2025-03-02 00:00 UTC to 03-03 00:00 UTC.
    let w = Window::new(
        Utc.with_ymd_and_hms(2025, 3, 2, 0, 0, 0).unwrap(),
        Utc.with_ymd_and_hms(2025, 3, 3, 0, 0, 0).unwrap(),
    )
    .unwrap();
    let mut b = Body::new(Some(w));
    b.sleep(&records("sleep", "series"));
    b.activity(&records("activity", "activities"));
    b.workouts(&records("workouts", "series"));
    let body = answer("measures");
    b.measure_groups(
        body["measuregrps"].as_array().unwrap(),
        Some("Europe/Paris"),
        (true, true),
    );
    let pulled = b.finish();
    let ids = |part: &str, key: &str| -> Vec<Value> {
        pulled.body.to_json()[part]
            .as_array()
            .map(|rows| rows.iter().map(|r| r[key].clone()).collect())
            .unwrap_or_default()
    };
    // Sleep by its end: the night ending 03-02 07:05 Paris and the New York nap.
    assert_eq!(ids("sleep", "id"), [json!("9002"), json!("9004")]);
    // Paris day 03-01 ends at 03-01 23:00 UTC, before the window; 03-03 starts at 03-02
    // 23:00 UTC, inside it.
    assert_eq!(
        ids("activity", "date"),
        [json!("2025-03-02"), json!("2025-03-03")]
    );
    // Workouts by their start: the weights session of 03-02 19:30 Paris.
    assert_eq!(ids("workouts", "id"), [json!("7002")]);
    // Only the cuff reading lies in the window: no body row.
    assert!(pulled.body.to_json().get("body").is_none());
    assert_eq!(
        pulled.body.to_json()["timeseries"]["blood_pressure"][0]["systolic"],
        json!(121)
    );
}

#[test]
fn a_non_zero_status_is_an_error_even_under_http_200() {
    let expired = json!({"status": 401, "body": {}, "error": "invalid_token: The access token provided is invalid"});
    assert!(matches!(
        envelope(expired, "getmeas"),
        Err(SyncError::Unauthorised)
    ));
    let kind = |status: i64| match status_error(status, "getmeas", "") {
        SyncError::Unauthorised => "unauthorised",
        SyncError::RateLimited {
            retry_after_seconds: None,
        } => "rate_limited",
        SyncError::RateLimited { .. } => "rate_limited with a wait",
        SyncError::Transient { .. } => "transient",
        SyncError::Permanent { .. } => "permanent",
    };
    for (status, expected) in [
        (100, "unauthorised"),
        (102, "unauthorised"),
        (200, "unauthorised"),
        (401, "unauthorised"),
        (601, "rate_limited"),
        (522, "transient"),
        (524, "transient"),
        (2555, "permanent"),
        (2554, "permanent"),
        (2553, "permanent"),
        (214, "permanent"),
        (201, "permanent"),
        (503, "permanent"),
        (3018, "permanent"),
        (215, "transient"),
        (2556, "transient"),
        (9000, "transient"),
    ] {
        assert_eq!(kind(status), expected, "status {status}");
    }
    assert!(matches!(
        envelope(json!({"status": 0}), "getmeas"),
        Err(SyncError::Permanent { .. })
    ));
    assert!(matches!(
        envelope(json!({"body": {}}), "getmeas"),
        Err(SyncError::Permanent { .. })
    ));
    assert!(matches!(
        envelope(json!([]), "getmeas"),
        Err(SyncError::Permanent { .. })
    ));
}

#[test]
fn date_ranges_are_chunked_to_the_longest_range_and_padded_by_a_day() {
    let d = |s: &str| s.parse::<NaiveDate>().unwrap();
    let w = Window::new(
        Utc.with_ymd_and_hms(2025, 3, 1, 0, 0, 0).unwrap(),
        Utc.with_ymd_and_hms(2025, 3, 16, 0, 0, 0).unwrap(),
    )
    .unwrap();
    let (first, last) = around(&w);
    assert_eq!((first, last), (d("2025-02-28"), d("2025-03-16")));
    assert_eq!(
        date_chunks(first, last, MAX_RANGE_DAYS),
        [
            (d("2025-02-28"), d("2025-03-06")),
            (d("2025-03-07"), d("2025-03-13")),
            (d("2025-03-14"), d("2025-03-16")),
        ]
    );
}
