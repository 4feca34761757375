//! Garmin: one day of summaries as the Health and Activity APIs answer them (a daily with its
//! 5,760 heart-rate samples of 15 s, a night with SpO2 every minute, a run, a weigh-in, the
//! day's stress every 3 minutes) normalised into a push body
//! (`sync::connectors::garmin::normalise`, checking the row and sample counts), and the 90-day
//! pull of days of that shape from the tests' fake Garmin (`tests/it/sync/garmin/fake_garmin.rs`:
//! summaries read by upload window, at most 24 hours a call, after the backfill requests). The
//! summaries are the fixtures' first of each type (`testdata/providers/garmin/`), their series
//! filled in, moved day by day, each uploaded half an hour after its period as the fake says.

#[allow(dead_code)]
#[path = "../../tests/it/sync/garmin/fake_garmin.rs"]
mod fake_garmin;

use std::sync::Arc;

use chrono::{NaiveDate, Utc};
use criterion::Criterion;
use serde_json::{Map, Value, json};
use wearhouse::schema::{Dataset, Table};
use wearhouse::sync::connectors::garmin::{Documents, Garmin, Wanted, normalise};

use super::pull::{self, DAYS};

/// Heart-rate samples a day (one every 15 s).
const HEART_RATES: i64 = 5_760;
/// Stress values a day (one every 3 minutes).
const STRESS: i64 = 480;
/// SpO2 readings a night (one a minute over its 7 hours).
const SPO2: i64 = 420;

/// The fixtures' day, 2025-03-01 (its night is the next morning's; both moved alike).
fn fixture_day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 3, 1).unwrap()
}

/// `doc` moved by `days` whole days: every `...TimeInSeconds` instant (not the offsets) and
/// the calendar date, at any depth; `summaryId`s are the caller's.
fn moved(doc: &Value, days: i64) -> Value {
    match doc {
        Value::Array(items) => Value::Array(items.iter().map(|v| moved(v, days)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        (k, Value::Number(n)) if k.ends_with("TimeInSeconds") => {
                            json!(n.as_i64().unwrap() + days * 86_400)
                        }
                        ("calendarDate", Value::String(d)) => {
                            let d: NaiveDate = d.parse().unwrap();
                            json!((d + chrono::Duration::days(days)).to_string())
                        }
                        _ => moved(v, days),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `count` readings every `every` seconds from offset 0, as Garmin's offset maps hold them.
fn offsets(count: i64, every: i64, base: i64, spread: i64) -> Value {
    let map: Map<String, Value> = (0..count)
        .map(|i| ((i * every).to_string(), json!(base + i % spread)))
        .collect();
    Value::Object(map)
}

/// The fixtures' first summary of each type, with full series.
fn template() -> [(&'static str, Value); 5] {
    let first = |file: &str| fake_garmin::fixture(file)[0].clone();
    let mut daily = first("dailies.json");
    daily["timeOffsetHeartRateSamples"] = offsets(HEART_RATES, 15, 50, 60);
    let mut stress = first("stress_details.json");
    stress["timeOffsetStressLevelValues"] = offsets(STRESS, 180, 10, 80);
    let mut sleep = first("sleeps.json");
    sleep["timeOffsetSleepSpo2"] = offsets(SPO2, 60, 92, 7);
    [
        ("dailies", daily),
        ("sleeps", sleep),
        ("activities", first("activities.json")),
        ("bodyComps", first("body_comps.json")),
        ("stressDetails", stress),
    ]
}

/// The summaries of the `days` days from `first`: the template moved, each with its own id.
fn summaries(first: NaiveDate, days: i64) -> Vec<(&'static str, Value)> {
    let template = template();
    let mut out = Vec::new();
    for d in 0..days {
        let shift = (first + chrono::Duration::days(d) - fixture_day()).num_days();
        for (kind, doc) in &template {
            let mut doc = moved(doc, shift);
            doc["summaryId"] = json!(format!("bench-{kind}-{d}"));
            out.push((*kind, doc));
        }
    }
    out
}

fn everything() -> Wanted {
    Wanted {
        sleep: true,
        blood_oxygen: true,
        activity: true,
        heartrate: true,
        workouts: true,
        body: true,
    }
}

pub fn normalise_one_day(c: &mut Criterion) {
    let mut docs = Documents::default();
    for (kind, doc) in summaries(fixture_day(), 1) {
        match kind {
            "dailies" => docs.dailies.push(doc),
            "sleeps" => docs.sleeps.push(doc),
            "activities" => docs.activities.push(doc),
            "bodyComps" => docs.body_comps.push(doc),
            _ => docs.stress.push(doc),
        }
    }
    let pulled = normalise(&docs, everything());
    assert_eq!(pulled.skipped, 0);
    let body = &pulled.body.to_json();
    for part in ["sleep", "activity", "workouts", "body"] {
        assert_eq!(body[part].as_array().unwrap().len(), 1, "{part}");
    }
    let count = |s: &str| body["timeseries"][s].as_array().unwrap().len();
    assert_eq!(count("heartrate"), HEART_RATES as usize);
    assert_eq!(count("stress_level"), STRESS as usize);
    assert_eq!(count("blood_oxygen"), SPO2 as usize);
    c.bench_function(
        "sync/normalise one Garmin day (a daily of 5,760 heart rates, a night, a run, a weigh-in, stress)",
        |b| b.iter(|| normalise(std::hint::black_box(&docs), everything())),
    );
}

pub fn historical_pull(c: &mut Criterion) {
    let rt = pull::runtime();
    let today = Utc::now().date_naive();
    // The days whose summaries were all uploaded inside the 90-day window, whatever the time
    // of day the pull starts at: the first one's daily is uploaded at its end (23:30 UTC),
    // after the window's start; the last one's night, the next morning (05:40 UTC), before now.
    let days = DAYS - 2;
    let mut data = fake_garmin::Data::default();
    for (kind, doc) in summaries(today - chrono::Duration::days(DAYS - 1), days) {
        data.upload(kind, fake_garmin::synced_at(&doc), doc);
    }
    let fake = rt.block_on(fake_garmin::FakeGarmin::start(data));
    let case = pull::Case {
        name: "90-day historical pull of one Garmin user from the local fake",
        provider: "garmin",
        connector: Arc::new(Garmin::new(&fake.base).unwrap()),
        token: fake_garmin::TOKEN,
        provider_user_id: None,
        expected: [Table::Sleep, Table::Activity, Table::Workout, Table::Body]
            .into_iter()
            .map(|t| (Dataset::Table(t), days as usize))
            .collect(),
    };
    pull::historical_pull(c, &rt, case);
}
