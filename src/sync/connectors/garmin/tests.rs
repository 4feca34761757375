//! Fixture tests of the Garmin normalisers (`testdata/providers/garmin/`: each `<name>.json` is
//! a list of summaries in Garmin's documented shape, each `<name>.expected.json` the push body
//! it must give), the upload windows a pull is cut into, and notification parsing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use super::webhook::{Refused, callback_allowed, client_verified, parse};
use super::{
    Documents, MAX_UPLOAD_WINDOW, Summary, Wanted, backfill_ranges, normalise, summaries,
    upload_windows,
};
use crate::schema::Table;
use crate::sync::{Resource, Window, assert_fixture};

fn list(name: &str) -> Vec<Value> {
    crate::sync::fixture("garmin", &format!("{name}.json"))
        .as_array()
        .unwrap()
        .clone()
}

fn only(f: impl FnOnce(&mut Wanted)) -> Wanted {
    let mut w = Wanted::default();
    f(&mut w);
    w
}

fn documents() -> Documents {
    Documents {
        dailies: list("dailies"),
        sleeps: list("sleeps"),
        activities: list("activities"),
        body_comps: list("body_comps"),
        stress: list("stress_details"),
    }
}

#[test]
fn dailies_become_activity_rows() {
    let pulled = normalise(&documents(), only(|w| w.activity = true));
    // Activity also brings the day's stress; the fixture checks the activity part.
    let mut body = pulled.body.to_json();
    let stress = body["timeseries"]["stress_level"].take();
    body.as_object_mut().unwrap().remove("timeseries");
    let expected = crate::sync::fixture("garmin", "dailies.expected.json");
    assert_eq!(body, expected, "{body:#}");
    assert_eq!(
        stress,
        crate::sync::fixture("garmin", "stress_details.expected.json")["timeseries"]["stress_level"]
    );
    let activity = pulled.body.records(Table::Activity).unwrap();
    assert_eq!(activity.len(), 3);
    assert!(
        activity.iter().all(|r| r.document.is_some()),
        "each row keeps its document"
    );
}

#[test]
fn dailies_heart_rate_samples_become_heartrate() {
    let pulled = normalise(&documents(), only(|w| w.heartrate = true));
    assert_fixture(
        "garmin",
        "heart_rate",
        &pulled,
        0,
        json!({"timeseries": {"heartrate": 9}}),
    );
}

#[test]
fn sleeps_become_sleep_rows_with_their_stages_and_spo2() {
    let pulled = normalise(
        &documents(),
        only(|w| {
            w.sleep = true;
            w.blood_oxygen = true;
        }),
    );
    assert_fixture(
        "garmin",
        "sleeps",
        &pulled,
        0,
        json!({"sleep": 2, "timeseries": {"blood_oxygen": 4}}),
    );
    let stages = pulled.body.to_json()["sleep"][0]["sleep_stream"]["hypnogram"]
        .as_array()
        .unwrap()
        .clone();
    // 7 h a minute at a time; the stage minutes agree with the night's totals.
    assert_eq!(stages.len(), 420);
    let minutes = |code: i64| stages.iter().filter(|s| **s == json!(code)).count() as i64 * 60;
    assert_eq!(minutes(1), 5400);
    assert_eq!(minutes(3), 5700);
    assert_eq!(minutes(4), 900);
    assert!(
        pulled.body.to_json()["sleep"][1]
            .get("sleep_stream")
            .is_none()
    );
}

#[test]
fn activities_become_workout_rows() {
    let pulled = normalise(&documents(), only(|w| w.workouts = true));
    assert_fixture("garmin", "activities", &pulled, 0, json!({"workouts": 2}));
}

#[test]
fn body_compositions_become_body_rows() {
    let pulled = normalise(&documents(), only(|w| w.body = true));
    assert_fixture("garmin", "body_comps", &pulled, 0, json!({"body": 2}));
}

#[test]
fn malformed_summaries_are_skipped_one_by_one() {
    let mut docs = documents();
    docs.dailies
        .push(json!({"summaryId": "no-date", "startTimeInSeconds": 1}));
    docs.sleeps.push(
        json!({"summaryId": "backwards", "startTimeInSeconds": 1740870000,
            "startTimeOffsetInSeconds": 3600, "durationInSeconds": -60}),
    );
    docs.activities.push(json!("not an object"));
    docs.body_comps.push(
        json!({"summaryId": "weightless", "measurementTimeInSeconds": 1740870000,
            "measurementTimeOffsetInSeconds": 3600, "weightInGrams": 0}),
    );
    docs.stress
        .push(json!({"startTimeInSeconds": 1, "startTimeOffsetInSeconds": 999999}));
    let all = Wanted::of(&Resource::ALL.into_iter().collect());
    let pulled = normalise(&docs, all);
    assert_eq!(pulled.skipped, 5);
    assert_eq!(
        pulled.body.to_json()["activity"].as_array().unwrap().len(),
        3
    );
    assert_eq!(pulled.body.to_json()["sleep"].as_array().unwrap().len(), 2);
    assert_eq!(
        pulled.body.to_json()["workouts"].as_array().unwrap().len(),
        2
    );
    assert_eq!(pulled.body.to_json()["body"].as_array().unwrap().len(), 2);
    crate::sync::ingest_counts(&pulled.body);
}

#[test]
fn a_window_is_cut_into_upload_windows_of_a_day_at_most() {
    let at = |d, h, s| Utc.with_ymd_and_hms(2025, 3, d, h, 0, s).unwrap();
    let w = Window::new(at(1, 0, 0), at(3, 12, 0)).unwrap();
    let got = upload_windows(&w);
    let start = at(1, 0, 0).timestamp();
    assert_eq!(
        got,
        [
            (start, start + 86_400),
            (start + 86_400, start + 172_800),
            (start + 172_800, start + 216_000)
        ]
    );
    assert!(got.iter().all(|(a, b)| b - a <= MAX_UPLOAD_WINDOW && a < b));
    // A window of a few seconds, with a fractional end, is one call covering it.
    let end = at(1, 0, 5) + chrono::Duration::milliseconds(300);
    let short = upload_windows(&Window::new(at(1, 0, 0), end).unwrap());
    assert_eq!(short, [(start, start + 6)]);
}

#[test]
fn backfill_is_asked_in_ranges_of_thirty_days_at_most() {
    let start = Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap();
    let end = start + chrono::Duration::days(90) + chrono::Duration::hours(5);
    let got = backfill_ranges(&Window::new(start, end).unwrap());
    let (s, day) = (start.timestamp(), 86_400);
    assert_eq!(
        got,
        [
            (s, s + 30 * day),
            (s + 30 * day, s + 60 * day),
            (s + 60 * day, s + 90 * day),
            (s + 90 * day, end.timestamp())
        ]
    );
}

#[test]
fn each_resource_reads_its_summaries() {
    let of = |r: &[Resource]| summaries(&r.iter().copied().collect::<BTreeSet<_>>());
    assert_eq!(
        of(&[Resource::Activity]),
        [Summary::Dailies, Summary::StressDetails].into()
    );
    assert_eq!(of(&[Resource::Heartrate]), [Summary::Dailies].into());
    assert_eq!(of(&[Resource::BloodOxygen]), [Summary::Sleeps].into());
    assert_eq!(of(&[Resource::Workouts]), [Summary::Activities].into());
    assert_eq!(of(&[Resource::Body]), [Summary::BodyComps].into());
    assert!(of(&[Resource::Profile, Resource::Glucose]).is_empty());
}

#[test]
fn pings_name_their_users_and_callbacks_must_stay_on_the_api_host() {
    let api = url::Url::parse("https://apis.garmin.com").unwrap();
    let ping = serde_json::to_vec(&crate::sync::fixture("garmin", "ping_dailies.json")).unwrap();
    let notice = parse(&ping, &api).unwrap();
    assert_eq!(notice.kinds, ["dailies".to_owned()].into());
    assert_eq!(
        notice.users,
        ["d3315b1072421d0dd7c8f6b8e1de4df8".to_owned()].into()
    );
    let dereg = br#"{"deregistrations": [{"userId": "u1"}, {"userId": "u2"}]}"#;
    assert_eq!(parse(dereg, &api).unwrap().users.len(), 2);
    let push = br#"{"epochs": [{"userId": "u1", "summaryId": "x1", "steps": 93}]}"#;
    assert!(parse(push, &api).is_ok());

    for bad in [
        "http://169.254.169.254/latest/meta-data",
        "http://apis.garmin.com/wellness-api/rest/dailies",
        "https://apis.garmin.com.evil.example/wellness-api/rest/dailies",
        "https://apis.garmin.com:8443/wellness-api/rest/dailies",
        "https://user@apis.garmin.com/wellness-api/rest/dailies",
        "https://apis.garmin.com/admin",
        "not a url",
    ] {
        assert!(!callback_allowed(&api, bad), "{bad}");
        let body = json!({"dailies": [{"userId": "u1", "callbackURL": bad}]}).to_string();
        assert!(
            matches!(parse(body.as_bytes(), &api), Err(Refused::Forged(_))),
            "{bad}"
        );
    }
    for malformed in [
        &b"not json"[..],
        b"[]",
        b"{}",
        br#"{"dailies": {"userId": "u1"}}"#,
        br#"{"dailies": [{"callbackURL": "https://apis.garmin.com/wellness-api/rest/x"}]}"#,
        br#"{"dailies": [{"userId": ""}]}"#,
    ] {
        assert!(
            matches!(parse(malformed, &api), Err(Refused::Malformed(_))),
            "{}",
            String::from_utf8_lossy(malformed)
        );
    }
    assert!(client_verified("client-1", "client-1"));
    assert!(!client_verified("client-1", "client-2"));
    assert!(!client_verified("client-1", ""));
}
