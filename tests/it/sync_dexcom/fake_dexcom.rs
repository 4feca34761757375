//! A fake Dexcom API v3 for the connector tests: an axum server on a loopback port that stands
//! in for Dexcom's cloud. It shares no code with `wearhouse::sync`, only the wire format: it
//! serves EGV records (those of `testdata/providers/dexcom_v3/egvs.json`, or generated ones) at
//! `GET /v3/users/self/egvs`, checks the bearer token, requires `startDate` and `endDate` as
//! offset-less UTC date-times at most 30 days apart (400 otherwise, as the real API refuses
//! longer windows), answers the records whose `systemTime` lies between them (both bounds
//! inclusive) in one `{"recordType": "egv", "recordVersion": "3.0", "userId", "records"}`, and
//! can be switched to answer 429 (with `Retry-After`), 500 or 401 after a number of good
//! answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, NaiveDateTime, TimeDelta};
use serde_json::{Value, json};

/// The only access token the fake accepts.
pub const TOKEN: &str = "fake-dexcom-access-token";

/// The EGV path of Dexcom API v3.
pub const EGVS_PATH: &str = "/v3/users/self/egvs";

/// The user id the fake answers with.
const USER_ID: &str = "a3c1e0f2-6b5d-4f1e-9d27-5c8e41b7d0a9";

/// A switchable failure.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    RateLimited { retry_after: u64 },
    ServerError,
    Unauthorised,
}

#[derive(Default)]
struct Inner {
    fault: Option<(Fault, usize)>,
    /// Faults left to serve before the fake recovers (`None`: it never does).
    faults_left: Option<usize>,
    /// Every request as `egvs?sorted query`.
    log: Vec<String>,
    good: usize,
}

/// Which bearer tokens the fake accepts.
type TokenCheck = Arc<dyn Fn(&str) -> bool + Send + Sync>;

#[derive(Clone)]
struct Fake {
    accepts: Arc<Mutex<TokenCheck>>,
    records: Arc<Mutex<Vec<Value>>>,
    inner: Arc<Mutex<Inner>>,
}

/// A running fake Dexcom API.
pub struct FakeDexcom {
    /// Its base URL, `http://127.0.0.1:<port>`.
    pub base: String,
    inner: Arc<Mutex<Inner>>,
    accepts: Arc<Mutex<TokenCheck>>,
    records: Arc<Mutex<Vec<Value>>>,
}

impl FakeDexcom {
    /// Starts a fake serving `records` (EGV records in Dexcom's shape).
    pub async fn start(records: Vec<Value>) -> FakeDexcom {
        let accepts: Arc<Mutex<TokenCheck>> = Arc::new(Mutex::new(Arc::new(|t| t == TOKEN)));
        let fake = Fake {
            accepts: accepts.clone(),
            records: Arc::new(Mutex::new(records)),
            inner: Arc::default(),
        };
        let (inner, records) = (fake.inner.clone(), fake.records.clone());
        let app = Router::new().route(EGVS_PATH, get(egvs)).with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeDexcom {
            base,
            inner,
            accepts,
            records,
        }
    }

    /// Adds an EGV record, replacing the one with the same `recordId` (a new reading, or one
    /// Dexcom revised).
    pub fn put(&self, record: Value) {
        let mut records = self.records.lock().unwrap();
        records.retain(|r| r["recordId"] != record["recordId"]);
        records.push(record);
    }

    /// Accepts the bearer tokens `check` approves from now on (instead of [`TOKEN`]): tests
    /// that link through an OAuth server accept the tokens it issued.
    pub fn accept_when(&self, check: impl Fn(&str) -> bool + Send + Sync + 'static) {
        *self.accepts.lock().unwrap() = Arc::new(check);
    }

    /// Serves `fault` from the request after the next `after` good ones.
    pub fn fail(&self, fault: Fault, after: usize) {
        let mut inner = self.inner.lock().unwrap();
        let good = inner.good;
        inner.fault = Some((fault, good + after));
        inner.faults_left = None;
    }

    /// Serves `fault` `times` times from the request after the next `after` good ones, then
    /// answers normally again.
    pub fn fail_times(&self, fault: Fault, after: usize, times: usize) {
        self.fail(fault, after);
        self.inner.lock().unwrap().faults_left = Some(times.max(1));
    }

    /// Every request so far, as `egvs?sorted query`.
    pub fn log(&self) -> Vec<String> {
        self.inner.lock().unwrap().log.clone()
    }
}

/// A fixture file of `testdata/providers/dexcom_v3/`.
pub fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/testdata/providers/dexcom_v3/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The EGV records of the fixture file.
pub fn fixture_records() -> Vec<Value> {
    fixture("egvs.json")["records"].as_array().unwrap().clone()
}

/// The answer to a request the fault or the token check refuses, if any.
fn refusal(fake: &Fake, headers: &HeaderMap) -> Option<Response> {
    let fault = {
        let mut inner = fake.inner.lock().unwrap();
        match inner.fault {
            Some((fault, at)) if inner.good >= at => {
                if let Some(left) = inner.faults_left.as_mut() {
                    *left -= 1;
                    if *left == 0 {
                        inner.fault = None;
                        inner.faults_left = None;
                    }
                }
                Some(fault)
            }
            _ => {
                inner.good += 1;
                None
            }
        }
    };
    let error = |code: &str, msg: &str| Json(json!({"error": code, "error_description": msg}));
    match fault {
        Some(Fault::RateLimited { retry_after }) => {
            return Some(
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(header::RETRY_AFTER, retry_after.to_string())],
                    error("rate_limited", "Too many requests"),
                )
                    .into_response(),
            );
        }
        Some(Fault::ServerError) => {
            return Some((StatusCode::INTERNAL_SERVER_ERROR, "upstream failure").into_response());
        }
        Some(Fault::Unauthorised) => {
            return Some(
                (
                    StatusCode::UNAUTHORIZED,
                    error("invalid_token", "The access token expired"),
                )
                    .into_response(),
            );
        }
        None => {}
    }
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let accepts = fake.accepts.lock().unwrap().clone();
    (!token.is_some_and(|t| accepts(t))).then(|| {
        (
            StatusCode::UNAUTHORIZED,
            error("invalid_token", "Unauthorized"),
        )
            .into_response()
    })
}

/// A record's `systemTime` as a UTC wall-clock time: offset-less ones are UTC already.
fn system_time(record: &Value) -> NaiveDateTime {
    let text = record["systemTime"].as_str().unwrap();
    match DateTime::parse_from_rfc3339(text) {
        Ok(at) => at.naive_utc(),
        Err(_) => text.parse().unwrap(),
    }
}

async fn egvs(
    State(fake): State<Fake>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let mut pairs: Vec<_> = q.iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.sort();
    fake.inner
        .lock()
        .unwrap()
        .log
        .push(format!("egvs?{}", pairs.join("&")));
    if let Some(refused) = refusal(&fake, &headers) {
        return refused;
    }
    let bad_request = |msg: &str| {
        (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_request", "error_description": msg})),
        )
            .into_response()
    };
    // Offset-less date-times only: `parse::<NaiveDateTime>` refuses `Z` and `+00:00`.
    let time = |k: &str| q.get(k).and_then(|v| v.parse::<NaiveDateTime>().ok());
    let (Some(from), Some(to)) = (time("startDate"), time("endDate")) else {
        return bad_request("startDate and endDate are required date-times");
    };
    if to <= from {
        return bad_request("endDate must be after startDate");
    }
    if to - from > TimeDelta::days(30) {
        return bad_request("The time window must not exceed 30 days");
    }
    let records: Vec<Value> = fake
        .records
        .lock()
        .unwrap()
        .iter()
        .filter(|r| (from..=to).contains(&system_time(r)))
        .cloned()
        .collect();
    Json(json!({
        "recordType": "egv",
        "recordVersion": "3.0",
        "userId": USER_ID,
        "records": records,
    }))
    .into_response()
}
