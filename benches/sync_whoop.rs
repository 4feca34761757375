//! WHOOP sync benches (issue 37), seeded and self-checking.
//!
//! - `normalise one WHOOP day`: one day of WHOOP records as the API pages them (a cycle, a
//!   night's sleep, its recovery, a workout) normalised into a push body
//!   (`sync::whoop::normalise`). Checks the row and sample counts. Target: at most 1 ms.
//! - `90-day historical pull of one WHOOP user`: the real `sync.historical` job on the durable
//!   runner (SQLite metadata, local Parquet store) pulling 90 days of the same shape (90
//!   cycles, sleeps, recoveries and workouts, and the body measurement) from the fake WHOOP API
//!   of the tests (`tests/it/sync_whoop/fake_whoop.rs`, a loopback HTTP server paging 25
//!   records a page, WHOOP's maximum), timed from the runner's start to the job's success.
//!   Each iteration is a new user. Checks every record is stored once. Target: at most 5 s.
//!
//! The records are the fixtures' (`testdata/providers/whoop/`), moved day by day.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

#[allow(dead_code)]
#[path = "../tests/it/sync_whoop/fake_whoop.rs"]
mod fake_whoop;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use criterion::{Criterion, criterion_group};
use serde_json::{Value, json};
use wearhouse::jobs::{JobState, Registry, Runner, RunnerConfig};
use wearhouse::link::connections::{Linked, link_on};
use wearhouse::link::credentials::Credentials;
use wearhouse::schema::{Dataset, Table};
use wearhouse::store::health::HealthStore;
use wearhouse::store::metadata::{MetadataStore, NewUser};
use wearhouse::sync::Connectors;
use wearhouse::sync::pull::{HistoricalPuller, Puller, start_on};
use wearhouse::sync::whoop::{Documents, Wanted, Whoop, normalise};

const DAYS: i64 = 90;

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

fn normalise_one_day(c: &mut Criterion) {
    let docs = documents(NaiveDate::from_ymd_opt(2025, 3, 1).unwrap(), 1);
    let pulled = normalise(&docs, everything());
    assert_eq!(pulled.skipped, 0);
    let body = &pulled.body;
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
        let fake = fake_whoop::FakeWhoop::start(collections, 25).await;
        (meta, health, team, fake)
    });
    let (key, _) = wearhouse::secret::SecretKey::generate();
    let connectors = Connectors::default().with(Arc::new(Whoop::new(&fake.base).unwrap()));
    let puller = Puller::new(
        health.clone(),
        connectors,
        Some(key.clone()),
        Arc::new(Default::default()),
    )
    .unwrap();
    let mut n = 0;
    let mut group = c.benchmark_group("sync");
    group.sample_size(10);
    group.bench_function(
        "90-day historical pull of one WHOOP user from the local fake",
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
                            provider_user_id: Some("10129".into()),
                            credentials: Credentials {
                                access_token: Some(fake_whoop::TOKEN.to_owned()),
                                ..Credentials::default()
                            },
                            ..Linked::default()
                        };
                        let mut tx = meta.begin().await.unwrap();
                        link_on(&mut tx, Some(&key), user.id, "whoop_v2", &linked)
                            .await
                            .unwrap();
                        assert!(
                            start_on(&mut tx, &user, "whoop_v2", Utc::now())
                                .await
                                .unwrap()
                        );
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
                        for table in [Table::Sleep, Table::Activity, Table::Workout] {
                            let rows: usize = health
                                .read(user.team_id, user.id, Dataset::Table(table), None)
                                .await
                                .unwrap()
                                .iter()
                                .map(|b| b.num_rows())
                                .sum();
                            assert_eq!(rows as i64, DAYS, "every {table:?} once");
                        }
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
