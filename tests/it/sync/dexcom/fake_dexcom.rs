//! A fake Dexcom API v3 for the connector tests: an axum server on a loopback port that stands
//! in for Dexcom's cloud. It shares no code with `wearhouse::sync`, only the wire format: it
//! serves EGV records (those of `testdata/providers/dexcom_v3/egvs.json`, or generated ones) at
//! `GET /v3/users/self/egvs`, checks the bearer token, requires `startDate` and `endDate` as
//! offset-less UTC date-times at most 30 days apart (400 otherwise, as the real API refuses
//! longer windows), answers the records whose `systemTime` lies between them (both bounds
//! inclusive) in one `{"recordType": "egv", "recordVersion": "3.0", "userId", "records"}`, and
//! answers the faults of its [`Gate`] in Dexcom's words: 429 (with `Retry-After`), 500 or 401.
//! The skeleton (server, faults, log) is the shared fake provider's, `sync/fake/`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, NaiveDateTime, TimeDelta};
use serde_json::{Value, json};

use super::super::fake::{self, Gate};

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

#[derive(Clone)]
struct Fake {
    gate: Gate<Fault>,
    records: Arc<Mutex<Vec<Value>>>,
}

fake::running! {
    /// A running fake Dexcom API; its [`Gate`] (faults, token check, log) is reached through it.
    FakeDexcom(Fake, Fault),
    base: "http://127.0.0.1:<port>"
}

impl FakeDexcom {
    /// Starts a fake serving `records` (EGV records in Dexcom's shape).
    pub async fn start(records: Vec<Value>) -> FakeDexcom {
        let fake = Fake {
            gate: Gate::new(TOKEN),
            records: Arc::new(Mutex::new(records)),
        };
        let routes = Router::new()
            .route(EGVS_PATH, get(egvs))
            .with_state(fake.clone());
        let base = fake::serve(routes, &fake.gate, &["/records"]).await;
        FakeDexcom { base, fake }
    }

    /// Adds an EGV record, replacing the one with the same `recordId` (a new reading, or one
    /// Dexcom revised).
    pub fn put(&self, record: Value) {
        let mut records = self.fake.records.lock().unwrap();
        records.retain(|r| r["recordId"] != record["recordId"]);
        records.push(record);
    }
}

/// A fixture file of `testdata/providers/dexcom_v3/`.
pub fn fixture(name: &str) -> Value {
    fake::fixture("dexcom_v3", name)
}

/// The EGV records of the fixture file.
pub fn fixture_records() -> Vec<Value> {
    fixture("egvs.json")["records"].as_array().unwrap().clone()
}

/// The answer to a request the fault or the token check refuses, if any: Dexcom's words.
fn refusal(fake: &Fake, headers: &HeaderMap) -> Option<Response> {
    let error = |code: &str, msg: &str| Json(json!({"error": code, "error_description": msg}));
    match fake.gate.meet() {
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
    (!fake.gate.bearer_ok(headers)).then(|| {
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
    fake.gate.note_query("egvs", &q);
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
