//! The Strava connector (issue 37) against [`fake_strava`], a fake Strava API v3 on a loopback
//! port: pulls over several pages with each activity's streams, the cut to the window, the
//! account id, and the failure kinds (429 with Strava's `X-RateLimit-*` headers and no
//! `Retry-After`, 401, 500, an activity whose streams are gone). [`end_to_end`] runs the same
//! fake behind the app: OAuth link, historical pull job, getters, an aggregate query;
//! [`notify`] Strava's webhook subscription (validation, events, revocation).

pub(super) mod end_to_end;
pub mod fake_strava;
mod notify;

use chrono::{DateTime, DurationRound, Utc};
use serde_json::{Value, json};

use crate::sync::support::{all_march, pull, utc};
use fake_strava::{FakeStrava, Fault, TOKEN, fixture, fixture_data};
use wearhouse::ingest::PushUser;
use wearhouse::sync::connectors::strava::Strava;
use wearhouse::sync::{Connector, Resource, SyncError, screen};

/// A push body's workouts sorted by `id`, its samples by time.
fn sorted(body: &Value) -> Value {
    let mut body = body.clone();
    if let Some(rows) = body.get_mut("workouts").and_then(Value::as_array_mut) {
        rows.sort_by_key(|r| r["id"].to_string());
    }
    for series in ["heartrate", "distance"] {
        if let Some(rows) = body
            .get_mut("timeseries")
            .and_then(|t| t.get_mut(series))
            .and_then(Value::as_array_mut)
        {
            rows.sort_by_key(|r| {
                r["timestamp"]
                    .as_str()
                    .map(|t| DateTime::parse_from_rfc3339(t).unwrap())
            });
        }
    }
    body
}

#[tokio::test]
async fn a_multi_page_pull_returns_every_activity_and_its_streams_once() {
    let (activities, streams) = fixture_data();
    let fake = FakeStrava::start(activities, streams).await;
    let strava = Strava::new(&fake.base).unwrap().with_per_page(2);
    assert_eq!(strava.provider(), "strava");
    let pulled = strava.pull(TOKEN, &all_march()).await.unwrap();
    assert_eq!(pulled.skipped, 0);

    // Normalised exactly as the fixture tests expect, whatever order the pages brought.
    let body = sorted(&pulled.body.to_json());
    let expected = sorted(&fixture("activities.expected.json"));
    assert_eq!(body["workouts"], expected["workouts"]);
    assert_eq!(body["timeseries"], expected["timeseries"]);
    assert_eq!(body["profile"], fixture("athlete.expected.json")["profile"]);

    // Paging: 3 activities at 2 a page are 2 requests over the window; streams of the two
    // recorded activities (the manual one has none), the keys kept and keyed by type.
    let log = fake.log();
    let pages: Vec<_> = log
        .iter()
        .filter(|l| l.starts_with("athlete/activities?"))
        .collect();
    assert_eq!(pages.len(), 2, "{log:#?}");
    let (after, before) = (utc(2025, 3, 1).timestamp() - 1, utc(2025, 3, 4).timestamp());
    for (n, page) in pages.iter().enumerate() {
        let want = format!("after={after}&before={before}&page={}&per_page=2", n + 1);
        assert_eq!(**page, format!("athlete/activities?{want}"), "{log:#?}");
    }
    let streams: Vec<_> = log.iter().filter(|l| l.contains("/streams?")).collect();
    assert_eq!(
        streams,
        [
            "activities/13000000001/streams?key_by_type=true&keys=time,heartrate,distance,watts",
            "activities/13000000002/streams?key_by_type=true&keys=time,heartrate,distance,watts",
        ]
        .iter()
        .collect::<Vec<_>>(),
        "{log:#?}"
    );

    let screened = screen(pulled.body.clone(), &PushUser::default(), Utc::now()).unwrap();
    assert!(screened.dropped.is_empty(), "{:?}", screened.dropped);
    assert_eq!(
        screened.batches.counts(),
        json!({"workouts": 3, "profile": 1, "timeseries": {"heartrate": 9, "distance": 7}})
    );
}

#[tokio::test]
async fn activities_are_cut_to_the_window_and_only_what_is_asked_is_read() {
    let (activities, streams) = fixture_data();
    let fake = FakeStrava::start(activities, streams).await;
    let strava = Strava::new(&fake.base).unwrap();
    // 2025-03-02 only: the run.
    let window = pull(&[Resource::Workouts], utc(2025, 3, 2), utc(2025, 3, 3));
    let pulled = strava.pull(TOKEN, &window).await.unwrap();
    let json = pulled.body.to_json();
    let ids: Vec<&Value> = json["workouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| &w["id"])
        .collect();
    assert_eq!(ids, [&json!("13000000002")]);
    assert!(
        pulled.body.to_json()["timeseries"]
            .get("heartrate")
            .is_none(),
        "not asked"
    );
    assert_eq!(
        pulled.body.to_json()["timeseries"]["distance"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert!(pulled.body.to_json().get("profile").is_none());

    // Sleep and glucose are not Strava's: nothing is asked of it.
    let before = fake.log().len();
    let window = pull(
        &[Resource::Sleep, Resource::Glucose],
        utc(2025, 3, 1),
        utc(2025, 3, 4),
    );
    let pulled = strava.pull(TOKEN, &window).await.unwrap();
    assert_eq!(fake.log().len(), before);
    assert_eq!(
        pulled.body.to_json(),
        json!({"provider": "strava", "source": {"type": "app"}})
    );
}

#[tokio::test]
async fn the_account_is_the_athletes_id() {
    let (activities, streams) = fixture_data();
    let fake = FakeStrava::start(activities, streams).await;
    let strava = Strava::new(&fake.base).unwrap();
    assert_eq!(
        strava.account(TOKEN).await.unwrap().as_deref(),
        Some("98765432")
    );
}

/// Seconds from now to `until` (now truncated to `step`, plus `step`).
fn to_next(step: chrono::Duration) -> i64 {
    let now = Utc::now();
    (now.duration_trunc(step).unwrap() + step - now).num_seconds()
}

#[tokio::test]
async fn a_429_waits_for_the_window_strava_reports_spent() {
    let (activities, streams) = fixture_data();
    let fake = FakeStrava::start(activities, streams).await;
    let strava = Strava::new(&fake.base).unwrap();
    let near = |got: Option<u64>, want: i64| {
        let got = got.map(|s| s as i64).unwrap();
        assert!((got - want).abs() <= 2, "waits {got} s, expected {want} s");
    };

    fake.fail_times(Fault::RateLimited, 0, 1);
    match strava.pull(TOKEN, &all_march()).await {
        Err(SyncError::RateLimited {
            retry_after_seconds,
        }) => near(retry_after_seconds, to_next(chrono::Duration::minutes(15))),
        other => panic!("{other:?}"),
    }
    // The day spent: until midnight UTC (a streams request this time).
    fake.fail_times(Fault::DailyLimited, 1, 1);
    match strava.pull(TOKEN, &all_march()).await {
        Err(SyncError::RateLimited {
            retry_after_seconds,
        }) => near(retry_after_seconds, to_next(chrono::Duration::days(1))),
        other => panic!("{other:?}"),
    }
    // And once the window is over, the pull goes through.
    assert!(strava.pull(TOKEN, &all_march()).await.is_ok());
}

#[tokio::test]
async fn a_refused_token_and_a_server_error_are_told_apart() {
    let (activities, streams) = fixture_data();
    let fake = FakeStrava::start(activities, streams).await;
    let strava = Strava::new(&fake.base).unwrap();
    assert!(matches!(
        strava.pull("someone-elses-token", &all_march()).await,
        Err(SyncError::Unauthorised)
    ));
    fake.fail_times(Fault::Unauthorised, 2, 1);
    assert!(matches!(
        strava.pull(TOKEN, &all_march()).await,
        Err(SyncError::Unauthorised)
    ));
    fake.fail_times(Fault::ServerError, 1, 1);
    assert!(matches!(
        strava.pull(TOKEN, &all_march()).await,
        Err(SyncError::Transient { .. })
    ));
}

#[tokio::test]
async fn an_activity_whose_streams_are_gone_keeps_its_workout() {
    let (activities, mut streams) = fixture_data();
    streams.remove(&13000000001);
    let fake = FakeStrava::start(activities, streams).await;
    let strava = Strava::new(&fake.base).unwrap();
    let pulled = strava.pull(TOKEN, &all_march()).await.unwrap();
    assert_eq!(pulled.skipped, 0);
    assert_eq!(
        pulled.body.to_json()["workouts"].as_array().unwrap().len(),
        3
    );
    // Only the run's 4 heart rates are left.
    assert_eq!(
        pulled.body.to_json()["timeseries"]["heartrate"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}
