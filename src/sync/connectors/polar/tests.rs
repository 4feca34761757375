//! Fixture tests of the Polar normalisers (`testdata/providers/polar/`: each `<name>.json` is a
//! document in Polar's documented shape, each `<name>.expected.json` the push body it must
//! give over 2025-03-01 … 03-04 UTC), and of the pure helpers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{NaiveDate, TimeZone, Utc};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::heart_rate::Zones;
use super::normalise::{Body, iso_duration};
use super::webhook::{Notice, parse, signed_with};
use super::{Documents, normalise, rate_limit_wait};
use crate::sync::{Window, assert_fixture, ingest_counts};

fn fixture(name: &str) -> Value {
    crate::sync::fixture("polar", name)
}

fn list(name: &str, key: Option<&str>) -> Vec<Value> {
    let doc = fixture(&format!("{name}.json"));
    key.map_or(doc.clone(), |k| doc[k].clone())
        .as_array()
        .unwrap()
        .clone()
}

fn documents() -> Documents {
    Documents {
        exercises: list("exercises", None),
        nights: list("sleep", Some("nights")),
        recharges: list("nightly_recharge", Some("recharges")),
        activities: list("activities", None),
        heart_rate: list("continuous_heart_rate", None),
    }
}

fn window(from: u32, to: u32) -> Window {
    let at = |d| Utc.with_ymd_and_hms(2025, 3, d, 0, 0, 0).unwrap();
    Window::new(at(from), at(to)).unwrap()
}

fn everything() -> super::normalise::Wanted {
    super::normalise::Wanted {
        sleep: true,
        workouts: true,
        activity: true,
        heartrate: true,
    }
}

#[test]
fn exercises_become_workout_rows() {
    let mut body = Body::default();
    body.workouts(&list("exercises", None), &window(1, 4));
    assert_fixture(
        "polar",
        "exercises",
        &body.finish(),
        0,
        json!({"workouts": 3}),
    );
}

#[test]
fn nights_become_sleep_rows_with_their_recharge() {
    let mut body = Body::default();
    let (nights, recharges) = (
        list("sleep", Some("nights")),
        list("nightly_recharge", Some("recharges")),
    );
    body.sleep(&nights, &recharges, &window(1, 4));
    assert_fixture("polar", "sleep", &body.finish(), 0, json!({"sleep": 2}));

    // Without its recharge a night keeps its own fields only.
    let mut body = Body::default();
    body.sleep(&nights, &[], &window(1, 4));
    let got = body.finish().body.to_json();
    assert!(got["sleep"][0].get("average_hrv").is_none(), "{got}");
    assert_eq!(got["sleep"][0]["total"], json!(26_820));
}

#[test]
fn activity_summaries_become_activity_days() {
    let mut body = Body::default();
    body.activity(&list("activities", None), &window(1, 4));
    assert_fixture(
        "polar",
        "activities",
        &body.finish(),
        0,
        json!({"activity": 3}),
    );
}

#[test]
fn continuous_heart_rate_is_placed_with_the_days_offset() {
    let docs = documents();
    let mut body = Body::default();
    body.heart_rate(&docs.heart_rate, &Zones::of(&docs), &window(1, 4));
    assert_fixture(
        "polar",
        "continuous_heart_rate",
        &body.finish(),
        0,
        json!({"timeseries": {"heartrate": 6}}),
    );
    // With no dated document to tell, local times are read as UTC.
    let mut body = Body::default();
    body.heart_rate(&docs.heart_rate, &Zones::default(), &window(1, 4));
    let got = body.finish().body.to_json();
    assert_eq!(
        got["timeseries"]["heartrate"][0]["timestamp"],
        "2025-03-01T06:02:08+00:00"
    );
    assert_eq!(got["timeseries"]["heartrate"][0]["timezone_offset"], 0);
}

#[test]
fn a_days_offset_is_its_own_else_the_nearest_known() {
    let docs = documents();
    let zones = Zones::of(&docs);
    let day = |d| NaiveDate::from_ymd_opt(2025, 3, d).unwrap();
    assert_eq!(zones.on(day(2)), 7200);
    assert_eq!(zones.on(day(20)), 7200, "the nearest earlier day");
    assert_eq!(
        NaiveDate::from_ymd_opt(2025, 2, 1).map(|d| zones.on(d)),
        Some(7200)
    );
    assert_eq!(Zones::default().on(day(2)), 0);
}

#[test]
fn everything_in_one_body_is_accepted_and_cut_to_the_window() {
    let pulled = normalise(&documents(), everything(), &window(1, 4));
    assert_eq!(pulled.skipped, 0);
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({"sleep": 2, "activity": 3, "workouts": 3, "timeseries": {"heartrate": 6}})
    );
    // 2025-03-02 UTC only: the strength session, the night begun 03-02 21:40Z, the day
    // 03-02, and the samples of 03-02 01:12:08Z and 10:00:08Z.
    let pulled = normalise(&documents(), everything(), &window(2, 3));
    let ids = |part: &str| -> Vec<Value> {
        pulled.body.to_json()[part]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].clone())
            .collect()
    };
    assert_eq!(ids("workouts"), [json!("Bq7Rt5Mz")]);
    assert_eq!(ids("sleep"), [json!("2025-03-03")]);
    assert_eq!(ids("activity"), [json!("2025-03-02")]);
    let json = pulled.body.to_json();
    let hr: Vec<&Value> = json["timeseries"]["heartrate"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["value"])
        .collect();
    assert_eq!(hr, [&json!(52), &json!(88)]);
    // Nothing wanted, nothing kept.
    let none = normalise(
        &documents(),
        super::normalise::Wanted::default(),
        &window(1, 4),
    );
    assert_eq!(
        none.body.to_json(),
        json!({"provider": "polar", "source": {"type": "watch"}})
    );
}

#[test]
fn malformed_documents_are_skipped_and_their_neighbours_kept() {
    let mut docs = documents();
    docs.exercises[0]["duration"] = json!("two hours");
    docs.exercises[1]
        .as_object_mut()
        .unwrap()
        .remove("start_time");
    docs.nights[1]["sleep_end_time"] = json!("2025-03-02T20:00:00+02:00");
    docs.activities[2]["start_time"] = json!("yesterday");
    docs.heart_rate[1]["heart_rate_samples"] = json!("none");
    docs.recharges.push(json!({"date": "not a date"}));
    let pulled = normalise(&docs, everything(), &window(1, 4));
    assert_eq!(pulled.skipped, 6);
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({"sleep": 1, "activity": 2, "workouts": 1, "timeseries": {"heartrate": 4}})
    );
}

#[test]
fn iso_durations_read_as_seconds() {
    assert_eq!(iso_duration("PT2H44M"), Some(9840));
    assert_eq!(iso_duration("PT4S"), Some(4));
    assert_eq!(iso_duration("PT1H30M12.6S"), Some(5413));
    assert_eq!(iso_duration("PT210.026S"), Some(210));
    assert_eq!(iso_duration("P1DT2H"), Some(93_600));
    for bad in ["", "P", "2H", "PT2X", "PT2H3", "two hours"] {
        assert_eq!(iso_duration(bad), None, "{bad}");
    }
}

#[test]
fn a_429_waits_for_the_window_that_is_spent() {
    let headers = |usage: &str| {
        let mut h = HeaderMap::new();
        h.insert("ratelimit-usage", HeaderValue::from_str(usage).unwrap());
        h.insert("ratelimit-limit", HeaderValue::from_static("520, 5100"));
        h.insert("ratelimit-reset", HeaderValue::from_static("412, 61230"));
        h
    };
    assert_eq!(
        rate_limit_wait(&headers("520, 3002"), Utc::now()),
        Some(412)
    );
    assert_eq!(
        rate_limit_wait(&headers("300, 5100"), Utc::now()),
        Some(61_230)
    );
    assert_eq!(rate_limit_wait(&HeaderMap::new(), Utc::now()), None);
}

#[test]
fn webhooks_are_the_hex_hmac_of_the_body() {
    use hmac::{Hmac, Mac};
    let body = serde_json::to_vec(&fixture("webhook_exercise.json")).unwrap();
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"abe1f3ae-fd33").unwrap();
    mac.update(&body);
    let good = hex::encode(mac.finalize().into_bytes());
    assert!(signed_with("abe1f3ae-fd33", &body, &good));
    assert!(signed_with(
        "abe1f3ae-fd33",
        &body,
        &good.to_ascii_uppercase()
    ));
    assert!(!signed_with("another-key", &body, &good));
    assert!(!signed_with("abe1f3ae-fd33", b"{}", &good));
    assert!(!signed_with("abe1f3ae-fd33", &body, ""));

    let changed = Notice::Changed {
        event: "EXERCISE".into(),
        user: "2278512".into(),
    };
    assert_eq!(parse(&body), Ok(changed));
    assert_eq!(
        parse(br#"{"timestamp": "2018-05-15T14:22:24Z", "event": "PING"}"#),
        Ok(Notice::Ping)
    );
    for bad in [
        &br#"{"event": "SLEEP"}"#[..],
        br#"{"event": "SLEEP", "user_id": null}"#,
        b"[]",
        b"no",
    ] {
        assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
}
