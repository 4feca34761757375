//! Polar end to end: a user links Polar through the OAuth round trip (the link tests' fake
//! authorisation server answering in Polar's token wire: client in HTTP Basic, `x_user_id`, no
//! refresh token), the `sync.historical` job registers the user and pulls [`FakePolar`] on the
//! real job runner, and the getters and an aggregate query answer exactly the fixtures'
//! normalised values; the fake then adds and revises records, and `POST /v2/user/refresh`
//! makes each visible, once.
//!
//! The fixtures are dated March 2025; a pull covers the last 90 days, so the fake serves them
//! moved forward by whole days ([`shifted`]) to end ten days ago.

use std::sync::Arc;

use chrono::{DateTime, FixedOffset, NaiveDate, SubsecRound, Utc};
use serde_json::{Value, json};

use super::fake_polar::{Data, FakePolar, fixture, fixture_data};
use crate::sync::support::linked::{
    Linked, assert_same_numbers, expected_at, instant, offset_days, series_values, shifted,
};
use wearhouse::jobs::JobState;
use wearhouse::sync::connectors::polar::Polar;

/// The Polar user id the token answer names.
pub(crate) const POLAR_USER: &str = "2278512";

/// A fake Polar serving the fixtures moved into the pull's window.
pub(crate) async fn fake_polar() -> FakePolar {
    let days = offset_days();
    let moved = |docs: Vec<Value>| docs.iter().map(|d| shifted(d, days)).collect();
    let d = fixture_data();
    FakePolar::start(Data {
        exercises: moved(d.exercises),
        nights: moved(d.nights),
        recharges: moved(d.recharges),
        activities: moved(d.activities),
        heart_rate: moved(d.heart_rate),
    })
    .await
}

/// A user linked to Polar whose historical pull has succeeded at its first attempt.
pub(super) async fn pulled(polar: &FakePolar) -> Linked {
    let connector = Arc::new(Polar::new(&polar.base).unwrap());
    let steer = [("x_account", POLAR_USER), ("x_wire", "polar")];
    Linked::pulled(connector, &steer, polar).await
}

fn moved(value: &Value, days: i64) -> DateTime<Utc> {
    instant(value) + chrono::Duration::days(days)
}

fn moved_day(value: &Value, days: i64) -> String {
    let day: NaiveDate = value.as_str().unwrap().parse().unwrap();
    (day + chrono::Duration::days(days)).to_string()
}

/// The getters answer the fixtures' normalised values, moved by `days`, each record once.
pub(crate) async fn assert_fixtures_stored(l: &Linked, days: i64) {
    let sleep = l.summary("sleep", "bedtime_start").await;
    let want = expected_at(&fixture("sleep.expected.json"), "/sleep");
    assert_eq!(sleep.len(), want.len(), "{sleep:#?}");
    for (got, want) in sleep.iter().zip(&want) {
        let start = &got["bedtime_start"];
        assert_eq!(
            instant(start),
            moved(&want["bedtime_start"], days),
            "{got:#}"
        );
        assert_eq!(
            instant(&got["bedtime_stop"]),
            moved(&want["bedtime_stop"], days)
        );
        for field in [
            "duration",
            "total",
            "awake",
            "light",
            "rem",
            "deep",
            "score",
            "hr_average",
        ] {
            assert_eq!(
                got[field].as_i64(),
                want[field].as_i64(),
                "sleep {field}: {got:#}"
            );
        }
        assert_same_numbers(got, want, &["average_hrv", "respiratory_rate"]);
        assert_eq!(got["state"], "confirmed");
    }

    let activity = l.summary("activity", "calendar_date").await;
    let want = expected_at(&fixture("activities.expected.json"), "/activity");
    assert_eq!(activity.len(), want.len(), "{activity:#?}");
    for (got, want) in activity.iter().zip(&want) {
        let day = moved_day(&want["date"], days);
        assert_eq!(got["calendar_date"].as_str(), Some(day.as_str()), "{got}");
        assert_same_numbers(
            got,
            want,
            &["calories_total", "calories_active", "steps", "distance"],
        );
    }

    let workouts = l.summary("workouts", "time_start").await;
    let want = expected_at(&fixture("exercises.expected.json"), "/workouts");
    assert_eq!(workouts.len(), want.len(), "{workouts:#?}");
    for (got, want) in workouts.iter().zip(&want) {
        assert_eq!(
            instant(&got["time_start"]),
            moved(&want["time_start"], days)
        );
        assert_eq!(instant(&got["time_end"]), moved(&want["time_end"], days));
        assert_eq!(got["sport"]["slug"], want["sport"]["slug"], "{got}");
        assert_eq!(got["sport"]["name"], want["sport"]["name"], "{got}");
        assert_eq!(got["provider_id"], want["provider_id"]);
        assert_same_numbers(got, want, &["calories", "distance", "average_hr", "max_hr"]);
    }

    let got = l.series("heartrate").await;
    let want = expected_at(
        &fixture("continuous_heart_rate.expected.json"),
        "/timeseries/heartrate",
    );
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (got, want) in got.iter().zip(&want) {
        assert_eq!(instant(&got["timestamp"]), moved(&want["timestamp"], days));
        assert_eq!(got["value"].as_f64(), want["value"].as_f64(), "{got}");
        assert_eq!(got["unit"], "bpm");
        assert_eq!(got["timezone_offset"], want["timezone_offset"], "{got}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_linked_polar_user_is_registered_pulled_and_the_getters_answer_the_fixtures() {
    let polar = fake_polar().await;
    let l = pulled(&polar).await;
    assert_fixtures_stored(&l, offset_days()).await;

    // Polar wants its client in HTTP Basic; its token answer's x_user_id is the account the
    // webhooks name; the user was registered with Polar under the wearhouse user id.
    l.assert_client_auth("basic");
    assert_eq!(l.provider_user_id().await.as_deref(), Some(POLAR_USER));
    assert_eq!(polar.members(), [l.user.clone()].into());
    l.assert_created_once(&["sleep", "activity", "workouts"])
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aggregate_query_answers_the_fixtures_totals() {
    let polar = fake_polar().await;
    let l = pulled(&polar).await;
    l.assert_fixture_totals(
        fixture,
        &[
            (
                json!({"workout": "calories"}),
                "exercises.expected.json#/workouts",
                "calories",
            ),
            (
                json!({"sleep": "stage_asleep_second"}),
                "sleep.expected.json#/sleep",
                "total",
            ),
            (
                json!({"activity": "steps"}),
                "activities.expected.json#/activity",
                "steps",
            ),
            (
                series_values("heartrate"),
                "continuous_heart_rate.expected.json#/timeseries/heartrate",
                "value",
            ),
        ],
    )
    .await;
}

/// An exercise begun three hours before `now` at +02:00, as `/v3/exercises` lists it.
fn recent_exercise(now: DateTime<Utc>, calories: i64) -> Value {
    let local = (now - chrono::Duration::hours(3)).naive_utc() + chrono::Duration::hours(2);
    json!({"id": "Dz5Fg1Hj", "upload_time": now.format("%Y-%m-%dT%H:%M:%S.000Z").to_string(),
           "polar_user": "https://www.polaraccesslink.com/v3/users/2278512",
           "device": "Polar Vantage V3", "device_id": "B4C3D2E1",
           "start_time": local.format("%Y-%m-%dT%H:%M:%S").to_string(),
           "start_time_utc_offset": 120, "duration": "PT45M", "calories": calories,
           "distance": 9100.0, "heart_rate": {"average": 151, "maximum": 177},
           "sport": "RUNNING", "has_route": true})
}

/// A night ended two hours before `now`, at +02:00, as `/v3/users/sleep` lists it.
fn recent_night(now: DateTime<Utc>) -> Value {
    let zone = FixedOffset::east_opt(7200).unwrap();
    let end = (now - chrono::Duration::hours(2)).with_timezone(&zone);
    let start = end - chrono::Duration::hours(7);
    json!({"polar_user": "https://www.polaraccesslink.com/v3/users/2278512",
           "date": end.date_naive().to_string(), "sleep_start_time": start.to_rfc3339(),
           "sleep_end_time": end.to_rfc3339(), "device_id": "B4C3D2E1",
           "light_sleep": 13_000, "deep_sleep": 5_000, "rem_sleep": 5_200,
           "unrecognized_sleep_stage": 0, "sleep_score": 81,
           "total_interruption_duration": 2_000})
}

#[tokio::test(flavor = "multi_thread")]
async fn refresh_shows_new_and_revised_records_once() {
    let polar = fake_polar().await;
    let l = pulled(&polar).await;
    let workouts = expected_at(&fixture("exercises.expected.json"), "/workouts").len();
    let sleeps = expected_at(&fixture("sleep.expected.json"), "/sleep").len();
    let now = Utc::now().trunc_subsecs(0);

    // New: an exercise and a night.
    polar.edit(|d| {
        d.exercises.push(recent_exercise(now, 602));
        d.nights.push(recent_night(now));
    });
    l.refreshed().await;
    let last = &l.last_of("workouts", "time_start", workouts + 1).await;
    assert_eq!(last["provider_id"], "Dz5Fg1Hj");
    assert_eq!(last["calories"].as_f64(), Some(602.0), "{last}");
    assert_eq!(
        instant(&last["time_start"]),
        now - chrono::Duration::hours(3)
    );
    let last = l.last_of("sleep", "bedtime_start", sleeps + 1).await;
    assert_eq!(last["total"], json!(23_200));

    // The same lists read again: nothing twice.
    l.refreshed().await;
    assert_eq!(
        l.summary("workouts", "time_start").await.len(),
        workouts + 1
    );
    assert_eq!(l.summary("sleep", "bedtime_start").await.len(), sleeps + 1);

    // Revised: Polar recomputes the exercise's calories; the same id replaces.
    polar.edit(|d| {
        d.exercises.pop();
        d.exercises.push(recent_exercise(now, 640));
    });
    l.refreshed().await;
    let last = l.last_of("workouts", "time_start", workouts + 1).await;
    assert_eq!(last["calories"].as_f64(), Some(640.0));
    // Nothing of the fixtures was stored twice by three incremental pulls.
    assert_eq!(l.summary("sleep", "bedtime_start").await.len(), sleeps + 1);
    let hr = expected_at(
        &fixture("continuous_heart_rate.expected.json"),
        "/timeseries/heartrate",
    );
    assert_eq!(l.series("heartrate").await.len(), hr.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_token_puts_the_connection_in_error_without_a_refresh() {
    let polar = fake_polar().await;
    let connector = Arc::new(Polar::new(&polar.base).unwrap());
    let steer = [("x_account", POLAR_USER), ("x_wire", "polar")];
    let l = Linked::link_with(connector, &steer).await;
    // The user revoked the access: Polar answers 401, and there is no refresh token to try.
    polar.accept_when(|_| false);
    let done = l.run_until(JobState::Failed).await;
    assert_eq!(
        l.oauth.token_requests(),
        1,
        "the code exchange only: {done:?}"
    );
    let details = l.assert_errored("provider_credential_error").await;
    assert!(details.error_message.contains("Polar"), "{details:?}");
    assert!(polar.members().is_empty(), "never registered");
}
