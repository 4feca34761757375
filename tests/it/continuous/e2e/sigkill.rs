//! SIGKILL at random (seeded) moments while data arrives in slices, one push per round, each
//! touching every day; rounds continue (bounded) until a kill has landed in an evaluation (its
//! job left running, the changes it was evaluating still waiting, in the dead process's
//! database). Then the table equals a fresh query and each change was announced once, however
//! many evaluations were cut.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::{
    CHANGED, FLAGS, check_announcements, delivered, quiesce, rows, samples, stored_events,
    table_and_fresh,
};
use crate::continuous::{daily_heart_rate, registration};
use crate::events::support::{self as events_support, Receiver};

/// Evaluations running in the server's database: `continuous.evaluate` jobs claimed while
/// changes still wait (the one user's; an evaluation clears them in its commit).
async fn running_evaluations(meta: &wearhouse::store::metadata::MetadataStore) -> i64 {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM jobs WHERE kind = 'continuous.evaluate' AND state = 'running' \
         AND EXISTS (SELECT 1 FROM continuous_query_users \
                     WHERE dirty_start IS NOT NULL OR dirty_all = 1)",
    )
    .fetch_one(&mut *meta.reader().await.unwrap())
    .await
    .unwrap()
}

/// Evaluations the kill cut (read while the process is dead).
async fn cut_evaluations(dir: &std::path::Path) -> i64 {
    running_evaluations(&events_support::server_meta(dir).await).await
}

/// Waits (bounded) until an evaluation runs in the live server; whether one was seen.
async fn watch_running(dir: &std::path::Path) -> bool {
    let meta = events_support::server_meta(dir).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if running_evaluations(&meta).await > 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    false
}

/// Days of data, slices (one per push) and the pushes with a kill at a random moment; the
/// later slices are pushed only until a kill has landed mid-evaluation.
const DAYS: i64 = 20;
const SLICES: i64 = 10;
const RANDOM_ROUNDS: i64 = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_evaluations_announces_each_change_once() {
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut server = events_support::Server::start(dir.path(), FLAGS, None);
    let key = server.key.clone();
    let rx = Receiver::start(true).await;
    let (_, secret) = server.endpoint(&rx.url, Some(json!([CHANGED]))).await;
    let user = server.user("cq-crash").await;
    let definition = daily_heart_rate();
    let query = server
        .post(
            "/aggregate/v1/continuous_query",
            registration("daily-hr", definition.clone()),
        )
        .await;
    let query_id = query["id"].as_str().unwrap().to_owned();
    let (mut mid_evaluation, mut kills) = (0, 0);
    for slice in 0..SLICES {
        if slice >= RANDOM_ROUNDS && mid_evaluation > 0 {
            break;
        }
        let clock = Instant::now();
        server
            .post(
                &format!("/v2/user/{user}/data"),
                samples(DAYS, (slice, SLICES), 0),
            )
            .await;
        // Half the random rounds (and every later one) wait to see an evaluation running.
        let watch = slice >= RANDOM_ROUNDS || rng.gen_bool(0.5);
        let seen = watch && watch_running(dir.path()).await;
        let delay = if watch {
            rng.gen_range(0..10)
        } else {
            rng.gen_range(0..400)
        };
        tokio::time::sleep(Duration::from_millis(delay)).await;
        server.kill();
        kills += 1;
        let cut = cut_evaluations(dir.path()).await;
        mid_evaluation += usize::from(cut > 0);
        server = events_support::Server::start(dir.path(), FLAGS, Some(key.clone()));
        let meta = events_support::server_meta(dir.path()).await;
        quiesce(&meta).await;
        eprintln!(
            "slice {slice}: killed {delay} ms after {} (running seen: {seen}), {cut} \
             evaluation(s) cut; round in {:?}",
            if watch { "watching" } else { "the push" },
            clock.elapsed()
        );
    }
    assert!(
        mid_evaluation > 0,
        "no kill landed in an evaluation (seed {seed})"
    );

    let at = (server.base.as_str(), key.as_str());
    let http = server.client.clone();
    let (table, fresh) = table_and_fresh(&http, at, (&user, "daily-hr"), &definition).await;
    assert_eq!(table, fresh, "the result table after the crashes");
    assert_eq!(rows(&table).len(), DAYS as usize);
    let stored = stored_events(&http, at).await;
    let got = delivered(&rx, &stored, &secret).await;
    assert_eq!(got.len(), stored.len());
    let finals = HashMap::from([((query_id, user.clone()), table)]);
    let announced = check_announcements(&stored, &finals);
    // The deliveries carry the stored events.
    let bodies: BTreeMap<String, Value> = got.iter().map(|r| (r.id(), r.json())).collect();
    for e in &stored {
        assert_eq!(bodies[e["id"].as_str().unwrap()]["data"], e["data"]);
    }
    let history = server
        .get(&format!(
            "/aggregate/v1/user/{user}/continuous_query/daily-hr/task_history?limit=100"
        ))
        .await;
    let tasks = history["data"].as_array().unwrap();
    assert!(
        tasks.iter().all(|t| t["status"] == "completed"),
        "{history}"
    );
    eprintln!(
        "seed {seed}: {kills} kills, {mid_evaluation} mid-evaluation; {} events, {announced} rows \
         announced, {} tasks",
        stored.len(),
        tasks.len()
    );
    server.kill();
}
