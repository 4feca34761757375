//! A fake Oura API v2 for the connector tests: an axum server on a loopback port that stands in
//! for Oura's cloud. It shares no code with `wearhouse::sync`, only the wire format: it serves
//! the documents of `testdata/providers/oura/` (or generated ones) under the documented paths,
//! checks the bearer token, filters by `start_date`/`end_date` (inclusive, by `day`) or
//! `start_datetime`/`end_datetime` (inclusive, by `timestamp`, at most 30 days apart), pages
//! with opaque `next_token`s, and answers the faults of its [`Gate`] in Oura's words: 429 (with
//! `Retry-After`), 500 or 401, or a hang. The skeleton (server, faults, paging, log) is the
//! shared fake provider's, `sync/fake/`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Value, json};

use super::super::fake::{self, Gate, Pager};

/// The only access token the fake accepts.
pub const TOKEN: &str = "fake-oura-access-token";

/// A switchable failure.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    RateLimited { retry_after: u64 },
    ServerError,
    Unauthorised,
    Hang,
}

#[derive(Clone)]
struct Fake {
    gate: Gate<Fault>,
    pager: Pager,
    collections: Arc<Mutex<HashMap<String, Vec<Value>>>>,
    personal_info: Arc<Value>,
    page_size: usize,
}

fake::running! {
    /// A running fake Oura API; its [`Gate`] (faults, token check, log) is reached through it.
    FakeOura(Fake, Fault),
    base: "http://127.0.0.1:<port>"
}

impl FakeOura {
    /// Starts a fake serving `collections` (name → documents), `page_size` per page.
    pub async fn start(collections: HashMap<String, Vec<Value>>, page_size: usize) -> FakeOura {
        let fake = Fake {
            gate: Gate::new(TOKEN),
            pager: Pager::new(|n| format!("{:016x}", 0x5eed_0000 + n * 7919)),
            collections: Arc::new(Mutex::new(collections)),
            personal_info: Arc::new(fixture("personal_info.json")),
            page_size,
        };
        let routes = Router::new()
            .route("/v2/usercollection/personal_info", get(personal_info))
            .route("/v2/usercollection/{collection}", get(collection))
            .with_state(fake.clone());
        let base = fake::serve(routes, &fake.gate, &["/data"]).await;
        FakeOura { base, fake }
    }

    /// Adds `document` to `collection`, replacing the document with the same `key` value (the
    /// user recorded something new, or the provider revised a record).
    pub fn put(&self, collection: &str, key: &str, document: Value) {
        let mut all = self.fake.collections.lock().unwrap();
        let docs = all.entry(collection.to_owned()).or_default();
        docs.retain(|d| d[key] != document[key]);
        docs.push(document);
    }
}

/// A fixture file of `testdata/providers/oura/`.
pub fn fixture(name: &str) -> Value {
    fake::fixture("oura", name)
}

/// The collections of the fixture files.
pub fn fixture_collections() -> HashMap<String, Vec<Value>> {
    [
        "sleep",
        "daily_activity",
        "workout",
        "heartrate",
        "daily_spo2",
    ]
    .into_iter()
    .map(|c| {
        let data = fixture(&format!("{c}.json"))["data"]
            .as_array()
            .unwrap()
            .clone();
        (c.to_owned(), data)
    })
    .collect()
}

/// The answer to a request the fault or the token check refuses, if any: Oura's words.
async fn refusal(fake: &Fake, headers: &HeaderMap) -> Option<Response> {
    let detail = |msg: &str| Json(json!({"detail": msg}));
    match fake.gate.meet() {
        Some(Fault::RateLimited { retry_after }) => {
            return Some(
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(header::RETRY_AFTER, retry_after.to_string())],
                    detail("Request Rate Limit Exceeded."),
                )
                    .into_response(),
            );
        }
        Some(Fault::ServerError) => {
            return Some((StatusCode::INTERNAL_SERVER_ERROR, "upstream failure").into_response());
        }
        Some(Fault::Unauthorised) => {
            return Some((StatusCode::UNAUTHORIZED, detail("Token expired")).into_response());
        }
        Some(Fault::Hang) => {
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
        None => {}
    }
    (!fake.gate.bearer_ok(headers))
        .then(|| (StatusCode::UNAUTHORIZED, detail("Unauthorized access")).into_response())
}

async fn personal_info(State(fake): State<Fake>, headers: HeaderMap) -> Response {
    fake.gate.note("personal_info");
    if let Some(refused) = refusal(&fake, &headers).await {
        return refused;
    }
    Json((*fake.personal_info).clone()).into_response()
}

async fn collection(
    State(fake): State<Fake>,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    fake.gate.note_query(&name, &q);
    if let Some(refused) = refusal(&fake, &headers).await {
        return refused;
    }
    let Some(documents) = fake.collections.lock().unwrap().get(&name).cloned() else {
        return (StatusCode::NOT_FOUND, Json(json!({"detail": "Not Found"}))).into_response();
    };
    let unprocessable = |msg: &str| {
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"detail": [{"loc": ["query"], "msg": msg, "type": "value_error"}]})),
        )
            .into_response()
    };
    let keep: Box<dyn Fn(&Value) -> bool> = if name == "heartrate" {
        let instant = |k: &str| {
            q.get(k)
                .and_then(|v| DateTime::parse_from_rfc3339(v).ok())
                .map(|t| t.with_timezone(&Utc))
        };
        let (Some(from), Some(to)) = (instant("start_datetime"), instant("end_datetime")) else {
            return unprocessable("start_datetime and end_datetime are required date-times");
        };
        if to - from > chrono::TimeDelta::days(30) {
            return unprocessable("The maximum heart rate range is 30 days");
        }
        Box::new(move |d| {
            let t = DateTime::parse_from_rfc3339(d["timestamp"].as_str().unwrap()).unwrap();
            from <= t && t <= to
        })
    } else {
        let date = |k: &str| q.get(k).and_then(|v| v.parse::<NaiveDate>().ok());
        let (Some(from), Some(to)) = (date("start_date"), date("end_date")) else {
            return unprocessable("start_date and end_date are required dates");
        };
        Box::new(move |d| {
            let day: NaiveDate = d["day"].as_str().unwrap().parse().unwrap();
            from <= day && day <= to
        })
    };
    let Some(offset) = fake.pager.offset(&name, q.get("next_token")) else {
        return (StatusCode::BAD_REQUEST, "invalid next_token").into_response();
    };
    let matching: Vec<Value> = documents.into_iter().filter(|d| keep(d)).collect();
    let (page, next_token) = fake.pager.page(&name, &matching, offset, fake.page_size);
    Json(json!({"data": page, "next_token": next_token})).into_response()
}

/// Moves every `YYYY-MM-DD` date and RFC 3339 instant in `value` by `days`.
pub fn shifted(value: &Value, days: i64) -> Value {
    match value {
        Value::String(s) => {
            if let Ok(day) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
                return Value::String((day + chrono::Duration::days(days)).to_string());
            }
            if let Ok(at) = DateTime::parse_from_rfc3339(s) {
                let moved = at + chrono::Duration::days(days);
                let text = moved.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
                // Keep the fixture's own offset notation (`+00:00` stays, `Z` stays).
                return Value::String(if s.ends_with('Z') {
                    text
                } else {
                    moved.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false)
                });
            }
            value.clone()
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| shifted(v, days)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), shifted(v, days)))
                .collect(),
        ),
        other => other.clone(),
    }
}
