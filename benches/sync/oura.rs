//! Oura: one day of documents as the API pages them (1,440 heart-rate samples at 1/min, one
//! sleep period with its HRV and heart-rate series, one daily activity) normalised into a push
//! body (`sync::connectors::oura::normalise`, checking the sample and row counts), and the 90-day pull of
//! the same shape (129,600 heart-rate samples, 90 sleeps, 90 activities) from the tests' fake
//! Oura (`tests/it/sync/oura/fake_oura.rs`, 5,000 documents a page). The documents are the
//! fixtures' (`testdata/providers/oura/`), moved day by day.

#[allow(dead_code)]
#[path = "../../tests/it/sync/oura/fake_oura.rs"]
mod fake_oura;

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{NaiveDate, Utc};
use criterion::Criterion;
use serde_json::{Value, json};
use wearhouse::schema::Dataset;
use wearhouse::sync::connectors::oura::{Documents, Oura, normalise};

use super::pull::{self, DAYS};

const PER_DAY: i64 = 1_440;

/// The documents of the `days` days starting `first`: a fixture sleep and activity moved to
/// each day (with their own ids), and heart rate at 1/min.
fn documents(first: NaiveDate, days: i64) -> Documents {
    let fixture_day = NaiveDate::from_ymd_opt(2025, 3, 1).unwrap();
    let sleep = fake_oura::fixture("sleep.json")["data"][0].clone();
    let activity = fake_oura::fixture("daily_activity.json")["data"][0].clone();
    let mut docs = Documents::default();
    for d in 0..days {
        let day = first + chrono::Duration::days(d);
        let shift = (day - fixture_day).num_days();
        for (template, out) in [
            (&sleep, &mut docs.sleep),
            (&activity, &mut docs.daily_activity),
        ] {
            let mut doc = fake_oura::shifted(template, shift);
            doc["id"] = json!(format!("{}-{d}", template["id"].as_str().unwrap()));
            out.push(doc);
        }
        let midnight = day.and_hms_opt(0, 0, 0).unwrap().and_utc();
        docs.heartrate.extend((0..PER_DAY).map(|m| {
            let at = midnight + chrono::Duration::minutes(m);
            json!({"bpm": 48 + (m * 7) % 60, "source": "awake",
                   "timestamp": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, false)})
        }));
    }
    docs
}

pub fn normalise_one_day(c: &mut Criterion) {
    let docs = documents(NaiveDate::from_ymd_opt(2025, 3, 1).unwrap(), 1);
    let pulled = normalise(&docs, true, true);
    assert_eq!(pulled.skipped, 0);
    let body = &pulled.body.to_json();
    assert_eq!(
        body["timeseries"]["heartrate"].as_array().unwrap().len(),
        PER_DAY as usize
    );
    assert_eq!(body["sleep"].as_array().unwrap().len(), 1);
    assert_eq!(body["activity"].as_array().unwrap().len(), 1);
    c.bench_function(
        "sync/normalise one Oura day (1,440 heart-rate samples, a sleep, an activity)",
        |b| b.iter(|| normalise(std::hint::black_box(&docs), true, true)),
    );
}

pub fn historical_pull(c: &mut Criterion) {
    let rt = pull::runtime();
    let today = Utc::now().date_naive();
    let docs = documents(today - chrono::Duration::days(DAYS), DAYS + 1);
    let fake = rt.block_on(async {
        let collections: HashMap<String, Vec<Value>> = [
            ("sleep".to_owned(), docs.sleep.clone()),
            ("daily_activity".to_owned(), docs.daily_activity.clone()),
            ("heartrate".to_owned(), docs.heartrate.clone()),
            ("workout".to_owned(), Vec::new()),
            ("daily_spo2".to_owned(), Vec::new()),
        ]
        .into_iter()
        .collect();
        fake_oura::FakeOura::start(collections, 5_000).await
    });
    let heartrate = Dataset::Timeseries(wearhouse::schema::resource("heartrate").unwrap());
    let case = pull::Case {
        name: "90-day historical pull of one Oura user from the local fake",
        provider: "oura",
        connector: Arc::new(Oura::new(&fake.base).unwrap()),
        token: fake_oura::TOKEN,
        provider_user_id: None,
        expected: vec![(heartrate, (DAYS * PER_DAY) as usize)],
    };
    pull::historical_pull(c, &rt, case);
}
