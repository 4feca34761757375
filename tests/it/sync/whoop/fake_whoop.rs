//! A fake WHOOP API v2 for the connector tests: an axum server on a loopback port that stands
//! in for `api.prod.whoop.com/developer`. It shares no code with `wearhouse::sync`, only the
//! wire format, as WHOOP documents it: the API reference and its OpenAPI document
//! (`developer.whoop.com/api`, `api.prod.whoop.com/developer/doc/openapi.json`; read in the
//! archived copy `api-evangelist/whoop`, `openapi/_original/whoop-openapi.yml`) for the paths,
//! parameters, schemas and statuses, and `developer.whoop.com/docs/developing/rate-limiting`
//! for the 429 and its `X-RateLimit-*` headers (the webhooks' signature, from
//! `developer.whoop.com/docs/developing/webhooks`, is computed in `notify.rs`):
//! - `GET /developer/v2/{cycle, recovery, activity/sleep, activity/workout}` with `limit`
//!   (default 10, at most 25: more is a 400), `start` (inclusive), `end` (exclusive) and
//!   `nextToken`, answering `{"records": [...], "next_token"}` newest first, `next_token` absent
//!   on the last page. A record is answered when it intersects the bounds (a recovery by its
//!   sleep's times); a page holds at most `limit`, and at most the fake's own page size, so
//!   small fixtures span several pages.
//! - `GET /developer/v2/user/profile/basic` and `/developer/v2/user/measurement/body`.
//! - `Authorization: Bearer <token>` checked on every call (401 otherwise), and switchable
//!   faults of its [`Gate`]: 429 with `Retry-After` and/or `X-RateLimit-Reset` (WHOOP's
//!   rate-limit headers), 500, 401, or a hang, after a number of good answers.
//!
//! The skeleton (server, faults, paging, log) is the shared fake provider's, `sync/fake/`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::super::fake::{self, Gate, Pager};

/// The only access token the fake accepts until told otherwise.
pub const TOKEN: &str = "fake-whoop-access-token";

/// The collections, by their path under `/developer/v2/`.
pub const COLLECTIONS: [&str; 4] = ["cycle", "recovery", "activity/sleep", "activity/workout"];

/// A switchable failure.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// 429 with these headers (`Retry-After` seconds, `X-RateLimit-Reset` seconds).
    RateLimited {
        retry_after: Option<u64>,
        reset: Option<u64>,
    },
    ServerError,
    Unauthorised,
    Hang,
}

#[derive(Clone)]
struct Fake {
    gate: Gate<Fault>,
    pager: Pager,
    collections: Arc<Mutex<HashMap<String, Vec<Value>>>>,
    page_size: usize,
}

fake::running! {
    /// A running fake WHOOP API; its [`Gate`] (faults, token check, log) is reached through it.
    FakeWhoop(Fake, Fault),
    base: "http://127.0.0.1:<port>/developer"
}

/// A fixture file of `testdata/providers/whoop/`.
pub fn fixture(name: &str) -> Value {
    fake::fixture("whoop", name)
}

/// The collections of the fixture files (by path), and the two user documents.
pub fn fixture_collections() -> HashMap<String, Vec<Value>> {
    let mut all: HashMap<String, Vec<Value>> = [
        ("cycle", "cycle"),
        ("recovery", "recovery"),
        ("activity/sleep", "sleep"),
        ("activity/workout", "workout"),
    ]
    .into_iter()
    .map(|(path, file)| {
        let records = fixture(&format!("{file}.json"))["records"]
            .as_array()
            .unwrap()
            .clone();
        (path.to_owned(), records)
    })
    .collect();
    all.insert(
        "user/profile/basic".into(),
        vec![fixture("profile_basic.json")],
    );
    all.insert(
        "user/measurement/body".into(),
        vec![fixture("body_measurement.json")],
    );
    all
}

impl FakeWhoop {
    /// Starts a fake serving `collections` (path under `/developer/v2/` → records; the user
    /// documents as one-record lists), at most `page_size` records a page.
    pub async fn start(collections: HashMap<String, Vec<Value>>, page_size: usize) -> FakeWhoop {
        let fake = Fake {
            gate: Gate::new(TOKEN),
            pager: Pager::new(|n| format!("MTIz{:08x}", 0x7000 + n * 7919)),
            collections: Arc::new(Mutex::new(collections)),
            page_size,
        };
        let routes = Router::new()
            .route("/developer/v2/{*path}", get(serve))
            .with_state(fake.clone());
        let base = fake::serve(routes, &fake.gate, &["/records"]).await;
        FakeWhoop {
            base: format!("{base}/developer"),
            fake,
        }
    }

    /// Adds `record` to the collection at `path`, replacing the record with the same `key`
    /// value (the user recorded something new, or WHOOP revised a record).
    pub fn put(&self, path: &str, key: &str, record: Value) {
        let mut all = self.fake.collections.lock().unwrap();
        let records = all.entry(path.to_owned()).or_default();
        records.retain(|r| r[key] != record[key]);
        records.push(record);
    }
}

/// The answer to a request the fault or the token check refuses, if any: WHOOP's words.
async fn refusal(fake: &Fake, headers: &HeaderMap) -> Option<Response> {
    match fake.gate.meet() {
        Some(Fault::RateLimited { retry_after, reset }) => {
            let mut h = HeaderMap::new();
            if let Some(s) = retry_after {
                h.insert(header::RETRY_AFTER, s.to_string().parse().unwrap());
            }
            if let Some(s) = reset {
                h.insert("x-ratelimit-reset", s.to_string().parse().unwrap());
            }
            h.insert("x-ratelimit-remaining", "0".parse().unwrap());
            return Some((StatusCode::TOO_MANY_REQUESTS, h, "Too Many Requests").into_response());
        }
        Some(Fault::ServerError) => {
            return Some((StatusCode::INTERNAL_SERVER_ERROR, "upstream failure").into_response());
        }
        Some(Fault::Unauthorised) => {
            return Some((StatusCode::UNAUTHORIZED, "Authorization was not valid").into_response());
        }
        Some(Fault::Hang) => tokio::time::sleep(Duration::from_secs(30)).await,
        None => {}
    }
    (!fake.gate.bearer_ok(headers))
        .then(|| (StatusCode::UNAUTHORIZED, "Authorization was not valid").into_response())
}

fn instant(v: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v.as_str()?)
        .ok()
        .map(|t| t.to_utc())
}

async fn serve(
    State(fake): State<Fake>,
    Path(path): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    fake.gate.note_query(&path, &q);
    if let Some(refused) = refusal(&fake, &headers).await {
        return refused;
    }
    let all = fake.collections.lock().unwrap().clone();
    let Some(records) = all.get(&path) else {
        return (StatusCode::NOT_FOUND, "No resource found").into_response();
    };
    if !COLLECTIONS.contains(&path.as_str()) {
        return Json(records[0].clone()).into_response();
    }
    let limit = match q.get("limit").map(|l| l.parse::<usize>()) {
        None => 10,
        Some(Ok(l)) if (1..=25).contains(&l) => l,
        _ => return (StatusCode::BAD_REQUEST, "limit must be 1-25").into_response(),
    };
    let bound = |k: &str| q.get(k).map(|v| instant(&json!(v)));
    let (from, to) = match (bound("start"), bound("end")) {
        (Some(None), _) | (_, Some(None)) => {
            return (StatusCode::BAD_REQUEST, "start and end are date-times").into_response();
        }
        (from, to) => (from.flatten(), to.flatten().unwrap_or_else(Utc::now)),
    };
    // A record's times: its own, or (a recovery) its sleep's.
    let sleeps = all.get("activity/sleep").cloned().unwrap_or_default();
    let times = |r: &Value| -> (DateTime<Utc>, Option<DateTime<Utc>>) {
        let own = if r.get("sleep_id").is_some() && r.get("start").is_none() {
            sleeps.iter().find(|s| s["id"] == r["sleep_id"]).unwrap()
        } else {
            r
        };
        (instant(&own["start"]).unwrap(), instant(&own["end"]))
    };
    let mut matching: Vec<&Value> = records
        .iter()
        .filter(|r| {
            let (start, end) = times(r);
            start < to && from.is_none_or(|f| end.is_none_or(|e| e >= f))
        })
        .collect();
    matching.sort_by_key(|r| std::cmp::Reverse(times(r).0));
    let Some(offset) = fake.pager.offset(&path, q.get("nextToken")) else {
        return (StatusCode::BAD_REQUEST, "invalid nextToken").into_response();
    };
    let matching: Vec<Value> = matching.into_iter().cloned().collect();
    let size = limit.min(fake.page_size);
    let (page, next_token) = fake.pager.page(&path, &matching, offset, size);
    let mut answer = json!({ "records": page });
    if let Some(token) = next_token {
        answer["next_token"] = json!(token);
    }
    Json(answer).into_response()
}
