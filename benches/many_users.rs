//! Many users over HTTP (issue 43, item 4): what a team with 1,000 users sees, measured the
//! way its backend reaches wearhouse. Not a criterion benchmark: one seeded pass whose set-up is
//! the measurement (every user's one push), so it prints its figures and checks them, as
//! `metadata_growth` does. `cargo bench -- "many users"`.
//!
//! Scenario: a real server on a loopback port (SQLite metadata, local Parquet store, the job
//! runner announcing every push as `serve` does), 1,000 users (`WEARHOUSE_BENCH_USERS`), each
//! with 14 days of 1/min heart rate (20,160 samples), pushed as one Arrow IPC stream per user by
//! 4 clients at once (reqwest, kept-alive connections). Reported:
//! - push throughput over the whole run (samples over wall time, client encoding excluded) and
//!   each push's latency, p50 and p95;
//! - the metadata database's bytes per pushed sample once every push is announced and the
//!   finished work's retention is over (`VACUUM INTO` a new file before and after);
//! - the aggregate query's latency over the users (daily mean, min, max and count over the 14
//!   days), cold (the user's first read) and warm, p50.
//!
//! Checked: every push answers 200 with its 20,160 samples stored, every query 14 days of 1,440
//! samples, and the database under 2 bytes per pushed sample (the goal).

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::http::{Server, arrow_samples, create_user, runtime, start};

/// Samples a user pushes: 14 days of one a minute.
const PER_USER: i64 = 14 * 1440;
/// Pushes in flight at once.
const CLIENTS: usize = 4;
/// 2025-01-01T00:00:00Z.
const START: i64 = 1_735_689_600;

fn users() -> usize {
    std::env::var("WEARHOUSE_BENCH_USERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// A user's push: 14 days of 1/min heart rate as an Arrow IPC stream, values seeded per user.
fn body(seed: usize) -> Vec<u8> {
    let values = (0..PER_USER).map(move |i| 50.0 + ((i * 7 + seed as i64) % 60) as f64);
    arrow_samples(START, 60, values)
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn db_bytes(server: &Server, name: &str) -> u64 {
    let target = server.dir().join(name);
    let mut conn = server.state.meta.writer().await.unwrap();
    sqlx::query(&format!("VACUUM INTO '{}'", target.display()))
        .execute(&mut *conn)
        .await
        .unwrap();
    std::fs::metadata(&target).unwrap().len()
}

/// Waits until every push is announced (no `push_events` row left).
async fn announced(server: &Server) {
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let left: i64 = {
            let mut conn = server.state.meta.reader().await.unwrap();
            sqlx::query_scalar("SELECT count(*) FROM push_events")
                .fetch_one(&mut *conn)
                .await
                .unwrap()
        };
        if left == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{left} pushes still unannounced");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn query() -> Value {
    let hr = json!({"timeseries": "heartrate", "field": "value"});
    json!({
        "timeframe": {"anchor": "2025-01-14", "past": {"value": 13, "unit": "day"}},
        "queries": [{
            "select": [{"group_key": 0}, {"func": "mean", "arg": hr}, {"func": "min", "arg": hr},
                       {"func": "max", "arg": hr}, {"func": "count", "arg": hr}],
            "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]
        }]
    })
}

async fn timed_query(server: &Server, user: &str, body: &Value) -> Duration {
    let path = format!("/aggregate/v1/user/{user}/query");
    let started = Instant::now();
    let (status, answer) = server.post(&path, body).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    let counts = &answer["results"][0]["table"]["count.heartrate.value"];
    assert_eq!(
        counts,
        &json!(vec![1440; 14]),
        "{user}: a full day per bucket"
    );
    took
}

async fn run(n: usize) {
    let server = start().await;
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        ids.push(create_user(&server, &format!("many-{i}")).await);
    }
    let bodies: Vec<Vec<u8>> = (0..n).map(body).collect();
    let before = db_bytes(&server, "before.db").await;

    let started = Instant::now();
    let server_ref = &server;
    let mut latencies: Vec<Duration> = futures::stream::iter(ids.iter().zip(bodies))
        .map(|(user, body)| async move {
            let path =
                format!("/v2/user/{user}/data?resource=heartrate&provider=oura&source_type=ring");
            let pushed = Instant::now();
            let (status, answer) = server_ref
                .post_bytes(&path, "application/vnd.apache.arrow.stream", body)
                .await;
            let took = pushed.elapsed();
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
            let answer: Value = serde_json::from_slice(&answer).unwrap();
            assert_eq!(answer["stored"]["timeseries"]["heartrate"], PER_USER);
            took
        })
        .buffer_unordered(CLIENTS)
        .collect()
        .await;
    let wall = started.elapsed();
    announced(&server).await;
    let announced_after = started.elapsed();
    latencies.sort();

    let later = chrono::Utc::now() + wearhouse::jobs::prune::KEEP_SUCCEEDED * 2;
    wearhouse::jobs::prune::prune(&server.state.meta, later)
        .await
        .unwrap();
    let steady = db_bytes(&server, "steady.db").await;
    let samples = (n as i64 * PER_USER) as f64;
    let per_sample = steady.saturating_sub(before) as f64 / samples;

    let q = query();
    let asked: Vec<&String> = ids.iter().step_by((n / 200).max(1)).collect();
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for user in &asked {
        cold.push(timed_query(&server, user, &q).await);
        warm.push(timed_query(&server, user, &q).await);
    }
    cold.sort();
    warm.sort();

    println!(
        "many users/{n} users x 14 days of 1/min heart rate, Arrow IPC over HTTP, {CLIENTS} \
         clients: {:.2} M samples/s ({:.2} s for {samples} samples; every push announced \
         {:.2} s after the first began); per push p50 {:.1} ms, p95 {:.1} ms",
        samples / wall.as_secs_f64() / 1e6,
        wall.as_secs_f64(),
        announced_after.as_secs_f64(),
        ms(quantile(&latencies, 0.5)),
        ms(quantile(&latencies, 0.95)),
    );
    println!(
        "many users/metadata database: {before} bytes before, {steady} once every push is \
         announced and finished work pruned: {per_sample:.3} bytes per pushed sample"
    );
    println!(
        "many users/query over {} users, daily mean/min/max/count over 14 days: cold p50 {:.2} \
         ms, warm p50 {:.2} ms",
        asked.len(),
        ms(quantile(&cold, 0.5)),
        ms(quantile(&warm, 0.5)),
    );
    assert!(per_sample < 2.0, "{per_sample:.3} bytes per pushed sample");
}

/// Runs when the bench filter is absent or names it (`many users`); under `--test` (what
/// `cargo test --benches` passes) with 20 users, still checked.
pub fn benches() {
    let Some(test_mode) = crate::one_pass("many users") else {
        return;
    };
    let n = if test_mode { 20 } else { users() };
    runtime().block_on(run(n));
}
