//! Strava's webhook subscription at `/v2/provider/strava/notify`
//! (`developers.strava.com/docs/webhooks/`): the validation request (`hub.mode`,
//! `hub.challenge`, `hub.verify_token`) answered `{"hub.challenge": ...}` only for the
//! configured verify token; events, which Strava does not sign, believed only with the
//! deployment's `subscription_id` and an athlete a connection recorded: a new activity, then
//! an edit of it, each queue the incremental pull, which makes it visible once; a forged event
//! answers 401 and queues nothing; a revocation puts the connection in `error`.

use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use serde_json::{Value, json};

use super::end_to_end::{fake_strava, pulled};
use crate::link::oauth::VERIFICATION_TOKEN;
use crate::support::{Answer, TestApp};
use crate::sync::support::incremental_jobs;
use crate::sync::support::linked::{LONG, Linked, SUBSCRIPTION_ID};
use wearhouse::store::metadata::ConnectionStatus;

/// The athlete of the fixtures (`athlete.json`).
const ATHLETE: i64 = 98_765_432;

async fn post(app: &TestApp, body: &Value) -> Answer {
    app.send(
        "POST",
        "/v2/provider/strava/notify",
        None,
        Some(body.clone()),
    )
    .await
}

/// An event as Strava posts it.
fn event(object: &str, aspect: &str, id: i64, owner: i64, subscription: i64) -> Value {
    json!({"object_type": object, "object_id": id, "aspect_type": aspect, "updates": {},
           "owner_id": owner, "subscription_id": subscription,
           "event_time": Utc::now().timestamp()})
}

fn at(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A ride begun three hours before `now`, titled `name`.
fn recent_ride(now: DateTime<Utc>, name: &str, sport: &str) -> Value {
    let start = now - chrono::Duration::hours(3);
    json!({
        "resource_state": 2, "athlete": {"id": ATHLETE, "resource_state": 1},
        "name": name, "distance": 20500.0, "moving_time": 3300, "elapsed_time": 3600,
        "total_elevation_gain": 120.0, "type": "Ride", "sport_type": sport,
        "id": 13000000099_i64, "start_date": at(start),
        "start_date_local": at(start + chrono::Duration::hours(1)),
        "timezone": "(GMT+01:00) Europe/Berlin", "utc_offset": 3600.0,
        "map": {"id": "a13000000099", "summary_polyline": "", "resource_state": 2},
        "trainer": false, "commute": false, "manual": false, "private": false,
        "average_speed": 6.2, "max_speed": 11.0, "has_heartrate": true,
        "average_heartrate": 131.0, "max_heartrate": 160.0
    })
}

fn ride_streams() -> Value {
    json!({
        "time": {"data": [0, 1, 2], "series_type": "distance", "original_size": 3, "resolution": "high"},
        "distance": {"data": [0.0, 5.0, 11.0], "series_type": "distance", "original_size": 3, "resolution": "high"},
        "heartrate": {"data": [120, 122, 125], "series_type": "distance", "original_size": 3, "resolution": "high"}
    })
}

/// Runs the app's jobs until `done` holds of the user's workouts, or fails after [`LONG`].
async fn run_until_workouts(l: &Linked, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let runner = l.runner();
    let started = std::time::Instant::now();
    let found = loop {
        let workouts = l.summary("workouts", "time_start").await;
        if done(&workouts) || started.elapsed() > LONG {
            break workouts;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    runner.shutdown().await;
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn the_subscription_is_validated_only_with_the_configured_verify_token() {
    let strava = fake_strava().await;
    let l = pulled(&strava).await;
    let get = |query: String| {
        let app = &l.app;
        async move {
            app.send(
                "GET",
                &format!("/v2/provider/strava/notify?{query}"),
                None,
                None,
            )
            .await
        }
    };
    // Strava's own example challenge.
    let a = get(format!(
        "hub.mode=subscribe&hub.challenge=15f7d1a91c1f40f8a748fd134752feb3&hub.verify_token={VERIFICATION_TOKEN}"
    ))
    .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(
        a.json,
        json!({"hub.challenge": "15f7d1a91c1f40f8a748fd134752feb3"})
    );

    let a = get("hub.mode=subscribe&hub.challenge=c&hub.verify_token=guess".into()).await;
    assert_eq!(a.status, 401, "{}", a.json);
    assert!(a.json.get("hub.challenge").is_none(), "{}", a.json);
    let a = get(format!(
        "hub.mode=unsubscribe&hub.challenge=c&hub.verify_token={VERIFICATION_TOKEN}"
    ))
    .await;
    assert_eq!(a.status, 422, "{}", a.json);
    let a = get(format!(
        "hub.mode=subscribe&hub.verify_token={VERIFICATION_TOKEN}"
    ))
    .await;
    assert_eq!(a.status, 422, "{}", a.json);
    assert!(a.json.to_string().contains("hub.challenge"), "{}", a.json);
}

#[tokio::test(flavor = "multi_thread")]
async fn new_and_edited_activities_arrive_through_events_once_and_forged_ones_are_refused() {
    let strava = fake_strava().await;
    let l = pulled(&strava).await;
    let app = &l.app;
    let before = l.summary("workouts", "time_start").await;
    let hr_before = l.series("heartrate").await.len();

    // Forged: another subscription, an athlete nobody linked, no subscription at all. Each
    // answers 401 and moves no pull.
    let jobs_before = incremental_jobs(app).await;
    for forged in [
        event(
            "activity",
            "create",
            13000000099,
            ATHLETE,
            SUBSCRIPTION_ID + 1,
        ),
        event("activity", "create", 13000000099, 777, SUBSCRIPTION_ID),
        json!({"object_type": "activity", "object_id": 1, "aspect_type": "create",
               "owner_id": ATHLETE, "event_time": 1}),
    ] {
        let a = post(app, &forged).await;
        let want = if forged.get("subscription_id").is_some() {
            401
        } else {
            422
        };
        assert_eq!(a.status, want, "{forged}: {}", a.json);
    }
    let req = axum::http::Request::builder()
        .method("POST")
        .uri("/v2/provider/strava/notify")
        .header("content-type", "application/json")
        .body(axum::body::Body::from("not json"))
        .unwrap();
    let a = app.raw(req).await;
    assert_eq!(a.status, 422, "{}", a.json);
    assert_eq!(incremental_jobs(app).await, jobs_before, "nothing queued");

    // The athlete records a ride: Strava's `create` queues the pull now.
    let now = Utc::now().trunc_subsecs(0);
    strava.put(recent_ride(now, "Lunch Ride", "Ride"), Some(ride_streams()));
    let sent = Utc::now();
    let a = post(
        app,
        &event("activity", "create", 13000000099, ATHLETE, SUBSCRIPTION_ID),
    )
    .await;
    assert_eq!(
        (a.status.as_u16(), a.json.clone()),
        (200, json!({"queued": 1}))
    );
    let jobs = incremental_jobs(app).await;
    assert_eq!(jobs.len(), 1, "one job per connection: {jobs:?}");
    assert_eq!(jobs[0].0, json!(l.user));
    assert!(jobs[0].1 <= sent + chrono::Duration::seconds(1), "due now");
    let got = run_until_workouts(&l, |w| w.len() > before.len()).await;
    assert_eq!(got.len(), before.len() + 1, "{got:#?}");
    let ride = got.iter().find(|w| w["id"] == "13000000099").unwrap();
    assert_eq!(ride["title"], "Lunch Ride", "{ride}");
    assert_eq!(l.series("heartrate").await.len(), hr_before + 3);

    // The athlete renames it and makes it a gravel ride: `update` with the changed fields.
    strava.put(recent_ride(now, "Gravel loop", "GravelRide"), None);
    let mut edit = event("activity", "update", 13000000099, ATHLETE, SUBSCRIPTION_ID);
    edit["updates"] = json!({"title": "Gravel loop", "type": "GravelRide"});
    let a = post(app, &edit).await;
    assert_eq!(a.status, 200, "{}", a.json);
    let got = run_until_workouts(&l, |w| w.iter().any(|r| r["title"] == "Gravel loop")).await;
    assert_eq!(got.len(), before.len() + 1, "replaced, not added: {got:#?}");
    let ride = got.iter().find(|w| w["id"] == "13000000099").unwrap();
    assert_eq!(ride["sport"]["slug"], "gravel_ride", "{ride}");
    assert_eq!(
        l.series("heartrate").await.len(),
        hr_before + 3,
        "nothing twice"
    );
}

async fn connection(l: &Linked) -> wearhouse::store::metadata::Connection {
    let user = l.user.parse().unwrap();
    l.app
        .state
        .meta
        .connection(user, "strava")
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revocation_puts_the_connection_in_error_and_queues_nothing() {
    let strava = fake_strava().await;
    let l = pulled(&strava).await;
    let app = &l.app;
    let jobs_before = incremental_jobs(app).await;
    let mut revoked = event("athlete", "update", ATHLETE, ATHLETE, SUBSCRIPTION_ID);
    revoked["updates"] = json!({"authorized": "false"});

    // Forged (another subscription): refused, the connection untouched.
    let mut forged = revoked.clone();
    forged["subscription_id"] = json!(1);
    assert_eq!(post(app, &forged).await.status, 401);
    assert_eq!(connection(&l).await.status, ConnectionStatus::Connected);

    let a = post(app, &revoked).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json, json!({"queued": 0, "revoked": 1}));
    let c = connection(&l).await;
    assert_eq!(c.status, ConnectionStatus::Error, "{c:?}");
    assert_eq!(incremental_jobs(app).await, jobs_before, "nothing queued");
    let types = l.event_types().await;
    assert_eq!(
        types
            .iter()
            .filter(|t| *t == "provider.connection.error")
            .count(),
        1,
        "{types:?}"
    );
    // Strava tries again: no connected athlete any more, refused, nothing else happens.
    assert_eq!(post(app, &revoked).await.status, 401);
}
