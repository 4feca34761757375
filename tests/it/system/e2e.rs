//! End-to-end: the real `wearhouse` binary on port 0 with a temporary data dir, driven over a
//! socket with reqwest, stopped (SIGTERM) and started again on the same data dir.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::provision;
use crate::support::server::Server;

/// The demo team and three days of demo history for its users.
const DEMO: &[&str] = &["--demo", "--demo-days", "3"];

#[tokio::test]
async fn users_survive_a_restart_of_the_real_server() {
    let dir = tempfile::tempdir().unwrap();
    let http = crate::support::server::http_client(30);

    let server = Server::start(dir.path(), DEMO);
    let health = http.get(server.url("/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert!(health.headers().contains_key("x-request-id"));

    let created: Value = http
        .post(server.url("/v2/user/"))
        .header("x-service-api-key", server.key())
        .json(&json!({"client_user_id": "e2e-user", "fallback_time_zone": "Europe/Berlin"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["user_id"].as_str().expect("user_id").to_owned();
    let unauthorised = http.get(server.url("/v2/user")).send().await.unwrap();
    assert_eq!(unauthorised.status(), 401);
    let key = server.key().to_owned();
    server.stop();

    // The key file is private to the owner.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("demo-api-key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "demo key readable by others: {mode:o}");
    }

    let server = Server::start(dir.path(), DEMO);
    assert_eq!(server.key(), key, "a restart prints the same demo key");
    let read = http
        .get(server.url(&format!("/v2/user/{id}")))
        .header("x-service-api-key", server.key())
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    let read: Value = read.json().await.unwrap();
    assert_eq!(read, created);
    let listed: Value = http
        .get(server.url("/v2/user"))
        .header("x-service-api-key", server.key())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["total"], 4, "three demo users and ours: {listed}");
    assert!(
        listed["users"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["user_id"] == id.as_str())
    );
    server.stop();
}

/// One push of `n` heart-rate samples starting at `first` seconds after 2025-01-01T00:00:00Z.
fn heart_rate_push(first: i64, n: i64) -> Value {
    let base = chrono::DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z").unwrap();
    let samples: Vec<Value> = (first..first + n)
        .map(|s| {
            let t = base + chrono::Duration::seconds(s);
            json!({"timestamp": t.to_rfc3339(), "unit": "bpm", "value": 60 + s % 40})
        })
        .collect();
    json!({"provider": "apple_health_kit", "source": {"type": "watch"}, "timeseries": {"heartrate": samples}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_pushes_survive_sigkill() {
    const WRITERS: i64 = 4;
    const PER_PUSH: i64 = 200;
    let dir = tempfile::tempdir().unwrap();
    let http = crate::support::server::http_client(30);
    let server = Server::start(dir.path(), DEMO);
    let user = server
        .create_user(&http, None, json!({"client_user_id": "durable"}))
        .await;
    let id = user["user_id"].as_str().unwrap().to_owned();
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<i64>::new()));

    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (http, acked) = (http.clone(), acked.clone());
        let (url, key) = (
            server.url(&format!("/v2/user/{id}/data")),
            server.key().to_owned(),
        );
        writers.push(tokio::spawn(async move {
            for n in 0..10_000 {
                let first = (w * 10_000 + n) * PER_PUSH;
                let sent = http
                    .post(&url)
                    .header("x-service-api-key", &key)
                    .json(&heart_rate_push(first, PER_PUSH))
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status() == 200 => acked.lock().unwrap().push(first),
                    Ok(r) => panic!("push answered {}", r.status()),
                    Err(_) => return, // the server is gone
                }
            }
        }));
    }
    // Kill while pushes are in flight, once a fair number has been acknowledged.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while acked.lock().unwrap().len() < 40 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
    for w in writers {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 40,
        "only {} pushes acknowledged",
        acked.len()
    );

    let server = Server::start(dir.path(), DEMO);
    let got = http
        .get(server.url(&format!(
            "/v2/timeseries/{id}/heartrate?start_date=2024-12-31&end_date=2025-12-31"
        )))
        .header("x-service-api-key", server.key())
        .send()
        .await
        .unwrap();
    assert_eq!(
        got.status(),
        200,
        "reading after the crash failed: a corrupt segment?"
    );
    let samples: Vec<Value> = got.json().await.unwrap();
    let base = chrono::DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z").unwrap();
    let present: std::collections::HashSet<i64> = samples
        .iter()
        .map(|s| {
            (chrono::DateTime::parse_from_rfc3339(s["timestamp"].as_str().unwrap()).unwrap() - base)
                .num_seconds()
        })
        .collect();
    assert_eq!(present.len(), samples.len(), "a sample was returned twice");
    for first in &acked {
        for s in *first..first + PER_PUSH {
            assert!(present.contains(&s), "acknowledged sample at +{s}s lost");
        }
    }
    // Every stored sample belongs to a whole push: segments are never torn.
    for s in &present {
        let first = s - s % PER_PUSH;
        assert!(
            (first..first + PER_PUSH).all(|t| present.contains(&t)),
            "push at +{first}s stored partially"
        );
    }
    server.stop();
}

#[tokio::test]
async fn parquet_answers_read_by_pyarrow_and_pandas_match_the_json_answers() {
    let dir = tempfile::tempdir().unwrap();
    let http = crate::support::server::http_client(60);
    let server = Server::start(dir.path(), DEMO);
    let user = server.demo_user("demo-ring-and-watch").to_owned();
    let anchor = chrono::Utc::now().date_naive().to_string();
    let request = json!({
        "timeframe": {"anchor": anchor, "past": {"value": 3, "unit": "day"}},
        "queries": [
            {"select": [{"group_key": "*"}, {"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}},
                        {"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}},
                        {"func": "newest", "arg": {"timeseries": "heartrate", "field": "value"}}],
             "group_by": [{"date_trunc": {"value": 6, "unit": "hour"}, "arg": {"index": "timeseries"}}]},
            {"select": [{"group_key": "*"}, {"func": "sum", "arg": {"activity": "steps"}},
                        {"func": "max", "arg": {"activity": "date"}}],
             "group_by": [{"date_part": "weekday", "arg": {"index": "activity"}}]},
            {"select": [{"index": "sleep"}, {"sleep": "session_start"}, {"sleep": "efficiency"},
                        {"value_macro": "chronotype"}, {"value_macro": "sleep_score"}, {"source": "source_provider"}]},
            {"select": [{"index": "profile"}, {"profile": "birth_date"}, {"profile": "height_centimeter"}]}
        ]
    });
    let url = server.url(&format!("/aggregate/v1/user/{user}/query"));
    let answer = |accept: &'static str| {
        let (http, url, key, request) = (
            http.clone(),
            url.clone(),
            server.key().to_owned(),
            request.clone(),
        );
        async move {
            let r = http
                .post(url)
                .header("x-service-api-key", key)
                .header("accept", accept)
                .json(&request)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "{accept}");
            r.bytes().await.unwrap()
        }
    };
    let json_bytes = answer("application/json").await;
    let tar_bytes = answer("application/vnd.service.tar+gzip+parquet").await;
    let parsed: Value = serde_json::from_slice(&json_bytes).unwrap();
    for (i, result) in parsed["results"].as_array().unwrap().iter().enumerate() {
        let rows = result["table"]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .as_array()
            .unwrap()
            .len();
        assert!(
            rows > 0,
            "query {i} answered no rows: the comparison would prove nothing"
        );
    }
    std::fs::write(dir.path().join("answer.json"), &json_bytes).unwrap();
    std::fs::write(dir.path().join("answer.tar.gz"), &tar_bytes).unwrap();
    let (tarball, json) = (
        dir.path().join("answer.tar.gz"),
        dir.path().join("answer.json"),
    );
    let out = provision::run_python(
        "check_parquet_tarball.py",
        &[tarball.as_os_str(), json.as_os_str()],
    );
    assert_eq!(out.lines().count(), 4);
    server.stop();
}

/// Log lines written deep inside a request (the aggregate path's input loading) carry the
/// request's span with its id, so an operator can follow one request through the store and the
/// engine.
#[tokio::test]
async fn log_lines_inside_a_request_name_its_request_id() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_logging(dir.path(), DEMO, "info,wearhouse::query=debug");
    let (_, user) = server.demo_users[0].clone();
    let http = reqwest::Client::new();
    let answer = http
        .post(server.url(&format!("/aggregate/v1/user/{user}/query")))
        .header("x-service-api-key", server.key())
        .header("x-request-id", "trace-me-7")
        .json(&json!({
            "timeframe": {"anchor": "2026-01-01", "past": {"value": 1, "unit": "week"}},
            "queries": [{"select": [{"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}}]}]
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["x-request-id"], "trace-me-7");
    // The server wrote the line before it answered; the thread reading its stderr may lag.
    let mut log = String::new();
    for _ in 0..100 {
        log = server.log();
        if log.contains("aggregate input loaded") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let inner: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("aggregate input loaded"))
        .collect();
    assert!(!inner.is_empty(), "no input-loading line logged:\n{log}");
    for line in inner {
        assert!(line.contains("request_id=trace-me-7"), "{line}");
    }
    server.stop();
}
