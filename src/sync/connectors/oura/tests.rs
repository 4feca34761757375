//! Fixture tests of the Oura normalisers (`testdata/providers/oura/`: each `<collection>.json`
//! is a response in Oura's documented shape, each `<collection>.expected.json` the push body it
//! must give), and of the client's pure helpers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use super::normalise::Body;
use super::{MAX_INSTANT_SPAN_DAYS, Span, chunks, days, in_window};
use crate::sync::Window;
use crate::sync::ingest_counts;

fn fixture(name: &str) -> Value {
    crate::sync::fixture("oura", name)
}

/// A collection fixture's documents.
fn documents(name: &str) -> Vec<Value> {
    fixture(&format!("{name}.json"))["data"]
        .as_array()
        .unwrap()
        .clone()
}

/// Normalises one collection fixture with `fill` and checks the body against the expected
/// file, that nothing was skipped and that ingest accepts it with `expected_counts`.
fn check(name: &str, fill: impl FnOnce(&mut Body, &[Value]), expected_counts: Value) {
    let mut body = Body::default();
    fill(&mut body, &documents(name));
    crate::sync::assert_fixture("oura", name, &body.finish(), 0, expected_counts);
}

#[test]
fn sleep_periods_become_sleep_rows_and_hrv_samples() {
    // Three periods: a long sleep, a confirmed nap, and one the user rejected (`rest`), which
    // is left out with its HRV; 86 of the long sleep's 90 HRV items are readings.
    check(
        "sleep",
        |b, d| b.sleep(d, true, true),
        json!({"sleep": 2, "timeseries": {"hrv": 86}}),
    );
}

#[test]
fn sleep_rows_and_hrv_can_be_pulled_alone() {
    let mut rows = Body::default();
    rows.sleep(&documents("sleep"), true, false);
    let rows = rows.finish().body.to_json();
    assert_eq!(rows["sleep"].as_array().unwrap().len(), 2);
    assert!(rows.get("timeseries").is_none());

    let mut hrv = Body::default();
    hrv.sleep(&documents("sleep"), false, true);
    let hrv = hrv.finish().body.to_json();
    assert!(hrv.get("sleep").is_none());
    assert_eq!(
        hrv["timeseries"]["hrv"],
        fixture("sleep.expected.json")["timeseries"]["hrv"]
    );
}

#[test]
fn daily_activity_becomes_activity_rows() {
    check(
        "daily_activity",
        |b, d| b.activity(d),
        json!({"activity": 2}),
    );
}

#[test]
fn workouts_become_workout_rows() {
    check("workout", |b, d| b.workouts(d), json!({"workouts": 2}));
}

#[test]
fn heart_rate_becomes_heartrate_samples() {
    check(
        "heartrate",
        |b, d| b.heartrate(d),
        json!({"timeseries": {"heartrate": 10}}),
    );
}

#[test]
fn daily_spo2_becomes_blood_oxygen_samples() {
    // The day without a value (`spo2_percentage: null`) gives no sample and is not malformed.
    check(
        "daily_spo2",
        |b, d| b.spo2(d),
        json!({"timeseries": {"blood_oxygen": 2}}),
    );
}

#[test]
fn personal_info_becomes_the_profile() {
    let mut body = Body::default();
    body.personal_info(&fixture("personal_info.json"));
    let pulled = body.finish();
    assert_eq!(pulled.skipped, 0);
    assert_eq!(
        pulled.body.to_json(),
        fixture("personal_info.expected.json")
    );
    assert_eq!(ingest_counts(&pulled.body), json!({"profile": 1}));
}

#[test]
fn every_collection_in_one_body_is_accepted() {
    let mut body = Body::default();
    body.sleep(&documents("sleep"), true, true);
    body.activity(&documents("daily_activity"));
    body.workouts(&documents("workout"));
    body.heartrate(&documents("heartrate"));
    body.spo2(&documents("daily_spo2"));
    body.personal_info(&fixture("personal_info.json"));
    let pulled = body.finish();
    assert_eq!(pulled.skipped, 0);
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({
            "sleep": 2, "activity": 2, "workouts": 2, "profile": 1,
            "timeseries": {"heartrate": 10, "hrv": 86, "blood_oxygen": 2}
        })
    );
}

#[test]
fn malformed_documents_are_skipped_and_their_neighbours_kept() {
    let mut sleep = documents("sleep");
    sleep[1].as_object_mut().unwrap().remove("bedtime_end");
    let mut workouts = documents("workout");
    workouts[0]["end_datetime"] = json!("2025-03-01T17:00:00+01:00");
    let mut heartrate = documents("heartrate");
    heartrate[2]["bpm"] = json!("seventy-one");
    heartrate[4]["bpm"] = json!(900);
    heartrate[5]["timestamp"] = json!("yesterday");
    let mut activity = documents("daily_activity");
    activity.push(json!("not an object"));

    let mut body = Body::default();
    body.sleep(&sleep, true, true);
    body.workouts(&workouts);
    body.heartrate(&heartrate);
    body.activity(&activity);
    body.personal_info(&json!({"id": "x", "height": "tall"}));
    let pulled = body.finish();

    assert_eq!(pulled.skipped, 7);
    let ids = |part: &str| -> Vec<Value> {
        pulled.body.to_json()[part]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].clone())
            .collect()
    };
    assert_eq!(ids("sleep"), [sleep[0]["id"].clone()]);
    assert_eq!(ids("workouts"), [workouts[1]["id"].clone()]);
    assert_eq!(ids("activity").len(), 2);
    assert_eq!(
        pulled.body.to_json()["timeseries"]["heartrate"]
            .as_array()
            .unwrap()
            .len(),
        7
    );
    assert!(pulled.body.to_json().get("profile").is_none());
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({"sleep": 1, "activity": 2, "workouts": 1,
               "timeseries": {"heartrate": 7, "hrv": 86}})
    );
}

#[test]
fn a_bad_hypnogram_is_dropped_but_its_sleep_kept() {
    let mut sleep = documents("sleep");
    sleep[0]["sleep_phase_5_min"] = json!("44222x1");
    // One stage too many for the nap's 45 minutes: it would run past bedtime_stop.
    sleep[1]["sleep_phase_5_min"] = json!("44222112444");
    let mut body = Body::default();
    body.sleep(&sleep, true, false);
    let pulled = body.finish();
    assert_eq!(pulled.skipped, 0);
    let json = pulled.body.to_json();
    let rows = json["sleep"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.get("sleep_stream").is_none()));
    assert_eq!(rows[0]["total"], json!(24600));
}

#[test]
fn sleep_types_map_to_the_data_model() {
    let mut sleep = documents("sleep");
    sleep.truncate(1);
    let mut variants = Vec::new();
    for (i, kind) in [
        json!("late_nap"),
        json!("deleted"),
        json!(null),
        json!("something_new"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut doc = sleep[0].clone();
        doc["id"] = json!(format!("v{i}"));
        doc["type"] = kind;
        variants.push(doc);
    }
    let mut body = Body::default();
    body.sleep(&variants, true, false);
    let pulled = body.finish().body;
    let body = pulled.to_json();
    let rows = body["sleep"].as_array().unwrap();
    let types: Vec<_> = rows
        .iter()
        .map(|r| (r["id"].clone(), r.get("type").cloned()))
        .collect();
    assert_eq!(
        types,
        [
            (json!("v0"), Some(json!("acknowledged_nap"))),
            (json!("v2"), None),
            (json!("v3"), None),
        ]
    );
    assert_eq!(ingest_counts(&pulled), json!({"sleep": 3}));
}

#[test]
fn documents_are_cut_to_the_window() {
    let start = Utc.with_ymd_and_hms(2025, 3, 1, 0, 0, 0).unwrap();
    let end = Utc.with_ymd_and_hms(2025, 3, 2, 0, 0, 0).unwrap();
    let w = Window::new(start, end).unwrap();
    let day = |d: &str| json!({"day": d});
    assert_eq!(days(&w), (start.date_naive(), start.date_naive()));
    assert!(in_window(&day("2025-03-01"), Span::Days, &w));
    assert!(!in_window(&day("2025-02-28"), Span::Days, &w));
    assert!(!in_window(&day("2025-03-02"), Span::Days, &w));
    // Unreadable: kept, for the normaliser to count as malformed.
    assert!(in_window(&json!({"id": "x"}), Span::Days, &w));
    let at = |t: &str| json!({"timestamp": t});
    assert!(in_window(
        &at("2025-03-01T00:00:00+00:00"),
        Span::Instants,
        &w
    ));
    assert!(in_window(
        &at("2025-03-02T00:59:59+01:00"),
        Span::Instants,
        &w
    ));
    assert!(!in_window(
        &at("2025-03-02T00:00:00+00:00"),
        Span::Instants,
        &w
    ));
}

#[test]
fn heart_rate_windows_are_chunked_and_daily_ones_are_not() {
    let start = Utc.with_ymd_and_hms(2025, 1, 1, 6, 0, 0).unwrap();
    let end = Utc.with_ymd_and_hms(2025, 3, 10, 0, 0, 0).unwrap();
    let w = Window::new(start, end).unwrap();
    assert_eq!(chunks(Span::Days, &w), [w]);
    let parts = chunks(Span::Instants, &w);
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[0].start, start);
    assert_eq!(parts[2].end, end);
    for pair in parts.windows(2) {
        assert_eq!(pair[0].end, pair[1].start);
    }
    assert!(
        parts
            .iter()
            .all(|p| p.end - p.start <= chrono::TimeDelta::days(MAX_INSTANT_SPAN_DAYS))
    );
    let short = Window::new(start, start + chrono::TimeDelta::hours(1)).unwrap();
    assert_eq!(chunks(Span::Instants, &short), [short]);
}
