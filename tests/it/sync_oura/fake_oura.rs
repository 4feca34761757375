//! A fake Oura API v2 for the connector tests: an axum server on a loopback port that stands in
//! for Oura's cloud. It shares no code with `wearhouse::sync`, only the wire format: it serves
//! the documents of `testdata/providers/oura/` (or generated ones) under the documented paths,
//! checks the bearer token, filters by `start_date`/`end_date` (inclusive, by `day`) or
//! `start_datetime`/`end_datetime` (inclusive, by `timestamp`, at most 30 days apart), pages
//! with opaque `next_token`s, and can be switched to answer 429 (with `Retry-After`), 500 or
//! 401, or to hang, after a number of good answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Value, json};

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

#[derive(Default)]
struct Inner {
    fault: Option<(Fault, usize)>,
    /// Faults left to serve before the fake recovers (`None`: it never does).
    faults_left: Option<usize>,
    /// `next_token` → (collection, offset of the next page).
    tokens: HashMap<String, (String, usize)>,
    /// Every request as `collection?query`.
    log: Vec<String>,
    /// Every request's arrival, and whether a fault answered it.
    timeline: Vec<(Instant, bool)>,
    good: usize,
}

/// Which bearer tokens the fake accepts.
type TokenCheck = Arc<dyn Fn(&str) -> bool + Send + Sync>;

#[derive(Clone)]
struct Fake {
    accepts: Arc<Mutex<TokenCheck>>,
    collections: Arc<Mutex<HashMap<String, Vec<Value>>>>,
    personal_info: Arc<Value>,
    page_size: usize,
    inner: Arc<Mutex<Inner>>,
}

/// A running fake Oura API.
pub struct FakeOura {
    /// Its base URL, `http://127.0.0.1:<port>`.
    pub base: String,
    inner: Arc<Mutex<Inner>>,
    accepts: Arc<Mutex<TokenCheck>>,
    collections: Arc<Mutex<HashMap<String, Vec<Value>>>>,
}

impl FakeOura {
    /// Starts a fake serving `collections` (name → documents), `page_size` per page.
    pub async fn start(collections: HashMap<String, Vec<Value>>, page_size: usize) -> FakeOura {
        let accepts: Arc<Mutex<TokenCheck>> = Arc::new(Mutex::new(Arc::new(|t| t == TOKEN)));
        let collections = Arc::new(Mutex::new(collections));
        let fake = Fake {
            accepts: accepts.clone(),
            collections: collections.clone(),
            personal_info: Arc::new(fixture("personal_info.json")),
            page_size,
            inner: Arc::default(),
        };
        let inner = fake.inner.clone();
        let app = Router::new()
            .route("/v2/usercollection/personal_info", get(personal_info))
            .route("/v2/usercollection/{collection}", get(collection))
            .with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeOura {
            base,
            inner,
            accepts,
            collections,
        }
    }

    /// Adds `document` to `collection`, replacing the document with the same `key` value (the
    /// user recorded something new, or the provider revised a record).
    pub fn put(&self, collection: &str, key: &str, document: Value) {
        let mut all = self.collections.lock().unwrap();
        let docs = all.entry(collection.to_owned()).or_default();
        docs.retain(|d| d[key] != document[key]);
        docs.push(document);
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

    /// Every request so far, as `collection?sorted query`.
    pub fn log(&self) -> Vec<String> {
        self.inner.lock().unwrap().log.clone()
    }

    /// Every request so far: when it arrived, and whether a fault answered it.
    pub fn timeline(&self) -> Vec<(Instant, bool)> {
        self.inner.lock().unwrap().timeline.clone()
    }
}

/// A fixture file of `testdata/providers/oura/`.
pub fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/testdata/providers/oura/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
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

/// The answer to a request the fault or the token check refuses, if any.
async fn refusal(fake: &Fake, headers: &HeaderMap) -> Option<Response> {
    let fault = {
        let mut inner = fake.inner.lock().unwrap();
        let faulty = matches!(inner.fault, Some((_, at)) if inner.good >= at);
        inner.timeline.push((Instant::now(), faulty));
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
    let detail = |msg: &str| Json(json!({"detail": msg}));
    match fault {
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
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let accepts = fake.accepts.lock().unwrap().clone();
    (!token.is_some_and(|t| accepts(t)))
        .then(|| (StatusCode::UNAUTHORIZED, detail("Unauthorized access")).into_response())
}

async fn personal_info(State(fake): State<Fake>, headers: HeaderMap) -> Response {
    fake.inner.lock().unwrap().log.push("personal_info".into());
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
    let mut pairs: Vec<_> = q.iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.sort();
    fake.inner
        .lock()
        .unwrap()
        .log
        .push(format!("{name}?{}", pairs.join("&")));
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
    let offset = match q.get("next_token") {
        None => 0,
        Some(t) => match fake.inner.lock().unwrap().tokens.get(t) {
            Some((c, offset)) if *c == name => *offset,
            _ => return (StatusCode::BAD_REQUEST, "invalid next_token").into_response(),
        },
    };
    let matching: Vec<&Value> = documents.iter().filter(|d| keep(d)).collect();
    let page: Vec<Value> = matching
        .iter()
        .skip(offset)
        .take(fake.page_size)
        .map(|d| (*d).clone())
        .collect();
    let next = offset + page.len();
    let next_token = if next < matching.len() {
        let mut inner = fake.inner.lock().unwrap();
        let token = format!("{:016x}", 0x5eed_0000 + inner.tokens.len() * 7919);
        inner.tokens.insert(token.clone(), (name.clone(), next));
        Value::from(token)
    } else {
        Value::Null
    };
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
