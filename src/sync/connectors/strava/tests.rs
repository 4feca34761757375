#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::TimeZone;
use reqwest::header::HeaderValue;
use serde_json::{Value, json};

use super::normalise::sport;
use super::webhook::Event;
use super::*;
use crate::sync::{assert_fixture, fixture, ingest_counts};

/// The fixture's activities, each with its streams file unless it is manual.
fn documents(file: &str) -> Documents {
    let activities = fixture("strava", file).as_array().unwrap().clone();
    let activities = activities
        .into_iter()
        .map(|a| {
            let streams = (a["manual"] == json!(false))
                .then(|| fixture("strava", &format!("streams_{}.json", a["id"])));
            (a, streams)
        })
        .collect();
    Documents {
        activities,
        athlete: None,
    }
}

const ALL: Wanted = Wanted {
    workouts: true,
    heartrate: true,
};

#[test]
fn activities_and_their_streams_become_workouts_heart_rate_and_distance() {
    let pulled = normalise(&documents("activities.json"), ALL);
    assert_fixture(
        "strava",
        "activities",
        &pulled,
        0,
        json!({"workouts": 3, "timeseries": {"heartrate": 9, "distance": 7}}),
    );
}

#[test]
fn heart_rate_alone_leaves_out_workouts_and_distance() {
    let wanted = Wanted {
        workouts: false,
        heartrate: true,
    };
    let pulled = normalise(&documents("activities.json"), wanted);
    assert_eq!(pulled.skipped, 0);
    assert_eq!(
        ingest_counts(&pulled.body),
        json!({"timeseries": {"heartrate": 9}})
    );
    let all = normalise(&documents("activities.json"), ALL);
    assert_eq!(
        pulled.body.to_json()["timeseries"]["heartrate"],
        all.body.to_json()["timeseries"]["heartrate"]
    );
}

#[test]
fn the_watts_stream_gives_power_only_to_a_summary_without_any() {
    let pulled = normalise(&documents("activities.json"), ALL);
    let workout = |id: &str| {
        pulled.body.to_json()["workouts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["id"] == id)
            .unwrap()
            .clone()
    };
    // The ride's own (a power meter's) figures win over its stream's.
    assert_eq!(workout("13000000001")["average_watts"], json!(201.3));
    assert_eq!(workout("13000000001")["max_watts"], json!(612));
    // The run has none: its stream's mean (1037 / 4) and maximum.
    assert_eq!(workout("13000000002")["average_watts"], json!(259.3));
    assert_eq!(workout("13000000002")["max_watts"], json!(270));
    assert!(workout("13000000003").get("average_watts").is_none());
}

#[test]
fn the_athlete_gives_the_profile_its_sex() {
    let docs = Documents {
        activities: Vec::new(),
        athlete: Some(fixture("strava", "athlete.json")),
    };
    let pulled = normalise(&docs, ALL);
    assert_fixture("strava", "athlete", &pulled, 0, json!({"profile": 1}));
    let unknown = Documents {
        activities: Vec::new(),
        athlete: Some(json!({"id": 1, "sex": null})),
    };
    assert!(normalise(&unknown, ALL).body.profile.is_none());
}

#[test]
fn malformed_activities_and_streams_are_skipped_and_counted() {
    let activities = fixture("strava", "malformed.json")
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a.clone(), None))
        .collect();
    let docs = Documents {
        activities,
        athlete: None,
    };
    let pulled = normalise(&docs, ALL);
    assert_eq!(pulled.skipped, 3, "no start, negative time, no sport");
    assert_eq!(ingest_counts(&pulled.body), json!({"workouts": 1}));
    assert_eq!(
        pulled.body.to_json()["workouts"][0]["sport"]["slug"],
        "walk"
    );

    // The fine walk with broken streams: a heart rate of 400, a null, a repeated instant; a
    // distance that shrinks, and one at a repeated instant.
    let walk = fixture("strava", "malformed.json")[3].clone();
    let docs = Documents {
        activities: vec![(walk, Some(fixture("strava", "streams_malformed.json")))],
        athlete: None,
    };
    let pulled = normalise(&docs, ALL);
    assert_eq!(pulled.skipped, 2, "each broken stream counted once");
    let values = |series: &str| -> Vec<Value> {
        pulled.body.to_json()["timeseries"][series]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["value"].clone())
            .collect()
    };
    assert_eq!(values("heartrate"), [json!(90), json!(95)]);
    assert_eq!(values("distance"), [json!(2), json!(2)]);
    assert_eq!(
        pulled.body.to_json()["timeseries"]["distance"][1]["timestamp"],
        "2025-03-01T15:00:01+01:00"
    );
    assert_eq!(
        pulled.body.to_json()["timeseries"]["distance"][1]["end"],
        "2025-03-01T15:00:03+01:00"
    );

    // A stream set without time, or with a stream of another length.
    let walk = fixture("strava", "malformed.json")[3].clone();
    for set in [
        json!({"heartrate": {"data": [90]}}),
        json!({"time": {"data": [0, 1]}, "heartrate": {"data": [90]}}),
    ] {
        let docs = Documents {
            activities: vec![(walk.clone(), Some(set))],
            athlete: None,
        };
        let pulled = normalise(&docs, ALL);
        assert_eq!(pulled.skipped, 1);
        assert_eq!(ingest_counts(&pulled.body), json!({"workouts": 1}));
    }
}

#[test]
fn sport_types_become_slugs_and_names() {
    assert_eq!(sport("Run"), ("run".into(), "Run".into()));
    assert_eq!(
        sport("MountainBikeRide"),
        ("mountain_bike_ride".into(), "Mountain bike ride".into())
    );
    assert_eq!(
        sport("WeightTraining"),
        ("weight_training".into(), "Weight training".into())
    );
}

#[test]
fn activities_are_cut_to_the_window_by_their_start() {
    let at = |h| Utc.with_ymd_and_hms(2025, 3, 1, h, 0, 0).unwrap();
    let window = Window::new(at(8), at(9)).unwrap();
    let starting = |t: &str| json!({"start_date": t});
    assert!(starts_in(&starting("2025-03-01T08:00:00Z"), &window));
    assert!(!starts_in(&starting("2025-03-01T09:00:00Z"), &window));
    assert!(!starts_in(&starting("2025-03-01T07:59:59Z"), &window));
    assert!(
        starts_in(&json!({}), &window),
        "kept: the normaliser counts it"
    );
}

#[test]
fn a_429_waits_for_the_window_strava_says_is_spent() {
    let now = Utc.with_ymd_and_hms(2025, 3, 1, 10, 7, 30).unwrap();
    let with = |pairs: &[(&'static str, &str)]| {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        rate_limit_wait(&h, now)
    };
    // The 15-minute window is spent: until 10:15.
    assert_eq!(
        with(&[
            ("x-ratelimit-limit", "200,2000"),
            ("x-ratelimit-usage", "201,540")
        ]),
        Some(450)
    );
    // The day's read limit is spent: until midnight UTC.
    assert_eq!(
        with(&[
            ("x-ratelimit-limit", "200,2000"),
            ("x-ratelimit-usage", "12,1004"),
            ("x-readratelimit-limit", "100,1000"),
            ("x-readratelimit-usage", "12,1000")
        ]),
        Some(13 * 3600 + 52 * 60 + 30)
    );
    assert_eq!(with(&[]), None);
    assert_eq!(with(&[("x-ratelimit-usage", "soon")]), None);
}

#[test]
fn a_revocation_is_an_athlete_update_saying_unauthorised() {
    // The example of `developers.strava.com/docs/webhooks/`.
    let title: Event = serde_json::from_value(json!({
        "aspect_type": "update", "event_time": 1_516_126_040, "object_id": 1_360_128_428,
        "object_type": "activity", "owner_id": 134_815, "subscription_id": 120_475,
        "updates": {"title": "Messy"}
    }))
    .unwrap();
    assert!(!title.is_deauthorisation());
    let revoked: Event = serde_json::from_value(json!({
        "aspect_type": "update", "event_time": 1_516_126_040, "object_id": 134_815,
        "object_type": "athlete", "owner_id": 134_815, "subscription_id": 120_475,
        "updates": {"authorized": "false"}
    }))
    .unwrap();
    assert!(revoked.is_deauthorisation());
    let created: Event = serde_json::from_value(json!({
        "aspect_type": "create", "event_time": 1_516_126_040, "object_id": 1_360_128_429,
        "object_type": "activity", "owner_id": 134_815, "subscription_id": 120_475
    }))
    .unwrap();
    assert!(!created.is_deauthorisation() && created.updates.is_empty());
}
