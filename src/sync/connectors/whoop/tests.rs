//! Fixture tests of the WHOOP normalisers (`testdata/providers/whoop/`: each `<resource>.json`
//! is a response in WHOOP's documented shape, each `<resource>.expected.json` the push body it
//! must give), and of the client's pure helpers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use super::normalise::{Body, zone};
use super::{Documents, Wanted, normalise};
use crate::sync::http::instant_in;
use crate::sync::{Window, assert_fixture, ingest_counts};

fn fixture(name: &str) -> Value {
    crate::sync::fixture("whoop", name)
}

/// A collection fixture's records.
fn records(name: &str) -> Vec<Value> {
    fixture(&format!("{name}.json"))["records"]
        .as_array()
        .unwrap()
        .clone()
}

/// Every kind of recovery sample, and the sleep rows.
fn everything() -> Wanted {
    Wanted {
        sleep: true,
        hrv: true,
        heartrate: true,
        blood_oxygen: true,
        measured_at: Some(pull_end()),
    }
}

/// The end of the fixtures' pull: 2025-03-04 00:00 UTC.
fn pull_end() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, 4, 0, 0, 0).unwrap()
}

#[test]
fn sleeps_become_sleep_rows_with_their_recovery() {
    // A scored night with its scored recovery, a scored nap, and a night still being scored
    // (a tentative row with its times only).
    let mut body = Body::default();
    body.sleep(&records("sleep"), &records("recovery"));
    assert_fixture("whoop", "sleep", &body.finish(), 0, json!({"sleep": 3}));
}

#[test]
fn recoveries_become_samples_at_their_sleep() {
    // Two recoveries: one scored (four samples), one pending (nothing).
    let mut body = Body::default();
    body.recovery(&records("recovery"), &records("sleep"), everything());
    assert_fixture(
        "whoop",
        "recovery",
        &body.finish(),
        0,
        json!({"timeseries": {"heartrate": 1, "hrv": 1, "blood_oxygen": 1, "body_temperature": 1}}),
    );
}

#[test]
fn recovery_samples_follow_what_is_wanted() {
    let only_hrv = Wanted {
        hrv: true,
        ..Wanted::default()
    };
    let mut body = Body::default();
    body.recovery(&records("recovery"), &records("sleep"), only_hrv);
    let got = body.finish().body.to_json();
    let series: Vec<&String> = got["timeseries"].as_object().unwrap().keys().collect();
    assert_eq!(series, ["hrv"]);

    // A recovery whose sleep is not in the pull has no time: left out, not malformed.
    let mut body = Body::default();
    body.recovery(&records("recovery"), &[], everything());
    let pulled = body.finish();
    assert_eq!(pulled.skipped, 0);
    assert!(pulled.body.to_json().get("timeseries").is_none());
}

#[test]
fn scored_cycles_become_activity_days() {
    // Two scored cycles begun at 23:10 and 23:25 local (days 03-01 and 03-02), and the
    // ongoing cycle not scored yet, left out.
    let mut body = Body::default();
    body.cycles(&records("cycle"));
    assert_fixture("whoop", "cycle", &body.finish(), 0, json!({"activity": 2}));
}

#[test]
fn a_cycle_begun_after_midnight_counts_for_that_day() {
    let mut cycle = records("cycle")[0].clone();
    cycle["start"] = json!("2025-03-01T05:30:00.000Z"); // 00:30 at −05:00
    let mut body = Body::default();
    body.cycles(&[cycle]);
    assert_eq!(
        body.finish().body.to_json()["activity"][0]["date"],
        "2025-03-01"
    );
}

#[test]
fn workouts_become_workout_rows() {
    // A run with distance and elevation, a weightlifting session, and an unscorable one that
    // keeps its times and sport.
    let mut body = Body::default();
    body.workouts(&records("workout"));
    assert_fixture(
        "whoop",
        "workout",
        &body.finish(),
        0,
        json!({"workouts": 3}),
    );
}

#[test]
fn the_body_measurement_becomes_the_profile_and_a_body_row() {
    let mut body = Body::default();
    body.body_measurement(&fixture("body_measurement.json"), pull_end());
    assert_fixture(
        "whoop",
        "body_measurement",
        &body.finish(),
        0,
        json!({"body": 1, "profile": 1}),
    );
}

#[test]
fn every_resource_in_one_body_is_accepted() {
    let documents = Documents {
        cycles: records("cycle"),
        sleeps: records("sleep"),
        recoveries: records("recovery"),
        workouts: records("workout"),
        body_measurement: Some(fixture("body_measurement.json")),
    };
    let pulled = normalise(&documents, everything());
    assert_eq!(pulled.skipped, 0);
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({
            "sleep": 3, "activity": 2, "workouts": 3, "body": 1, "profile": 1,
            "timeseries": {"heartrate": 1, "hrv": 1, "blood_oxygen": 1, "body_temperature": 1}
        })
    );
    // Without the profile asked, the body measurement is not normalised.
    let later = normalise(
        &documents,
        Wanted {
            measured_at: None,
            ..everything()
        },
    );
    assert!(
        later.body.to_json().get("body").is_none() && later.body.to_json().get("profile").is_none()
    );
}

#[test]
fn malformed_records_are_skipped_and_their_neighbours_kept() {
    let mut sleeps = records("sleep");
    sleeps[1].as_object_mut().unwrap().remove("end");
    sleeps[2]["timezone_offset"] = json!("EST");
    let mut workouts = records("workout");
    workouts[0]["end"] = json!("2025-03-01T21:00:00.000Z");
    workouts[2]["score"] = json!("eleven");
    let mut cycles = records("cycle");
    cycles.push(json!("not an object"));
    let mut recoveries = records("recovery");
    recoveries[1].as_object_mut().unwrap().remove("sleep_id");

    let mut body = Body::default();
    body.sleep(&sleeps, &recoveries);
    body.recovery(&recoveries, &sleeps, everything());
    body.workouts(&workouts);
    body.cycles(&cycles);
    body.body_measurement(&json!({"height_meter": "tall"}), pull_end());
    let pulled = body.finish();

    // Two sleeps, two workouts, a cycle, a recovery and the body measurement.
    assert_eq!(pulled.skipped, 7);
    let ids = |part: &str| -> Vec<Value> {
        pulled.body.to_json()[part]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].clone())
            .collect()
    };
    assert_eq!(ids("sleep"), [sleeps[0]["id"].clone()]);
    assert_eq!(ids("workouts"), [workouts[1]["id"].clone()]);
    assert_eq!(ids("activity").len(), 2);
    assert!(pulled.body.to_json().get("profile").is_none());
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({"sleep": 1, "activity": 2, "workouts": 1,
               "timeseries": {"heartrate": 1, "hrv": 1, "blood_oxygen": 1, "body_temperature": 1}})
    );
}

#[test]
fn a_sleep_score_outside_the_data_models_range_is_left_out() {
    let mut sleeps = records("sleep");
    sleeps.truncate(1);
    sleeps[0]["score"]["sleep_performance_percentage"] = json!(0.2);
    let mut body = Body::default();
    body.sleep(&sleeps, &[]);
    let got = body.finish().body.to_json();
    assert!(got["sleep"][0].get("score").is_none(), "{got}");
    assert!(got["sleep"][0].get("hr_resting").is_none(), "{got}");
    assert_eq!(got["sleep"][0]["total"], json!(25860));
}

#[test]
fn time_zone_designators_read_as_offsets() {
    assert_eq!(zone("-05:00").unwrap().local_minus_utc(), -18_000);
    assert_eq!(zone("+05:30").unwrap().local_minus_utc(), 19_800);
    assert_eq!(zone("Z").unwrap().local_minus_utc(), 0);
    for bad in ["EST", "-5:00", "+0500", "", "+25:00"] {
        assert!(zone(bad).is_none(), "{bad}");
    }
}

#[test]
fn records_are_cut_to_the_window_by_their_start() {
    let start = Utc.with_ymd_and_hms(2025, 3, 1, 0, 0, 0).unwrap();
    let end = Utc.with_ymd_and_hms(2025, 3, 2, 0, 0, 0).unwrap();
    let w = Window::new(start, end).unwrap();
    let at = |t: &str| json!({"start": t});
    assert!(instant_in(&at("2025-03-01T00:00:00.000Z"), "start", &w));
    assert!(instant_in(&at("2025-03-01T23:59:59.999Z"), "start", &w));
    assert!(!instant_in(&at("2025-03-02T00:00:00.000Z"), "start", &w));
    assert!(!instant_in(&at("2025-02-28T23:00:00.000Z"), "start", &w));
    // Unreadable: kept, for the normaliser to count as malformed.
    assert!(instant_in(&json!({"id": 1}), "start", &w));
}
