//! Fixture tests of the Google Health normalisers (`testdata/providers/google_health/`: each
//! `<type>.json` is a list or roll-up answer in the documented shape, each `*.expected.json`
//! the push body it must give), and of the client's pure helpers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use super::normalise::{Body, parse_duration};
use super::pull::{self, day_ranges, envelope, filter};
use super::{Documents, normalise};
use crate::sync::{SyncError, Window, assert_fixture, ingest_counts};

fn fixture(name: &str) -> Value {
    crate::sync::fixture("google_health", name)
}

/// A list fixture's data points.
fn points(name: &str) -> Vec<Value> {
    fixture(&format!("{name}.json"))["dataPoints"]
        .as_array()
        .unwrap()
        .clone()
}

fn rollups() -> Vec<(String, Vec<Value>)> {
    pull::ROLLED_UP
        .iter()
        .map(|kind| {
            let file = format!("rollup_{}.json", kind.replace('-', "_"));
            let points = fixture(&file)["rollupDataPoints"]
                .as_array()
                .unwrap()
                .clone();
            ((*kind).to_owned(), points)
        })
        .collect()
}

fn everything() -> Documents {
    Documents {
        sleep: points("sleep"),
        heart_rate: points("heart_rate"),
        hrv: points("heart_rate_variability"),
        oxygen: points("oxygen_saturation"),
        weight: points("weight"),
        body_fat: points("body_fat"),
        height: points("height").into_iter().next(),
        rollups: rollups(),
    }
}

#[test]
fn sleep_sessions_become_sleep_rows() {
    // A staged night, a classic nap, and a night still being processed (tentative).
    let mut body = Body::default();
    body.sleep(&points("sleep"));
    let pulled = body.finish();
    assert_fixture("google_health", "sleep", &pulled, 0, json!({"sleep": 3}));
}

#[test]
fn samples_become_series_in_the_wearers_offset() {
    // Four heart rates, two RMSSDs (an SDNN-only point gives none, and is not malformed),
    // three SpO2 readings.
    let mut body = Body::default();
    body.samples(pull::HEART_RATE, &points("heart_rate"));
    body.samples(pull::HRV, &points("heart_rate_variability"));
    body.samples(pull::OXYGEN, &points("oxygen_saturation"));
    assert_fixture(
        "google_health",
        "samples",
        &body.finish(),
        0,
        json!({"timeseries": {"heartrate": 4, "hrv": 2, "blood_oxygen": 3}}),
    );
}

#[test]
fn weigh_ins_become_body_rows_with_the_fat_of_their_instant() {
    let mut body = Body::default();
    body.weights(&points("weight"), &points("body_fat"));
    assert_fixture(
        "google_health",
        "body",
        &body.finish(),
        0,
        json!({"body": 2, "timeseries": {"weight": 2, "fat": 2}}),
    );
}

#[test]
fn the_newest_height_is_the_profiles() {
    let mut body = Body::default();
    body.height(&points("height")[0]);
    assert_fixture(
        "google_health",
        "height",
        &body.finish(),
        0,
        json!({"profile": 1}),
    );
}

#[test]
fn daily_rollups_become_activity_days() {
    let mut body = Body::default();
    body.activity(&rollups());
    assert_fixture(
        "google_health",
        "activity",
        &body.finish(),
        0,
        json!({"activity": 3}),
    );
}

#[test]
fn every_type_in_one_body_is_accepted() {
    let pulled = normalise(&everything());
    assert_eq!(pulled.skipped, 0);
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({
            "sleep": 3, "activity": 3, "body": 2, "profile": 1,
            "timeseries": {"heartrate": 4, "hrv": 2, "blood_oxygen": 3, "weight": 2, "fat": 2}
        })
    );
}

#[test]
fn malformed_points_are_skipped_and_their_neighbours_kept() {
    let mut docs = everything();
    docs.sleep[0].as_object_mut().unwrap().remove("name");
    docs.sleep[1]["sleep"]["interval"]["endUtcOffset"] = json!("EST");
    docs.heart_rate[0]["heartRate"]["beatsPerMinute"] = json!("fast");
    docs.heart_rate[1]
        .as_object_mut()
        .unwrap()
        .remove("heartRate");
    docs.oxygen.push(json!("not an object"));
    docs.weight[0]["weight"]["weightGrams"] = json!(-1.0);
    docs.body_fat[0]["bodyFat"]["percentage"] = json!(140.0);
    docs.rollups[0].1[0]["civilStartTime"] = json!({"date": {"year": 2025}});
    let pulled = normalise(&docs);
    assert_eq!(pulled.skipped, 8);
    let json = pulled.body.to_json();
    let ids: Vec<&Value> = json["sleep"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["id"])
        .collect();
    assert_eq!(ids, [&json!("8675309001")]);
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({
            "sleep": 1, "activity": 3, "body": 1, "profile": 1,
            "timeseries": {"heartrate": 2, "hrv": 2, "blood_oxygen": 3, "weight": 1, "fat": 1}
        })
    );
}

#[test]
fn offsets_read_as_google_durations() {
    assert_eq!(parse_duration("3600s"), Some(3600));
    assert_eq!(parse_duration("-18000s"), Some(-18_000));
    assert_eq!(parse_duration("19800.000s"), Some(19_800));
    assert_eq!(parse_duration("0s"), Some(0));
    for bad in ["3600", "EST", "", "s", "90000s"] {
        assert_eq!(parse_duration(bad), None, "{bad}");
    }
}

#[test]
fn filters_name_the_types_time_field() {
    let w = Window::new(
        Utc.with_ymd_and_hms(2025, 3, 1, 0, 0, 0).unwrap(),
        Utc.with_ymd_and_hms(2025, 3, 4, 0, 0, 0).unwrap(),
    )
    .unwrap();
    assert_eq!(
        filter(&pull::HEART_RATE, &w),
        "heart_rate.sample_time.physical_time >= \"2025-03-01T00:00:00Z\" AND \
         heart_rate.sample_time.physical_time < \"2025-03-04T00:00:00Z\""
    );
    assert!(filter(&pull::SLEEP, &w).starts_with("sleep.interval.end_time >= "));
}

#[test]
fn rollups_are_asked_by_whole_utc_days_at_most_fourteen_at_a_time() {
    let at = |d: u32, h: u32| Utc.with_ymd_and_hms(2025, 3, d, h, 0, 0).unwrap();
    let day = |d: u32| chrono::NaiveDate::from_ymd_opt(2025, 3, d).unwrap();
    let w = Window::new(at(1, 6), at(3, 0)).unwrap();
    assert_eq!(day_ranges(&w), [(day(1), day(3))]);
    let w = Window::new(at(1, 6), at(3, 1)).unwrap();
    assert_eq!(day_ranges(&w), [(day(1), day(4))]);
    let w = Window::new(at(1, 0), at(31, 0)).unwrap();
    assert_eq!(
        day_ranges(&w),
        [(day(1), day(15)), (day(15), day(29)), (day(29), day(31))]
    );
}

#[test]
fn pages_must_have_the_documented_envelope() {
    let (data, next) =
        envelope(json!({"dataPoints": [1, 2], "nextPageToken": "abc"}), "x").unwrap();
    assert_eq!((data.len(), next.as_deref()), (2, Some("abc")));
    let (data, next) = envelope(json!({}), "x").unwrap();
    assert!(data.is_empty() && next.is_none(), "an empty list is `{{}}`");
    let (_, next) = envelope(json!({"dataPoints": [], "nextPageToken": ""}), "x").unwrap();
    assert_eq!(next, None);
    for bad in [
        json!([1, 2]),
        json!({"dataPoints": {}}),
        json!({"dataPoints": [], "nextPageToken": 5}),
    ] {
        assert!(matches!(
            envelope(bad, "x"),
            Err(SyncError::Permanent { .. })
        ));
    }
}

/// The catalogue asks for the same scopes the access module names (the catalogue's own test
/// checks its URLs; this one ties them to the connector, which imports the catalogue, never
/// the reverse).
#[test]
fn the_catalogue_asks_the_scopes_the_access_module_names() {
    use super::access;
    let google = crate::providers::provider("google_health").unwrap();
    assert_eq!(
        crate::providers::scopes::authorisation_scopes(google),
        [
            access::PROFILE,
            access::SLEEP,
            access::ACTIVITY,
            access::HEALTH_METRICS
        ]
    );
}
