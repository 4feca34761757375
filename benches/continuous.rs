//! Continuous-query bench (criterion, seeded, self-checking): `cargo bench` (module `continuous`).
//!
//! Scenarios (issue 40's targets):
//! - `re-evaluation after a push of one new day` against `plain query over that day`: one user
//!   with a year of 1/min heart rate (525,600 samples, pushed through the push API's path and
//!   compacted) and a daily mean/max/count continuous query already evaluated. Each iteration
//!   pushes the next day (1,440 samples) and announces it (untimed), then times the
//!   `continuous.evaluate` job's work: the re-run over the days the push can touch, the merge
//!   into the stored table, the new table file and the commit with its event. The baseline is
//!   the per-user query with the same body over the new day (`query::execute`, a one-day
//!   timeframe), timed twice: interleaved with the evaluations, right after a push of its own
//!   day as the evaluation is (the store's listing and footer caches as the push left them;
//!   the medians of both and their ratio are printed), and as `plain query over that day`,
//!   the same day again and again (caches warm). Target: at most 2× the former. Each
//!   evaluation is checked to change exactly one row.
//! - `1,000 users, one push each`: 1,000 users with a week of hourly heart rate and the query
//!   evaluated for all; each iteration pushes one new sample per user and announces it
//!   (untimed), then times the durable job runner (SQLite, as `serve` runs it) until every
//!   user's evaluation has committed. Target: within 60 s. Checks one changed row per user.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use crate::push_support;

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use datafusion::arrow::record_batch::RecordBatch;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use uuid::Uuid;
use wearhouse::continuous::evaluate::Payload;
use wearhouse::continuous::{Evaluation, evaluate, manage};
use wearhouse::engine::{Engine, Limits, OutputFormat};
use wearhouse::store::metadata::{MetadataStore, NewUser, User};

use push_support::{Layout, Pushed, wire_batch};

const MINUTE: i64 = 60_000_000;
const DAY: i64 = 86_400_000_000;
/// 2025-01-01T00:00:00Z in µs.
const START: i64 = 1_735_689_600_000_000;

fn daily_query() -> Value {
    json!({
        "select": [
            {"group_key": "*"},
            {"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}},
            {"func": "max", "arg": {"timeseries": "heartrate", "field": "value"}},
            {"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}}
        ],
        "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]
    })
}

/// `days` days of 1/min samples from `first_day` (days after 2025-01-01), seeded.
fn minutes(first_day: i64, days: i64, rng: &mut ChaCha8Rng) -> RecordBatch {
    let n = days * 1440;
    let times: Vec<i64> = (0..n)
        .map(|i| START + first_day * DAY + i * MINUTE)
        .collect();
    let values: Vec<f64> = (0..n).map(|_| rng.gen_range(45.0..160.0)).collect();
    wire_batch(times, values)
}

async fn announce(meta: &MetadataStore, pushed: &Pushed, user: &User) {
    wearhouse::data::announce::announce(meta, &pushed.health, user.id, chrono::Utc::now())
        .await
        .expect("announced");
}

async fn register(meta: &MetadataStore, engine: &Engine, team: Uuid, slug: &str) -> Uuid {
    let body = json!({"slug": slug, "title": "Daily heart rate", "query": daily_query()});
    manage::create(meta, engine, team, &body)
        .await
        .expect("registered")
        .id
}

async fn evaluate_now(pushed: &Pushed, engine: &Engine, user: &User, query: Uuid) -> Evaluation {
    let p = Payload {
        team: user.team_id,
        query,
        user: user.id,
    };
    evaluate(&pushed.meta, &pushed.health, engine, p, chrono::Utc::now())
        .await
        .expect("evaluated")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn one_user(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::new(Limits::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(40);
    let (pushed, query) = rt.block_on(async {
        let pushed = Pushed::open(dir.path(), Default::default()).await;
        pushed
            .push_heartrate(
                ("oura", "ring"),
                &[minutes(0, 365, &mut rng)],
                Layout::Compacted,
            )
            .await;
        let query = register(&pushed.meta, &engine, pushed.user.team_id, "daily").await;
        // The first, whole evaluation (as the backfill asks for it).
        let mut tx = pushed.meta.begin().await.unwrap();
        wearhouse::store::metadata::continuous::mark_dirty(
            &mut tx,
            (query, pushed.user.team_id, pushed.user.id),
            None,
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let first = evaluate_now(&pushed, &engine, &pushed.user, query).await;
        assert!(
            matches!(
                first,
                Evaluation::Done {
                    changed_rows: 365,
                    ..
                }
            ),
            "{first:?}"
        );
        (pushed, query)
    });
    let mut day = 365;
    let mut group = c.benchmark_group("continuous");
    group.sample_size(20);
    // The per-user query over the newest day.
    let plain = |day: i64| {
        let anchor = chrono::DateTime::from_timestamp_micros(START + (day - 1) * DAY)
            .unwrap()
            .date_naive();
        let body = json!({
            "timeframe": {"anchor": anchor.to_string(), "past": {"value": 1, "unit": "day"}},
            "queries": [daily_query()]
        });
        rt.block_on(async {
            let request = wearhouse::engine::parse_request(&body, engine.limits()).unwrap();
            let run = (&engine, OutputFormat::ParquetTar, engine.deadline());
            let (results, _) = wearhouse::query::execute(
                &pushed.meta,
                &pushed.health,
                &pushed.user,
                &request,
                run,
            )
            .await
            .unwrap();
            assert_eq!(results[0].num_rows(), 2, "the new day and the one before");
        })
    };
    let evaluated = |done: Evaluation| {
        assert!(
            matches!(
                done,
                Evaluation::Done {
                    changed_rows: 1,
                    events: 1
                }
            ),
            "{done:?}"
        );
    };
    // Each iteration pushes a day and times its evaluation, then pushes the next day and times
    // the plain query over it (evaluating that day untimed after): the two measured at the same
    // moment (right after a push, the store's caches as it left them), interleaved so they see
    // the same store as it grows.
    let mut after_push = Vec::new();
    let mut evaluations = Vec::new();
    group.bench_function("re-evaluation after a push of one new day", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                for timed_evaluation in [true, false] {
                    rt.block_on(async {
                        let batch = minutes(day, 1, &mut rng);
                        pushed
                            .push_heartrate(("oura", "ring"), &[batch], Layout::Compacted)
                            .await;
                        announce(&pushed.meta, &pushed, &pushed.user).await;
                    });
                    day += 1;
                    if timed_evaluation {
                        let started = Instant::now();
                        evaluated(rt.block_on(evaluate_now(&pushed, &engine, &pushed.user, query)));
                        evaluations.push(started.elapsed());
                        total += started.elapsed();
                    } else {
                        let started = Instant::now();
                        plain(day);
                        after_push.push(started.elapsed());
                        evaluated(rt.block_on(evaluate_now(&pushed, &engine, &pushed.user, query)));
                    }
                }
            }
            total
        })
    });
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (e, p) = (median(&mut evaluations), median(&mut after_push));
    eprintln!(
        "interleaved over {} runs each: re-evaluation median {e:?}, plain query right after its \
         push median {p:?}, ratio {:.2}",
        evaluations.len(),
        e.as_secs_f64() / p.as_secs_f64()
    );
    group.bench_function("plain query over that day", |b| b.iter(|| plain(day)));
    group.finish();
}

const USERS: usize = 1_000;

fn many_users(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::new(Limits::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let (pushed, users, query) = rt.block_on(async {
        let pushed = Pushed::open(dir.path(), Default::default()).await;
        let team = pushed.user.team_id;
        let mut users = Vec::with_capacity(USERS);
        for i in 0..USERS {
            let user = pushed
                .meta
                .create_user(team, NewUser { client_user_id: format!("u{i}"), ..NewUser::default() })
                .await
                .unwrap();
            let hours: Vec<Value> = (0..7 * 24)
                .map(|h| {
                    let at = chrono::DateTime::from_timestamp_micros(START + h * 60 * MINUTE).unwrap();
                    json!({"timestamp": at.to_rfc3339(), "value": rng.gen_range(45.0..160.0), "unit": "bpm"})
                })
                .collect();
            let body = json!({"provider": "oura", "timeseries": {"heartrate": hours}});
            push_as(&pushed, &user, &body).await;
            users.push(user);
        }
        let query = register(&pushed.meta, &engine, team, "daily").await;
        run_until_idle(&pushed, &engine).await;
        (pushed, users, query)
    });
    let mut round = 0i64;
    let mut group = c.benchmark_group("continuous");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(120));
    group.bench_function("1,000 users, one push each", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                round += 1;
                rt.block_on(async {
                    let at =
                        chrono::DateTime::from_timestamp_micros(START + (7 + round) * DAY).unwrap();
                    let body = json!({"provider": "oura", "timeseries": {"heartrate": [
                        {"timestamp": at.to_rfc3339(), "value": 60.0, "unit": "bpm"}]}});
                    for user in &users {
                        push_as(&pushed, user, &body).await;
                    }
                    let before = changed_events(&pushed.meta).await;
                    let started = Instant::now();
                    run_until_idle(&pushed, &engine).await;
                    total += started.elapsed();
                    assert_eq!(changed_events(&pushed.meta).await - before, USERS as i64);
                });
            }
            total
        })
    });
    let _ = query;
    group.finish();
}

/// A JSON push for `user`, announced (which records the change for the query).
async fn push_as(pushed: &Pushed, user: &User, body: &Value) {
    let bytes = bytes::Bytes::from(body.to_string());
    wearhouse::data::push_json(
        &pushed.meta,
        &pushed.health,
        user,
        bytes,
        chrono::Utc::now(),
    )
    .await
    .expect("pushed");
    announce(&pushed.meta, pushed, user).await;
}

async fn changed_events(meta: &MetadataStore) -> i64 {
    let mut conn = meta.reader().await.unwrap();
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM events WHERE event_type = 'continuous_query.result_table.changed'",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap()
}

/// Runs the durable job runner (the continuous-query handlers) until no evaluation or backfill
/// is pending.
async fn run_until_idle(pushed: &Pushed, engine: &Engine) {
    let registry = wearhouse::jobs::Registry::new()
        .register(wearhouse::continuous::Evaluator::new(
            pushed.health.clone(),
            engine.clone(),
        ))
        .register(wearhouse::continuous::Backfill);
    let config = wearhouse::jobs::RunnerConfig {
        owner: "bench".to_owned(),
        concurrency: 8,
        poll_interval: Duration::from_millis(10),
        ..wearhouse::jobs::RunnerConfig::default()
    };
    let runner = wearhouse::jobs::Runner::new(pushed.meta.clone(), registry, config).spawn();
    loop {
        let mut conn = pushed.meta.reader().await.unwrap();
        let busy: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM jobs WHERE kind LIKE 'continuous.%' AND state IN ('pending', 'running')",
        )
        .fetch_one(&mut *conn)
        .await
        .unwrap();
        drop(conn);
        if busy == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    runner.shutdown().await;
}

criterion_group!(benches, one_user, many_users);
