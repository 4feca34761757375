//! The 90-day historical pull every connector's bench times: a user linked to the connector,
//! its `sync.historical` job run by the durable runner until it succeeds, then the stored rows
//! counted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use criterion::Criterion;
use serde_json::json;
use wearhouse::jobs::{JobState, Registry, Runner, RunnerConfig};
use wearhouse::link::lifecycle::{Linked, link_on};
use wearhouse::schema::Dataset;
use wearhouse::store::health::HealthStore;
use wearhouse::store::metadata::{MetadataStore, NewUser};
use wearhouse::sync::credentials::Credentials;
use wearhouse::sync::pull::{HistoricalPuller, Puller, start_on};
use wearhouse::sync::{Connector, Connectors};

/// Days a pull covers.
pub const DAYS: i64 = 90;

/// One connector's pull: its provider slug, the connector pointed at its running fake, the
/// account the fake answers for, and the rows the pull must store.
pub struct Case {
    pub name: &'static str,
    pub provider: &'static str,
    pub connector: Arc<dyn Connector>,
    pub token: &'static str,
    pub provider_user_id: Option<&'static str>,
    pub expected: Vec<(Dataset, usize)>,
}

/// A runtime for the fakes and the pulls.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Times `case`'s historical pull on `rt` (which runs its fake).
pub fn historical_pull(c: &mut Criterion, rt: &tokio::runtime::Runtime, case: Case) {
    let dir = tempfile::tempdir().unwrap();
    let (meta, health, team) = rt.block_on(async {
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("meta.db").display());
        let meta = MetadataStore::connect(&url).await.unwrap();
        let health = HealthStore::open(
            &dir.path().join("health").display().to_string(),
            Default::default(),
        )
        .unwrap();
        let (team, _) = meta.create_team("bench").await.unwrap();
        (meta, health, team)
    });
    let (key, _) = wearhouse::secret::SecretKey::generate();
    let connectors = Connectors::default().with(case.connector.clone());
    let puller = Puller::new(
        health.clone(),
        connectors,
        Some(key.clone()),
        Arc::new(wearhouse::link::LinkConfig::default()),
    )
    .unwrap();
    let mut n = 0;
    let mut group = c.benchmark_group("sync");
    group.sample_size(10);
    group.bench_function(case.name, |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                n += 1;
                total += rt.block_on(async {
                    let new = NewUser {
                        client_user_id: format!("puller-{n}"),
                        ..NewUser::default()
                    };
                    let user = meta.create_user(team.id, new).await.unwrap();
                    let linked = Linked {
                        provider_user_id: case.provider_user_id.map(str::to_owned),
                        credentials: Credentials {
                            access_token: Some(case.token.to_owned()),
                            ..Credentials::default()
                        },
                        ..Linked::default()
                    };
                    let mut tx = meta.begin().await.unwrap();
                    link_on(&mut tx, Some(&key), user.id, case.provider, &linked)
                        .await
                        .unwrap();
                    let started = start_on(&mut tx, &user, case.provider, Utc::now());
                    assert!(started.await.unwrap());
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
                    for (dataset, want) in &case.expected {
                        let rows: usize = health
                            .read(user.team_id, user.id, *dataset, None)
                            .await
                            .unwrap()
                            .iter()
                            .map(|b| b.num_rows())
                            .sum();
                        assert_eq!(rows, *want, "every {dataset:?} row once");
                    }
                    took
                });
            }
            total
        })
    });
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
