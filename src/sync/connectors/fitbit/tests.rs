//! Fixture tests of the Fitbit normalisers (`testdata/providers/fitbit/`: each `<endpoint>.json`
//! is an answer in Fitbit's documented shape, keyed by the day asked for the per-day
//! endpoints, each `<endpoint>.expected.json` the push body it must give), and of the client's
//! pure helpers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{NaiveDate, TimeZone, Utc};
use serde_json::{Value, json};

use super::normalise::Body;
use super::zone::UserZone;
use super::{MAX_SLEEP_RANGE_DAYS, member_array};
use crate::sync::date_chunks;
use crate::sync::ingest_counts;
use crate::sync::{SyncError, Window};

fn fixture(name: &str) -> Value {
    crate::sync::fixture("fitbit", name)
}

fn berlin() -> UserZone {
    UserZone::Named(chrono_tz::Europe::Berlin)
}

fn body() -> Body {
    Body::new(berlin(), None)
}

fn day(d: &str) -> NaiveDate {
    d.parse().unwrap()
}

/// A date-range fixture's records (`{member: [...]}`).
fn records(name: &str, member: &str) -> Vec<Value> {
    member_array(fixture(&format!("{name}.json")), member).unwrap()
}

/// A per-day fixture's answers, in day order.
fn per_day(name: &str) -> Vec<(NaiveDate, Value)> {
    let Value::Object(days) = fixture(&format!("{name}.json")) else {
        panic!("{name}: not keyed by day");
    };
    days.into_iter().map(|(d, v)| (day(&d), v)).collect()
}

/// Normalises one fixture with `fill` and checks the body against the expected file, that
/// nothing was skipped and that ingest accepts it with `expected_counts`.
fn check(name: &str, fill: impl FnOnce(&mut Body), expected_counts: Value) {
    let mut body = body();
    fill(&mut body);
    crate::sync::assert_fixture("fitbit", name, &body.finish(), 0, expected_counts);
}

#[test]
fn sleep_logs_become_sleep_rows_with_hypnograms() {
    // Three stage logs (hypnograms at 30 s, short wakes laid over) and a classic nap.
    check(
        "sleep",
        |b| b.sleep(&records("sleep", "sleep")),
        json!({"sleep": 4}),
    );
}

#[test]
fn daily_summaries_become_activity_rows() {
    // The third day is a day the tracker was not worn: left out, not malformed.
    check(
        "activities",
        |b| {
            for (d, doc) in per_day("activities") {
                b.activity(d, &doc);
            }
        },
        json!({"activity": 2}),
    );
}

#[test]
fn intraday_heart_rate_becomes_heartrate_samples() {
    check(
        "heart_intraday",
        |b| {
            for (d, doc) in per_day("heart_intraday") {
                b.heartrate(d, &doc);
            }
        },
        json!({"timeseries": {"heartrate": 20}}),
    );
}

#[test]
fn intraday_steps_become_steps_intervals() {
    let expected = fixture("steps_intraday.expected.json");
    let n = expected["timeseries"]["steps"].as_array().unwrap().len();
    check(
        "steps_intraday",
        |b| {
            for (d, doc) in per_day("steps_intraday") {
                b.steps(d, &doc);
            }
        },
        json!({"timeseries": {"steps": n}}),
    );
    // Zero intervals are left out: fewer samples than 2 × 96 quarter hours.
    assert!(n < 192 && n > 20, "{n}");
}

#[test]
fn weight_logs_become_body_rows_and_samples() {
    check(
        "weight",
        |b| b.body_logs(&records("weight", "weight"), &[]),
        json!({"body": 2, "timeseries": {"weight": 2, "fat": 1}}),
    );
}

#[test]
fn fat_logs_alone_become_body_rows_and_samples() {
    check(
        "fat",
        |b| b.body_logs(&[], &records("fat", "fat")),
        json!({"body": 2, "timeseries": {"fat": 2}}),
    );
}

#[test]
fn a_fat_log_sharing_a_weight_logs_id_joins_its_row() {
    let mut weights = records("weight", "weight");
    // Without its own `fat`, the weight log takes the fat log's of the same logId.
    weights[0].as_object_mut().unwrap().remove("fat");
    let mut b = body();
    b.body_logs(&weights, &records("fat", "fat"));
    let pulled = b.finish();
    assert_eq!(pulled.skipped, 0);
    let json = pulled.body.to_json();
    let rows = json["body"].as_array().unwrap();
    let ids: Vec<_> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["1740811512000", "1740981900000", "1740896100000"]);
    assert_eq!(rows[0]["fat"], json!(24.1));
    assert_eq!(rows[2].get("weight"), None);
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({"body": 3, "timeseries": {"weight": 2, "fat": 2}})
    );
}

#[test]
fn the_profile_becomes_the_profile() {
    check(
        "profile",
        |b| b.profile(&fixture("profile.json")),
        json!({"profile": 1}),
    );
    assert_eq!(
        UserZone::of_profile(&fixture("profile.json")),
        Some(berlin())
    );
}

#[test]
fn every_endpoint_in_one_body_is_accepted() {
    let mut b = body();
    b.sleep(&records("sleep", "sleep"));
    for (d, doc) in per_day("activities") {
        b.activity(d, &doc);
    }
    for (d, doc) in per_day("heart_intraday") {
        b.heartrate(d, &doc);
    }
    for (d, doc) in per_day("steps_intraday") {
        b.steps(d, &doc);
    }
    b.body_logs(&records("weight", "weight"), &records("fat", "fat"));
    b.profile(&fixture("profile.json"));
    let pulled = b.finish();
    assert_eq!(pulled.skipped, 0);
    let steps = fixture("steps_intraday.expected.json")["timeseries"]["steps"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({
            "sleep": 4, "activity": 2, "body": 3, "profile": 1,
            "timeseries": {"heartrate": 20, "steps": steps, "weight": 2, "fat": 2}
        })
    );
}

#[test]
fn malformed_records_are_skipped_and_their_neighbours_kept() {
    let mut sleep = records("sleep", "sleep");
    sleep[1].as_object_mut().unwrap().remove("endTime");
    sleep[2]["startTime"] = json!("2025-03-02T08:00:00.000");
    let mut heart = per_day("heart_intraday");
    let dataset = heart[0].1["activities-heart-intraday"]["dataset"]
        .as_array_mut()
        .unwrap();
    dataset[2]["value"] = json!("seventy");
    dataset[4]["value"] = json!(900);
    dataset[5]["time"] = json!("25:00:00");
    let mut weights = records("weight", "weight");
    weights[1]["weight"] = json!(-3);
    let mut fats = records("fat", "fat");
    fats.push(json!("not an object"));

    let mut b = body();
    b.sleep(&sleep);
    for (d, doc) in &heart {
        b.heartrate(*d, doc);
    }
    b.activity(day("2025-03-01"), &json!({"summary": {"steps": "many"}}));
    b.body_logs(&weights, &fats);
    b.profile(&json!({"user": {"height": "tall"}}));
    let pulled = b.finish();

    assert_eq!(pulled.skipped, 9);
    let ids = |part: &str| -> Vec<Value> {
        pulled.body.to_json()[part]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].clone())
            .collect()
    };
    assert_eq!(ids("sleep"), [json!("48934410020"), json!("48902301001")]);
    assert_eq!(
        ids("body"),
        [json!("1740811512000"), json!("1740896100000")]
    );
    assert!(pulled.body.to_json().get("activity").is_none());
    assert!(pulled.body.to_json().get("profile").is_none());
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({"sleep": 2, "body": 2,
               "timeseries": {"heartrate": 17, "weight": 1, "fat": 2}})
    );
}

#[test]
fn records_outside_the_window_are_left_out() {
    // 2025-03-01 12:00 UTC to 2025-03-02 17:10 UTC (18:10 in Berlin).
    let start = Utc.with_ymd_and_hms(2025, 3, 1, 12, 0, 0).unwrap();
    let end = Utc.with_ymd_and_hms(2025, 3, 2, 17, 10, 0).unwrap();
    let mut b = Body::new(berlin(), Window::new(start, end));
    b.sleep(&records("sleep", "sleep"));
    for (d, doc) in per_day("heart_intraday") {
        b.heartrate(d, &doc);
    }
    b.body_logs(&records("weight", "weight"), &records("fat", "fat"));
    let pulled = b.finish();
    assert_eq!(pulled.skipped, 0);
    // The nap and the night that ended in the window (sleep is cut by its end).
    let sleep_ids: Vec<_> = pulled.body.to_json()["sleep"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].clone())
        .collect();
    assert_eq!(sleep_ids, [json!("48921102230"), json!("48917755012")]);
    // 18:05 … 18:09 local of the second evening.
    let json = pulled.body.to_json();
    let hr = json["timeseries"]["heartrate"].as_array().unwrap();
    assert_eq!(hr.len(), 5);
    assert_eq!(hr[0]["timestamp"], json!("2025-03-02T18:05:00+01:00"));
    let ids: Vec<_> = pulled.body.to_json()["body"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].clone())
        .collect();
    assert_eq!(ids, [json!("1740896100000")]);
}

#[test]
fn local_times_take_the_zones_offset_on_their_day() {
    let zone = berlin();
    let at = |s: &str| zone.resolve(s.parse().unwrap()).map(|t| t.to_rfc3339());
    assert_eq!(
        at("2025-03-01T07:00:00"),
        Some("2025-03-01T07:00:00+01:00".into())
    );
    assert_eq!(
        at("2025-03-30T07:00:00"),
        Some("2025-03-30T07:00:00+02:00".into())
    );
    // Skipped by the switch to summer time; the repeated hour reads as its first instant.
    assert_eq!(at("2025-03-30T02:30:00"), None);
    assert_eq!(
        at("2025-10-26T02:30:00"),
        Some("2025-10-26T02:30:00+02:00".into())
    );
    // A profile without a readable zone falls back to its offset.
    let fixed = UserZone::of_profile(
        &json!({"user": {"timezone": "Mars/Olympus", "offsetFromUTCMillis": -18000000}}),
    );
    assert_eq!(fixed.map(|z| z.label()), Some("-05:00".to_owned()));
    assert_eq!(UserZone::of_profile(&json!({"user": {}})), None);
    // The window's local days.
    let w = Window::new(
        Utc.with_ymd_and_hms(2025, 3, 1, 23, 30, 0).unwrap(),
        Utc.with_ymd_and_hms(2025, 3, 3, 23, 0, 0).unwrap(),
    )
    .unwrap();
    assert_eq!(zone.days(&w), (day("2025-03-02"), day("2025-03-03")));
}

#[test]
fn a_night_across_the_change_to_summer_time_keeps_its_hypnogram() {
    // 2025-03-30 in Berlin: 01:00 … 04:00 local is two hours. Light, then deep from 03:00.
    let log = json!({
        "dateOfSleep": "2025-03-30", "duration": 7_200_000, "efficiency": 95,
        "endTime": "2025-03-30T04:00:00.000", "isMainSleep": true, "logId": 7,
        "levels": {
            "data": [
                {"dateTime": "2025-03-30T01:00:00.000", "level": "light", "seconds": 3600},
                {"dateTime": "2025-03-30T03:00:00.000", "level": "deep", "seconds": 3600}
            ],
            "shortData": [],
            "summary": {"deep": {"minutes": 60}, "light": {"minutes": 60},
                        "rem": {"minutes": 0}, "wake": {"minutes": 0}}
        },
        "minutesAsleep": 120, "minutesAwake": 0, "minutesToFallAsleep": 0,
        "startTime": "2025-03-30T01:00:00.000", "timeInBed": 120, "type": "stages"
    });
    let mut b = body();
    b.sleep(&[log]);
    let pulled = b.finish();
    let row = &pulled.body.to_json()["sleep"][0];
    assert_eq!(row["bedtime_start"], json!("2025-03-30T01:00:00+01:00"));
    assert_eq!(row["bedtime_stop"], json!("2025-03-30T04:00:00+02:00"));
    let codes = row["sleep_stream"]["hypnogram"].as_array().unwrap();
    assert_eq!(codes.len(), 240);
    assert!(codes[..120].iter().all(|c| *c == json!(2)));
    assert!(codes[120..].iter().all(|c| *c == json!(1)));
    assert_eq!(ingest_counts(&pulled.body), json!({"sleep": 1}));
}

#[test]
fn ranges_are_chunked_to_fitbits_limits() {
    let chunks = date_chunks(day("2025-01-01"), day("2025-05-01"), MAX_SLEEP_RANGE_DAYS);
    assert_eq!(
        chunks,
        [
            (day("2025-01-01"), day("2025-04-10")),
            (day("2025-04-11"), day("2025-05-01"))
        ]
    );
    assert_eq!(
        date_chunks(day("2025-03-01"), day("2025-03-01"), 30),
        [(day("2025-03-01"), day("2025-03-01"))]
    );
    assert!(date_chunks(day("2025-03-02"), day("2025-03-01"), 30).is_empty());
}

#[test]
fn answers_must_have_the_documented_member() {
    assert_eq!(
        member_array(json!({"sleep": [1, 2]}), "sleep")
            .unwrap()
            .len(),
        2
    );
    for bad in [json!([1]), json!({"sleep": {}}), json!({"weight": []})] {
        assert!(matches!(
            member_array(bad, "sleep"),
            Err(SyncError::Permanent { .. })
        ));
    }
}
