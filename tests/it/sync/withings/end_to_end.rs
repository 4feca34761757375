//! Withings end to end: a user links Withings through the OAuth round trip (the fake
//! authorisation server of the link tests, standing in for Withings' token endpoint), the
//! `sync.historical` job pulls [`FakeWithings`] on the real job runner, and the getters answer
//! exactly the fixtures' normalised values; the fake then adds and changes records and
//! `POST /v2/user/refresh` makes them visible, each once; and the faults: an expired token
//! (`status` 401 under HTTP 200) is refreshed, an HTTP 429 is waited out.
//!
//! The fixtures are dated March 2025; a pull covers the last 90 days, so the fake serves them
//! moved forward by whole days ([`shifted`]) to end ten days ago.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};

use super::fake_withings::{Data, FakeWithings, Fault, fixture, fixture_data, shifted};
use crate::sync::support::linked::{Linked, assert_same_numbers, instant, offset_days};
use wearhouse::jobs::JobState;
use wearhouse::sync::connectors::withings::Withings;

/// A fake Withings serving the fixtures moved into the pull's window, two records a page.
pub(crate) async fn fake_withings() -> FakeWithings {
    let days = offset_days();
    let data = fixture_data();
    let moved = |records: &[Value]| records.iter().map(|r| shifted(r, days)).collect();
    let data = Data {
        timezone: data.timezone.clone(),
        measuregrps: moved(&data.measuregrps),
        series: moved(&data.series),
        activities: moved(&data.activities),
        workouts: moved(&data.workouts),
        // The watch's minutes are not moved: the pull's window does not reach them.
        intraday: Vec::new(),
        states: moved(&data.states),
    };
    FakeWithings::start(data, 2).await
}

/// The app (OAuth for Withings at a fake authorisation server, pulls from `withings`) and a
/// user linked to Withings.
async fn linked(withings: &FakeWithings) -> Linked {
    Linked::link(Arc::new(Withings::new(&withings.base).unwrap())).await
}

/// Accepts every access token `l`'s authorisation server issued but `refused`.
fn accept_issued(withings: &FakeWithings, l: &Linked, refused: Option<String>) {
    withings.accept_when(l.issued_tokens(refused));
}

/// Runs the app's jobs until the user's historical pull job is in `state`; its attempts.
async fn run_until(l: &Linked, state: JobState) -> i64 {
    i64::from(l.run_until(state).await.attempts)
}

fn expected(file: &str, pointer: &str) -> Vec<Value> {
    fixture(file)
        .pointer(pointer)
        .and_then(Value::as_array)
        .cloned()
        .unwrap()
}

/// The getters answer the fixtures' normalised values, moved by `days`, each record once.
pub(crate) async fn assert_fixtures_stored(l: &Linked, days: i64) {
    let moved = |v: &Value| instant(v) + chrono::Duration::days(days);

    let sleep = l.summary("sleep", "id").await;
    let want = expected("sleep_states.expected.json", "/sleep");
    assert_eq!(sleep.len(), want.len(), "{sleep:#?}");
    // The night with states answers its hypnogram as stage samples, the others none.
    for (got, want) in sleep.iter().zip(&want) {
        let stages = &got["sleep_stream"]["hypnogram"];
        match want["sleep_stream"]["hypnogram"].as_array() {
            Some(codes) => {
                let samples = stages.as_array().unwrap_or_else(|| panic!("{got:#}"));
                assert!(!samples.is_empty(), "{got:#}");
                assert!(samples.len() <= codes.len(), "{got:#}");
            }
            None => assert!(got["sleep_stream"].is_null(), "{got:#}"),
        }
    }
    for (got, want) in sleep.iter().zip(&want) {
        assert_eq!(got["id"], want["id"]);
        assert_eq!(
            instant(&got["bedtime_start"]),
            moved(&want["bedtime_start"])
        );
        assert_eq!(instant(&got["bedtime_stop"]), moved(&want["bedtime_stop"]));
        for field in [
            "duration", "total", "awake", "light", "rem", "deep", "latency",
        ] {
            assert_eq!(got[field], want[field], "sleep {} {field}", want["id"]);
        }
        assert_same_numbers(
            got,
            want,
            &[
                "hr_lowest",
                "hr_average",
                "score",
                "efficiency",
                "respiratory_rate",
            ],
        );
    }

    l.assert_activity_days(&expected("activity.expected.json", "/activity"), days)
        .await;

    let workouts = l.summary("workouts", "id").await;
    let want = expected("workouts.expected.json", "/workouts");
    assert_eq!(workouts.len(), want.len(), "{workouts:#?}");
    for (got, want) in workouts.iter().zip(&want) {
        assert_eq!(got["id"], want["id"]);
        assert_eq!(instant(&got["time_start"]), moved(&want["time_start"]));
        assert_eq!(instant(&got["time_end"]), moved(&want["time_end"]));
        assert_eq!(got["sport"]["slug"], want["sport"]["slug"]);
        assert_same_numbers(
            got,
            want,
            &["moving_time", "calories", "distance", "steps", "average_hr"],
        );
    }

    let body = l.summary("body", "id").await;
    let want = expected("measures.expected.json", "/body");
    assert_eq!(body.len(), want.len(), "{body:#?}");
    for (got, want) in body.iter().zip(&want) {
        assert_eq!(got["id"], want["id"]);
        assert_eq!(instant(&got["measured_at"]), moved(&want["measured_at"]));
        assert_same_numbers(
            got,
            want,
            &[
                "weight",
                "fat",
                "muscle_mass_percentage",
                "visceral_fat_index",
            ],
        );
    }

    for resource in ["weight", "fat", "heartrate"] {
        let got = l.series(resource).await;
        let want = expected("measures.expected.json", &format!("/timeseries/{resource}"));
        assert_eq!(got.len(), want.len(), "{resource}: {got:#?}");
        for (got, want) in got.iter().zip(&want) {
            assert_eq!(instant(&got["timestamp"]), moved(&want["timestamp"]));
            assert_eq!(got["value"].as_f64(), want["value"].as_f64(), "{resource}");
        }
    }
    let pressure = l.series("blood_pressure").await;
    assert_eq!(pressure.len(), 1, "{pressure:#?}");
    assert_eq!(pressure[0]["systolic"].as_f64(), Some(121.0));
    assert_eq!(pressure[0]["diastolic"].as_f64(), Some(78.0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_linked_withings_user_is_pulled_and_the_getters_answer_the_fixtures() {
    let withings = fake_withings().await;
    let l = linked(&withings).await;
    accept_issued(&withings, &l, None);
    assert_eq!(run_until(&l, JobState::Succeeded).await, 1);
    assert_fixtures_stored(&l, offset_days()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_access_token_is_refreshed_and_the_pull_completes() {
    let withings = fake_withings().await;
    let l = linked(&withings).await;
    // The link's token has expired: Withings answers `status` 401 under HTTP 200.
    accept_issued(&withings, &l, Some(l.oauth.issued()[0].clone()));
    assert_eq!(run_until(&l, JobState::Succeeded).await, 1);
    assert_eq!(l.oauth.issued().len(), 2, "one refresh");
    assert_fixtures_stored(&l, offset_days()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_pull_waits_out_retry_after_and_completes() {
    let withings = fake_withings().await;
    let l = linked(&withings).await;
    accept_issued(&withings, &l, None);
    withings.fail_times(Fault::HttpRateLimited { retry_after: 1 }, 2, 1);
    let started = std::time::Instant::now();
    assert_eq!(
        run_until(&l, JobState::Succeeded).await,
        1,
        "a wait is no failed attempt"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After waited out"
    );
    assert_fixtures_stored(&l, offset_days()).await;
}

/// A night ending three hours before `now` (seconds), that day's activity in Paris and a
/// weigh-in two hours before. A changed version of a record keeps its times, as Withings' own
/// do, so a test fixes `now` once: taken at each call, it could cross a second (or midnight)
/// and make the weigh-in a new sample.
fn recent(now: i64, score: i64, steps: i64, grams: i64) -> (Value, Value, Value) {
    let at = chrono::DateTime::from_timestamp(now, 0).expect("a time");
    let night = json!({
        "id": 9100, "timezone": "Europe/Paris", "startdate": now - 11 * 3600,
        "enddate": now - 3 * 3600, "date": at.date_naive().to_string(),
        "data": {"total_sleep_time": 25_200, "sleep_score": score}
    });
    let today = at.with_timezone(&chrono_tz::Europe::Paris).date_naive();
    let day = json!({
        "date": today.to_string(), "timezone": "Europe/Paris", "steps": steps,
        "totalcalories": 2000, "calories": 250
    });
    let group = json!({
        "grpid": 6001, "date": now - 2 * 3600, "category": 1, "attrib": 0,
        "measures": [{"value": grams, "type": 1, "unit": -3}, {"value": 2150, "type": 6, "unit": -2}]
    });
    (night, day, group)
}

#[tokio::test(flavor = "multi_thread")]
async fn refresh_shows_new_and_changed_records_once() {
    let withings = fake_withings().await;
    let l = linked(&withings).await;
    accept_issued(&withings, &l, None);
    assert_eq!(run_until(&l, JobState::Succeeded).await, 1);

    let serve = |(night, day, group): (Value, Value, Value)| {
        withings.put_series(night);
        withings.put_activity(day);
        withings.put_group(group);
    };
    // New: a night, a day and a weigh-in.
    let now = Utc::now().timestamp();
    serve(recent(now, 70, 1200, 70_150));
    l.refreshed().await;
    let sleep = l.summary("sleep", "id").await;
    assert_eq!(sleep.len(), 4, "{sleep:#?}");
    assert_eq!(sleep[3]["id"], "9100");
    assert_eq!(sleep[3]["score"].as_f64(), Some(70.0));
    let body = l.summary("body", "id").await;
    let ids: Vec<&str> = body.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["5001", "5004", "6001"],
        "the new weigh-in, nothing twice"
    );
    assert_eq!(body[2]["weight"].as_f64(), Some(70.15));
    assert_eq!(body[2]["fat"].as_f64(), Some(21.5));
    let activity = l.summary("activity", "calendar_date").await;
    assert_eq!(activity.len(), 4, "{activity:#?}");
    assert_eq!(activity[3]["steps"].as_f64(), Some(1200.0));

    // Changed: the same three records with new values replace, not add.
    serve(recent(now, 75, 5400, 69_800));
    l.refreshed().await;
    let sleep = l.summary("sleep", "id").await;
    let scores: Vec<(&str, Option<f64>)> = sleep
        .iter()
        .map(|s| (s["id"].as_str().unwrap(), s["score"].as_f64()))
        .collect();
    assert_eq!(
        scores,
        [
            ("9001", Some(82.0)),
            ("9002", Some(88.0)),
            ("9004", None),
            ("9100", Some(75.0))
        ]
    );
    let body = l.summary("body", "id").await;
    assert_eq!(body.len(), 3, "{body:#?}");
    assert_eq!(body[2]["weight"].as_f64(), Some(69.8));
    let weights = l.series("weight").await;
    assert_eq!(weights.len(), 3, "{weights:#?}");
    assert_eq!(weights[2]["value"].as_f64(), Some(69.8));
    let activity = l.summary("activity", "calendar_date").await;
    let steps: Vec<Option<f64>> = activity.iter().map(|d| d["steps"].as_f64()).collect();
    assert_eq!(
        steps,
        [Some(8543.0), Some(10211.0), Some(4200.0), Some(5400.0)]
    );
}
