//! Strava end to end: a user links Strava through the OAuth round trip (the link tests' fake
//! authorisation server standing in for Strava's, the client in the token request's form as
//! Strava's documentation sends it), the `sync.historical` job pulls [`FakeStrava`] on the real
//! job runner, and the getters and an aggregate query answer exactly the fixtures' normalised
//! values; a 429 with Strava's headers makes the job wait for the window to reset, without a
//! failed attempt.
//!
//! The fixtures are dated March 2025; a pull covers the last 90 days, so the fake serves them
//! moved forward by whole days ([`shifted`]) to end ten days ago.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, DurationRound, Utc};
use serde_json::{Value, json};

use super::fake_strava::{FakeStrava, Fault, fixture, fixture_data};
use crate::sync::support::linked::{
    Linked, assert_same_numbers, expected_at, instant, offset_days, series_values, shifted,
};
use wearhouse::jobs::JobState;
use wearhouse::sync::connectors::strava::Strava;

/// A fake Strava serving the fixtures moved into the pull's window.
pub(crate) async fn fake_strava() -> FakeStrava {
    let days = offset_days();
    let (activities, streams) = fixture_data();
    let activities = activities.iter().map(|a| shifted(a, days)).collect();
    let streams: HashMap<i64, Value> = streams.into_iter().collect();
    FakeStrava::start(activities, streams).await
}

/// A user linked to Strava (the athlete read by the pull, not from the token answer) whose
/// historical pull has succeeded at its first attempt.
pub(super) async fn pulled(strava: &FakeStrava) -> Linked {
    let connector = Arc::new(Strava::new(&strava.base).unwrap());
    Linked::pulled(connector, &[("x_account", "")], strava).await
}

/// `value`'s instant moved forward by `days`.
fn moved(value: &Value, days: i64) -> DateTime<Utc> {
    instant(value) + chrono::Duration::days(days)
}

/// The getters answer the fixtures' normalised values, moved by `days`, each record once.
pub(crate) async fn assert_fixtures_stored(l: &Linked, days: i64) {
    let expected = fixture("activities.expected.json");
    let mut want = expected_at(&expected, "/workouts");
    want.sort_by_key(|w| instant(&w["time_start"]));
    let got = l.summary("workouts", "time_start").await;
    let mut got = got.clone();
    got.sort_by_key(|w| instant(&w["time_start"]));
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (got, want) in got.iter().zip(&want) {
        assert_eq!(got["id"], want["id"], "{got:#}");
        assert_eq!(
            instant(&got["time_start"]),
            moved(&want["time_start"], days)
        );
        assert_eq!(instant(&got["time_end"]), moved(&want["time_end"], days));
        for field in ["title", "provider_id"] {
            assert_eq!(got[field], want[field], "{field}: {got:#}");
        }
        assert_eq!(got["sport"]["slug"], want["sport"]["slug"], "{got:#}");
        assert_eq!(got["sport"]["name"], want["sport"]["name"], "{got:#}");
        assert_same_numbers(
            got,
            want,
            &[
                "moving_time",
                "distance",
                "total_elevation_gain",
                "elev_high",
                "elev_low",
                "average_speed",
                "max_speed",
                "average_hr",
                "max_hr",
                "average_watts",
                "max_watts",
                "weighted_average_watts",
            ],
        );
        assert_eq!(
            got["map"]["summary_polyline"].as_str(),
            want["map"]["summary_polyline"].as_str(),
            "{got:#}"
        );
    }

    for series in ["heartrate", "distance"] {
        let got = l.series(series).await;
        let mut want = expected_at(&expected, &format!("/timeseries/{series}"));
        want.sort_by_key(|s| instant(&s["timestamp"]));
        assert_eq!(got.len(), want.len(), "{series}: {got:#?}");
        for (got, want) in got.iter().zip(&want) {
            assert_eq!(instant(&got["timestamp"]), moved(&want["timestamp"], days));
            if let Some(end) = want.get("end") {
                assert_eq!(instant(&got["end"]), moved(end, days), "{got}");
            }
            assert_eq!(got["value"].as_f64(), want["value"].as_f64(), "{got}");
            assert_eq!(got["unit"], want["unit"], "{got}");
            assert_eq!(got["timezone_offset"], want["timezone_offset"], "{got}");
        }
    }

    assert_eq!(
        l.profile().await["sex"],
        fixture("athlete.expected.json")["profile"]["sex"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_linked_strava_user_is_pulled_and_the_getters_answer_the_fixtures() {
    let strava = fake_strava().await;
    let l = pulled(&strava).await;
    assert_fixtures_stored(&l, offset_days()).await;

    // Strava wants its client in the form.
    l.assert_client_auth("form");
    // The pull recorded the athlete Strava's events name.
    assert_eq!(l.provider_user_id().await.as_deref(), Some("98765432"));
    l.assert_created_once(&["workouts"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aggregate_query_answers_the_fixtures_totals() {
    let strava = fake_strava().await;
    let l = pulled(&strava).await;
    l.assert_fixture_totals(
        fixture,
        &[
            (
                json!({"workout": "distance_meter"}),
                "activities.expected.json#/workouts",
                "distance",
            ),
            (
                series_values("heartrate"),
                "activities.expected.json#/timeseries/heartrate",
                "value",
            ),
            (
                series_values("distance"),
                "activities.expected.json#/timeseries/distance",
                "value",
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_429_with_stravas_headers_waits_for_the_quarter_hour_without_a_failed_attempt() {
    let strava = fake_strava().await;
    let connector = Arc::new(Strava::new(&strava.base).unwrap());
    let l = Linked::link_with(connector, &[("x_account", "")]).await;
    strava.accept_when(l.issued_tokens(None));
    // The athlete is read (the account), then the first activities page finds the 15-minute
    // window spent.
    strava.fail_times(Fault::RateLimited, 1, 1);
    let job = l.pull_job().await;
    let runner = l.runner();
    let quarter = chrono::Duration::minutes(15);
    let next_quarter = Utc::now().duration_trunc(quarter).unwrap() + quarter;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let waiting = loop {
        let now = wearhouse::jobs::get(&l.app.state.meta, job.id)
            .await
            .unwrap()
            .unwrap();
        if now.state == JobState::Pending && now.run_at > Utc::now() + chrono::Duration::seconds(1)
            || std::time::Instant::now() > deadline
        {
            break now;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    runner.shutdown().await;
    assert_eq!(waiting.state, JobState::Pending, "{waiting:?}");
    assert_eq!(
        waiting.attempts, 0,
        "a wait is no failed attempt: {waiting:?}"
    );
    let off = (waiting.run_at - next_quarter).num_seconds().abs();
    assert!(
        off <= 2,
        "due {} rather than at {next_quarter}",
        waiting.run_at
    );
    // Nothing was asked of Strava after the 429.
    let log = strava.log();
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(log[1].starts_with("athlete/activities?"), "{log:?}");
}
