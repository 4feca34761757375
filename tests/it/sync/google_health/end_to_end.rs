//! Google Health end to end: a user links `google_health` through the OAuth round trip (the
//! link tests' fake authorisation server standing in for Google's, the client in the token
//! request's form as Google's guide sends it, the authorisation URL asking for offline access),
//! the `sync.historical` job pulls [`FakeGoogleHealth`] on the real job runner, and the getters
//! and an aggregate query answer exactly the fixtures' normalised values; the fake then adds a
//! night and revises it, and `POST /v2/user/refresh` makes each visible, once; an expired
//! access token is refreshed.
//!
//! The fixtures are dated March 2025; a pull covers the last 90 days, so the fake serves them
//! moved forward by whole days ([`moved`]) to end ten days ago.

use std::sync::Arc;

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::{Value, json};

use super::fake_google_health::{Data, FakeGoogleHealth, civil_date, fixture, fixture_data};
use crate::link::oauth::{authorize_url, link_token};
use crate::sync::support::linked::{
    Linked, expected_at, instant, offset_days, series_values, shifted,
};
use wearhouse::sync::connectors::google_health::GoogleHealth;

/// `value` moved forward by `days`: its RFC 3339 strings ([`shifted`]) and its civil dates
/// (`{"date": {"year", "month", "day"}}`, which [`shifted`] does not know).
fn moved(value: &Value, days: i64) -> Value {
    fn civil(v: &mut Value, days: i64) {
        match v {
            Value::Object(map) => {
                if let Some(d) = civil_date(&json!({"date": map.get("date").cloned()})) {
                    let d = d + chrono::Duration::days(days);
                    map.insert(
                        "date".into(),
                        json!({"year": d.format("%Y").to_string().parse::<i64>().unwrap(),
                               "month": d.format("%m").to_string().parse::<i64>().unwrap(),
                               "day": d.format("%d").to_string().parse::<i64>().unwrap()}),
                    );
                }
                map.values_mut().for_each(|x| civil(x, days));
            }
            Value::Array(items) => items.iter_mut().for_each(|x| civil(x, days)),
            _ => {}
        }
    }
    let mut out = shifted(value, days);
    civil(&mut out, days);
    out
}

/// A fake Google Health serving the fixtures moved into the pull's window, two points a page.
pub(crate) async fn fake_google() -> FakeGoogleHealth {
    let days = offset_days();
    let data = fixture_data();
    let move_all = |m: std::collections::HashMap<String, Vec<Value>>| {
        m.into_iter()
            .map(|(k, v)| (k, v.iter().map(|p| moved(p, days)).collect()))
            .collect()
    };
    let data = Data {
        points: move_all(data.points),
        rollups: move_all(data.rollups),
        identity: data.identity,
    };
    FakeGoogleHealth::start(data, 2).await
}

/// A user linked to Google Health (the token answer names no user, as Google's does not)
/// whose historical pull has succeeded at its first attempt.
pub(super) async fn pulled(google: &FakeGoogleHealth) -> Linked {
    let connector = Arc::new(GoogleHealth::new(&google.base).unwrap());
    Linked::pulled(connector, &[("x_account", "")], google).await
}

fn later(value: &Value, days: i64) -> DateTime<Utc> {
    instant(value) + chrono::Duration::days(days)
}

/// The getters answer the fixtures' normalised values, moved by `days`, each record once.
pub(crate) async fn assert_fixtures_stored(l: &Linked, days: i64) {
    let sleep = l.summary("sleep", "bedtime_start").await;
    let mut want = expected_at(&fixture("sleep.expected.json"), "/sleep");
    want.sort_by_key(|r| r["bedtime_start"].to_string());
    assert_eq!(sleep.len(), want.len(), "{sleep:#?}");
    for (got, want) in sleep.iter().zip(&want) {
        assert_eq!(got["id"], want["id"], "{got:#}");
        assert_eq!(
            instant(&got["bedtime_start"]),
            later(&want["bedtime_start"], days)
        );
        assert_eq!(
            instant(&got["bedtime_stop"]),
            later(&want["bedtime_stop"], days)
        );
        assert_eq!(got["state"], want["state"], "{got:#}");
        for field in [
            "duration", "total", "awake", "light", "rem", "deep", "latency",
        ] {
            let v = |x: &Value| x[field].as_i64().unwrap_or(0);
            assert_eq!(v(got), v(want), "sleep {} {field}: {got:#}", want["id"]);
        }
        assert_eq!(got["efficiency"].as_f64(), want["efficiency"].as_f64());
    }
    let types: Vec<&Value> = sleep.iter().map(|s| &s["type"]).collect();
    // The nap as Google says; the nights by their length (7 h 38 min, 6 h 37 min).
    assert_eq!(
        types,
        [
            &json!("long_sleep"),
            &json!("acknowledged_nap"),
            &json!("long_sleep")
        ]
    );

    let want = expected_at(&fixture("activity.expected.json"), "/activity");
    l.assert_activity_days(&want, days).await;

    let samples = fixture("samples.expected.json");
    let body = fixture("body.expected.json");
    for (series, file) in [
        ("heartrate", &samples),
        ("hrv", &samples),
        ("blood_oxygen", &samples),
        ("weight", &body),
        ("fat", &body),
    ] {
        let got = l.series(series).await;
        let mut want = expected_at(file, &format!("/timeseries/{series}"));
        want.sort_by_key(|s| instant(&s["timestamp"]));
        assert_eq!(got.len(), want.len(), "{series}: {got:#?}");
        for (got, want) in got.iter().zip(&want) {
            assert_eq!(instant(&got["timestamp"]), later(&want["timestamp"], days));
            assert_eq!(got["value"].as_f64(), want["value"].as_f64(), "{got}");
            assert_eq!(got["unit"], want["unit"], "{got}");
            assert_eq!(got["timezone_offset"], want["timezone_offset"], "{got}");
        }
    }

    let rows = l.summary("body", "measured_at").await;
    let mut want = expected_at(&body, "/body");
    want.sort_by_key(|r| instant(&r["measured_at"]));
    assert_eq!(rows.len(), want.len(), "{rows:#?}");
    for (got, want) in rows.iter().zip(&want) {
        assert_eq!(
            instant(&got["measured_at"]),
            later(&want["measured_at"], days)
        );
        assert_eq!(got["weight"].as_f64(), want["weight"].as_f64(), "{got}");
        assert_eq!(got["fat"].as_f64(), want["fat"].as_f64(), "{got}");
    }
    let profile = l.profile().await;
    let height = &fixture("height.expected.json")["profile"]["height"];
    assert_eq!(profile["height"].as_f64(), height.as_f64(), "{profile}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_linked_google_health_user_is_pulled_and_the_getters_answer_the_fixtures() {
    let google = fake_google().await;
    let l = pulled(&google).await;
    assert_fixtures_stored(&l, offset_days()).await;

    // Google wants its client in the form.
    l.assert_client_auth("form");
    // The authorisation URL asks for offline access and Google's scope URLs.
    let token = link_token(&l.app, &l.user, true).await;
    let url = url::Url::parse(&authorize_url(&l.app, &token, "google_health").await).unwrap();
    let query: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let has = |k: &str, v: &str| query.iter().any(|(a, b)| a == k && b == v);
    assert!(
        has("access_type", "offline") && has("prompt", "consent"),
        "{url}"
    );
    assert!(has("code_challenge_method", "S256"), "{url}");
    let scope = query.iter().find(|(k, _)| k == "scope").unwrap().1.clone();
    assert!(
        scope.split(' ').all(
            |s| s.starts_with("https://www.googleapis.com/auth/googlehealth.")
                && s.ends_with(".readonly")
        ),
        "{scope}"
    );
    // The pull recorded the Google Health user the webhooks name.
    assert_eq!(l.provider_user_id().await.as_deref(), Some("4k2Zq9hT"));
    l.assert_created_once(&["sleep", "activity"]).await;
}

fn at(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A night ending three hours before `now`, as Google answers it while processing it and once
/// processed (stages and a summary); the same data point either way.
fn recent_sleep(now: DateTime<Utc>, processed: bool) -> Value {
    let (start, end) = (
        now - chrono::Duration::hours(10),
        now - chrono::Duration::hours(3),
    );
    let interval = json!({"startTime": at(start), "startUtcOffset": "3600s",
                          "endTime": at(end), "endUtcOffset": "3600s"});
    let mut sleep = json!({
        "interval": interval, "type": "CLASSIC",
        "metadata": {"nap": false, "processed": false},
        "summary": {"minutesInSleepPeriod": "420", "minutesAsleep": "390", "minutesAwake": "30"}
    });
    if processed {
        sleep["type"] = json!("STAGES");
        sleep["metadata"] = json!({"nap": false, "processed": true, "stagesStatus": "SUCCEEDED"});
        sleep["summary"] = json!({
            "minutesInSleepPeriod": "420", "minutesAsleep": "384", "minutesAwake": "36",
            "minutesToFallAsleep": "9",
            "stagesSummary": [
                {"type": "AWAKE", "minutes": "36", "count": "14"},
                {"type": "LIGHT", "minutes": "210", "count": "25"},
                {"type": "DEEP", "minutes": "84", "count": "6"},
                {"type": "REM", "minutes": "90", "count": "7"}
            ]
        });
    }
    json!({"name": "users/4k2Zq9hT/dataTypes/sleep/dataPoints/8675309999", "sleep": sleep})
}

#[tokio::test(flavor = "multi_thread")]
async fn refresh_shows_new_and_changed_records_once() {
    let google = fake_google().await;
    let l = pulled(&google).await;
    let sleeps = expected_at(&fixture("sleep.expected.json"), "/sleep").len();
    let beats = l.series("heartrate").await.len();
    let now = Utc::now().trunc_subsecs(0);

    // New: a night being processed, and a heart rate.
    google.put("sleep", recent_sleep(now, false));
    let hr = json!({"heartRate": {"beatsPerMinute": "66",
        "sampleTime": {"physicalTime": at(now - chrono::Duration::hours(1)), "utcOffset": "3600s"}}});
    google.put("heart-rate", hr);
    l.refreshed().await;
    let last = &l.last_of("sleep", "bedtime_start", sleeps + 1).await;
    assert_eq!(last["state"], "tentative", "{last}");
    assert_eq!(last["total"], json!(23_400), "{last}");
    let series = l.series("heartrate").await;
    assert_eq!(series.len(), beats + 1, "{series:#?}");
    assert_eq!(series.last().unwrap()["value"].as_f64(), Some(66.0));

    // Changed: Google finishes the night; the same id replaces, not adds.
    google.put("sleep", recent_sleep(now, true));
    l.refreshed().await;
    let last = &l.last_of("sleep", "bedtime_start", sleeps + 1).await;
    assert_eq!(last["state"], "confirmed", "{last}");
    assert_eq!(last["total"], json!(23_040), "{last}");
    assert_eq!(last["deep"], json!(5_040), "{last}");
    assert_eq!(last["latency"], json!(540), "{last}");
    assert_eq!(
        l.series("heartrate").await.len(),
        beats + 1,
        "nothing twice"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aggregate_query_answers_the_fixtures_totals() {
    let google = fake_google().await;
    let l = pulled(&google).await;
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
                "activity.expected.json#/activity",
                "steps",
            ),
            (
                series_values("heartrate"),
                "samples.expected.json#/timeseries/heartrate",
                "value",
            ),
            (
                series_values("hrv"),
                "samples.expected.json#/timeseries/hrv",
                "value",
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_access_token_is_refreshed() {
    let google = fake_google().await;
    let connector = Arc::new(GoogleHealth::new(&google.base).unwrap());
    // The link's access token has expired: Google answers 401 to it.
    let l = Linked::pulled_after_a_refresh(connector, &[("x_account", "")], &google).await;
    // The code exchange and the refresh, both with the client in the form and no scope named
    // again (Google keeps the grant's).
    let auth = l.oauth.client_auth();
    assert_eq!(auth, [("form", None), ("form", None)], "{auth:?}");
    assert_fixtures_stored(&l, offset_days()).await;
}
