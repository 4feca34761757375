//! Provider sync benches (issue 15), seeded and self-checking.
//!
//! - `normalise one Oura day`: one day of Oura documents as the API pages them (1,440 heart-rate
//!   samples at 1/min, one sleep period with its HRV and heart-rate series, one daily activity)
//!   normalised into a push body (`sync::oura::normalise`). Checks the sample and row counts.
//!   Target: at most 1 ms.
//! - `90-day historical pull of one Oura user`: the real `sync.historical` job on the durable
//!   runner (SQLite metadata, local Parquet store) pulling 90 days of the same shape (129,600
//!   heart-rate samples, 90 sleeps, 90 activities) from the fake Oura API of the tests
//!   (`tests/it/sync_oura/fake_oura.rs`, a loopback HTTP server paging 5,000 documents a
//!   page), timed from the runner's start to the job's success. Each iteration is a new user.
//!   Checks every sample is stored once. Target: at most 5 s.
//!
//! The documents are the fixtures' (`testdata/providers/oura/`), moved day by day.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

#[allow(dead_code)]
#[path = "../tests/it/sync_oura/fake_oura.rs"]
mod fake_oura;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{NaiveDate, Utc};
use criterion::{Criterion, criterion_group};
use serde_json::{Value, json};
use wearhouse::jobs::{JobState, Registry, Runner, RunnerConfig};
use wearhouse::link::connections::{Linked, link_on};
use wearhouse::link::credentials::Credentials;
use wearhouse::schema::Dataset;
use wearhouse::store::health::HealthStore;
use wearhouse::store::metadata::{MetadataStore, NewUser};
use wearhouse::sync::Connectors;
use wearhouse::sync::oura::{Documents, Oura, normalise};
use wearhouse::sync::pull::{HistoricalPuller, Puller, start_on};

const DAYS: i64 = 90;
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

fn normalise_one_day(c: &mut Criterion) {
    let docs = documents(NaiveDate::from_ymd_opt(2025, 3, 1).unwrap(), 1);
    let pulled = normalise(&docs, true, true);
    assert_eq!(pulled.skipped, 0);
    let body = &pulled.body;
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

fn historical_pull(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let today = Utc::now().date_naive();
    let docs = documents(today - chrono::Duration::days(DAYS), DAYS + 1);
    let (meta, health, team, fake) = rt.block_on(async {
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("meta.db").display());
        let meta = MetadataStore::connect(&url).await.unwrap();
        let health = HealthStore::open(
            &dir.path().join("health").display().to_string(),
            Default::default(),
        )
        .unwrap();
        let (team, _) = meta.create_team("bench").await.unwrap();
        let collections: HashMap<String, Vec<Value>> = [
            ("sleep".to_owned(), docs.sleep.clone()),
            ("daily_activity".to_owned(), docs.daily_activity.clone()),
            ("heartrate".to_owned(), docs.heartrate.clone()),
            ("workout".to_owned(), Vec::new()),
            ("daily_spo2".to_owned(), Vec::new()),
        ]
        .into_iter()
        .collect();
        let fake = fake_oura::FakeOura::start(collections, 5_000).await;
        (meta, health, team, fake)
    });
    let (key, _) = wearhouse::secret::SecretKey::generate();
    let connectors = Connectors::default().with(Arc::new(Oura::new(&fake.base).unwrap()));
    let puller = Puller::new(
        health.clone(),
        connectors,
        Some(key.clone()),
        Arc::new(Default::default()),
    )
    .unwrap();
    let heartrate = Dataset::Timeseries(wearhouse::schema::resource("heartrate").unwrap());
    let mut n = 0;
    let mut group = c.benchmark_group("sync");
    group.sample_size(10);
    group.bench_function(
        "90-day historical pull of one Oura user from the local fake",
        |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    n += 1;
                    total += rt.block_on(async {
                        let user = meta
                            .create_user(
                                team.id,
                                NewUser {
                                    client_user_id: format!("puller-{n}"),
                                    ..NewUser::default()
                                },
                            )
                            .await
                            .unwrap();
                        let linked = Linked {
                            credentials: Credentials {
                                access_token: Some(fake_oura::TOKEN.to_owned()),
                                ..Credentials::default()
                            },
                            ..Linked::default()
                        };
                        let mut tx = meta.begin().await.unwrap();
                        link_on(&mut tx, Some(&key), user.id, "oura", &linked)
                            .await
                            .unwrap();
                        assert!(start_on(&mut tx, &user, "oura", Utc::now()).await.unwrap());
                        tx.commit().await.unwrap();
                        let config = RunnerConfig {
                            poll_interval: Duration::from_millis(10),
                            ..RunnerConfig::default()
                        };
                        let registry = Registry::new().register(HistoricalPuller(puller.clone()));
                        let began = Instant::now();
                        let runner = Runner::new(meta.clone(), registry, config).spawn();
                        wait_until_pulled(&meta, user.team_id, user.id).await;
                        let took = began.elapsed();
                        runner.shutdown().await;
                        let rows: usize = health
                            .read(user.team_id, user.id, heartrate, None)
                            .await
                            .unwrap()
                            .iter()
                            .map(|b| b.num_rows())
                            .sum();
                        assert_eq!(rows as i64, DAYS * PER_DAY, "every sample once");
                        took
                    });
                }
                total
            })
        },
    );
    group.finish();
}

/// Polls the user's historical pull job until it succeeded.
async fn wait_until_pulled(meta: &MetadataStore, team: uuid::Uuid, user: uuid::Uuid) {
    use wearhouse::store::metadata::jobs::{JobFilter, list_jobs};
    let filter = JobFilter {
        team: Some(team),
        state: None,
        kind: Some("sync.historical".into()),
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut conn = meta.writer().await.unwrap();
        let (jobs, _) = list_jobs(&mut conn, &filter, 0, 100).await.unwrap();
        drop(conn);
        let mine = jobs
            .iter()
            .find(|j| j.payload["user"] == json!(user))
            .expect("the pull's job");
        match mine.state {
            JobState::Succeeded => return,
            JobState::Failed => panic!("the pull failed: {mine:?}"),
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "the pull did not finish: {mine:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

criterion_group!(benches, normalise_one_day, historical_pull);
criterion::criterion_main!(benches);
