//! A fake Strava API v3 for the connector tests: an axum server on a loopback port that stands
//! in for `www.strava.com/api/v3`. It shares no code with `wearhouse::sync`, only the wire
//! format, as Strava documents it:
//! - `developers.strava.com/docs/reference/`: `GET /athlete/activities` (`after` and `before`
//!   epoch seconds, both exclusive here, `page` from 1, `per_page` default 30, answered as a JSON
//!   array of `SummaryActivity`, oldest first when `after` is given), `GET
//!   /activities/{id}/streams` (`keys` comma-separated, `key_by_type=true`: a `StreamSet` object
//!   of the streams asked that the activity has, each `{data, series_type, original_size,
//!   resolution}`; 404 `Record Not Found` for an unknown activity), `GET /athlete`;
//!   errors as `{"message", "errors": [{"resource", "field", "code"}]}`.
//! - `developers.strava.com/docs/authentication/`: `Authorization: Bearer <token>` on every
//!   call, 401 `Authorization Error` otherwise.
//! - `developers.strava.com/docs/rate-limits/`: every answer carries `X-RateLimit-Limit` and
//!   `X-RateLimit-Usage` (15-minute, then daily, comma-separated); over the limit, 429
//!   `Rate Limit Exceeded` with the usage above the limit and no `Retry-After`.
//!
//! The faults of its [`Gate`], in Strava's words: 429 (the 15-minute or the daily window
//! spent), 500, or 401, after a number of good answers. The skeleton (server, faults, log) is
//! the shared fake provider's, `sync/fake/`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::DateTime;
use serde_json::{Value, json};

use super::super::fake::{self, Gate};

/// The only access token the fake accepts until told otherwise.
pub const TOKEN: &str = "fake-strava-access-token";

/// The application's limits the fake reports: 15 minutes, then a day.
const LIMITS: (u64, u64) = (200, 2000);

/// A switchable failure.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// 429 with the 15-minute window spent.
    RateLimited,
    /// 429 with the day spent.
    DailyLimited,
    ServerError,
    Unauthorised,
}

#[derive(Clone)]
struct Fake {
    gate: Gate<Fault>,
    /// Requests counted against the limits.
    used: Arc<AtomicU64>,
    activities: Arc<Mutex<Vec<Value>>>,
    streams: Arc<Mutex<HashMap<i64, Value>>>,
    athlete: Value,
}

fake::running! {
    /// A running fake Strava API; its [`Gate`] (faults, token check, log) is reached through it.
    FakeStrava(Fake, Fault),
    base: "http://127.0.0.1:<port>/api/v3"
}

/// A fixture file of `testdata/providers/strava/`.
pub fn fixture(name: &str) -> Value {
    fake::fixture("strava", name)
}

/// The fixture activities, and the streams of each that has them.
pub fn fixture_data() -> (Vec<Value>, HashMap<i64, Value>) {
    let activities = fixture("activities.json").as_array().unwrap().clone();
    let streams = activities
        .iter()
        .filter(|a| a["manual"] == json!(false))
        .map(|a| {
            let id = a["id"].as_i64().unwrap();
            (id, fixture(&format!("streams_{id}.json")))
        })
        .collect();
    (activities, streams)
}

impl FakeStrava {
    /// Starts a fake serving `activities`, their `streams` by activity id, and the fixture
    /// athlete.
    pub async fn start(activities: Vec<Value>, streams: HashMap<i64, Value>) -> FakeStrava {
        let fake = Fake {
            gate: Gate::new(TOKEN),
            used: Arc::default(),
            activities: Arc::new(Mutex::new(activities)),
            streams: Arc::new(Mutex::new(streams)),
            athlete: fixture("athlete.json"),
        };
        let routes = Router::new()
            .route("/api/v3/athlete", get(serve_athlete))
            .route("/api/v3/athlete/activities", get(serve_activities))
            .route("/api/v3/activities/{id}/streams", get(serve_streams))
            .with_state(fake.clone());
        let base = fake::serve(routes, &fake.gate, &[""]).await;
        FakeStrava {
            base: format!("{base}/api/v3"),
            fake,
        }
    }

    /// Adds `activity` (with its `streams`), replacing the one with the same id (the athlete
    /// recorded something new, or edited an activity).
    pub fn put(&self, activity: Value, streams: Option<Value>) {
        let id = activity["id"].as_i64().unwrap();
        let mut all = self.fake.activities.lock().unwrap();
        all.retain(|a| a["id"] != activity["id"]);
        all.push(activity);
        if let Some(s) = streams {
            self.fake.streams.lock().unwrap().insert(id, s);
        }
    }
}

fn error(status: StatusCode, message: &str, resource: &str, field: &str, code: &str) -> Response {
    let body = json!({"message": message,
                      "errors": [{"resource": resource, "field": field, "code": code}]});
    (status, Json(body)).into_response()
}

/// Logs the request and answers the fault or the token check's refusal, if any; else counts
/// the request against the limits and answers the headers every answer carries.
async fn admit(
    fake: &Fake,
    path: &str,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<HeaderMap, Response> {
    fake.gate.note_query(path, q);
    let used = fake.used.fetch_add(1, Ordering::SeqCst) + 1;
    let fault = fake.gate.meet();
    let limits = |short: u64, day: u64| {
        let mut h = HeaderMap::new();
        let pair = |a: u64, b: u64| HeaderValue::from_str(&format!("{a},{b}")).unwrap();
        h.insert("x-ratelimit-limit", pair(LIMITS.0, LIMITS.1));
        h.insert("x-ratelimit-usage", pair(short, day));
        h
    };
    let limited = |h: HeaderMap| {
        let body = json!({"message": "Rate Limit Exceeded",
            "errors": [{"resource": "Application", "field": "rate limit", "code": "exceeded"}]});
        (StatusCode::TOO_MANY_REQUESTS, h, Json(body)).into_response()
    };
    match fault {
        Some(Fault::RateLimited) => return Err(limited(limits(LIMITS.0 + 1, used))),
        Some(Fault::DailyLimited) => return Err(limited(limits(used % LIMITS.0, LIMITS.1 + 1))),
        Some(Fault::ServerError) => {
            return Err(
                (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error").into_response()
            );
        }
        Some(Fault::Unauthorised) => {
            return Err(error(
                StatusCode::UNAUTHORIZED,
                "Authorization Error",
                "Athlete",
                "access_token",
                "invalid",
            ));
        }
        None => {}
    }
    if !fake.gate.bearer_ok(headers) {
        return Err(error(
            StatusCode::UNAUTHORIZED,
            "Authorization Error",
            "Athlete",
            "access_token",
            "invalid",
        ));
    }
    Ok(limits(used % LIMITS.0, used))
}

async fn serve_athlete(
    State(fake): State<Fake>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    match admit(&fake, "athlete", &q, &headers).await {
        Ok(h) => (h, Json(fake.athlete.clone())).into_response(),
        Err(refused) => refused,
    }
}

async fn serve_activities(
    State(fake): State<Fake>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let h = match admit(&fake, "athlete/activities", &q, &headers).await {
        Ok(h) => h,
        Err(refused) => return refused,
    };
    let number = |k: &str| q.get(k).map(|v| v.parse::<i64>());
    let bad = |field: &str| {
        error(
            StatusCode::BAD_REQUEST,
            "Bad Request",
            "Application",
            field,
            "invalid",
        )
    };
    let (after, before) = match (number("after"), number("before")) {
        (Some(Err(_)), _) => return bad("after"),
        (_, Some(Err(_))) => return bad("before"),
        (a, b) => (a.map(Result::unwrap), b.map(Result::unwrap)),
    };
    let page = match number("page") {
        None => 1,
        Some(Ok(p)) if p >= 1 => p as usize,
        _ => return bad("page"),
    };
    let per_page = match number("per_page") {
        None => 30,
        Some(Ok(p)) if (1..=200).contains(&p) => p as usize,
        _ => return bad("per_page"),
    };
    let start = |a: &Value| {
        DateTime::parse_from_rfc3339(a["start_date"].as_str().unwrap())
            .unwrap()
            .timestamp()
    };
    let mut matching: Vec<Value> = fake
        .activities
        .lock()
        .unwrap()
        .iter()
        .filter(|a| after.is_none_or(|t| start(a) > t) && before.is_none_or(|t| start(a) < t))
        .cloned()
        .collect();
    matching.sort_by_key(start);
    if after.is_none() {
        matching.reverse();
    }
    let answer: Vec<Value> = matching
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    (h, Json(Value::Array(answer))).into_response()
}

async fn serve_streams(
    State(fake): State<Fake>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let h = match admit(&fake, &format!("activities/{id}/streams"), &q, &headers).await {
        Ok(h) => h,
        Err(refused) => return refused,
    };
    let not_found = || {
        error(
            StatusCode::NOT_FOUND,
            "Record Not Found",
            "Activity",
            "id",
            "not found",
        )
    };
    let Ok(id) = id.parse::<i64>() else {
        return not_found();
    };
    let Some(set) = fake.streams.lock().unwrap().get(&id).cloned() else {
        return not_found();
    };
    if q.get("key_by_type").map(String::as_str) != Some("true") {
        // Only the keyed shape is reproduced here.
        return error(
            StatusCode::BAD_REQUEST,
            "Bad Request",
            "Stream",
            "key_by_type",
            "invalid",
        );
    }
    let asked: Vec<&str> = q.get("keys").map_or(Vec::new(), |k| k.split(',').collect());
    let answer: serde_json::Map<String, Value> = set
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| asked.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (h, Json(Value::Object(answer))).into_response()
}
