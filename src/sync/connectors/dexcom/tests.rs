//! Fixture tests of the Dexcom normaliser (`testdata/providers/dexcom_v3/`: `egvs.json` is a
//! response in Dexcom's documented shape, `egvs.expected.json` the push body it must give),
//! and of the client's pure helpers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use super::normalise::{Body, system_time};
use super::{MAX_WINDOW_DAYS, chunks, envelope, in_window, query_time};
use crate::sync::body::mmol_per_litre;
use crate::sync::ingest_counts;
use crate::sync::{SyncError, Window};

fn fixture(name: &str) -> Value {
    crate::sync::fixture("dexcom_v3", name)
}

/// The EGV fixture's records.
fn records() -> Vec<Value> {
    fixture("egvs.json")["records"].as_array().unwrap().clone()
}

/// The glucose samples of a body.
fn glucose(body: &Value) -> &Vec<Value> {
    body["timeseries"]["glucose"].as_array().unwrap()
}

/// One EGV record as Dexcom's mobile app sends it, at `at` (+00:00) shown in +01:00.
fn record(id: &str, at: &str, value: Value, unit: &str) -> Value {
    json!({
        "recordId": id,
        "systemTime": format!("{at}+00:00"),
        "displayTime": format!("{at}+01:00"),
        "transmitterId": "3F7K2Q",
        "transmitterTicks": 1,
        "value": value,
        "status": "ok",
        "trend": "flat",
        "trendRate": 0.1,
        "unit": unit,
        "rateUnit": "mg/dL/min",
        "displayDevice": "iOS",
        "transmitterGeneration": "g7",
    })
}

#[test]
fn egvs_become_glucose_samples_in_mmol_per_litre() {
    // 39 records over three days: two from the app without a value (status `high`) and one
    // from the receiver (status `low`) give no sample and are not malformed.
    let mut body = Body::default();
    body.egvs(&records());
    let pulled = body.finish();
    assert_eq!(pulled.skipped, 0);
    let expected = fixture("egvs.expected.json");
    assert_eq!(
        pulled.body.to_json(),
        expected,
        "got\n{}",
        serde_json::to_string_pretty(&pulled.body.to_json()).unwrap()
    );
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({"timeseries": {"glucose": 36}})
    );
}

#[test]
fn instants_are_system_time_and_offsets_come_from_display_time() {
    let mut body = Body::default();
    body.egvs(&records());
    let body = body.finish().body.to_json();
    let samples = glucose(&body);
    // The app's records carry offsets: displayTime's own (+01:00).
    assert_eq!(samples[0]["timestamp"], json!("2025-03-01T07:02:31Z"));
    assert_eq!(samples[0]["timezone_offset"], json!(3600));
    // The receiver's carry none: its displayTime runs 1 h 0 min 28 s ahead of systemTime,
    // which rounds to +01:00; the instant is systemTime read as UTC.
    let receiver = samples.last().unwrap();
    assert_eq!(receiver["timestamp"], json!("2025-03-03T04:01:12Z"));
    assert_eq!(receiver["timezone_offset"], json!(3600));
}

#[test]
fn mg_per_decilitre_converts_to_mmol_per_litre() {
    assert_eq!(mmol_per_litre(100.0, "mg/dL"), Some(5.55));
    assert_eq!(mmol_per_litre(180.0, "mg/dL"), Some(9.99));
    assert_eq!(mmol_per_litre(40.0, "mg/dL"), Some(2.22));
    assert_eq!(mmol_per_litre(400.0, "mg/dL"), Some(22.2));
    assert_eq!(mmol_per_litre(6.4, "mmol/L"), Some(6.4));
    assert_eq!(mmol_per_litre(100.0, "unknown"), None);
    // Two decimals keep every integer mg/dL: converting back gives the reading again.
    for mg in 40..=400 {
        let mmol = mmol_per_litre(f64::from(mg), "mg/dL").unwrap();
        assert_eq!((mmol * 18.0182).round() as i32, mg);
    }
}

#[test]
fn a_record_in_mmol_per_litre_keeps_its_value() {
    let mut body = Body::default();
    body.egvs(&[record("r1", "2025-03-01T07:00:00", json!(6.4), "mmol/L")]);
    let body = body.finish().body.to_json();
    assert_eq!(
        glucose(&body)[0],
        json!({"timestamp": "2025-03-01T07:00:00Z", "timezone_offset": 3600,
               "unit": "mmol/L", "value": 6.4})
    );
}

#[test]
fn malformed_records_are_skipped_and_their_neighbours_kept() {
    let mut records = records();
    records[1]["value"] = json!("high");
    records[2]["unit"] = json!("unknown");
    records[3]["systemTime"] = json!("yesterday");
    records[4]["value"] = json!(-5);
    records[5].as_object_mut().unwrap().remove("displayTime");
    records[6]["value"] = json!(1200);
    records.push(json!("not an object"));
    let mut body = Body::default();
    body.egvs(&records);
    let pulled = body.finish();
    assert_eq!(pulled.skipped, 7);
    assert_eq!(glucose(&pulled.body.to_json()).len(), 30);
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({"timeseries": {"glucose": 30}})
    );
}

#[test]
fn offsets_beyond_eighteen_hours_are_dropped() {
    let mut r = record("r1", "2025-03-01T07:00:00", json!(100), "mg/dL");
    r["systemTime"] = json!("2025-03-01T07:00:00");
    r["displayTime"] = json!("2025-03-02T07:00:00");
    let mut body = Body::default();
    body.egvs(&[r]);
    let pulled = body.finish().body;
    let body = pulled.to_json();
    assert!(glucose(&body)[0].get("timezone_offset").is_none());
    assert_eq!(
        ingest_counts(&pulled),
        json!({"timeseries": {"glucose": 1}})
    );
}

#[test]
fn an_empty_answer_gives_a_body_without_timeseries() {
    let pulled = Body::default().finish();
    assert_eq!(
        pulled.body.to_json(),
        json!({"provider": "dexcom_v3", "source": {"type": "automatic"}})
    );
    assert_eq!(ingest_counts(&pulled.body), json!({}));
}

#[test]
fn system_times_read_with_or_without_an_offset() {
    let at = Utc.with_ymd_and_hms(2025, 3, 1, 7, 0, 0).unwrap();
    assert_eq!(system_time("2025-03-01T07:00:00"), Some(at));
    assert_eq!(system_time("2025-03-01T07:00:00+00:00"), Some(at));
    assert_eq!(system_time("2025-03-01T07:00:00Z"), Some(at));
    assert_eq!(system_time("2025-03-01T08:00:00+01:00"), Some(at));
    assert_eq!(system_time("tomorrow"), None);
}

#[test]
fn answers_must_have_the_documented_envelope() {
    let records = envelope(
        json!({"recordType": "egv", "recordVersion": "3.0", "userId": "u", "records": [1, 2]}),
        "egv",
    )
    .unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(envelope(json!({"records": []}), "egv").unwrap().len(), 0);
    for bad in [
        json!([1, 2]),
        json!({"recordType": "egv", "data": []}),
        json!({"recordType": "egv", "records": {}}),
        json!({"recordType": "calibration", "records": []}),
    ] {
        assert!(matches!(
            envelope(bad, "egv"),
            Err(SyncError::Permanent { .. })
        ));
    }
}

#[test]
fn records_are_cut_to_the_window_by_system_time() {
    let start = Utc.with_ymd_and_hms(2025, 3, 1, 0, 0, 0).unwrap();
    let end = Utc.with_ymd_and_hms(2025, 3, 2, 0, 0, 0).unwrap();
    let w = Window::new(start, end).unwrap();
    let at = |t: &str| json!({"systemTime": t});
    assert!(in_window(&at("2025-03-01T00:00:00"), &w));
    assert!(in_window(&at("2025-03-01T23:59:59+00:00"), &w));
    assert!(in_window(&at("2025-03-02T00:59:59+01:00"), &w));
    assert!(!in_window(&at("2025-03-02T00:00:00"), &w));
    assert!(!in_window(&at("2025-02-28T23:59:59"), &w));
    // Unreadable: kept, for the normaliser to count as malformed.
    assert!(in_window(&json!({"recordId": "x"}), &w));
}

#[test]
fn long_windows_are_asked_in_chunks_the_api_accepts() {
    let start = Utc.with_ymd_and_hms(2025, 1, 1, 6, 0, 0).unwrap();
    let end = Utc.with_ymd_and_hms(2025, 3, 10, 0, 0, 0).unwrap();
    let w = Window::new(start, end).unwrap();
    let parts = chunks(&w);
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[0].start, start);
    assert_eq!(parts[2].end, end);
    for pair in parts.windows(2) {
        assert_eq!(pair[0].end, pair[1].start);
    }
    assert!(
        parts
            .iter()
            .all(|p| p.end - p.start <= chrono::TimeDelta::days(MAX_WINDOW_DAYS))
    );
    let short = Window::new(start, start + chrono::TimeDelta::hours(1)).unwrap();
    assert_eq!(chunks(&short), [short]);
}

#[test]
fn chunks_from_a_fractional_second_are_asked_within_the_limit() {
    // A historical pull's window starts at a microsecond instant.
    let start = Utc.with_ymd_and_hms(2025, 1, 1, 6, 0, 0).unwrap()
        + chrono::TimeDelta::microseconds(417_211);
    let w = Window::new(start, start + chrono::TimeDelta::days(90)).unwrap();
    let parts = chunks(&w);
    assert_eq!(parts[0].start, start);
    assert_eq!(parts.last().unwrap().end, w.end);
    for pair in parts.windows(2) {
        assert_eq!(pair[0].end, pair[1].start);
    }
    for p in &parts {
        let from: chrono::NaiveDateTime = query_time(p.start, false).parse().unwrap();
        let to: chrono::NaiveDateTime = query_time(p.end, true).parse().unwrap();
        assert!(
            to - from <= chrono::TimeDelta::days(MAX_WINDOW_DAYS),
            "{p:?}"
        );
    }
}

#[test]
fn query_times_are_whole_utc_seconds_without_an_offset() {
    let at = Utc.with_ymd_and_hms(2025, 3, 1, 7, 0, 5).unwrap();
    assert_eq!(query_time(at, false), "2025-03-01T07:00:05");
    assert_eq!(query_time(at, true), "2025-03-01T07:00:05");
    let fraction = at + chrono::TimeDelta::milliseconds(250);
    assert_eq!(query_time(fraction, false), "2025-03-01T07:00:05");
    assert_eq!(query_time(fraction, true), "2025-03-01T07:00:06");
}
