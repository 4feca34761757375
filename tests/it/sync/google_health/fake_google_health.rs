//! A fake Google Health API (`health.googleapis.com/v4`) for the connector tests: an axum
//! server on a loopback port. It shares no code with `wearhouse::sync`, only the wire format
//! as Google documents it: the REST reference and discovery document of `health:v4`
//! (`developers.google.com/health/reference/rest/v4`; the discovery document as vendored in
//! `googleapis/google-api-go-client`, `health/v4/health-api.json`) and the endpoint conventions
//! (`developers.google.com/health/endpoints`):
//! - `GET /v4/users/me/dataTypes/{dataType}/dataPoints` (`users.dataTypes.dataPoints.list`)
//!   with `filter` (AIP-160, `{field} >= "<RFC 3339>" AND {field} < "<RFC 3339>"`, the field
//!   the type is filtered by: `sleep.interval.end_time`, `<snake_type>.sample_time.
//!   physical_time`; another field is a 400 `INVALID_ARGUMENT`), `pageSize` (default 1440, at
//!   most 10,000, and 25 for `sleep`: larger values are truncated) and `pageToken`, answering
//!   `{"dataPoints": [...], "nextPageToken": "..."}` newest first (by start time), the token
//!   empty on the last page. A page holds at most the fake's own page size besides, so small
//!   fixtures span several pages.
//! - `POST /v4/users/me/dataTypes/{dataType}/dataPoints:dailyRollUp` with `{"range": {"start",
//!   "end"} (CivilDateTime), "windowSizeDays"}` answering `{"rollupDataPoints": [...]}` for the
//!   civil days in `[start, end)`; more than 14 days for `total-calories` (90 otherwise) is a
//!   400.
//! - `GET /v4/users/me/identity` answering the `Identity`.
//! - `Authorization: Bearer <token>` checked on every call (401 `UNAUTHENTICATED` otherwise);
//!   errors in Google's shape `{"error": {"code", "message", "status"}}`; the faults of its
//!   [`Gate`]: 429 `RESOURCE_EXHAUSTED` with `Retry-After`, 500, 401, after a number of good
//!   answers.
//!
//! The skeleton (server, faults, paging, log) is the shared fake provider's, `sync/fake/`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::super::fake::{self, Gate, Pager};

#[path = "google_wire.rs"]
mod wire;
pub use wire::civil_date;
use wire::{error, parse_filter, times, unauthenticated};

/// The only access token the fake accepts until told otherwise.
pub const TOKEN: &str = "fake-google-health-access-token";

/// The listed data types: (path segment, member, filter field, fixture file).
pub const LISTED: [(&str, &str, &str, &str); 7] = [
    ("sleep", "sleep", "sleep.interval.end_time", "sleep"),
    (
        "heart-rate",
        "heartRate",
        "heart_rate.sample_time.physical_time",
        "heart_rate",
    ),
    (
        "heart-rate-variability",
        "heartRateVariability",
        "heart_rate_variability.sample_time.physical_time",
        "heart_rate_variability",
    ),
    (
        "oxygen-saturation",
        "oxygenSaturation",
        "oxygen_saturation.sample_time.physical_time",
        "oxygen_saturation",
    ),
    (
        "weight",
        "weight",
        "weight.sample_time.physical_time",
        "weight",
    ),
    (
        "body-fat",
        "bodyFat",
        "body_fat.sample_time.physical_time",
        "body_fat",
    ),
    (
        "height",
        "height",
        "height.sample_time.physical_time",
        "height",
    ),
];

/// The rolled-up data types and their fixture files.
pub const ROLLED: [(&str, &str); 4] = [
    ("steps", "rollup_steps"),
    ("distance", "rollup_distance"),
    ("total-calories", "rollup_total_calories"),
    ("active-energy-burned", "rollup_active_energy_burned"),
];

/// A switchable failure.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// 429 with this `Retry-After` (seconds).
    RateLimited(u64),
    ServerError,
    Unauthorised,
}

/// What the fake serves: data points by data type, roll-up points by data type, the identity.
#[derive(Clone, Default)]
pub struct Data {
    pub points: HashMap<String, Vec<Value>>,
    pub rollups: HashMap<String, Vec<Value>>,
    pub identity: Value,
}

/// A data point with its (start, filtered) times, read once.
type Stored = (DateTime<Utc>, DateTime<Utc>, Value);

/// The points by data type, each list newest first.
type Points = HashMap<String, Vec<Stored>>;

#[derive(Clone)]
struct Fake {
    gate: Gate<Fault>,
    /// Its listings are a data type's points under one filter.
    pager: Pager,
    points: Arc<Mutex<Points>>,
    data: Arc<Mutex<Data>>,
    page_size: usize,
}

fake::running! {
    /// A running fake Google Health API; its [`Gate`] (faults, token check, log) is reached
    /// through it.
    FakeGoogleHealth(Fake, Fault),
    base: "http://127.0.0.1:<port>"
}

/// A fixture file of `testdata/providers/google_health/`.
pub fn fixture(name: &str) -> Value {
    fake::fixture("google_health", name)
}

/// Everything the fixture files hold.
pub fn fixture_data() -> Data {
    let points = LISTED
        .iter()
        .map(|(kind, _, _, file)| {
            let list = fixture(&format!("{file}.json"))["dataPoints"]
                .as_array()
                .unwrap()
                .clone();
            ((*kind).to_owned(), list)
        })
        .collect();
    let rollups = ROLLED
        .iter()
        .map(|(kind, file)| {
            let list = fixture(&format!("{file}.json"))["rollupDataPoints"]
                .as_array()
                .unwrap()
                .clone();
            ((*kind).to_owned(), list)
        })
        .collect();
    Data {
        points,
        rollups,
        identity: fixture("identity.json"),
    }
}

impl FakeGoogleHealth {
    /// Starts a fake serving `data`, at most `page_size` points a page.
    pub async fn start(data: Data, page_size: usize) -> FakeGoogleHealth {
        let mut points = Points::new();
        for (data_type, list) in &data.points {
            let member = LISTED.iter().find(|(t, ..)| t == data_type).unwrap().1;
            let mut stored: Vec<Stored> = list
                .iter()
                .map(|p| {
                    let (start, at) = times(member, p);
                    (start, at, p.clone())
                })
                .collect();
            stored.sort_by_key(|(start, ..)| std::cmp::Reverse(*start));
            points.insert(data_type.clone(), stored);
        }
        let fake = Fake {
            gate: Gate::new(TOKEN),
            pager: Pager::new(|n| format!("CiQ{:010x}", 0x51_0000 + n * 7919)),
            points: Arc::new(Mutex::new(points)),
            data: Arc::new(Mutex::new(data)),
            page_size,
        };
        let routes = Router::new()
            .route("/v4/users/me/identity", get(identity))
            .route(
                "/v4/users/me/dataTypes/{data_type}/{collection}",
                get(list).post(rollup),
            )
            .with_state(fake.clone());
        let records_at = &["/dataPoints", "/rollupDataPoints"];
        let base = fake::serve(routes, &fake.gate, records_at).await;
        FakeGoogleHealth { base, fake }
    }

    /// Adds `point` to the data type's points, replacing one with the same `name` (the user
    /// recorded something new, or Google revised a point).
    pub fn put(&self, data_type: &str, point: Value) {
        let member = LISTED.iter().find(|(t, ..)| *t == data_type).unwrap().1;
        let mut all = self.fake.points.lock().unwrap();
        let points = all.entry(data_type.to_owned()).or_default();
        if point.get("name").is_some() {
            points.retain(|(.., p)| p.get("name") != point.get("name"));
        }
        let (start, at) = times(member, &point);
        points.push((start, at, point));
        points.sort_by_key(|(start, ..)| std::cmp::Reverse(*start));
    }
}

/// The answer to a request the fault or the token check refuses, if any.
fn refusal(fake: &Fake, headers: &HeaderMap) -> Option<Response> {
    let fault = fake.gate.meet();
    match fault {
        Some(Fault::RateLimited(seconds)) => {
            let mut answer = error(
                StatusCode::TOO_MANY_REQUESTS,
                "RESOURCE_EXHAUSTED",
                "Quota exceeded for quota metric 'Read requests' of service 'health.googleapis.com'.",
            );
            answer
                .headers_mut()
                .insert(header::RETRY_AFTER, seconds.to_string().parse().unwrap());
            return Some(answer);
        }
        Some(Fault::ServerError) => {
            return Some(error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                "Internal error encountered.",
            ));
        }
        Some(Fault::Unauthorised) => return Some(unauthenticated()),
        None => {}
    }
    (!fake.gate.bearer_ok(headers)).then(unauthenticated)
}

fn record(fake: &Fake, line: String) {
    fake.gate.note(line);
}

async fn identity(State(fake): State<Fake>, headers: HeaderMap) -> Response {
    record(&fake, "GET identity".into());
    if let Some(refused) = refusal(&fake, &headers) {
        return refused;
    }
    Json(fake.data.lock().unwrap().identity.clone()).into_response()
}

async fn list(
    State(fake): State<Fake>,
    Path((data_type, collection)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    fake.gate.note_query(&format!("GET {data_type}"), &q);
    if let Some(refused) = refusal(&fake, &headers) {
        return refused;
    }
    let Some((_, _, field, _)) = LISTED.iter().find(|(t, ..)| *t == data_type) else {
        return error(StatusCode::NOT_FOUND, "NOT_FOUND", "Unknown data type.");
    };
    if collection != "dataPoints" {
        return error(StatusCode::NOT_FOUND, "NOT_FOUND", "Not found.");
    }
    let range = match q.get("filter").map(|f| parse_filter(f, field)) {
        None => None,
        Some(Ok(r)) => Some(r),
        Some(Err(why)) => return error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", &why),
    };
    let max = if data_type == "sleep" { 25 } else { 10_000 };
    let size = match q.get("pageSize").map(|s| s.parse::<usize>()) {
        None => 1440.min(max),
        Some(Ok(s)) if s > 0 => s.min(max),
        _ => return error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", "bad pageSize"),
    };
    let all = fake.points.lock().unwrap();
    let matching: Vec<&Value> = all
        .get(&data_type)
        .map(|list| {
            list.iter()
                .filter(|(_, at, _)| range.is_none_or(|(from, to)| from <= *at && *at < to))
                .map(|(.., p)| p)
                .collect()
        })
        .unwrap_or_default();
    let filter = q.get("filter").cloned().unwrap_or_default();
    let listing = format!("{data_type} {filter}");
    let Some(offset) = fake.pager.offset(&listing, q.get("pageToken")) else {
        return error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", "bad pageToken");
    };
    let matching: Vec<Value> = matching.into_iter().cloned().collect();
    drop(all);
    let size = size.min(fake.page_size);
    let (page, token) = fake.pager.page(&listing, &matching, offset, size);
    let token = token.unwrap_or_default();
    Json(json!({"dataPoints": page, "nextPageToken": token})).into_response()
}

async fn rollup(
    State(fake): State<Fake>,
    Path((data_type, collection)): Path<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let (Some(start), Some(end)) = (
        civil_date(&body["range"]["start"]),
        civil_date(&body["range"]["end"]),
    ) else {
        return error(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            "range is required",
        );
    };
    record(
        &fake,
        format!("POST {data_type}:dailyRollUp {start}..{end}"),
    );
    if let Some(refused) = refusal(&fake, &headers) {
        return refused;
    }
    if collection != "dataPoints:dailyRollUp" {
        return error(StatusCode::NOT_FOUND, "NOT_FOUND", "Not found.");
    }
    let max = if data_type == "total-calories" {
        14
    } else {
        90
    };
    if end <= start || (end - start).num_days() > max {
        let why = format!("range must be 1 to {max} days");
        return error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", &why);
    }
    if body
        .get("windowSizeDays")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        != 1
    {
        return error(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            "the fake rolls up by day",
        );
    }
    let Some(points) = fake.data.lock().unwrap().rollups.get(&data_type).cloned() else {
        return error(StatusCode::NOT_FOUND, "NOT_FOUND", "Unknown data type.");
    };
    let days: Vec<Value> = points
        .into_iter()
        .filter(|p| civil_date(&p["civilStartTime"]).is_some_and(|d| start <= d && d < end))
        .collect();
    Json(json!({"rollupDataPoints": days})).into_response()
}
