//! A query cut at its time limit stops its work: the 504 is answered and the engine's runtime
//! is idle right after, observed through the engine's own task count (not timing alone).
//! Before the engine aborted its task on drop, the request's outer time limit detached it and
//! it ran on for the rest of its ~40 s of work.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::store::support as store_support;
use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::json;
use store_support::{T0, batch, heartrate, row};
use support::TestApp;
use wearhouse::engine::Limits;
use wearhouse::http::HttpConfig;

/// One-second samples stored for the user: about 5.8 days, eight batches.
const SAMPLES: i64 = 500_000;

/// How soon the engine must be idle after the 504: within one batch of work. An optimised
/// build folds a 65,536-row batch in a few milliseconds; the unoptimised test build takes
/// hundreds, so it gets a wider bound. Either is far below the tens of seconds the rest of the
/// request would run if the task were detached instead of aborted.
const IDLE_WITHIN: Duration = if cfg!(debug_assertions) {
    Duration::from_millis(1000)
} else {
    Duration::from_millis(100)
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_cut_at_its_time_limit_stops_its_work() {
    let config = HttpConfig {
        query_limits: Limits {
            timeout: Duration::from_secs(1),
            ..Limits::default()
        },
        ..HttpConfig::default()
    };
    let app = Arc::new(TestApp::with_config(config).await);
    let user = app.user("busy").await;
    let user_id = user.parse().unwrap();
    let team = app.team().await;
    let rows: Vec<_> = (0..SAMPLES)
        .map(|i| row(T0 + i * 1_000_000, "", 50.0 + (i % 97) as f64))
        .collect();
    let health = &app.state.health;
    health
        .write(team.id, user_id, heartrate(), batch(heartrate(), &rows))
        .await
        .unwrap();
    // Warm the cache, so the time limit falls while the engine runs, not while data loads.
    let read = health
        .read(team.id, user_id, heartrate(), None)
        .await
        .unwrap();
    assert_eq!(
        read.iter().map(|b| b.num_rows()).sum::<usize>(),
        SAMPLES as usize
    );

    // 32 queries of minute buckets with five aggregates each over half a million rows: seconds
    // of work in all (a test build), cut at one; each query alone is short, and the engine
    // yields between queries, so the abort lands within one.
    let agg =
        |func: &str| json!({"func": func, "arg": {"timeseries": "heartrate", "field": "value"}});
    let query = json!({
        "select": [{"group_key": "*"}, agg("mean"), agg("min"), agg("max"), agg("newest"),
                   agg("count")],
        "group_by": [{"date_trunc": {"value": 1, "unit": "minute"}, "arg": {"index": "timeseries"}}]
    });
    let body = json!({
        "timeframe": {"anchor": "2026-01-07", "past": {"value": 7, "unit": "day"}},
        "queries": vec![query; 32],
    });
    let request = {
        let app = app.clone();
        tokio::spawn(async move {
            app.post(&format!("/aggregate/v1/user/{user}/query"), body)
                .await
        })
    };
    // The engine does run the queries (else the test would prove nothing).
    let mut seen_busy = false;
    while !request.is_finished() {
        seen_busy |= app.state.engine.running_tasks() > 0;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let answer = request.await.unwrap();
    assert!(seen_busy, "the engine never ran the queries");
    assert_eq!(
        answer.status,
        StatusCode::GATEWAY_TIMEOUT,
        "{}",
        answer.json
    );
    assert!(answer.json["detail"].is_string());

    let answered = Instant::now();
    loop {
        let running = app.state.engine.running_tasks();
        if running == 0 {
            break;
        }
        assert!(
            answered.elapsed() < IDLE_WITHIN,
            "the engine still runs {running} tasks {IDLE_WITHIN:?} after the 504"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
