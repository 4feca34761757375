//! Strava: one day's activity as the API answers it (a `SummaryActivity`, the fixtures' ride,
//! and its `StreamSet` of an hour at a point a second: time, heart rate, distance, watts)
//! normalised into a push body (`sync::connectors::strava::normalise`, checking the row and
//! sample counts), and the 90-day pull of the same shape (one such ride a day) from the tests'
//! fake Strava (`tests/it/sync/strava/fake_strava.rs`, 200 activities a page, Strava's
//! maximum; one streams request per activity).

#[allow(dead_code)]
#[path = "../../tests/it/sync/strava/fake_strava.rs"]
mod fake_strava;

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use criterion::Criterion;
use serde_json::{Value, json};
use wearhouse::schema::{Dataset, Table};
use wearhouse::sync::connectors::strava::{Documents, Strava, Wanted, normalise};

use super::pull::{self, DAYS};

/// Points in a day's stream: an hour at one a second.
const POINTS: i64 = 3_600;

/// The fixtures' ride moved to `day` (same time of day), with its own id.
fn ride(day: NaiveDate, id: i64) -> Value {
    let fixture_day = NaiveDate::from_ymd_opt(2025, 3, 1).unwrap();
    let shift = chrono::Duration::days((day - fixture_day).num_days());
    let mut ride = fake_strava::fixture("activities.json")
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == json!(13000000001_i64))
        .unwrap()
        .clone();
    for key in ["start_date", "start_date_local"] {
        let at = DateTime::parse_from_rfc3339(ride[key].as_str().unwrap()).unwrap();
        let at = at.to_utc() + shift;
        ride[key] = json!(at.to_rfc3339_opts(SecondsFormat::Secs, true));
    }
    ride["id"] = json!(id);
    ride["elapsed_time"] = json!(POINTS);
    ride
}

/// An hour of streams: a heart rate between 110 and 170, 7.5 m a second, 150 to 250 W.
fn streams() -> Value {
    let stream = |data: Vec<Value>| {
        json!({"data": data, "series_type": "distance",
        "original_size": POINTS, "resolution": "high"})
    };
    let (mut time, mut hr, mut distance, mut watts) = (vec![], vec![], vec![], vec![]);
    for t in 0..POINTS {
        time.push(json!(t));
        hr.push(json!(110 + (t * 7) % 61));
        distance.push(json!(t as f64 * 7.5));
        watts.push(json!(150 + (t * 13) % 101));
    }
    json!({"time": stream(time), "heartrate": stream(hr), "distance": stream(distance),
           "watts": stream(watts)})
}

/// The rides of the `days` days starting `first`, with their streams.
fn documents(first: NaiveDate, days: i64) -> Documents {
    let set = streams();
    Documents {
        activities: (0..days)
            .map(|d| {
                let day = first + chrono::Duration::days(d);
                (ride(day, 13_100_000_000 + d), Some(set.clone()))
            })
            .collect(),
        athlete: None,
    }
}

const ALL: Wanted = Wanted {
    workouts: true,
    heartrate: true,
};

pub fn normalise_one_day(c: &mut Criterion) {
    let docs = documents(NaiveDate::from_ymd_opt(2025, 3, 1).unwrap(), 1);
    let pulled = normalise(&docs, ALL);
    assert_eq!(pulled.skipped, 0);
    let body = &pulled.body.to_json();
    assert_eq!(body["workouts"].as_array().unwrap().len(), 1);
    let samples = POINTS as usize;
    assert_eq!(
        body["timeseries"]["heartrate"].as_array().unwrap().len(),
        samples
    );
    // Every step but the first point's (the start, at 0 m) gains distance.
    assert_eq!(
        body["timeseries"]["distance"].as_array().unwrap().len(),
        samples - 1
    );
    c.bench_function(
        "sync/normalise one Strava day (a ride with an hour of 1 Hz heart rate, distance, watts)",
        |b| b.iter(|| normalise(std::hint::black_box(&docs), ALL)),
    );
}

pub fn historical_pull(c: &mut Criterion) {
    let rt = pull::runtime();
    let today = Utc::now().date_naive();
    let docs = documents(today - chrono::Duration::days(DAYS), DAYS + 1);
    let fake = rt.block_on(async {
        let mut activities = Vec::new();
        let mut streams = HashMap::new();
        for (activity, set) in &docs.activities {
            streams.insert(activity["id"].as_i64().unwrap(), set.clone().unwrap());
            activities.push(activity.clone());
        }
        fake_strava::FakeStrava::start(activities, streams).await
    });
    let heartrate = wearhouse::schema::resource("heartrate").unwrap();
    let days = DAYS as usize;
    let case = pull::Case {
        name: "90-day historical pull of one Strava user from the local fake",
        provider: "strava",
        connector: Arc::new(Strava::new(&fake.base).unwrap()),
        token: fake_strava::TOKEN,
        provider_user_id: Some("98765432"),
        expected: vec![
            (Dataset::Table(Table::Workout), days),
            (Dataset::Timeseries(heartrate), days * POINTS as usize),
        ],
    };
    pull::historical_pull(c, &rt, case);
}
