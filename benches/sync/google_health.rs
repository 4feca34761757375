//! Google Health: one day of data points as the API answers them (a night's sleep, 1,440
//! heart rates, an HRV and an SpO2 reading, a weigh-in, and the day's four roll-ups) normalised
//! into a push body (`sync::connectors::google_health::normalise`, checking the row and sample
//! counts), and the 90-day pull of the same shape from the tests' fake Google Health API
//! (`tests/it/sync/google_health/fake_google_health.rs`, Google's page sizes: 10,000 samples,
//! 25 sleeps). The points are the fixtures' (`testdata/providers/google_health/`), moved day by
//! day.

#[allow(dead_code)]
#[path = "../../tests/it/sync/google_health/fake_google_health.rs"]
mod fake_google_health;

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, SecondsFormat, Utc};
use criterion::Criterion;
use serde_json::{Value, json};
use wearhouse::schema::{Dataset, Table};
use wearhouse::sync::connectors::google_health::{Documents, GoogleHealth, normalise};

use super::pull::{self, DAYS};

fn at(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn moved(value: &str, days: i64) -> String {
    let t = DateTime::parse_from_rfc3339(value).unwrap().to_utc();
    at(t + chrono::Duration::days(days))
}

/// The fixture's first point of `file`, its member's sample time moved by `days`.
fn sample(file: &str, member: &str, days: i64) -> Value {
    let mut p = fake_google_health::fixture(file)["dataPoints"][0].clone();
    let t = p[member]["sampleTime"]["physicalTime"]
        .as_str()
        .unwrap()
        .to_owned();
    p[member]["sampleTime"] = json!({"physicalTime": moved(&t, days), "utcOffset": "-18000s"});
    p
}

/// The points of the `days` days starting `first`: the fixtures' staged night, 1,440 heart
/// rates a day, one HRV, SpO2 and weigh-in, and the four roll-ups, each with its own id.
fn documents(first: NaiveDate, days: i64) -> Documents {
    let fixture_day = NaiveDate::from_ymd_opt(2025, 3, 1).unwrap();
    let night = fake_google_health::fixture("sleep.json")["dataPoints"][2].clone();
    let mut docs = Documents::default();
    let mut rollups: HashMap<&str, Vec<Value>> = HashMap::new();
    for d in 0..days {
        let day = first + chrono::Duration::days(d);
        let shift = (day - fixture_day).num_days();
        let mut s = night.clone();
        s["name"] = json!(format!(
            "users/4k2Zq9hT/dataTypes/sleep/dataPoints/{}",
            9_000_000 + d
        ));
        for key in ["startTime", "endTime"] {
            let t = s["sleep"]["interval"][key].as_str().unwrap().to_owned();
            s["sleep"]["interval"][key] = json!(moved(&t, shift));
        }
        docs.sleep.push(s);
        let midnight = day.and_hms_opt(0, 0, 0).unwrap().and_utc();
        for minute in 0..1440 {
            let t = midnight + chrono::Duration::minutes(minute);
            docs.heart_rate.push(json!({"heartRate": {
                "beatsPerMinute": (55 + minute % 40).to_string(),
                "sampleTime": {"physicalTime": at(t), "utcOffset": "-18000s"}}}));
        }
        docs.hrv.push(sample(
            "heart_rate_variability.json",
            "heartRateVariability",
            shift,
        ));
        docs.oxygen
            .push(sample("oxygen_saturation.json", "oxygenSaturation", shift));
        let mut w = sample("weight.json", "weight", shift - 2);
        w["name"] = json!(format!("users/4k2Zq9hT/dataTypes/weight/dataPoints/w-{d}"));
        docs.weight.push(w);
        let civil = |dd: NaiveDate| json!({"date": {"year": dd.year(), "month": dd.month(), "day": dd.day()}});
        let window = |member: &str, value: Value| {
            json!({"civilStartTime": civil(day), "civilEndTime": civil(day + chrono::Duration::days(1)),
                   member: value})
        };
        rollups
            .entry("steps")
            .or_default()
            .push(window("steps", json!({"countSum": "8123"})));
        rollups
            .entry("distance")
            .or_default()
            .push(window("distance", json!({"millimetersSum": "6091000"})));
        rollups
            .entry("total-calories")
            .or_default()
            .push(window("totalCalories", json!({"kcalSum": 2211.4})));
        rollups
            .entry("active-energy-burned")
            .or_default()
            .push(window("activeEnergyBurned", json!({"kcalSum": 512.6})));
    }
    docs.height = Some(fake_google_health::fixture("height.json")["dataPoints"][0].clone());
    docs.rollups = [
        "steps",
        "distance",
        "total-calories",
        "active-energy-burned",
    ]
    .into_iter()
    .map(|k| (k.to_owned(), rollups.remove(k).unwrap()))
    .collect();
    docs
}

pub fn normalise_one_day(c: &mut Criterion) {
    let docs = documents(NaiveDate::from_ymd_opt(2025, 3, 1).unwrap(), 1);
    let pulled = normalise(&docs);
    assert_eq!(pulled.skipped, 0);
    let body = &pulled.body.to_json();
    for part in ["sleep", "activity", "body"] {
        assert_eq!(body[part].as_array().unwrap().len(), 1, "{part}");
    }
    let count = |series: &str| body["timeseries"][series].as_array().unwrap().len();
    assert_eq!(count("heartrate"), 1440);
    for series in ["hrv", "blood_oxygen", "weight"] {
        assert_eq!(count(series), 1, "{series}");
    }
    c.bench_function(
        "sync/normalise one Google Health day (a night, 1,440 heart rates, HRV, SpO2, a weigh-in, four roll-ups)",
        |b| b.iter(|| normalise(std::hint::black_box(&docs))),
    );
}

pub fn historical_pull(c: &mut Criterion) {
    let rt = pull::runtime();
    let today = Utc::now().date_naive();
    let docs = documents(today - chrono::Duration::days(DAYS), DAYS + 1);
    let fake = rt.block_on(async {
        let points: HashMap<String, Vec<Value>> = [
            ("sleep", docs.sleep.clone()),
            ("heart-rate", docs.heart_rate.clone()),
            ("heart-rate-variability", docs.hrv.clone()),
            ("oxygen-saturation", docs.oxygen.clone()),
            ("weight", docs.weight.clone()),
            ("body-fat", Vec::new()),
            ("height", vec![docs.height.clone().unwrap()]),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let data = fake_google_health::Data {
            points,
            rollups: docs.rollups.iter().cloned().collect(),
            identity: fake_google_health::fixture("identity.json"),
        };
        fake_google_health::FakeGoogleHealth::start(data, 10_000).await
    });
    let days = DAYS as usize;
    let case = pull::Case {
        name: "90-day historical pull of one Google Health user from the local fake",
        provider: "google_health",
        connector: Arc::new(GoogleHealth::new(&fake.base).unwrap()),
        token: fake_google_health::TOKEN,
        provider_user_id: Some("4k2Zq9hT"),
        // A night and a weigh-in a day, asked by instant: 90 in any 90 days; the roll-ups by
        // every UTC day the window touches: 91.
        expected: vec![
            (Dataset::Table(Table::Sleep), days),
            (Dataset::Table(Table::Body), days),
            (Dataset::Table(Table::Activity), days + 1),
        ],
    };
    pull::historical_pull(c, &rt, case);
}
