//! Garmin end to end: a user links Garmin through the OAuth round trip (the link tests' fake
//! authorisation server; Garmin wants the client in the form), the `sync.historical` job reads
//! the user's Garmin id, asks for the window's backfill and pulls [`FakeGarmin`] on the real
//! job runner, and the getters and an
//! aggregate query answer exactly the fixtures' normalised values; the fake then receives new
//! and revised summaries, and `POST /v2/user/refresh` makes each visible, once.
//!
//! The fixtures are dated March 2025; a pull covers the last 90 days, so the fake serves them
//! moved forward by whole days (their unix seconds and calendar dates) to end ten days ago,
//! each uploaded half an hour after its period.

use std::sync::Arc;

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::{Value, json};

use super::fake_garmin::{Data, FakeGarmin, GARMIN_USER, fixture, synced_at};
use crate::sync::support::linked::{
    Linked, assert_same_numbers, expected_at, instant, offset_days, series_values, shifted,
};
use wearhouse::sync::connectors::garmin::Garmin;

/// The `scope` of Garmin's token answers (its OAuth 2.0 PKCE specification's example).
pub(crate) const GARMIN_SCOPE: &str = "PARTNER_WRITE PARTNER_READ CONNECT_READ CONNECT_WRITE";

/// The unix-second members of Garmin's summaries that are instants (not durations).
const INSTANTS: [&str; 3] = [
    "startTimeInSeconds",
    "endTimeInSeconds",
    "measurementTimeInSeconds",
];

/// `doc` moved forward by `days`: its instants and its dates.
fn moved(doc: &Value, days: i64) -> Value {
    fn seconds(v: &mut Value, by: i64) {
        match v {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    match (INSTANTS.contains(&k.as_str()), v.as_i64()) {
                        (true, Some(s)) => *v = json!(s + by),
                        _ => seconds(v, by),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| seconds(i, by)),
            _ => {}
        }
    }
    let mut out = shifted(doc, days);
    seconds(&mut out, days * 86_400);
    out
}

/// A fake Garmin serving the fixtures moved into the pull's window.
pub(crate) async fn fake_garmin() -> FakeGarmin {
    let days = offset_days();
    let mut data = Data::default();
    for (kind, file) in [
        ("dailies", "dailies.json"),
        ("sleeps", "sleeps.json"),
        ("activities", "activities.json"),
        ("bodyComps", "body_comps.json"),
        ("stressDetails", "stress_details.json"),
    ] {
        for doc in fixture(file).as_array().unwrap() {
            let doc = moved(doc, days);
            data.upload(kind, synced_at(&doc), doc);
        }
    }
    FakeGarmin::start(data).await
}

/// A user linked to Garmin whose historical pull has succeeded at its first attempt.
pub(super) async fn pulled(garmin: &FakeGarmin) -> Linked {
    let connector = Arc::new(Garmin::new(&garmin.base).unwrap());
    // Garmin's token answer names no user (the first pull asks `/user/id`), and its `scope` is
    // the application's fixed one, whatever the user chose to share.
    let steer = [("x_account", ""), ("x_grant", GARMIN_SCOPE)];
    Linked::pulled(connector, &steer, garmin).await
}

fn later(value: &Value, days: i64) -> DateTime<Utc> {
    instant(value) + chrono::Duration::days(days)
}

/// The getters answer the fixtures' normalised values, moved by `days`, each record once.
pub(crate) async fn assert_fixtures_stored(l: &Linked, days: i64) {
    let sleep = l.summary("sleep", "bedtime_start").await;
    let want = expected_at(&fixture("sleeps.expected.json"), "/sleep");
    assert_eq!(sleep.len(), want.len(), "{sleep:#?}");
    for (got, want) in sleep.iter().zip(&want) {
        assert_eq!(
            instant(&got["bedtime_start"]),
            later(&want["bedtime_start"], days)
        );
        assert_eq!(
            instant(&got["bedtime_stop"]),
            later(&want["bedtime_stop"], days)
        );
        for field in [
            "duration", "total", "awake", "light", "rem", "deep", "score",
        ] {
            assert_eq!(
                got[field].as_i64(),
                want[field].as_i64(),
                "sleep {field}: {got:#}"
            );
        }
        assert_eq!(
            got["respiratory_rate"].as_f64(),
            want["respiratory_rate"].as_f64()
        );
        assert_eq!(got["state"], want["state"], "{got:#}");
    }

    let activity = l.summary("activity", "calendar_date").await;
    let want = expected_at(&fixture("dailies.expected.json"), "/activity");
    assert_eq!(activity.len(), want.len(), "{activity:#?}");
    for (got, want) in activity.iter().zip(&want) {
        let day = shifted(&want["date"], days);
        assert_eq!(got["calendar_date"], day, "{got}");
        assert_same_numbers(
            got,
            want,
            &[
                "calories_total",
                "calories_active",
                "steps",
                "distance",
                "floors_climbed",
            ],
        );
        assert_eq!(
            got["heart_rate"]["avg_bpm"].as_f64(),
            want["heart_rate"]["avg_bpm"].as_f64(),
            "{got}"
        );
    }

    let workouts = l.summary("workouts", "time_start").await;
    let want = expected_at(&fixture("activities.expected.json"), "/workouts");
    assert_eq!(workouts.len(), want.len(), "{workouts:#?}");
    for (got, want) in workouts.iter().zip(&want) {
        assert_eq!(
            instant(&got["time_start"]),
            later(&want["time_start"], days)
        );
        assert_eq!(instant(&got["time_end"]), later(&want["time_end"], days));
        assert_eq!(got["sport"]["slug"], want["sport"]["slug"], "{got}");
        assert_eq!(got["provider_id"], want["provider_id"]);
        assert_same_numbers(got, want, &["calories", "distance", "average_hr", "max_hr"]);
    }

    let body = l.summary("body", "measured_at").await;
    let want = expected_at(&fixture("body_comps.expected.json"), "/body");
    assert_eq!(body.len(), want.len(), "{body:#?}");
    for (got, want) in body.iter().zip(&want) {
        assert_eq!(
            instant(&got["measured_at"]),
            later(&want["measured_at"], days)
        );
        assert_eq!(got["weight"].as_f64(), want["weight"].as_f64(), "{got}");
        assert_eq!(got["fat"].as_f64(), want["fat"].as_f64(), "{got}");
    }

    for (file, series) in [
        ("heart_rate.expected.json", "heartrate"),
        ("sleeps.expected.json", "blood_oxygen"),
        ("stress_details.expected.json", "stress_level"),
    ] {
        let got = l.series(series).await;
        let want = expected_at(&fixture(file), &format!("/timeseries/{series}"));
        assert_eq!(got.len(), want.len(), "{series}: {got:#?}");
        for (got, want) in got.iter().zip(&want) {
            assert_eq!(instant(&got["timestamp"]), later(&want["timestamp"], days));
            assert_eq!(got["value"].as_f64(), want["value"].as_f64(), "{got}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_linked_garmin_user_is_pulled_and_the_getters_answer_the_fixtures() {
    let garmin = fake_garmin().await;
    let l = pulled(&garmin).await;
    assert_fixtures_stored(&l, offset_days()).await;

    // Garmin wants its client in the form; the user's Garmin id is what its pings name.
    l.assert_client_auth("form");
    assert_eq!(l.provider_user_id().await.as_deref(), Some(GARMIN_USER));

    // The historical window's older data was asked of every summary type once, in the same
    // contiguous ranges of at most 30 days, covering the 90 days up to the link.
    let backfills = garmin.backfills();
    let ranges = |kind: &str| -> Vec<(i64, i64)> {
        let of = backfills.iter().filter(|(k, _, _)| k == kind);
        of.map(|(_, a, b)| (*a, *b)).collect()
    };
    let dailies = ranges("dailies");
    assert!(dailies.len() >= 3, "{backfills:#?}");
    assert_eq!(backfills.len(), 5 * dailies.len(), "{backfills:#?}");
    for kind in ["sleeps", "activities", "bodyComps", "stressDetails"] {
        assert_eq!(ranges(kind), dailies, "{kind}");
    }
    assert!(dailies.windows(2).all(|w| w[0].1 == w[1].0), "{dailies:?}");
    assert!(dailies.iter().all(|(a, b)| a < b && b - a <= 30 * 86_400));
    let (first, last) = (dailies[0].0, dailies[dailies.len() - 1].1);
    assert!((last - first - 90 * 86_400).abs() <= 2, "{dailies:?}");
    assert!((Utc::now().timestamp() - last).abs() < 120, "{dailies:?}");

    l.assert_created_once(&["sleep", "activity", "workouts", "body"])
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aggregate_query_answers_the_fixtures_totals() {
    let garmin = fake_garmin().await;
    let l = pulled(&garmin).await;
    l.assert_fixture_totals(
        fixture,
        &[
            (
                json!({"workout": "calories"}),
                "activities.expected.json#/workouts",
                "calories",
            ),
            (
                json!({"sleep": "stage_asleep_second"}),
                "sleeps.expected.json#/sleep",
                "total",
            ),
            (
                json!({"activity": "steps"}),
                "dailies.expected.json#/activity",
                "steps",
            ),
            (
                series_values("heartrate"),
                "heart_rate.expected.json#/timeseries/heartrate",
                "value",
            ),
            (
                series_values("stress_level"),
                "stress_details.expected.json#/timeseries/stress_level",
                "value",
            ),
        ],
    )
    .await;
}

/// A run begun three hours before `now` at +01:00, as `/wellness-api/rest/activities` lists it.
fn recent_run(now: DateTime<Utc>, calories: i64) -> Value {
    json!({"summaryId": "10400000001", "activityId": 10400000001_i64,
           "activityName": "Evening Run", "activityType": "RUNNING",
           "startTimeInSeconds": (now - chrono::Duration::hours(3)).timestamp(),
           "startTimeOffsetInSeconds": 3600, "durationInSeconds": 2700,
           "distanceInMeters": 9100.0, "activeKilocalories": calories,
           "averageHeartRateInBeatsPerMinute": 151, "maxHeartRateInBeatsPerMinute": 177,
           "deviceName": "Forerunner 965"})
}

#[tokio::test(flavor = "multi_thread")]
async fn refresh_shows_new_and_revised_records_once() {
    let garmin = fake_garmin().await;
    let l = pulled(&garmin).await;
    let workouts = expected_at(&fixture("activities.expected.json"), "/workouts").len();
    let days = expected_at(&fixture("dailies.expected.json"), "/activity").len();
    let now = Utc::now().trunc_subsecs(0);
    let synced = now.timestamp() - 1;

    // New: a run, and today's daily summary, synced a second ago.
    let mut today = fixture("dailies.json")[0].clone();
    today["summaryId"] = json!("x3c2f1a-today");
    today["calendarDate"] = json!(now.date_naive().to_string());
    today["startTimeInSeconds"] = json!(now.timestamp() - 3600);
    today["steps"] = json!(4321);
    garmin.edit(|d| {
        d.upload("activities", synced, recent_run(now, 602));
        d.upload("dailies", synced, today.clone());
    });
    l.refreshed().await;
    let last = &l.last_of("workouts", "time_start", workouts + 1).await;
    assert_eq!(last["provider_id"], "10400000001");
    assert_eq!(last["calories"].as_f64(), Some(602.0), "{last}");
    assert_eq!(
        instant(&last["time_start"]),
        now - chrono::Duration::hours(3)
    );
    let last = l.last_of("activity", "calendar_date", days + 1).await;
    assert_eq!(last["steps"], json!(4321));

    // The same uploads read again: nothing twice.
    l.refreshed().await;
    assert_eq!(
        l.summary("workouts", "time_start").await.len(),
        workouts + 1
    );
    assert_eq!(l.summary("activity", "calendar_date").await.len(), days + 1);

    // Revised: the day fills up and the run's calories are recomputed; the same ids replace.
    today["steps"] = json!(9876);
    garmin.edit(|d| {
        d.upload("activities", synced + 1, recent_run(now, 640));
        d.upload("dailies", synced + 1, today);
    });
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    l.refreshed().await;
    let last = l.last_of("workouts", "time_start", workouts + 1).await;
    assert_eq!(last["calories"].as_f64(), Some(640.0));
    let last = l.last_of("activity", "calendar_date", days + 1).await;
    assert_eq!(last["steps"], json!(9876));
    // Nothing of the fixtures was stored twice by three incremental pulls.
    let hr = expected_at(
        &fixture("heart_rate.expected.json"),
        "/timeseries/heartrate",
    );
    let today_samples = fixture("dailies.json")[0]["timeOffsetHeartRateSamples"]
        .as_object()
        .unwrap()
        .len();
    assert_eq!(l.series("heartrate").await.len(), hr.len() + today_samples);
}
