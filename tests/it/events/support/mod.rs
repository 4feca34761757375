//! Harness of the events tests: the real `wearhouse` binary on a temporary data dir, a webhook
//! receiver (an HTTP server in the test that can be switched down), and the independent
//! signature check (the Python `standardwebhooks` package run as a subprocess).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use crate::support::provision;

/// How long a test waits for deliveries and announcements.
pub const WAIT: Duration = Duration::from_secs(30);

/// A running server with a team's key and an HTTP client.
pub struct Server {
    process: crate::support::server::Server,
    pub base: String,
    pub key: String,
    pub data_dir: PathBuf,
    pub client: reqwest::Client,
}

/// Creates a team with the CLI and answers its key.
pub fn create_team(data_dir: &Path, name: &str) -> String {
    crate::support::server::create_team(data_dir, name, &[])
}

impl Server {
    /// Starts the binary on `data_dir` (a team is created on first start) with extra flags.
    pub fn start(data_dir: &Path, flags: &[&str], key: Option<String>) -> Server {
        let store: Vec<&str> = flags
            .windows(2)
            .filter(|w| w[0] == "--database-url")
            .flat_map(|w| w.iter().copied())
            .collect();
        let key =
            key.unwrap_or_else(|| crate::support::server::create_team(data_dir, "acme", &store));
        let process = crate::support::server::Server::start(data_dir, flags);
        Server {
            base: process.base.clone(),
            process,
            key,
            data_dir: data_dir.to_owned(),
            client: reqwest::Client::new(),
        }
    }

    /// SIGKILL: no shutdown path runs.
    pub fn kill(self) {
        self.process.kill();
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        key: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("x-service-api-key", key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> Value {
        let (status, body) = self.call("GET", path, &self.key.clone(), None).await;
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    pub async fn post(&self, path: &str, body: Value) -> Value {
        let (status, answer) = self.call("POST", path, &self.key.clone(), Some(body)).await;
        assert_eq!(status, 200, "POST {path}: {answer}");
        answer
    }

    /// Creates a user and answers its id.
    pub async fn user(&self, client_user_id: &str) -> String {
        let a = self
            .post("/v2/user/", json!({ "client_user_id": client_user_id }))
            .await;
        a["user_id"].as_str().unwrap().to_owned()
    }

    /// Registers an endpoint for `url` and answers (id, secret).
    pub async fn endpoint(&self, url: &str, types: Option<Value>) -> (String, String) {
        let mut body = json!({ "url": url });
        if let Some(t) = types {
            body["event_types"] = t;
        }
        let a = self.post("/v2/team/webhooks", body).await;
        (
            a["id"].as_str().unwrap().to_owned(),
            a["secret"].as_str().unwrap().to_owned(),
        )
    }

    /// Every stored event of the team, oldest first, following cursors.
    /// `GET path` once `done` holds for its answer (the runner records an attempt just after
    /// the receiver answers it), or panics after `WAIT`.
    pub async fn get_when(&self, path: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let answer = self.get(path).await;
            if done(&answer) {
                return answer;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "GET {path} after {WAIT:?}: {answer}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// The stored events once there are at least `n` (announcing a push happens just after
    /// it, on the job runner), or panics after `limit`.
    pub async fn events_until(&self, query: &str, n: usize, limit: Duration) -> Vec<Value> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let events = self.events(query).await;
            if events.len() >= n {
                return events;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{} events of {query:?} after {limit:?}, expected {n}",
                events.len()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    pub async fn events(&self, query: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut path = format!("/v2/team/events?limit=100{query}");
            if let Some(c) = &cursor {
                path.push_str(&format!("&next_cursor={c}"));
            }
            let page = self.get(&path).await;
            out.extend(page["events"].as_array().unwrap().iter().cloned());
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => return out,
            }
        }
    }
}

/// One delivery as the receiver got it.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// When the receiver answered it.
    pub at: Instant,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn id(&self) -> String {
        self.header("webhook-id").unwrap_or_default().to_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }

    pub fn event_type(&self) -> String {
        self.json()["event_type"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// A webhook receiver: records every request; answers 503 while down (counted as refused),
/// after `delay` when it is slow.
#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    pub got: Arc<Mutex<Vec<Received>>>,
    pub refused: Arc<Mutex<Vec<Received>>>,
    pub up: Arc<AtomicBool>,
    /// Requests received so far, answered or not.
    pub started: Arc<std::sync::atomic::AtomicUsize>,
}

impl Receiver {
    pub async fn start(up: bool) -> Receiver {
        Receiver::start_slow(up, Duration::ZERO).await
    }

    pub async fn start_slow(up: bool, delay: Duration) -> Receiver {
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let refused: Arc<Mutex<Vec<Received>>> = Arc::default();
        let flag = Arc::new(AtomicBool::new(up));
        let started: Arc<std::sync::atomic::AtomicUsize> = Arc::default();
        let (g, r, f, s) = (got.clone(), refused.clone(), flag.clone(), started.clone());
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: Bytes| {
                let (g, r, f, s) = (g.clone(), r.clone(), f.clone(), s.clone());
                async move {
                    s.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(delay).await;
                    let received = Received {
                        at: Instant::now(),
                        headers: headers
                            .iter()
                            .map(|(k, v)| {
                                (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned())
                            })
                            .collect(),
                        body: String::from_utf8_lossy(&body).into_owned(),
                    };
                    if f.load(Ordering::SeqCst) {
                        g.lock().unwrap().push(received);
                        StatusCode::NO_CONTENT
                    } else {
                        r.lock().unwrap().push(received);
                        StatusCode::SERVICE_UNAVAILABLE
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver {
            url,
            got,
            refused,
            up: flag,
            started,
        }
    }

    pub fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Waits until `done` holds for what was received, or panics after `limit`.
    pub async fn wait_for(
        &self,
        limit: Duration,
        what: &str,
        done: impl Fn(&[Received]) -> bool,
    ) -> Vec<Received> {
        let started = Instant::now();
        loop {
            let got = self.got();
            if done(&got) {
                return got;
            }
            assert!(
                started.elapsed() < limit,
                "timed out waiting for {what}; got {} deliveries: {:?}",
                got.len(),
                got.iter().map(Received::event_type).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Verifies each delivery's signature against `secret` with the Python `standardwebhooks`
/// package; answers its verdict per delivery ("ok" or the error).
pub fn verify(secret: &str, deliveries: &[Received]) -> Vec<String> {
    let items: Vec<Value> = deliveries
        .iter()
        .map(|d| {
            let headers: serde_json::Map<String, Value> = d
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                .collect();
            json!({ "secret": secret, "body": d.body, "headers": headers })
        })
        .collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/events/support/verify.py");
    let mut child = provision::python_script(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python verifier");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::Array(items).to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "verifier failed: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Asserts every delivery verifies with `secret`.
pub fn assert_verified(secret: &str, deliveries: &[Received]) {
    assert!(!deliveries.is_empty());
    let verdicts = verify(secret, deliveries);
    assert_eq!(verdicts.len(), deliveries.len());
    for (v, d) in verdicts.iter().zip(deliveries) {
        assert_eq!(
            v,
            "ok",
            "delivery {} of {} failed verification",
            d.id(),
            d.event_type()
        );
    }
}

/// A push body: one sleep record and heart-rate samples, `bpm` each, from `start` (seconds
/// after 2025-01-01T00:00:00Z).
pub fn push_body(start: i64, samples: i64, bpm: f64) -> Value {
    let base = chrono::DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z").unwrap();
    let at = |s: i64| {
        (base + chrono::Duration::seconds(s)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    };
    let hr: Vec<Value> = (0..samples)
        .map(|i| json!({"timestamp": at(start + i * 60), "value": bpm, "unit": "bpm"}))
        .collect();
    json!({ "provider": "oura", "timeseries": { "heartrate": hr } })
}

/// A SQLite metadata store in `dir`, for tests below the HTTP layer.
pub async fn sqlite_meta(dir: &Path) -> wearhouse::store::metadata::MetadataStore {
    let url = format!("sqlite://{}?mode=rwc", dir.join("meta.db").display());
    wearhouse::store::metadata::MetadataStore::connect(&url)
        .await
        .unwrap()
}

/// The metadata database of a server started on `dir` (its default SQLite file).
pub async fn server_meta(dir: &Path) -> wearhouse::store::metadata::MetadataStore {
    let url = format!("sqlite://{}?mode=rwc", dir.join("wearhouse.db").display());
    wearhouse::store::metadata::MetadataStore::connect(&url)
        .await
        .unwrap()
}

/// Registers an endpoint of `team` at `url` (private addresses allowed).
pub async fn endpoint_at(
    meta: &wearhouse::store::metadata::MetadataStore,
    team: uuid::Uuid,
    url: &str,
) -> wearhouse::store::metadata::webhooks::Endpoint {
    let rules = wearhouse::events::UrlRules {
        allow_private: true,
    };
    wearhouse::events::endpoints::create(meta, &rules, team, &json!({ "url": url }))
        .await
        .unwrap()
}
