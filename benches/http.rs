//! The whole aggregate request over HTTP: a real server on a loopback port (the service's own
//! router and `serve`, SQLite metadata, Parquet health store), a real client (reqwest, one
//! kept-alive connection), a demo user with 90 days of an Oura ring and an Apple watch.
//!
//! Scenario `whole HTTP request, daily buckets, 90 days, ring + watch, priority on`: the
//! request of the engine bench (mean/min/max/newest/count of heart rate per day) through
//! authentication, tenancy, the store's cache, the engine and the JSON encoder. The answer is
//! checked (a row per day of the window with data, every count positive) before timing.
//!
//! Run with `cargo bench --bench http`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;

use chrono::Utc;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use wearhouse::http::{AppState, HttpConfig, serve};
use wearhouse::store::health::HealthStore;
use wearhouse::store::metadata::MetadataStore;

struct Server {
    base: String,
    key: String,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

async fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("meta.db").display());
    let meta = MetadataStore::connect(&url).await.unwrap();
    let (_, key) = meta.create_team("bench").await.unwrap();
    let health_dir = dir.path().join("health").display().to_string();
    let health = HealthStore::open(&health_dir, Default::default()).unwrap();
    let state = AppState {
        meta,
        health,
        config: Arc::new(HttpConfig::default()),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(serve(listener, state, std::future::pending()));
    Server {
        base,
        key: key.secret,
        client: reqwest::Client::new(),
        _dir: dir,
    }
}

impl Server {
    async fn post(&self, path: &str, body: &Value) -> (u16, Vec<u8>) {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .header("x-service-api-key", &self.key)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.bytes().await.unwrap().to_vec())
    }
}

fn http(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (server, user) = rt.block_on(async {
        let server = start().await;
        let (status, body) = server
            .post("/v2/user", &json!({"client_user_id": "bench-user"}))
            .await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let user: Value = serde_json::from_slice(&body).unwrap();
        let user = user["user_id"].as_str().unwrap().to_owned();
        for provider in ["oura", "apple_health_kit"] {
            let (status, body) = server
                .post(
                    "/v2/link/connect/demo",
                    &json!({"user_id": user, "provider": provider, "days": 90}),
                )
                .await;
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        }
        (server, user)
    });
    let hr = json!({"timeseries": "heartrate", "field": "value"});
    let body = json!({
        "timeframe": {"anchor": Utc::now().date_naive().to_string(), "past": {"value": 90, "unit": "day"}},
        "queries": [{
            "select": [{"group_key": 0},
                       {"func": "mean", "arg": hr}, {"func": "min", "arg": hr}, {"func": "max", "arg": hr},
                       {"func": "newest", "arg": hr}, {"func": "count", "arg": hr}],
            "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]
        }]
    });
    let path = format!("/aggregate/v1/user/{user}/query");
    let (status, answer) = rt.block_on(server.post(&path, &body));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    let counts = answer["results"][0]["table"]["count.heartrate.value"]
        .as_array()
        .unwrap_or_else(|| panic!("no count column: {answer}"));
    // The demo history starts 90 days before now, so the window's first local day may or may
    // not hold a sample yet.
    assert!(
        (90..=91).contains(&counts.len()),
        "one row per day with data: {}",
        counts.len()
    );
    assert!(counts.iter().all(|c| c.as_i64().unwrap() > 0));
    c.bench_function(
        "whole HTTP request, daily buckets, 90 days, ring + watch, priority on",
        |b| b.iter(|| black_box(rt.block_on(server.post(&path, &body)))),
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50);
    targets = http
}
criterion_main!(benches);
