//! Fixture tests of the Ultrahuman normaliser (`testdata/providers/ultrahuman/`: each
//! `<name>.json` is a daily_metrics answer in Ultrahuman's documented shape holding one kind of
//! metric over 2025-03-01 … 03-03, each `<name>.expected.json` the push body it must give), and
//! of the client's pure helpers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use super::{Documents, MAX_SPAN_DAYS, Wanted, chunks, envelope, normalise};
use crate::schema::Table;
use crate::sync::{Resource, SyncError, Window, assert_fixture};

fn fixture(name: &str) -> Value {
    crate::sync::fixture("ultrahuman", name)
}

/// The days of a fixture answer.
fn days(name: &str) -> Documents {
    envelope(fixture(&format!("{name}.json"))).unwrap()
}

/// Every day the fixtures hold, wherever their zone puts them: 2025-02-28 … 03-04 UTC.
fn fixture_window() -> Window {
    Window::new(
        Utc.with_ymd_and_hms(2025, 2, 28, 0, 0, 0).unwrap(),
        Utc.with_ymd_and_hms(2025, 3, 4, 0, 0, 0).unwrap(),
    )
    .unwrap()
}

/// The days of several fixture answers, each day's entries of every answer together.
fn merged(names: &[&str]) -> Documents {
    let mut all = Documents::new();
    for name in names {
        for (date, day) in days(name) {
            all.entry(date)
                .or_insert_with(|| super::Day {
                    entries: Vec::new(),
                    zone: day.zone.clone(),
                })
                .entries
                .extend(day.entries);
        }
    }
    all
}

fn normalised(name: &str) -> crate::sync::Pulled {
    normalise(&days(name), Wanted::all(), &fixture_window())
}

#[test]
fn nights_become_sleep_rows_with_the_days_resting_heart_rate_and_hrv() {
    // Three nights in +05:30; the last day has no sleep_rhr or avg_sleep_hrv yet.
    assert_fixture(
        "ultrahuman",
        "sleep",
        &normalised("sleep"),
        0,
        json!({"sleep": 3}),
    );
}

#[test]
fn readings_become_samples() {
    for (name, series, n) in [
        ("heart_rate", "heartrate", 11),
        ("hrv", "hrv", 8),
        ("temperature", "body_temperature", 5),
        ("spo2", "blood_oxygen", 5),
        ("vo2_max", "vo2_max", 3),
        ("glucose", "glucose", 5),
    ] {
        assert_fixture(
            "ultrahuman",
            name,
            &normalised(name),
            0,
            json!({"timeseries": {series: n}}),
        );
    }
}

#[test]
fn step_totals_become_activity_rows_and_the_indices_are_not_kept() {
    assert_fixture(
        "ultrahuman",
        "steps",
        &normalised("steps"),
        0,
        json!({"activity": 3}),
    );
}

#[test]
fn each_row_carries_its_document() {
    let pulled = normalised("sleep");
    let sleeps = pulled.body.records(Table::Sleep).unwrap();
    assert_eq!(sleeps.len(), 3);
    assert!(sleeps.iter().all(|r| r.document.is_some()));
    let first = &days("sleep")["2025-03-01"].entries[0]["object"];
    assert_eq!(sleeps[0].document.as_ref(), Some(first));
}

#[test]
fn the_window_keeps_samples_in_it_and_sleeps_and_days_overlapping_it() {
    // 2025-03-02 00:00 … 12:00 UTC (05:30 … 17:30 at +05:30).
    let window = Window::new(
        Utc.with_ymd_and_hms(2025, 3, 2, 0, 0, 0).unwrap(),
        Utc.with_ymd_and_hms(2025, 3, 2, 12, 0, 0).unwrap(),
    )
    .unwrap();
    let all = merged(&["sleep", "heart_rate", "steps"]);
    let body = normalise(&all, Wanted::all(), &window).body.to_json();
    // The night ending 03-02 07:02 local overlaps it; none other does.
    let ids: Vec<&Value> = body["sleep"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["id"])
        .collect();
    assert_eq!(ids, [&json!("2025-03-02")]);
    // 03-02 09:00 and 13:30 local; 03:15 local is before, 21:10 after.
    let hr: Vec<&Value> = body["timeseries"]["heartrate"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["timestamp"])
        .collect();
    assert_eq!(
        hr,
        [
            &json!("2025-03-02T09:00:00+05:30"),
            &json!("2025-03-02T13:30:00+05:30")
        ]
    );
    // The local day 03-02 overlaps the window; 03-01 ended before it (03-01 18:30 UTC).
    let dates: Vec<&Value> = body["activity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["date"])
        .collect();
    assert_eq!(dates, [&json!("2025-03-02")]);
}

#[test]
fn only_what_is_wanted_is_normalised() {
    let all = merged(&["hrv", "heart_rate"]);
    let wanted = Wanted::of(&[Resource::Hrv]);
    let body = normalise(&all, wanted, &fixture_window()).body.to_json();
    let series: Vec<&String> = body["timeseries"].as_object().unwrap().keys().collect();
    assert_eq!(series, ["hrv"]);
    assert!(!Wanted::of(&[Resource::Profile, Resource::Workouts, Resource::Body]).any());
}

#[test]
fn malformed_entries_and_readings_are_skipped_and_counted() {
    let mut all = days("heart_rate");
    let day = all.get_mut("2025-03-01").unwrap();
    day.entries.insert(0, json!("not a record"));
    day.entries
        .push(json!({"type": "spo2", "object": {"title": "SPO2"}}));
    day.entries[1]["object"]["values"][0]["value"] = json!("seventy");
    let pulled = normalise(&all, Wanted::all(), &fixture_window());
    // The string, the spo2 object without readings, the unreadable reading.
    assert_eq!(pulled.skipped, 3);
    assert_eq!(
        pulled.body.to_json()["timeseries"]["heartrate"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
    assert!(
        pulled.body.to_json()["timeseries"]
            .get("blood_oxygen")
            .is_none()
    );
}

#[test]
fn an_unknown_or_missing_zone_is_utc() {
    let mut all = days("vo2_max");
    for day in all.values_mut() {
        day.zone = Some("Mars/Olympus_Mons".into());
    }
    let body = normalise(&all, Wanted::all(), &fixture_window())
        .body
        .to_json();
    let first = &body["timeseries"]["vo2_max"][0];
    assert_eq!(first["timestamp"], "2025-02-28T18:30:00+00:00");
    assert_eq!(first["timezone_offset"], 0);
}

#[test]
fn windows_are_asked_in_chunks_of_at_most_seven_days() {
    let start = Utc.with_ymd_and_hms(2025, 1, 1, 6, 0, 0).unwrap();
    let window = Window::new(start, start + chrono::TimeDelta::days(90)).unwrap();
    let chunks = chunks(&window);
    assert_eq!(chunks.len(), 13);
    assert_eq!(chunks[0].start, window.start);
    assert_eq!(chunks.last().unwrap().end, window.end);
    for pair in chunks.windows(2) {
        assert_eq!(pair[0].end, pair[1].start);
    }
    assert!(
        chunks
            .iter()
            .all(|c| c.end - c.start <= chrono::TimeDelta::days(MAX_SPAN_DAYS))
    );
}

#[test]
fn the_envelope_is_read_and_its_failures_are_permanent() {
    let days = envelope(fixture("glucose.json")).unwrap();
    assert_eq!(
        days.keys().collect::<Vec<_>>(),
        ["2025-03-02", "2025-03-03"]
    );
    assert_eq!(days["2025-03-02"].zone.as_deref(), Some("Asia/Kolkata"));
    let empty = envelope(json!({"status": 200, "error": null, "data": {"metrics": null}}));
    assert!(empty.unwrap().is_empty());
    for bad in [
        json!({"status": 400, "error": "start_epoch and end_epoch can be at most 7 days apart", "data": null}),
        json!({"status": 200, "error": null}),
        json!({"status": 200, "data": {"metrics": []}}),
        json!([]),
    ] {
        assert!(
            matches!(envelope(bad.clone()), Err(SyncError::Permanent { .. })),
            "{bad}"
        );
    }
}
