//! Two server processes on one PostgreSQL database and one bucket (a local health directory
//! belongs to one process, `store::health`), with pushes for every user through both: each
//! (query, user) is evaluated one run at a time, every change announced once, and both
//! processes evaluate.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::{
    CHANGED, FLAGS, check_announcements, delivered, get, post, quiesce, rows, samples,
    stored_events, table_and_fresh,
};
use crate::continuous::{daily_heart_rate, registration};
use crate::events::support::Receiver;
use crate::support::server::{Server, SharedStores, http_client};
use wearhouse::store::metadata::MetadataStore;

/// Users, pushes per user and days of data of the two-process test.
const USERS: usize = 3;
const PUSHES: i64 = 5;
const TWO_DAYS: i64 = 8;

/// The user's tasks of `query` through every page, oldest first.
async fn task_history(
    http: &reqwest::Client,
    at: (&str, &str),
    user: &str,
    query: &str,
) -> Vec<Value> {
    let (mut out, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let mut path =
            format!("/aggregate/v1/user/{user}/continuous_query/{query}/task_history?limit=100");
        if let Some(c) = &cursor {
            path.push_str(&format!("&next_cursor={c}"));
        }
        let page = get(http, at, &path).await;
        out.extend(page["data"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    out.reverse();
    out
}

fn instant(v: &Value) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("no time: {v}")))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_evaluate_each_pair_once() {
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let shared = SharedStores::new("cq-e2e").await;
    let (db, key) = (&shared.db, shared.key.clone());
    let [dir_a, dir_b] = &shared.dirs;
    let env = shared.env();
    let mut args = shared.args();
    args.extend(FLAGS);
    let a = Server::start_with(dir_a.path(), &args, "warn", &env);
    let b = Server::start_with(dir_b.path(), &args, "warn", &env);
    let servers = [a.base.clone(), b.base.clone()];
    let http = http_client(60);
    let at = |i: usize| (servers[i % 2].as_str(), key.as_str());

    let rx = Receiver::start(true).await;
    let hook = json!({"url": rx.url, "event_types": [CHANGED]});
    let secret = post(&http, at(0), "/v2/team/webhooks", &hook).await["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut six_hourly = daily_heart_rate();
    six_hourly["group_by"][0]["date_trunc"] = json!({"value": 6, "unit": "hour"});
    let queries = [
        ("daily-hr", daily_heart_rate()),
        ("six-hourly-hr", six_hourly),
    ];
    let mut query_ids = Vec::new();
    for (i, (slug, definition)) in queries.iter().enumerate() {
        let q = post(
            &http,
            at(i),
            "/aggregate/v1/continuous_query",
            &registration(slug, definition.clone()),
        )
        .await;
        query_ids.push(q["id"].as_str().unwrap().to_owned());
    }
    let mut users = Vec::new();
    for u in 0..USERS {
        let body = json!({"client_user_id": format!("cq-two-{u}")});
        users.push(
            post(&http, at(u), "/v2/user", &body).await["user_id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }

    // Which process runs each evaluation, sampled from the jobs table as they run (a finished
    // job keeps no owner).
    let meta = MetadataStore::connect(&db.url).await.unwrap();
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (meta, sampling) = (meta.clone(), sampling.clone());
        tokio::spawn(async move {
            let mut seen = BTreeSet::new();
            while sampling.load(Ordering::SeqCst) {
                let running: Vec<(String, String)> = sqlx::query_as(
                    "SELECT id, lease_owner FROM jobs \
                     WHERE kind = 'continuous.evaluate' AND state = 'running'",
                )
                .fetch_all(&mut *meta.reader().await.unwrap())
                .await
                .unwrap();
                seen.extend(running);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            seen
        })
    };

    // Every user's pushes alternate between the processes, all users at once, with random
    // pauses: evaluations run in both while pushes land in both.
    let clock = Instant::now();
    for push in 0..PUSHES {
        let mut writers = Vec::new();
        for (u, user) in users.iter().enumerate() {
            let (http, base, key) = (
                http.clone(),
                servers[(push as usize + u) % 2].clone(),
                key.clone(),
            );
            let path = format!("/v2/user/{user}/data");
            let body = samples(TWO_DAYS, (push, PUSHES), u as i64);
            writers.push(tokio::spawn(async move {
                post(&http, (&base, &key), &path, &body).await;
            }));
        }
        for w in writers {
            w.await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(rng.gen_range(0..300))).await;
    }
    quiesce(&meta).await;
    eprintln!(
        "two processes: pushes and their evaluations in {:?}",
        clock.elapsed()
    );
    sampling.store(false, Ordering::SeqCst);
    let runs = sampler.await.unwrap();
    let by = |pid: u32| {
        runs.iter()
            .filter(|(_, o)| o.contains(&format!(":{pid}:")))
            .count()
    };
    let (ran_a, ran_b) = (by(a.pid()), by(b.pid()));
    eprintln!("two processes: evaluations seen running in a {ran_a}, in b {ran_b}");
    assert!(ran_a > 0 && ran_b > 0, "both processes evaluate: {runs:?}");

    let mut finals = HashMap::new();
    let (mut tasks_total, mut lasted) = (0, 0);
    for (i, user) in users.iter().enumerate() {
        for ((slug, definition), id) in queries.iter().zip(&query_ids) {
            let (table, fresh) = table_and_fresh(&http, at(i), (user, slug), definition).await;
            assert_eq!(table, fresh, "{slug} of {user}");
            assert!(!rows(&table).is_empty());
            finals.insert((id.clone(), user.clone()), table);
            // One evaluation of a pair at a time: each task ended before the next started.
            let tasks = task_history(&http, at(i + 1), user, slug).await;
            let mut previous_end = None;
            for t in &tasks {
                assert_eq!(t["status"], "completed", "{t}");
                let (start, end) = (instant(&t["started_at"]), instant(&t["ended_at"]));
                assert!(start <= end, "{t}");
                lasted += usize::from(start < end);
                if let Some(previous) = previous_end {
                    assert!(
                        previous <= start,
                        "two evaluations of {slug}/{user} overlap: {tasks:?}"
                    );
                }
                previous_end = Some(end);
            }
            tasks_total += tasks.len();
        }
    }
    // A task's end is when its work ended (so the check above compares real intervals).
    assert!(lasted > 0, "every task ended the instant it started");
    let stored = stored_events(&http, at(1)).await;
    let got = delivered(&rx, &stored, &secret).await;
    assert_eq!(got.len(), stored.len(), "each event delivered");
    assert_eq!(rx.got().len(), stored.len(), "and only once");
    let announced = check_announcements(&stored, &finals);
    let delivered_rows: usize = got
        .iter()
        .map(|r| {
            r.json()["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| rows(&d["data"]).len())
                .sum::<usize>()
        })
        .sum();
    assert_eq!(
        delivered_rows, announced,
        "delivered rows are the distinct changes"
    );
    eprintln!(
        "two processes: {tasks_total} tasks, {} events, {announced} rows announced",
        stored.len()
    );
    drop((a, b));
    drop(meta);
    shared.db.drop_db().await;
}
