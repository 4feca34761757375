//! Ultrahuman end to end: a user links Ultrahuman through the OAuth round trip (the link tests'
//! fake authorisation server standing in for Ultrahuman's, its client in the token request's
//! form as Ultrahuman's documentation lists it, no user id in the token answer), the
//! `sync.historical` job pulls [`FakeUltrahuman`] on the real job runner, and the getters and an
//! aggregate query answer exactly the fixtures' normalised values; the fake then adds a day and
//! revises its steps, and `POST /v2/user/refresh` makes each visible, once.
//!
//! The fixtures are dated March 2025; a pull covers the last 90 days, so the fake serves them
//! moved forward by whole days ([`shifted`] for the dates, [`moved_epochs`] for the unix
//! seconds) to end ten days ago.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, SubsecRound, TimeZone, Utc};
use serde_json::{Value, json};

use super::fake_ultrahuman::{Days, FakeUltrahuman, ZONE, fixture, fixture_days};
use crate::sync::support::linked::{
    Linked, expected_at, instant, offset_days, series_values, shifted,
};
use wearhouse::jobs::JobState;
use wearhouse::sync::connectors::ultrahuman::Ultrahuman;

/// The members of Ultrahuman's documents that are unix seconds.
const EPOCHS: [&str; 6] = [
    "timestamp",
    "day_start_timestamp",
    "bedtime_start",
    "bedtime_end",
    "start",
    "end",
];

/// `value` with every unix-seconds member moved forward by `days` whole days.
pub(crate) fn moved_epochs(value: &Value, days: i64) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(|v| moved_epochs(v, days)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let moved = match v.as_i64() {
                        Some(t) if EPOCHS.contains(&k.as_str()) => json!(t + days * 86_400),
                        _ => moved_epochs(v, days),
                    };
                    (k.clone(), moved)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A fake Ultrahuman serving the fixtures moved into the pull's window.
pub(crate) async fn fake_ultrahuman() -> FakeUltrahuman {
    let days = offset_days();
    let moved: Days = fixture_days()
        .into_iter()
        .map(|(date, entries)| {
            let date = shifted(&json!(date), days).as_str().unwrap().to_owned();
            let entries = entries.iter().map(|e| moved_epochs(e, days)).collect();
            (date, entries)
        })
        .collect();
    FakeUltrahuman::start(moved).await
}

/// A user linked to Ultrahuman (the token answer names no user) whose historical pull has
/// succeeded at its first attempt.
pub(super) async fn pulled(fake: &FakeUltrahuman) -> Linked {
    let connector = Arc::new(Ultrahuman::new(&fake.base).unwrap());
    let l = Linked::link_with(connector, &[("x_account", "")]).await;
    fake.accept_when(l.issued_tokens(None));
    let done = l.run_until(JobState::Succeeded).await;
    assert_eq!(done.attempts, 1, "{done:?}");
    l
}

fn moved(value: &Value, days: i64) -> DateTime<Utc> {
    instant(value) + chrono::Duration::days(days)
}

/// The getters answer the fixtures' normalised values, moved by `days`, each record once.
pub(crate) async fn assert_fixtures_stored(l: &Linked, days: i64) {
    let sleep = l.summary("sleep", "bedtime_start").await;
    let want = expected_at(&fixture("sleep.expected.json"), "/sleep");
    assert_eq!(sleep.len(), want.len(), "{sleep:#?}");
    for (got, want) in sleep.iter().zip(&want) {
        assert_eq!(
            instant(&got["bedtime_start"]),
            moved(&want["bedtime_start"], days),
            "{got:#}"
        );
        assert_eq!(
            instant(&got["bedtime_stop"]),
            moved(&want["bedtime_stop"], days)
        );
        assert_eq!(got["state"], "confirmed");
        for field in [
            "duration",
            "total",
            "awake",
            "light",
            "rem",
            "deep",
            "score",
            "hr_resting",
        ] {
            assert_eq!(
                got[field].as_i64(),
                want[field].as_i64(),
                "sleep {field}: {got:#}"
            );
        }
        for field in [
            "efficiency",
            "average_hrv",
            "skin_temperature",
            "temperature_delta",
        ] {
            assert_eq!(
                got[field].as_f64(),
                want[field].as_f64(),
                "sleep {field}: {got:#}"
            );
        }
        assert_eq!(got["timezone_offset"], want["timezone_offset"], "{got:#}");
    }

    let activity = l.summary("activity", "calendar_date").await;
    let want = expected_at(&fixture("steps.expected.json"), "/activity");
    assert_eq!(activity.len(), want.len(), "{activity:#?}");
    for (got, want) in activity.iter().zip(&want) {
        let day: NaiveDate = want["date"].as_str().unwrap().parse().unwrap();
        let day = (day + chrono::Duration::days(days)).to_string();
        assert_eq!(got["calendar_date"].as_str(), Some(day.as_str()), "{got}");
        assert_eq!(got["steps"].as_i64(), want["steps"].as_i64(), "{got}");
    }

    for (file, series, unit) in [
        ("heart_rate", "heartrate", "bpm"),
        ("hrv", "hrv", "ms"),
        ("temperature", "body_temperature", "°C"),
        ("spo2", "blood_oxygen", "%"),
        ("vo2_max", "vo2_max", "mL/kg/min"),
        ("glucose", "glucose", "mmol/L"),
    ] {
        let got = l.series(series).await;
        let want = expected_at(
            &fixture(&format!("{file}.expected.json")),
            &format!("/timeseries/{series}"),
        );
        assert_eq!(got.len(), want.len(), "{series}: {got:#?}");
        for (got, want) in got.iter().zip(&want) {
            assert_eq!(
                instant(&got["timestamp"]),
                moved(&want["timestamp"], days),
                "{series}: {got}"
            );
            assert_eq!(got["value"].as_f64(), want["value"].as_f64(), "{got}");
            assert_eq!(got["unit"], unit, "{got}");
            assert_eq!(got["timezone_offset"], want["timezone_offset"], "{got}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_linked_ultrahuman_user_is_pulled_and_the_getters_answer_the_fixtures() {
    let fake = fake_ultrahuman().await;
    let l = pulled(&fake).await;
    assert_fixtures_stored(&l, offset_days()).await;

    // The client travelled in the token request's form, as Ultrahuman lists its parameters.
    let auth = l.oauth.client_auth();
    assert!(
        !auth.is_empty() && auth.iter().all(|(how, _)| *how == "form"),
        "{auth:?}"
    );
    // 90 days and more in ranges of at most 7 days, each answered by the fake (which refuses
    // longer ones).
    let asked = fake.log();
    assert!(asked.len() >= 13, "{asked:#?}");

    let types = l.event_types().await;
    for resource in ["sleep", "activity"] {
        let name = format!("historical.data.{resource}.created");
        assert_eq!(types.iter().filter(|t| **t == name).count(), 1, "{types:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aggregate_query_answers_the_fixtures_totals() {
    let fake = fake_ultrahuman().await;
    let l = pulled(&fake).await;
    l.assert_fixture_totals(
        fixture,
        &[
            (
                json!({"sleep": "stage_asleep_second"}),
                "sleep.expected.json#/sleep",
                "total",
            ),
            (
                json!({"activity": "steps"}),
                "steps.expected.json#/activity",
                "steps",
            ),
            (
                series_values("heartrate"),
                "heart_rate.expected.json#/timeseries/heartrate",
                "value",
            ),
            (
                series_values("glucose"),
                "glucose.expected.json#/timeseries/glucose",
                "value",
            ),
        ],
    )
    .await;
}

/// The local day (in the fixtures' zone) of `at`, and when it began.
fn local_day(at: DateTime<Utc>) -> (String, i64) {
    let zone: chrono_tz::Tz = ZONE.parse().unwrap();
    let day = at.with_timezone(&zone).date_naive();
    let start = zone
        .from_local_datetime(&day.and_hms_opt(0, 0, 0).unwrap())
        .unwrap()
        .timestamp();
    (day.to_string(), start)
}

/// A day's heart rate readings and steps total, as daily_metrics lists them.
fn recent_day(day_start: i64, readings: &[(i64, f64)], steps: i64) -> Vec<Value> {
    let values: Vec<Value> = readings
        .iter()
        .map(|(t, v)| json!({"value": v, "timestamp": t}))
        .collect();
    vec![
        json!({"type": "hr", "object": {"day_start_timestamp": day_start, "title": "Heart Rate",
               "unit": "bpm", "last_reading": readings.last().unwrap().1, "values": values}}),
        json!({"type": "steps", "object": {"day_start_timestamp": day_start,
               "values": [{"value": steps, "timestamp": readings[0].0}], "subtitle": "Steps",
               "total": steps, "avg": steps, "trend_title": "Steady",
               "trend_direction": "positive"}}),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn refresh_shows_new_and_revised_records_once() {
    let fake = fake_ultrahuman().await;
    let l = pulled(&fake).await;
    let days = expected_at(&fixture("steps.expected.json"), "/activity").len();
    let hr = expected_at(
        &fixture("heart_rate.expected.json"),
        "/timeseries/heartrate",
    )
    .len();
    let now = Utc::now().trunc_subsecs(0);
    let reading = (now - chrono::Duration::hours(3)).timestamp();
    let (today, start) = local_day(now - chrono::Duration::hours(3));

    // New: a day with a reading and a steps total.
    fake.edit(|d| {
        d.insert(today.clone(), recent_day(start, &[(reading, 66.0)], 4_210));
    });
    l.refreshed().await;
    let activity = l.summary("activity", "calendar_date").await;
    assert_eq!(activity.len(), days + 1, "{activity:#?}");
    let last = activity.last().unwrap();
    assert_eq!(last["calendar_date"], json!(today));
    assert_eq!(last["steps"].as_i64(), Some(4_210), "{last}");
    let series = l.series("heartrate").await;
    assert_eq!(series.len(), hr + 1, "{series:#?}");
    assert_eq!(
        instant(&series.last().unwrap()["timestamp"]).timestamp(),
        reading
    );

    // The same days read again: nothing twice.
    l.refreshed().await;
    assert_eq!(l.summary("activity", "calendar_date").await.len(), days + 1);
    assert_eq!(l.series("heartrate").await.len(), hr + 1);

    // Revised: the day's total grows, and a reading comes; the day replaces itself.
    let later = (now - chrono::Duration::hours(1)).timestamp();
    fake.edit(|d| {
        d.insert(
            today.clone(),
            recent_day(start, &[(reading, 66.0), (later, 71.0)], 6_030),
        );
    });
    l.refreshed().await;
    let activity = l.summary("activity", "calendar_date").await;
    assert_eq!(activity.len(), days + 1, "{activity:#?}");
    assert_eq!(activity.last().unwrap()["steps"].as_i64(), Some(6_030));
    assert_eq!(l.series("heartrate").await.len(), hr + 2);
    // Nothing of the fixtures was stored twice by three incremental pulls.
    assert_eq!(
        l.summary("sleep", "bedtime_start").await.len(),
        expected_at(&fixture("sleep.expected.json"), "/sleep").len()
    );
}
