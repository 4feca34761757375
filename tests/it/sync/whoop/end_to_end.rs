//! WHOOP end to end: a user links WHOOP through the OAuth round trip (the link tests' fake
//! authorisation server standing in for WHOOP's, its client in the token request's form as
//! WHOOP's documentation sends it), the `sync.historical` job pulls [`FakeWhoop`] on the real
//! job runner, and the getters answer exactly the fixtures' normalised values; the fake then
//! adds records and revises one, and `POST /v2/user/refresh` makes each visible, once; a 429
//! is waited out and a 5xx retried.
//!
//! The fixtures are dated March 2025; a pull covers the last 90 days, so the fake serves them
//! moved forward by whole days ([`shifted`]) to end ten days ago.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, SecondsFormat, SubsecRound, Utc};
use serde_json::{Value, json};

use super::fake_whoop::{FakeWhoop, Fault, fixture, fixture_collections};
use crate::sync::support::linked::{
    Linked, assert_same_numbers, expected_at, fixture_total, instant, offset_days, shifted,
};
use wearhouse::jobs::JobState;
use wearhouse::sync::connectors::whoop::Whoop;

/// A fake WHOOP serving the fixtures moved into the pull's window, two records a page.
pub(crate) async fn fake_whoop() -> FakeWhoop {
    let days = offset_days();
    let moved: HashMap<String, Vec<Value>> = fixture_collections()
        .into_iter()
        .map(|(path, records)| (path, records.iter().map(|r| shifted(r, days)).collect()))
        .collect();
    FakeWhoop::start(moved, 2).await
}

/// A user linked to WHOOP (the token answer names no user, as WHOOP's does not) whose
/// historical pull has succeeded at its first attempt.
pub(super) async fn pulled(whoop: &FakeWhoop) -> Linked {
    let connector = Arc::new(Whoop::new(&whoop.base).unwrap());
    Linked::pulled(connector, &[("x_account", "")], whoop).await
}

/// `value`'s instant moved forward by `days`.
fn moved(value: &Value, days: i64) -> DateTime<Utc> {
    instant(value) + chrono::Duration::days(days)
}

/// The getters answer the fixtures' normalised values, moved by `days`, each record once.
pub(crate) async fn assert_fixtures_stored(l: &Linked, days: i64) {
    let sleep = l.summary("sleep", "bedtime_start").await;
    let want = expected_at(&fixture("sleep.expected.json"), "/sleep");
    assert_eq!(sleep.len(), want.len(), "{sleep:#?}");
    for (got, want) in sleep.iter().zip(&want) {
        assert_eq!(got["id"], want["id"], "{got:#}");
        assert_eq!(
            instant(&got["bedtime_start"]),
            moved(&want["bedtime_start"], days)
        );
        assert_eq!(
            instant(&got["bedtime_stop"]),
            moved(&want["bedtime_stop"], days)
        );
        assert_eq!(got["state"], want["state"], "{got:#}");
        // The getter answers stages it was not given as 0 (the reference's integers).
        for field in ["total", "awake", "light", "rem", "deep"] {
            let stage = |v: &Value| v[field].as_i64().unwrap_or(0);
            assert_eq!(stage(got), stage(want), "sleep {} {field}", want["id"]);
        }
        // A night still being scored has no time in bed of WHOOP's: ingest takes its span.
        let span = instant(&want["bedtime_stop"]) - instant(&want["bedtime_start"]);
        let duration = want["duration"].as_i64().unwrap_or(span.num_seconds());
        assert_eq!(got["duration"].as_i64(), Some(duration), "{got:#}");
        assert_same_numbers(
            got,
            want,
            &[
                "efficiency",
                "respiratory_rate",
                "score",
                "hr_resting",
                "average_hrv",
                "skin_temperature",
            ],
        );
    }
    let types: Vec<&Value> = sleep.iter().map(|s| &s["type"]).collect();
    // The nap as WHOOP says; the nights by their length (7 h 38 min, 6 h 37 min).
    assert_eq!(
        types,
        [
            &json!("long_sleep"),
            &json!("acknowledged_nap"),
            &json!("long_sleep")
        ]
    );

    let activity = l.summary("activity", "calendar_date").await;
    let want = expected_at(&fixture("cycle.expected.json"), "/activity");
    assert_eq!(activity.len(), want.len(), "{activity:#?}");
    for (got, want) in activity.iter().zip(&want) {
        let day: NaiveDate = want["date"].as_str().unwrap().parse().unwrap();
        let day = (day + chrono::Duration::days(days)).to_string();
        assert_eq!(got["calendar_date"].as_str(), Some(day.as_str()), "{got}");
        assert_eq!(
            got["calories_total"].as_f64(),
            want["calories_total"].as_f64()
        );
        for hr in ["avg_bpm", "max_bpm"] {
            assert_eq!(
                got["heart_rate"][hr].as_f64(),
                want["heart_rate"][hr].as_f64(),
                "{day} {hr}: {got}"
            );
        }
    }

    let workouts = l.summary("workouts", "time_start").await;
    let want = expected_at(&fixture("workout.expected.json"), "/workouts");
    assert_eq!(workouts.len(), want.len(), "{workouts:#?}");
    for (got, want) in workouts.iter().zip(&want) {
        assert_eq!(got["id"], want["id"]);
        assert_eq!(
            instant(&got["time_start"]),
            moved(&want["time_start"], days)
        );
        assert_eq!(instant(&got["time_end"]), moved(&want["time_end"], days));
        assert_eq!(got["sport"]["slug"], want["sport"]["slug"], "{got}");
        assert_eq!(got["sport"]["name"], want["sport"]["name"], "{got}");
        assert_eq!(got["provider_id"], want["provider_id"]);
        assert_same_numbers(
            got,
            want,
            &[
                "calories",
                "distance",
                "total_elevation_gain",
                "average_hr",
                "max_hr",
            ],
        );
        let zones = want.get("hr_zones").cloned().unwrap_or(Value::Null);
        assert_eq!(got["hr_zones"], zones, "{got}");
    }

    let recovery = fixture("recovery.expected.json");
    for series in ["heartrate", "hrv", "blood_oxygen", "body_temperature"] {
        let got = l.series(series).await;
        let want = expected_at(&recovery, &format!("/timeseries/{series}"));
        assert_eq!(got.len(), want.len(), "{series}: {got:#?}");
        for (got, want) in got.iter().zip(&want) {
            assert_eq!(instant(&got["timestamp"]), moved(&want["timestamp"], days));
            assert_eq!(got["value"].as_f64(), want["value"].as_f64(), "{got}");
            assert_eq!(got["unit"], want["unit"], "{got}");
            assert_eq!(got["timezone_offset"], want["timezone_offset"], "{got}");
        }
    }

    let body = l.summary("body", "id").await;
    let want = expected_at(&fixture("body_measurement.expected.json"), "/body");
    assert_eq!(
        body.len(),
        1,
        "one row however many chunks read it: {body:#?}"
    );
    assert_eq!(body[0]["weight"].as_f64(), want[0]["weight"].as_f64());
    let profile = l.profile().await;
    let height = &fixture("body_measurement.expected.json")["profile"]["height"];
    assert_eq!(profile["height"].as_f64(), height.as_f64(), "{profile}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_linked_whoop_user_is_pulled_and_the_getters_answer_the_fixtures() {
    let whoop = fake_whoop().await;
    let l = pulled(&whoop).await;
    assert_fixtures_stored(&l, offset_days()).await;

    // WHOOP wants its client in the form, and the link asked for a refresh token.
    l.assert_client_auth("form");
    // The pull recorded the WHOOP user the webhooks name.
    assert_eq!(l.provider_user_id().await.as_deref(), Some("10129"));
    l.assert_created_once(&["sleep", "activity", "workouts"])
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_is_waited_out_and_a_server_error_retried() {
    let whoop = fake_whoop().await;
    let connector = Arc::new(Whoop::new(&whoop.base).unwrap());
    let l = Linked::link_with(connector, &[("x_account", "")]).await;
    whoop.accept_when(l.issued_tokens(None));
    let limited = Fault::RateLimited {
        retry_after: Some(1),
        reset: None,
    };
    whoop.fail_times(limited, 2, 1);
    let started = std::time::Instant::now();
    let done = l.run_until(JobState::Succeeded).await;
    assert_eq!(done.attempts, 1, "a wait is no failed attempt: {done:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After waited out"
    );
    assert_fixtures_stored(&l, offset_days()).await;

    // A 5xx fails the attempt; the runner's backoff retries it, and nothing is stored twice.
    let whoop = fake_whoop().await;
    let connector = Arc::new(Whoop::new(&whoop.base).unwrap());
    let l = Linked::link_with(connector, &[("x_account", "")]).await;
    whoop.accept_when(l.issued_tokens(None));
    whoop.fail_times(Fault::ServerError, 3, 2);
    let done = l.run_until(JobState::Succeeded).await;
    assert!(done.attempts > 1, "retried: {done:?}");
    assert_fixtures_stored(&l, offset_days()).await;
}

fn at(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A night ending three hours before `now`, as WHOOP answers it while scoring it (`score`
/// none) and once scored; the same id either way.
fn recent_sleep(now: DateTime<Utc>, score: Option<(i64, f64)>) -> Value {
    let mut sleep = json!({
        "id": "d0c1b2a3-0000-4000-8000-00000000aaaa", "cycle_id": 99001, "user_id": 10129,
        "created_at": at(now), "updated_at": at(now),
        "start": at(now - chrono::Duration::hours(10)), "end": at(now - chrono::Duration::hours(3)),
        "timezone_offset": "+01:00", "nap": false, "score_state": "PENDING_SCORE"
    });
    if let Some((performance, respiratory)) = score {
        sleep["score_state"] = json!("SCORED");
        sleep["score"] = json!({
            "stage_summary": {"total_in_bed_time_milli": 25_200_000, "total_awake_time_milli": 1_800_000,
                "total_no_data_time_milli": 0, "total_light_sleep_time_milli": 12_600_000,
                "total_slow_wave_sleep_time_milli": 5_400_000, "total_rem_sleep_time_milli": 5_400_000,
                "sleep_cycle_count": 4, "disturbance_count": 5},
            "sleep_needed": {"baseline_milli": 27_000_000, "need_from_sleep_debt_milli": 0,
                "need_from_recent_strain_milli": 0, "need_from_recent_nap_milli": 0},
            "respiratory_rate": respiratory, "sleep_performance_percentage": performance,
            "sleep_efficiency_percentage": 92.857_14
        });
    }
    sleep
}

#[tokio::test(flavor = "multi_thread")]
async fn refresh_shows_new_and_changed_records_once() {
    let whoop = fake_whoop().await;
    let l = pulled(&whoop).await;
    let days = offset_days();
    let sleeps = expected_at(&fixture("sleep.expected.json"), "/sleep").len();
    let workouts = expected_at(&fixture("workout.expected.json"), "/workouts").len();
    let now = Utc::now().trunc_subsecs(0);

    // New: a night being scored and a workout.
    whoop.put("activity/sleep", "id", recent_sleep(now, None));
    let ride = json!({
        "id": "d0c1b2a3-0000-4000-8000-00000000bbbb", "user_id": 10129,
        "created_at": at(now), "updated_at": at(now),
        "start": at(now - chrono::Duration::hours(2)), "end": at(now - chrono::Duration::hours(1)),
        "timezone_offset": "+01:00", "sport_name": "cycling", "score_state": "SCORED",
        "score": {"strain": 10.1, "average_heart_rate": 140, "max_heart_rate": 171,
            "kilojoule": 2092.0, "percent_recorded": 100.0, "distance_meter": 30_000.0,
            "zone_durations": {"zone_zero_milli": 0, "zone_one_milli": 600_000,
                "zone_two_milli": 1_200_000, "zone_three_milli": 1_200_000,
                "zone_four_milli": 600_000, "zone_five_milli": 0}}
    });
    whoop.put("activity/workout", "id", ride);
    l.refreshed().await;
    let last = &l.last_of("sleep", "bedtime_start", sleeps + 1).await;
    assert_eq!(last["state"], "tentative", "{last}");
    assert!(last["score"].is_null(), "{last}");
    let last = &l.last_of("workouts", "time_start", workouts + 1).await;
    assert_eq!(last["sport"]["slug"], "cycling");
    assert_eq!(last["calories"].as_f64(), Some(500.0), "2092 kJ: {last}");
    assert_eq!(last["hr_zones"], json!([0, 600, 1200, 1200, 600, 0]));

    // Changed: WHOOP scores the night; the same id replaces, not adds.
    whoop.put("activity/sleep", "id", recent_sleep(now, Some((88, 14.5))));
    l.refreshed().await;
    let last = &l.last_of("sleep", "bedtime_start", sleeps + 1).await;
    assert_eq!(last["state"], "confirmed", "{last}");
    assert_eq!(last["score"].as_f64(), Some(88.0), "{last}");
    assert_eq!(last["total"], json!(23_400), "{last}");
    assert_eq!(last["respiratory_rate"].as_f64(), Some(14.5), "{last}");
    assert_eq!(
        l.summary("workouts", "time_start").await.len(),
        workouts + 1,
        "nothing twice"
    );
    // The fixtures' own records are as the historical pull left them.
    let first = &l.summary("sleep", "bedtime_start").await[0];
    let want = &expected_at(&fixture("sleep.expected.json"), "/sleep")[0];
    assert_eq!(
        instant(&first["bedtime_start"]),
        moved(&want["bedtime_start"], days)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aggregate_query_answers_the_fixtures_totals() {
    let whoop = fake_whoop().await;
    let l = pulled(&whoop).await;
    let total =
        |file: &str, pointer: &str, field: &str| fixture_total(&fixture(file), pointer, field).0;
    l.assert_totals(&[
        (
            json!({"workout": "calories"}),
            (total("workout.expected.json", "/workouts", "calories"), 2),
        ),
        (
            json!({"sleep": "stage_asleep_second"}),
            (total("sleep.expected.json", "/sleep", "total"), 2),
        ),
        (
            json!({"activity": "calories_total"}),
            (
                total("cycle.expected.json", "/activity", "calories_total"),
                2,
            ),
        ),
        (
            json!({"timeseries": "hrv", "field": "value"}),
            (
                total("recovery.expected.json", "/timeseries/hrv", "value"),
                1,
            ),
        ),
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_access_token_is_refreshed_as_whoop_wants() {
    let whoop = fake_whoop().await;
    let connector = Arc::new(Whoop::new(&whoop.base).unwrap());
    // The link's access token has expired: WHOOP answers 401 to it.
    let l = Linked::pulled_after_a_refresh(connector, &[("x_account", "")], &whoop).await;
    // The code exchange and the refresh, both with the client in the form; the refresh asks
    // `offline` again, for a new refresh token.
    let auth = l.oauth.client_auth();
    assert_eq!(auth.len(), 2, "{auth:?}");
    assert_eq!(auth[1], ("form", Some("offline".to_owned())), "{auth:?}");
    assert_fixtures_stored(&l, offset_days()).await;
}
