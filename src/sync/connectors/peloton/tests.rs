//! Fixture tests of the Peloton normaliser (`testdata/providers/peloton/workouts.json`: a
//! workouts page in the shape the community documents, with one malformed record that is
//! skipped while its neighbours are kept; `workouts.expected.json`: the push body it must give).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use super::normalise::{Body, sport};
use crate::sync::Window;

fn data() -> Vec<Value> {
    crate::sync::fixture("peloton", "workouts.json")["data"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_workouts_page_becomes_workout_rows() {
    // A ride (540 kJ over 30 min: 300 W), a yoga class (no work: no power), a record whose
    // `start_time` is not a number (skipped), a run (412 345.6 J over 45 min: 152.7 W), a
    // strength class without a joined ride (no title) and a discipline not in the table.
    let mut body = Body::new(None);
    body.workouts(&data());
    crate::sync::assert_fixture(
        "peloton",
        "workouts",
        &body.finish(),
        1,
        json!({"workouts": 5}),
    );
}

#[test]
fn only_workouts_starting_in_the_window_are_kept_and_those_in_progress_are_left_out() {
    let mut records = data();
    // The run, still in progress.
    records[3]["end_time"] = Value::Null;
    let window = Window::new(
        Utc.with_ymd_and_hms(2025, 3, 2, 0, 0, 0).unwrap(),
        Utc.with_ymd_and_hms(2025, 3, 3, 7, 0, 0).unwrap(),
    )
    .unwrap();
    let mut body = Body::new(Some(window));
    body.workouts(&records);
    let pulled = body.finish();
    let json = pulled.body.to_json();
    let ids: Vec<&str> = json["workouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_str().unwrap())
        .collect();
    // The ride starts at the window's end (excluded); the strength and boxing classes before it.
    assert_eq!(ids, ["d1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"]);
    assert_eq!(pulled.skipped, 1, "only the malformed record counts");
}

#[test]
fn a_workout_ending_before_it_starts_is_skipped() {
    let mut records = data();
    records[0]["end_time"] = json!(records[0]["start_time"].as_i64().unwrap() - 1);
    let mut body = Body::new(None);
    body.workouts(&records);
    let pulled = body.finish();
    assert_eq!(pulled.skipped, 2);
    assert_eq!(
        pulled.body.to_json()["workouts"].as_array().unwrap().len(),
        4
    );
}

#[test]
fn disciplines_map_to_sports() {
    assert_eq!(sport("cycling"), Some(("Indoor cycling", "indoor_cycling")));
    assert_eq!(sport("caesar"), Some(("Rowing", "rowing")));
    assert_eq!(sport("circuit"), Some(("Tread bootcamp", "tread_bootcamp")));
    assert_eq!(sport("boxing"), None);
}
