//! Polar: one day of AccessLink documents (an exercise, a night with its nightly recharge, the
//! day's activity, continuous heart rate every 5 minutes) normalised into a push body
//! (`sync::connectors::polar::normalise`, checking the row and sample counts), and the 90-day
//! pull of days of that shape from the tests' fake AccessLink (`tests/it/sync/polar/fake_polar.rs`:
//! registration first, activities in ranges of 28 days, heart rate one request a day). The
//! documents are the fixtures' first of each kind (`testdata/providers/polar/`), the heart rate
//! filled in, moved day by day.

#[allow(dead_code)]
#[path = "../../tests/it/sync/polar/fake_polar.rs"]
mod fake_polar;

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, TimeZone, Utc};
use criterion::Criterion;
use serde_json::{Value, json};
use wearhouse::schema::{Dataset, Table};
use wearhouse::sync::Window;
use wearhouse::sync::connectors::polar::{Documents, Polar, Wanted, normalise};

use super::pull::{self, DAYS};

/// Continuous heart-rate samples a day (every 5 minutes).
const HEART_RATES: usize = 288;

/// A date or instant of Polar's documents moved by `days` whole days, in the same notation
/// (`2025-03-01`, `2025-03-01T17:30:00`, `2025-03-01T23:12:30+02:00`,
/// `2025-03-01T18:40:11.000Z`); any other text as it is.
fn moved_text(text: &str, days: i64) -> Option<String> {
    let shift = chrono::Duration::days(days);
    if let Ok(d) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Some((d + shift).to_string());
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S") {
        return Some((t + shift).format("%Y-%m-%dT%H:%M:%S").to_string());
    }
    let at = DateTime::parse_from_rfc3339(text).ok()? + shift;
    Some(match text.ends_with('Z') {
        true => at.to_utc().to_rfc3339_opts(SecondsFormat::Millis, true),
        false => at.to_rfc3339_opts(SecondsFormat::Secs, false),
    })
}

/// `doc` with every date and instant moved by `days` whole days, at any depth.
fn moved(doc: &Value, days: i64) -> Value {
    match doc {
        Value::Array(items) => Value::Array(items.iter().map(|v| moved(v, days)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), moved(v, days)))
                .collect(),
        ),
        Value::String(s) => moved_text(s, days).map_or_else(|| doc.clone(), Value::String),
        other => other.clone(),
    }
}

/// The fixtures' day: 2025-03-01's exercise, activity and heart rate, and the night that
/// ends on 2025-03-02 with its recharge (moved alike).
fn fixture_day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 3, 1).unwrap()
}

/// The documents of the `days` days from `first`: the fixtures' first of each kind moved,
/// exercises with their own ids, heart rate every 5 minutes.
fn documents(first: NaiveDate, days: i64) -> Documents {
    let one = |file: &str, key: Option<&str>| {
        let doc = fake_polar::fixture(file);
        key.map_or(doc.clone(), |k| doc[k].clone())[0].clone()
    };
    let exercise = one("exercises.json", None);
    let activity = one("activities.json", None);
    let night = one("sleep.json", Some("nights"));
    let recharge = one("nightly_recharge.json", Some("recharges"));
    let mut heart_rate = one("continuous_heart_rate.json", None);
    let samples: Vec<Value> = (0..HEART_RATES)
        .map(|i| {
            let (h, m) = (i / 12, i % 12 * 5);
            json!({"heart_rate": 55 + i % 50, "sample_time": format!("{h:02}:{m:02}:08")})
        })
        .collect();
    heart_rate["heart_rate_samples"] = json!(samples);
    let mut docs = Documents::default();
    for d in 0..days {
        let shift = (first + chrono::Duration::days(d) - fixture_day()).num_days();
        let mut e = moved(&exercise, shift);
        e["id"] = json!(format!("bench{d}"));
        docs.exercises.push(e);
        docs.activities.push(moved(&activity, shift));
        docs.nights.push(moved(&night, shift));
        docs.recharges.push(moved(&recharge, shift));
        docs.heart_rate.push(moved(&heart_rate, shift));
    }
    docs
}

fn everything() -> Wanted {
    Wanted {
        sleep: true,
        workouts: true,
        activity: true,
        heartrate: true,
    }
}

pub fn normalise_one_day(c: &mut Criterion) {
    let docs = documents(fixture_day(), 1);
    let window = Window::new(
        Utc.with_ymd_and_hms(2025, 2, 28, 0, 0, 0).unwrap(),
        Utc.with_ymd_and_hms(2025, 3, 3, 0, 0, 0).unwrap(),
    )
    .unwrap();
    let pulled = normalise(&docs, everything(), &window);
    assert_eq!(pulled.skipped, 0);
    let body = &pulled.body.to_json();
    for part in ["sleep", "activity", "workouts"] {
        assert_eq!(body[part].as_array().unwrap().len(), 1, "{part}");
    }
    let heart_rates = body["timeseries"]["heartrate"].as_array().unwrap().len();
    assert_eq!(heart_rates, HEART_RATES);
    c.bench_function(
        "sync/normalise one Polar day (an exercise, a night and its recharge, an activity, 288 heart rates)",
        |b| b.iter(|| normalise(std::hint::black_box(&docs), everything(), &window)),
    );
}

pub fn historical_pull(c: &mut Criterion) {
    let rt = pull::runtime();
    let today = Utc::now().date_naive();
    // The days wholly inside the 90-day window whatever the time of day the pull starts at:
    // the first one's night starts the evening before (21:12 UTC), after the window's start.
    let days = DAYS - 2;
    let docs = documents(today - chrono::Duration::days(days), days);
    let data = fake_polar::Data {
        exercises: docs.exercises,
        nights: docs.nights,
        recharges: docs.recharges,
        activities: docs.activities,
        heart_rate: docs.heart_rate,
    };
    let fake = rt.block_on(fake_polar::FakePolar::start(data));
    let case = pull::Case {
        name: "90-day historical pull of one Polar user from the local fake",
        provider: "polar",
        connector: Arc::new(Polar::new(&fake.base).unwrap()),
        token: fake_polar::TOKEN,
        provider_user_id: Some("2278512"),
        expected: [Table::Sleep, Table::Activity, Table::Workout]
            .into_iter()
            .map(|t| (Dataset::Table(t), days as usize))
            .collect(),
    };
    pull::historical_pull(c, &rt, case);
}
