//! WHOOP: one day of records as the API pages them (a cycle, a night's sleep, its recovery, a
//! workout) normalised into a push body (`sync::connectors::whoop::normalise`, checking the row and sample
//! counts), and the 90-day pull of the same shape (90 cycles, sleeps, recoveries and workouts,
//! and the body measurement) from the tests' fake WHOOP (`tests/it/sync/whoop/fake_whoop.rs`,
//! 25 records a page, WHOOP's maximum). The records are the fixtures'
//! (`testdata/providers/whoop/`), moved day by day.

#[allow(dead_code)]
#[path = "../../tests/it/sync/whoop/fake_whoop.rs"]
mod fake_whoop;

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use criterion::Criterion;
use serde_json::{Value, json};
use wearhouse::schema::{Dataset, Table};
use wearhouse::sync::connectors::whoop::{Documents, Wanted, Whoop, normalise};

use super::pull::{self, DAYS};

/// `record` with its instants moved by `days` whole days.
fn moved(record: &Value, days: i64) -> Value {
    let mut out = record.clone();
    for key in ["start", "end", "created_at", "updated_at"] {
        if let Some(at) = record[key]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        {
            let at = at.to_utc() + chrono::Duration::days(days);
            out[key] = json!(at.to_rfc3339_opts(SecondsFormat::Millis, true));
        }
    }
    out
}

/// The records of the `days` days starting `first`: the fixtures' first cycle, night, its
/// recovery and a run, moved to each day with their own ids.
fn documents(first: NaiveDate, days: i64) -> Documents {
    let fixture_day = NaiveDate::from_ymd_opt(2025, 3, 1).unwrap();
    let one = |file: &str| fake_whoop::fixture(file)["records"][0].clone();
    let (cycle, sleep, recovery, workout) = (
        one("cycle.json"),
        one("sleep.json"),
        one("recovery.json"),
        one("workout.json"),
    );
    let mut docs = Documents::default();
    for d in 0..days {
        let shift = (first + chrono::Duration::days(d) - fixture_day).num_days();
        let sleep_id = format!("00000000-0000-4000-8000-{d:012}");
        let mut c = moved(&cycle, shift);
        c["id"] = json!(93_845 + d);
        let mut s = moved(&sleep, shift);
        s["id"] = json!(sleep_id);
        s["cycle_id"] = c["id"].clone();
        let mut r = moved(&recovery, shift);
        r["sleep_id"] = json!(sleep_id);
        r["cycle_id"] = c["id"].clone();
        let mut w = moved(&workout, shift);
        w["id"] = json!(format!("00000000-0000-4000-9000-{d:012}"));
        docs.cycles.push(c);
        docs.sleeps.push(s);
        docs.recoveries.push(r);
        docs.workouts.push(w);
    }
    docs.body_measurement = Some(fake_whoop::fixture("body_measurement.json"));
    docs
}

fn everything() -> Wanted {
    Wanted {
        sleep: true,
        hrv: true,
        heartrate: true,
        blood_oxygen: true,
        measured_at: Some(Utc::now()),
    }
}

pub fn normalise_one_day(c: &mut Criterion) {
    let docs = documents(NaiveDate::from_ymd_opt(2025, 3, 1).unwrap(), 1);
    let pulled = normalise(&docs, everything());
    assert_eq!(pulled.skipped, 0);
    let body = &pulled.body.to_json();
    for part in ["sleep", "activity", "workouts", "body"] {
        assert_eq!(body[part].as_array().unwrap().len(), 1, "{part}");
    }
    for series in ["heartrate", "hrv", "blood_oxygen", "body_temperature"] {
        assert_eq!(
            body["timeseries"][series].as_array().unwrap().len(),
            1,
            "{series}"
        );
    }
    let wanted = everything();
    c.bench_function(
        "sync/normalise one WHOOP day (a cycle, a sleep, its recovery, a workout)",
        |b| b.iter(|| normalise(std::hint::black_box(&docs), wanted)),
    );
}

pub fn historical_pull(c: &mut Criterion) {
    let rt = pull::runtime();
    let today = Utc::now().date_naive();
    let docs = documents(today - chrono::Duration::days(DAYS), DAYS + 1);
    let fake = rt.block_on(async {
        let mut collections: HashMap<String, Vec<Value>> = [
            ("cycle", docs.cycles.clone()),
            ("recovery", docs.recoveries.clone()),
            ("activity/sleep", docs.sleeps.clone()),
            ("activity/workout", docs.workouts.clone()),
        ]
        .into_iter()
        .map(|(path, records)| (path.to_owned(), records))
        .collect();
        collections.insert(
            "user/measurement/body".into(),
            vec![docs.body_measurement.clone().unwrap()],
        );
        fake_whoop::FakeWhoop::start(collections, 25).await
    });
    let days = DAYS as usize;
    let case = pull::Case {
        name: "90-day historical pull of one WHOOP user from the local fake",
        provider: "whoop_v2",
        connector: Arc::new(Whoop::new(&fake.base).unwrap()),
        token: fake_whoop::TOKEN,
        provider_user_id: Some("10129"),
        expected: [Table::Sleep, Table::Activity, Table::Workout]
            .into_iter()
            .map(|t| (Dataset::Table(t), days))
            .collect(),
    };
    pull::historical_pull(c, &rt, case);
}
