//! A fake Garmin Connect Developer Program API for the connector tests: an axum server on a
//! loopback port standing in for `apis.garmin.com`. It shares no code with `wearhouse::sync`,
//! only the wire format, as Garmin's *Health API* (v1.2.2) and *Activity API* (v1.2.3)
//! documents describe it:
//! - `GET /wellness-api/rest/user/id`: `{"userId"}`.
//! - `GET /wellness-api/rest/{dailies|sleeps|activities|bodyComps|stressDetails}` with
//!   `uploadStartTimeInSeconds` and `uploadEndTimeInSeconds` (unix seconds; both required, the
//!   range at most 24 hours, else 400 `{"errorMessage"}` as Appendix E shows): a JSON array of
//!   the summaries *uploaded* (synced) in `[start, end)`, whatever their own time. A summary
//!   uploaded again with the same `summaryId` replaces the earlier upload ("the latest summary
//!   should always take precedence").
//! - `GET /wellness-api/rest/backfill/{type}` with `summaryStartTimeInSeconds` and
//!   `summaryEndTimeInSeconds` (*Summary Backfill*): 202 with no body, recorded; 409 for a
//!   range asked before; 400 for a range over 90 days (30 for `activities`, the Activity API's
//!   limit) or without both bounds.
//! - `Authorization: Bearer <token>` on every call (401 `{"errorMessage"}` otherwise);
//!   the faults of its [`Gate`] after a number of good answers: 429 with `Retry-After`, 500,
//!   401, 403.
//!
//! The skeleton (server, faults, log) is the shared fake provider's, `sync/fake/`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::super::fake::{self, Gate};

/// The only access token the fake accepts until told otherwise.
pub const TOKEN: &str = "fake-garmin-access-token";

/// The Garmin user id of every token.
pub const GARMIN_USER: &str = "d3315b1072421d0dd7c8f6b8e1de4df8";

/// The summary types served, as their endpoints name them.
pub const TYPES: [&str; 5] = [
    "dailies",
    "sleeps",
    "activities",
    "bodyComps",
    "stressDetails",
];

/// A switchable failure.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// 429 with `Retry-After` in seconds.
    RateLimited(u64),
    ServerError,
    Unauthorised,
    Forbidden,
}

/// The summaries served: by type, each with the unix second it was uploaded at.
#[derive(Debug, Clone, Default)]
pub struct Data(pub HashMap<&'static str, Vec<(i64, Value)>>);

impl Data {
    /// Adds `doc` to `kind`, uploaded at `at`, replacing an earlier upload of its `summaryId`.
    pub fn upload(&mut self, kind: &'static str, at: i64, doc: Value) {
        let list = self.0.entry(kind).or_default();
        list.retain(|(_, d)| d["summaryId"] != doc["summaryId"]);
        list.push((at, doc));
    }
}

#[derive(Clone)]
struct Fake {
    gate: Gate<Fault>,
    data: Arc<Mutex<Data>>,
    /// Backfill requests accepted: (type, start, end).
    backfills: Arc<Mutex<Vec<(String, i64, i64)>>>,
}

fake::running! {
    /// A running fake Garmin API; its [`Gate`] (faults, token check, log) is reached through it.
    FakeGarmin(Fake, Fault),
    base: "http://127.0.0.1:<port>"
}

/// A fixture file of `testdata/providers/garmin/`.
pub fn fixture(name: &str) -> Value {
    fake::fixture("garmin", name)
}

/// When the fake says a summary was synced: half an hour after its period ended.
pub fn synced_at(doc: &Value) -> i64 {
    let start = doc["startTimeInSeconds"]
        .as_i64()
        .or_else(|| doc["measurementTimeInSeconds"].as_i64())
        .unwrap();
    start + doc["durationInSeconds"].as_i64().unwrap_or(0) + 1800
}

/// The fixtures' summaries, each uploaded [`synced_at`].
pub fn fixture_data() -> Data {
    let mut data = Data::default();
    for (kind, file) in [
        ("dailies", "dailies.json"),
        ("sleeps", "sleeps.json"),
        ("activities", "activities.json"),
        ("bodyComps", "body_comps.json"),
        ("stressDetails", "stress_details.json"),
    ] {
        for doc in fixture(file).as_array().unwrap() {
            data.upload(kind, synced_at(doc), doc.clone());
        }
    }
    data
}

impl FakeGarmin {
    /// Starts a fake serving `data`.
    pub async fn start(data: Data) -> FakeGarmin {
        let fake = Fake {
            gate: Gate::new(TOKEN),
            data: Arc::new(Mutex::new(data)),
            backfills: Arc::default(),
        };
        let routes = Router::new()
            .route("/wellness-api/rest/user/id", get(user_id))
            .route("/wellness-api/rest/{kind}", get(summaries))
            .route("/wellness-api/rest/backfill/{kind}", get(backfill))
            .with_state(fake.clone());
        let base = fake::serve(routes, &fake.gate, &[""]).await;
        FakeGarmin { base, fake }
    }

    /// Changes the summaries served (the user synchronised something).
    pub fn edit(&self, change: impl FnOnce(&mut Data)) {
        change(&mut self.fake.data.lock().unwrap());
    }

    /// The backfill requests accepted so far: (type, start, end), in order.
    pub fn backfills(&self) -> Vec<(String, i64, i64)> {
        self.fake.backfills.lock().unwrap().clone()
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "errorMessage": message }))).into_response()
}

/// Logs the request; answers the fault or the token check's refusal, if any.
fn admit(fake: &Fake, line: String, headers: &HeaderMap) -> Result<(), Box<Response>> {
    fake.gate.note(line);
    let fault = fake.gate.meet();
    let refused = match fault {
        Some(Fault::RateLimited(seconds)) => Some(
            (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, seconds.to_string())],
                Json(json!({"errorMessage": "Rate limit exceeded"})),
            )
                .into_response(),
        ),
        Some(Fault::ServerError) => Some(error(StatusCode::INTERNAL_SERVER_ERROR, "error")),
        Some(Fault::Unauthorised) => Some(error(StatusCode::UNAUTHORIZED, "token expired")),
        Some(Fault::Forbidden) => Some(error(StatusCode::FORBIDDEN, "unknown user access token")),
        None => None,
    };
    if let Some(r) = refused {
        return Err(Box::new(r));
    }
    if fake.gate.bearer_ok(headers) {
        Ok(())
    } else {
        Err(Box::new(error(StatusCode::UNAUTHORIZED, "invalid token")))
    }
}

async fn user_id(State(fake): State<Fake>, headers: HeaderMap) -> Response {
    if let Err(refused) = admit(&fake, "GET /wellness-api/rest/user/id".into(), &headers) {
        return *refused;
    }
    Json(json!({ "userId": GARMIN_USER })).into_response()
}

async fn summaries(
    State(fake): State<Fake>,
    Path(kind): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let line = fake::query_line(&format!("GET /wellness-api/rest/{kind}"), &q);
    if let Err(refused) = admit(&fake, line, &headers) {
        return *refused;
    }
    let Some(kind) = TYPES.iter().find(|t| **t == kind) else {
        return error(StatusCode::NOT_FOUND, "no such summary type");
    };
    let second = |k: &str| q.get(k).and_then(|v| v.parse::<i64>().ok());
    let (Some(start), Some(end)) = (
        second("uploadStartTimeInSeconds"),
        second("uploadEndTimeInSeconds"),
    ) else {
        return error(
            StatusCode::BAD_REQUEST,
            "uploadStartTimeInSeconds and uploadEndTimeInSeconds are required",
        );
    };
    if end < start || end - start > 86_400 {
        return error(
            StatusCode::BAD_REQUEST,
            "the upload range must not be longer than 86400 seconds",
        );
    }
    let data = fake.data.lock().unwrap();
    let found: Vec<Value> = data
        .0
        .get(kind)
        .into_iter()
        .flatten()
        .filter(|(at, _)| start <= *at && *at < end)
        .map(|(_, doc)| doc.clone())
        .collect();
    Json(Value::Array(found)).into_response()
}

async fn backfill(
    State(fake): State<Fake>,
    Path(kind): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let line = fake::query_line(&format!("GET /wellness-api/rest/backfill/{kind}"), &q);
    if let Err(refused) = admit(&fake, line, &headers) {
        return *refused;
    }
    if !TYPES.contains(&kind.as_str()) {
        return error(StatusCode::NOT_FOUND, "no such summary type");
    }
    let second = |k: &str| q.get(k).and_then(|v| v.parse::<i64>().ok());
    let (Some(start), Some(end)) = (
        second("summaryStartTimeInSeconds"),
        second("summaryEndTimeInSeconds"),
    ) else {
        return error(
            StatusCode::BAD_REQUEST,
            "summaryStartTimeInSeconds and summaryEndTimeInSeconds are required",
        );
    };
    let days = if kind == "activities" { 30 } else { 90 };
    if end < start || end - start > days * 86_400 {
        return error(StatusCode::BAD_REQUEST, "the backfill range is too long");
    }
    let mut backfills = fake.backfills.lock().unwrap();
    let asked = (kind, start, end);
    if backfills.contains(&asked) {
        return error(StatusCode::CONFLICT, "duplicate backfill request");
    }
    backfills.push(asked);
    StatusCode::ACCEPTED.into_response()
}
