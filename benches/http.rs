//! The whole aggregate request over HTTP: a real server on a loopback port (the service's own
//! router and `serve`, SQLite metadata, Parquet health store), a real client (reqwest, one
//! kept-alive connection), through authentication, tenancy, the store's cache, the engine and
//! the JSON encoder.
//!
//! Scenarios, each the request of the engine bench (mean/min/max/newest/count of heart rate
//! per day over 90 days) and each answer checked before timing:
//! - `whole HTTP request, daily buckets, 90 days of 1/min heart rate`: the issue's target
//!   scenario, 129,600 samples of one ring pushed through the push API a day at a time;
//! - `whole HTTP request, daily buckets, 90 days, ring + watch, priority on`: a demo user with
//!   an Oura ring and an Apple watch (`POST /v2/link/connect/demo`), the two overlapping.
//! - `whole HTTP request, 32 queries of minute buckets, ring + watch, Parquet answer`: the same
//!   demo user, one request of 32 queries, each `date_trunc` of 1 to 32 minutes over the 90
//!   days with seven aggregates (every function the time-bucket operator folds), answered as
//!   the gzipped tar of Parquet files; checked by decoding every member's row count.
//!
//! - `push over HTTP`: ingest end to end (client encoding excluded, every answer checked): a
//!   JSON push of 50,000 heart-rate samples, and the columnar push of 500,000 as an Arrow IPC
//!   stream; each round pushes a new time range of the same user, as a sync would.
//!
//! - `whole HTTP request/export of 90 days of 1 Hz heart rate without grouping`: 7,776,000
//!   samples pushed as Arrow IPC streams, then every time and value as the Parquet answer.
//!
//! - `team query`: issue 41's target. 1,000 users of one team with 30 days of 1/min heart rate
//!   each (43.2 M samples, pushed through the push API's own path in-process: over HTTP the
//!   set-up alone would take minutes), then one question, "daily mean heart rate per user",
//!   asked as one team query (`POST /aggregate/v1/team/query` grouped by user and day) and as
//!   1,000 per-user requests, over one kept-alive connection and over 4 at once. Checked
//!   before timing: 30,000 rows, and the team answer's rows of a user equal that user's
//!   per-user answer. Target: the team query at least 5× faster than the per-user requests.
//!   Runs first: the other scenarios' set-up waits for demo pulls on the job runner.
//! - `flight sql`: the same question as one Flight SQL statement (`FlightSql::collect`, the
//!   service's own planning and execution without the gRPC hop) on this node, and planned
//!   across two in-process `wearhouse worker`s reading the same store (issue 41: the speed-up
//!   on two workers, and what bounds it on a 2-core machine). Checked before timing: both
//!   answer 30,000 rows with equal means.
//!
//! Run with `cargo bench` (module `http`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use crate::push_support;

use std::hint::black_box;

use chrono::Utc;
use criterion::{Criterion, criterion_group};
use serde_json::{Value, json};
use wearhouse::http::{AppState, HttpConfig, serve};
use wearhouse::store::health::HealthStore;
use wearhouse::store::metadata::MetadataStore;

pub(crate) struct Server {
    base: String,
    key: String,
    client: reqwest::Client,
    /// The service's state, to wait for its jobs.
    pub(crate) state: AppState,
    /// The durable job runner (demo pulls run as jobs), as `serve` runs it.
    _jobs: wearhouse::jobs::RunnerHandle,
    dir: tempfile::TempDir,
}

pub(crate) async fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("meta.db").display());
    let meta = MetadataStore::connect(&url).await.unwrap();
    let (_, key) = meta.create_team("bench").await.unwrap();
    let health_dir = dir.path().join("health").display().to_string();
    let health = HealthStore::open(&health_dir, Default::default()).unwrap();
    serve_stores(meta, health, key.secret, dir).await
}

/// A server over stores already opened (and filled) in `dir`, for the team `key` names.
async fn serve_stores(
    meta: MetadataStore,
    health: HealthStore,
    key: String,
    dir: tempfile::TempDir,
) -> Server {
    let connectors = wearhouse::sync::Connectors::from_env().unwrap();
    let state = AppState::new(meta, health, HttpConfig::default())
        .unwrap()
        .with_connectors(connectors);
    let lease = std::time::Duration::from_secs(60);
    let jobs = wearhouse::app::spawn_jobs(&state, lease, std::time::Duration::ZERO)
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(serve(
        listener,
        state.clone(),
        std::future::pending(),
        std::time::Duration::ZERO,
    ));
    Server {
        base,
        key,
        client: reqwest::Client::new(),
        state,
        _jobs: jobs,
        dir,
    }
}

impl Server {
    /// The folder holding the server's stores.
    pub(crate) fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    pub(crate) async fn post(&self, path: &str, body: &Value) -> (u16, Vec<u8>) {
        let body = serde_json::to_vec(body).unwrap();
        self.post_bytes(path, "application/json", body).await
    }

    pub(crate) async fn post_bytes(
        &self,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (u16, Vec<u8>) {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .header("x-service-api-key", &self.key)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.bytes().await.unwrap().to_vec())
    }
}

/// 2025-01-01T00:00:00Z, the first sample of the pushed scenario.
const PUSH_START: i64 = 1_735_689_600;

pub(crate) async fn create_user(server: &Server, client_user_id: &str) -> String {
    let (status, body) = server
        .post("/v2/user", &json!({"client_user_id": client_user_id}))
        .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let user: Value = serde_json::from_slice(&body).unwrap();
    user["user_id"].as_str().unwrap().to_owned()
}

/// Pushes 90 days of heart rate at one sample a minute from one ring, a day per push.
async fn push_per_minute(server: &Server, user: &str) {
    let path = format!("/v2/user/{user}/data");
    for day in 0..90 {
        let samples: Vec<Value> = (0..1440)
            .map(|m| {
                let t = PUSH_START + day * 86_400 + m * 60;
                let ts = chrono::DateTime::from_timestamp(t, 0).unwrap().to_rfc3339();
                json!({"timestamp": ts, "timezone_offset": 0, "unit": "bpm",
                       "value": 50.0 + ((day * 1440 + m) % 97) as f64})
            })
            .collect();
        let body = json!({"provider": "oura", "source": {"type": "ring"},
                          "timeseries": {"heartrate": samples}});
        let (status, answer) = server.post(&path, &body).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    }
}

/// The bench's query: daily mean/min/max/newest/count of heart rate over `days` days.
fn daily_heart_rate(anchor: &str, days: i64) -> Value {
    let hr = json!({"timeseries": "heartrate", "field": "value"});
    json!({
        "timeframe": {"anchor": anchor, "past": {"value": days, "unit": "day"}},
        "queries": [{
            "select": [{"group_key": 0},
                       {"func": "mean", "arg": hr}, {"func": "min", "arg": hr}, {"func": "max", "arg": hr},
                       {"func": "newest", "arg": hr}, {"func": "count", "arg": hr}],
            "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]
        }]
    })
}

/// Posts the query once and returns the answer's per-row counts.
async fn counts(server: &Server, path: &str, body: &Value) -> Vec<i64> {
    let (status, answer) = server.post(path, body).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    answer["results"][0]["table"]["count.heartrate.value"]
        .as_array()
        .unwrap_or_else(|| panic!("no count column: {answer}"))
        .iter()
        .map(|c| c.as_i64().unwrap())
        .collect()
}

fn http(c: &mut Criterion) {
    let rt = runtime();
    let server = rt.block_on(start());

    let pushed = rt.block_on(async {
        let user = create_user(&server, "bench-per-minute").await;
        push_per_minute(&server, &user).await;
        user
    });
    let path = format!("/aggregate/v1/user/{pushed}/query");
    let body = daily_heart_rate("2025-03-31", 89);
    let per_day = rt.block_on(counts(&server, &path, &body));
    assert_eq!(per_day, vec![1440; 90], "a full day of samples per bucket");
    c.bench_function(
        "whole HTTP request, daily buckets, 90 days of 1/min heart rate",
        |b| b.iter(|| black_box(rt.block_on(server.post(&path, &body)))),
    );

    let demo = rt.block_on(async {
        let user = create_user(&server, "bench-ring-and-watch").await;
        for provider in ["oura", "apple_health_kit"] {
            let (status, body) = server
                .post(
                    "/v2/link/connect/demo",
                    &json!({"user_id": user, "provider": provider, "days": 90}),
                )
                .await;
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        }
        // The demo history is pulled by the job runner: wait for it, as `serve --demo` does.
        let id = user.parse().unwrap();
        let waiting = wearhouse::app::wait_for_history(
            &server.state,
            &[id],
            std::time::Duration::from_secs(600),
        )
        .await
        .unwrap();
        assert!(waiting.is_empty(), "demo history not pulled: {waiting:?}");
        user
    });
    let path = format!("/aggregate/v1/user/{demo}/query");
    let body = daily_heart_rate(&Utc::now().date_naive().to_string(), 90);
    let per_day = rt.block_on(counts(&server, &path, &body));
    // The demo history starts 90 days before now, so the window's first local day may or may
    // not hold a sample yet.
    assert!(
        (90..=91).contains(&per_day.len()),
        "one row per day with data: {}",
        per_day.len()
    );
    assert!(per_day.iter().all(|&c| c > 0));
    c.bench_function(
        "whole HTTP request, daily buckets, 90 days, ring + watch, priority on",
        |b| b.iter(|| black_box(rt.block_on(server.post(&path, &body)))),
    );

    let body = minute_queries(&Utc::now().date_naive().to_string(), 90);
    let rows = rt.block_on(parquet_rows(&server, &path, &body));
    assert_eq!(rows.len(), 32, "one Parquet member per query");
    // The demo samples heart rate every few minutes: one-minute buckets hold one sample each,
    // 32-minute ones several, and every query has rows.
    assert!(
        rows[0] > 20_000 && rows[0] > 4 * rows[31] && rows[31] > 0,
        "{rows:?}"
    );
    let mut group = c.benchmark_group("whole HTTP request");
    group.sample_size(10);
    group.bench_function(
        "32 queries of minute buckets, ring + watch, Parquet answer",
        |b| b.iter(|| black_box(rt.block_on(parquet_rows(&server, &path, &body)))),
    );
    group.finish();
}

/// 32 queries over `days` days of heart rate: query `k` groups by `date_trunc` of `k + 1`
/// minutes and folds seven aggregates.
fn minute_queries(anchor: &str, days: i64) -> Value {
    let hr = json!({"timeseries": "heartrate", "field": "value"});
    let queries: Vec<Value> = (1..=32)
        .map(|minutes| {
            let mut select = vec![json!({"group_key": 0})];
            for f in ["mean", "min", "max", "sum", "count", "oldest", "newest"] {
                select.push(json!({"func": f, "arg": hr}));
            }
            json!({
                "select": select,
                "group_by": [{"date_trunc": {"value": minutes, "unit": "minute"},
                              "arg": {"index": "timeseries"}}]
            })
        })
        .collect();
    json!({
        "timeframe": {"anchor": anchor, "past": {"value": days, "unit": "day"}},
        "queries": queries
    })
}

/// Posts `body` for the Parquet answer (the gzipped tar) and returns it, checked 200.
async fn post_parquet(server: &Server, path: &str, body: &Value) -> bytes::Bytes {
    let r = server
        .client
        .post(format!("{}{path}", server.base))
        .header("x-service-api-key", &server.key)
        .header("accept", "application/vnd.service.tar+gzip+parquet")
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    r.bytes().await.unwrap()
}

/// Posts `body` for the Parquet answer and returns each member's row count, in query order.
async fn parquet_rows(server: &Server, path: &str, body: &Value) -> Vec<usize> {
    use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
    use std::io::Read;
    let bytes = post_parquet(server, path, body).await;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
    let mut rows = Vec::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        assert_eq!(
            entry.path().unwrap().to_string_lossy(),
            format!("{}.parquet", rows.len())
        );
        let mut member = Vec::new();
        entry.read_to_end(&mut member).unwrap();
        let reader = SerializedFileReader::new(bytes::Bytes::from(member)).unwrap();
        rows.push(reader.metadata().file_metadata().num_rows() as usize);
    }
    rows
}

/// A JSON push body of `n` one-second samples from `start` (unix seconds).
fn json_push(start: i64, n: i64) -> Vec<u8> {
    let samples: Vec<Value> = (0..n)
        .map(|i| {
            let ts = chrono::DateTime::from_timestamp(start + i, 0)
                .unwrap()
                .to_rfc3339();
            json!({"timestamp": ts, "unit": "bpm", "value": 50.0 + (i % 97) as f64})
        })
        .collect();
    serde_json::to_vec(&json!({"provider": "oura", "timeseries": {"heartrate": samples}})).unwrap()
}

/// The same samples as an Arrow IPC stream of (timestamp, value).
fn arrow_push(start: i64, n: i64) -> Vec<u8> {
    arrow_body(start, (0..n).map(|i| 50.0 + (i % 97) as f64))
}

/// A columnar push body: one sample a second from `start` (unix seconds), with `values`.
fn arrow_body(start: i64, values: impl Iterator<Item = f64>) -> Vec<u8> {
    arrow_samples(start, 1, values)
}

/// A columnar push body: one sample every `step` seconds from `start` (unix seconds), with
/// `values`.
pub(crate) fn arrow_samples(start: i64, step: i64, values: impl Iterator<Item = f64>) -> Vec<u8> {
    use datafusion::arrow::array::{Float64Array, RecordBatch, TimestampMicrosecondArray};
    use std::sync::Arc;
    let values = Float64Array::from_iter_values(values);
    let n = values.len() as i64;
    let ts =
        TimestampMicrosecondArray::from_iter_values((0..n).map(|i| (start + i * step) * 1_000_000))
            .with_timezone("UTC");
    let batch = RecordBatch::try_from_iter([
        ("timestamp", Arc::new(ts) as _),
        ("value", Arc::new(values) as _),
    ])
    .unwrap();
    ipc_stream(&batch)
}

/// `batch` as an Arrow IPC stream: the body of a columnar push.
fn ipc_stream(batch: &datafusion::arrow::array::RecordBatch) -> Vec<u8> {
    let mut out = Vec::new();
    let mut writer =
        datafusion::arrow::ipc::writer::StreamWriter::try_new(&mut out, &batch.schema()).unwrap();
    writer.write(batch).unwrap();
    writer.finish().unwrap();
    drop(writer);
    out
}

/// The benches' runtime: two workers, as the VM has cores.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn push(c: &mut Criterion) {
    let rt = runtime();
    let server = rt.block_on(start());
    let user = rt.block_on(create_user(&server, "bench-push"));
    let path = format!("/v2/user/{user}/data");
    let mut next = PUSH_START;
    let mut group = c.benchmark_group("push over HTTP");
    group.sample_size(20);
    for (name, n, content_type, encode) in [
        (
            "JSON push of 50,000 heart-rate samples",
            50_000,
            "application/json",
            json_push as fn(i64, i64) -> Vec<u8>,
        ),
        (
            "Arrow push of 500,000 heart-rate samples",
            500_000,
            "application/vnd.apache.arrow.stream",
            arrow_push,
        ),
    ] {
        let arrow = content_type != "application/json";
        let path = if arrow {
            format!("{path}?resource=heartrate&provider=oura")
        } else {
            path.clone()
        };
        group.throughput(criterion::Throughput::Elements(n as u64));
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    next += n;
                    encode(next, n)
                },
                |body| {
                    let (status, answer) =
                        rt.block_on(server.post_bytes(&path, content_type, body));
                    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
                    let answer: Value = serde_json::from_slice(&answer).unwrap();
                    assert_eq!(answer["stored"]["timeseries"]["heartrate"], n);
                },
                criterion::BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

/// 90 days of 1 Hz heart rate of one ring, pushed as Arrow IPC streams of 500,000 samples,
/// values a seeded random walk with two decimals (so the Parquet answer compresses as real
/// data does, not as a short cycle).
async fn push_one_hertz(server: &Server, user: &str) {
    use rand::{Rng, SeedableRng};
    let mut g = rand_chacha::ChaCha8Rng::seed_from_u64(19);
    let mut bpm = 70.0f64;
    let path = format!("/v2/user/{user}/data?resource=heartrate&provider=oura&source_type=ring");
    let total = 90 * 86_400;
    for first in (0..total).step_by(500_000) {
        let n = 500_000.min(total - first);
        let values = (0..n).map(|_| {
            bpm = (bpm + g.gen_range(-2.0..=2.0f64)).clamp(45.0, 185.0);
            (bpm * 100.0).round() / 100.0
        });
        let body = arrow_body(PUSH_START + first, values);
        let (status, answer) = server
            .post_bytes(&path, "application/vnd.apache.arrow.stream", body)
            .await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    }
}

/// The export of a whole 1 Hz series without grouping (issue 19's target: at most 1 s): every
/// sample's time and value over 90 days, answered as the gzipped tar of Parquet files. Timed
/// is the request and the answer's bytes; the row count is checked by decoding once before.
fn export(c: &mut Criterion) {
    let rt = runtime();
    let server = rt.block_on(start());
    let user = rt.block_on(async {
        let user = create_user(&server, "bench-one-hertz").await;
        push_one_hertz(&server, &user).await;
        user
    });
    let path = format!("/aggregate/v1/user/{user}/query");
    let body = json!({
        "timeframe": {"anchor": "2025-03-31", "past": {"value": 89, "unit": "day"}},
        "queries": [{"select": [{"index": "timeseries"},
                                {"timeseries": "heartrate", "field": "value"}]}]
    });
    assert_eq!(
        rt.block_on(parquet_rows(&server, &path, &body)),
        vec![7_776_000]
    );
    let export = || async { post_parquet(&server, &path, &body).await.len() };
    let size = rt.block_on(export());
    eprintln!("export: {:.1} MiB", size as f64 / (1 << 20) as f64);
    let mut group = c.benchmark_group("whole HTTP request");
    group.sample_size(10);
    group.bench_function(
        "export of 90 days of 1 Hz heart rate without grouping (7,776,000 rows), Parquet answer",
        |b| b.iter(|| black_box(rt.block_on(export()))),
    );
    group.finish();
}

/// Users of the team query scenario, and their days of 1/min heart rate.
const TEAM_USERS: usize = 1_000;
const TEAM_DAYS: i64 = 30;

/// The team query scenario's question for one user: daily mean heart rate over the 30 days.
fn daily_mean(by_user: bool) -> Value {
    let mut group_by =
        vec![json!({"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}})];
    if by_user {
        group_by.insert(0, json!({"user": "user_id"}));
    }
    json!({
        "timeframe": {"anchor": "2025-01-30", "past": {"value": TEAM_DAYS - 1, "unit": "day"}},
        "queries": [{
            "select": [{"group_key": "*"},
                       {"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}}],
            "group_by": group_by
        }]
    })
}

/// A team of [`TEAM_USERS`] users with [`TEAM_DAYS`] days of 1/min heart rate each, pushed
/// through the push API's path, served over HTTP; answers the server and the user ids.
async fn team_of_users() -> (Server, Vec<String>) {
    use rand::{Rng, SeedableRng};
    let dir = tempfile::tempdir().unwrap();
    let pushed = push_support::Pushed::open(dir.path(), Default::default()).await;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
    let mut users = Vec::with_capacity(TEAM_USERS);
    let minutes = TEAM_DAYS * 1440;
    for i in 0..TEAM_USERS {
        let user = pushed
            .meta
            .create_user(
                pushed.user.team_id,
                wearhouse::store::metadata::NewUser {
                    client_user_id: format!("member-{i}"),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let times = (0..minutes)
            .map(|m| (PUSH_START + m * 60) * 1_000_000)
            .collect();
        let values = (0..minutes)
            .map(|_| f64::from(rng.gen_range(45..170)))
            .collect();
        let batch = push_support::wire_batch(times, values);
        pushed
            .push_heartrate_as(
                &user,
                ("oura", "ring"),
                &[batch],
                push_support::Layout::AsPushed,
            )
            .await;
        users.push(user.id.to_string());
    }
    let push_support::Pushed {
        meta, health, key, ..
    } = pushed;
    (serve_stores(meta, health, key, dir).await, users)
}

/// The per-user answer's daily means.
async fn user_means(server: &Server, user: &str) -> Vec<Value> {
    let (status, answer) = server
        .post(
            &format!("/aggregate/v1/user/{user}/query"),
            &daily_mean(false),
        )
        .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    answer["results"][0]["table"]["mean.heartrate.value"]
        .as_array()
        .unwrap()
        .clone()
}

fn team(c: &mut Criterion) {
    use futures::StreamExt;
    let rt = runtime();
    let started = std::time::Instant::now();
    let (server, users) = rt.block_on(team_of_users());
    eprintln!(
        "team of {TEAM_USERS} users pushed in {:?}",
        started.elapsed()
    );
    let team_query = || async {
        let (status, answer) = server
            .post("/aggregate/v1/team/query", &daily_mean(true))
            .await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
        answer
    };
    // Checked once: every user's every day, and a user's rows are its per-user answer.
    let answer: Value = serde_json::from_slice(&rt.block_on(team_query())).unwrap();
    let table = &answer["results"][0]["table"];
    let ids = table["group_key.0"].as_array().unwrap();
    assert_eq!(ids.len(), TEAM_USERS * TEAM_DAYS as usize);
    for user in [&users[0], &users[TEAM_USERS / 2], &users[TEAM_USERS - 1]] {
        let team_means: Vec<Value> = ids
            .iter()
            .zip(table["mean.heartrate.value"].as_array().unwrap())
            .filter(|(id, _)| id.as_str() == Some(user.as_str()))
            .map(|(_, m)| m.clone())
            .collect();
        assert_eq!(
            team_means,
            rt.block_on(user_means(&server, user)),
            "user {user}"
        );
    }
    let mut group = c.benchmark_group("team query");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(40));
    group.bench_function(
        "one team query, 1,000 users × 30 days of 1/min, daily means per user",
        |b| b.iter(|| black_box(rt.block_on(team_query()).len())),
    );
    for clients in [1, 4] {
        let name = format!("1,000 per-user requests, {clients} at a time, the same question");
        group.bench_function(name, |b| {
            b.iter(|| {
                let days = rt.block_on(async {
                    futures::stream::iter(&users)
                        .map(|u| user_means(&server, u))
                        .buffer_unordered(clients)
                        .map(|means| means.len())
                        .fold(0, |n, days| async move { n + days })
                        .await
                });
                assert_eq!(days, TEAM_USERS * TEAM_DAYS as usize);
                days
            })
        });
    }
    group.finish();
    flight(c, &rt, &server);
}

/// The workers' shared token in the Flight SQL scenario.
const WORKER_TOKEN: &str = "bench-worker-token-0123456789";

/// The team scenario's question as one Flight SQL statement, run on this node and planned
/// across two in-process workers on the same store (the same two cores: the measurement says
/// what distribution costs here, not what a second machine buys). Checked before timing: both
/// answer every user's every day, with the same means.
fn flight(c: &mut Criterion, rt: &tokio::runtime::Runtime, server: &Server) {
    use wearhouse::distributed::{Cluster, worker};
    use wearhouse::flight::FlightSql;
    const SQL: &str = r#"SELECT user_id, date_trunc('day', "timestamp") AS day, avg(value) AS bpm
                         FROM timeseries_heartrate GROUP BY 1, 2"#;
    let state = &server.state;
    let team = rt
        .block_on(state.meta.authenticate(&server.key))
        .unwrap()
        .unwrap()
        .team
        .id;
    let root = state.health.root().unwrap().display().to_string();
    let workers: Vec<String> = (0..2)
        .map(|_| {
            rt.block_on(async {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap().to_string();
                let options = wearhouse::store::health::StoreOptions {
                    cache_bytes: 0,
                    ..Default::default()
                };
                let health = HealthStore::open(&root, options).unwrap();
                tokio::spawn(worker::serve(
                    listener,
                    health,
                    WORKER_TOKEN.to_owned(),
                    4 << 30,
                    std::future::pending(),
                ));
                addr
            })
        })
        .collect();
    let one = FlightSql::new(
        state.meta.clone(),
        state.health.clone(),
        state.engine.clone(),
    );
    let cluster = Cluster::new(&workers, 0, WORKER_TOKEN).unwrap();
    let two = one.clone().with_cluster(cluster);
    let answer = |service: &FlightSql| {
        let batches = rt.block_on(service.collect(team, SQL)).unwrap();
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let total: f64 = batches
            .iter()
            .map(|b| {
                let bpm = b
                    .column(2)
                    .as_any()
                    .downcast_ref::<datafusion::arrow::array::Float64Array>();
                bpm.unwrap().values().iter().sum::<f64>()
            })
            .sum();
        (rows, total)
    };
    let (rows, total) = answer(&one);
    assert_eq!(rows, TEAM_USERS * TEAM_DAYS as usize);
    let (rows_two, total_two) = answer(&two);
    assert_eq!(rows_two, rows);
    assert!(
        (total - total_two).abs() < 1e-9 * total,
        "{total} vs {total_two}"
    );
    let mut group = c.benchmark_group("flight sql");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(30));
    group.bench_function(
        "daily means per user, 1,000 users × 30 days, this node",
        |b| b.iter(|| black_box(answer(&one))),
    );
    group.bench_function(
        "daily means per user, 1,000 users × 30 days, two workers on the same 2 cores",
        |b| b.iter(|| black_box(answer(&two))),
    );
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50);
    targets = team, http, push, export
}
