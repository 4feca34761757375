//! Metadata-store bench (criterion, seeded, self-checking): `cargo bench` (module `metadata`).
//!
//! Scenario: `read-heavy mix on SQLite, 8 clients`: 8 concurrent tasks issue 400 operations in
//! all, the shape of API traffic: for every request the key is resolved to its team and the user
//! read, and one operation in ten also updates a user (a durable commit, `synchronous = FULL`).
//! Reads that queue behind a writer's fsync are what this measures.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wearhouse::store::metadata::{MetadataStore, NewUser, UserPatch};

const CLIENTS: usize = 8;
const OPERATIONS: usize = 400;
const USERS: usize = 200;

/// One round: `OPERATIONS` operations spread over `CLIENTS` tasks; answers the reads that found
/// their user (all of them, when the store is right).
async fn round(
    meta: &MetadataStore,
    key: &Arc<str>,
    team: uuid::Uuid,
    users: &Arc<Vec<uuid::Uuid>>,
    seed: u64,
) -> usize {
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        let (meta, key, users) = (meta.clone(), key.clone(), users.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = ChaCha8Rng::seed_from_u64(seed * 100 + client as u64);
            let mut found = 0;
            for _ in 0..OPERATIONS / CLIENTS {
                let user = users[rng.gen_range(0..users.len())];
                let t = meta.team_for_key(&key).await.unwrap().expect("team");
                assert_eq!(t.id, team);
                if meta.user(team, user).await.unwrap().is_some() {
                    found += 1;
                }
                if rng.gen_ratio(1, 10) {
                    let zone = if rng.gen_bool(0.5) {
                        "Europe/Berlin"
                    } else {
                        "UTC"
                    };
                    let patch = UserPatch {
                        fallback_time_zone: Some(Some(zone.to_owned())),
                        ..UserPatch::default()
                    };
                    meta.update_user(team, user, patch).await.unwrap();
                }
            }
            found
        }));
    }
    let mut found = 0;
    for task in tasks {
        found += task.await.unwrap();
    }
    found
}

fn read_heavy(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("meta.db").display());
    let (meta, key, team, users) = rt.block_on(async {
        let meta = MetadataStore::connect(&url).await.unwrap();
        let (team, key) = meta.create_team("bench").await.unwrap();
        let mut users = Vec::new();
        for i in 0..USERS {
            let new = NewUser {
                client_user_id: format!("user-{i}"),
                ..NewUser::default()
            };
            users.push(meta.create_user(team.id, new).await.unwrap().id);
        }
        (meta, Arc::<str>::from(key.secret), team.id, Arc::new(users))
    });
    let mut group = c.benchmark_group("metadata");
    group.throughput(Throughput::Elements(OPERATIONS as u64));
    let mut seed = 0;
    group.bench_function("read-heavy mix on SQLite, 8 clients", |b| {
        b.iter(|| {
            seed += 1;
            let found = rt.block_on(round(&meta, &key, team, &users, seed));
            assert_eq!(found, OPERATIONS, "every read finds its user");
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = read_heavy
}
