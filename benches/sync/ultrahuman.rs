//! Ultrahuman: one day of daily metrics (a night, heart rate every 5 minutes, the night's HRV,
//! skin temperature and SpO2, the day's steps and VO2 max, glucose every 15 minutes from the
//! M1) normalised into a push body (`sync::connectors::ultrahuman::normalise`, checking the row
//! and sample counts), and the 90-day pull of days of that shape from the tests' fake
//! Ultrahuman (`tests/it/sync/ultrahuman/fake_ultrahuman.rs`, ranges of at most 7 days). The
//! day is the fixtures' 2025-03-02 (`testdata/providers/ultrahuman/`), its series filled in,
//! moved day by day.

#[allow(dead_code)]
#[path = "../../tests/it/sync/ultrahuman/fake_ultrahuman.rs"]
mod fake_ultrahuman;

use std::sync::Arc;

use chrono::{NaiveDate, TimeZone, Utc};
use criterion::Criterion;
use serde_json::{Value, json};
use wearhouse::schema::{Dataset, Table};
use wearhouse::sync::Window;
use wearhouse::sync::connectors::ultrahuman::{Day, Documents, Ultrahuman, Wanted, normalise};

use super::pull::{self, DAYS};

/// Heart-rate readings a day (every 5 minutes).
const HEART_RATES: i64 = 288;
/// Glucose readings a day (every 15 minutes).
const GLUCOSES: i64 = 96;

/// Unix seconds members of the documents.
const EPOCHS: [&str; 6] = [
    "timestamp",
    "day_start_timestamp",
    "bedtime_start",
    "bedtime_end",
    "start",
    "end",
];

fn moved(value: &Value, seconds: i64) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(|v| moved(v, seconds)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| match v.as_i64() {
                    Some(t) if EPOCHS.contains(&k.as_str()) => (k.clone(), json!(t + seconds)),
                    _ => (k.clone(), moved(v, seconds)),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The fixtures' 2025-03-02, with heart rate every 5 minutes and glucose every 15.
fn template() -> Vec<Value> {
    let mut entries = fake_ultrahuman::fixture_days()["2025-03-02"].clone();
    for entry in &mut entries {
        let (every, n, base) = match entry["type"].as_str() {
            Some("hr") => (300, HEART_RATES, 60.0),
            Some("glucose") => (900, GLUCOSES, 90.0),
            _ => continue,
        };
        let start = entry["object"]["day_start_timestamp"].as_i64().unwrap();
        let values: Vec<Value> = (0..n)
            .map(|i| json!({"value": base + (i % 40) as f64, "timestamp": start + i * every}))
            .collect();
        entry["object"]["values"] = json!(values);
    }
    entries
}

/// The days from `first`, `days` of them, each the template moved.
fn documents(first: NaiveDate, days: i64) -> fake_ultrahuman::Days {
    let fixture_day = NaiveDate::from_ymd_opt(2025, 3, 2).unwrap();
    let entries = template();
    (0..days)
        .map(|d| {
            let day = first + chrono::Duration::days(d);
            let shift = (day - fixture_day).num_days() * 86_400;
            let moved: Vec<Value> = entries.iter().map(|e| moved(e, shift)).collect();
            (day.to_string(), moved)
        })
        .collect()
}

pub fn normalise_one_day(c: &mut Criterion) {
    let day = NaiveDate::from_ymd_opt(2025, 3, 2).unwrap();
    let docs: Documents = documents(day, 1)
        .into_iter()
        .map(|(date, entries)| {
            let zone = Some(fake_ultrahuman::ZONE.to_owned());
            (date, Day { entries, zone })
        })
        .collect();
    let window = Window::new(
        Utc.with_ymd_and_hms(2025, 3, 1, 0, 0, 0).unwrap(),
        Utc.with_ymd_and_hms(2025, 3, 3, 0, 0, 0).unwrap(),
    )
    .unwrap();
    let pulled = normalise(&docs, Wanted::all(), &window);
    assert_eq!(pulled.skipped, 0);
    let body = &pulled.body.to_json();
    for part in ["sleep", "activity"] {
        assert_eq!(body[part].as_array().unwrap().len(), 1, "{part}");
    }
    let count = |s: &str| body["timeseries"][s].as_array().unwrap().len();
    assert_eq!(count("heartrate"), HEART_RATES as usize);
    assert_eq!(count("glucose"), GLUCOSES as usize);
    for series in ["hrv", "body_temperature", "blood_oxygen", "vo2_max"] {
        assert!(count(series) >= 1, "{series}");
    }
    c.bench_function(
        "sync/normalise one Ultrahuman day (a night, 288 heart rates, 96 glucose readings)",
        |b| b.iter(|| normalise(std::hint::black_box(&docs), Wanted::all(), &window)),
    );
}

pub fn historical_pull(c: &mut Criterion) {
    let rt = pull::runtime();
    let today = Utc::now().date_naive();
    // Every whole local day of the 90-day window: a night and a day's total each, whatever
    // the time of day the pull starts at.
    let days = DAYS - 1;
    let docs = documents(today - chrono::Duration::days(days), days);
    let fake = rt.block_on(fake_ultrahuman::FakeUltrahuman::start(docs));
    let case = pull::Case {
        name: "90-day historical pull of one Ultrahuman user from the local fake",
        provider: "ultrahuman",
        connector: Arc::new(Ultrahuman::new(&fake.base).unwrap()),
        token: fake_ultrahuman::TOKEN,
        provider_user_id: None,
        expected: [Table::Sleep, Table::Activity]
            .into_iter()
            .map(|t| (Dataset::Table(t), days as usize))
            .collect(),
    };
    pull::historical_pull(c, &rt, case);
}
