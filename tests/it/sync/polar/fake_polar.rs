//! A fake Polar AccessLink API v3 for the connector tests: an axum server on a loopback port
//! that stands in for `www.polaraccesslink.com`. It shares no code with `wearhouse::sync`, only
//! the wire format, as Polar documents it in `www.polar.com/accesslink-api/` (read in the copy
//! `newpush/coach`, `docs/apis/polar.md`): the sections *Users* (register user), *Exercises*
//! (list exercises), *Daily activity* (list activities for given date range), *Continuous
//! Heart Rate* (samples for a date), *Sleep* (list nights), *Nightly Recharge* (list) and
//! *Rate limiting*:
//! - `POST /v3/users` with `{"member-id"}`: 200 with the user (`polar-user-id`, `member-id`,
//!   `registration-date`, ...), 409 when the token's user or the member id is registered
//!   already, 400 without a member id.
//! - `GET /v3/exercises` (an array), `GET /v3/users/sleep` (`{"nights"}`), `GET
//!   /v3/users/nightly-recharge` (`{"recharges"}`), `GET /v3/users/activities?from=&to=` (an
//!   array; `from` required, `to` defaulting to today, at most 28 days apart, `from` within 365
//!   days, else 400) and `GET /v3/users/continuous-heart-rate/{date}` (404 without data).
//!   Data is served to registered users only (the documentation: "only exercises that have
//!   been uploaded to Flow after the user is registered with your client will be returned"):
//!   before registration the lists are empty and every date is a 404.
//! - `Authorization: Bearer <token>` on every call (401 otherwise); every answer carries
//!   `RateLimit-Usage`, `RateLimit-Limit` and `RateLimit-Reset` (two comma-separated numbers:
//!   15 minutes, 24 hours); the faults of its [`Gate`]: 429 with those headers and no
//!   `Retry-After`, 500, 401, after a number of good answers.
//!
//! The skeleton (server, faults, log) is the shared fake provider's, `sync/fake/`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{NaiveDate, Utc};
use serde_json::{Value, json};

use super::super::fake::{self, Gate};

/// The only access token the fake accepts until told otherwise.
pub const TOKEN: &str = "fake-polar-access-token";

/// The Polar user id of every registered token.
pub const POLAR_USER: i64 = 2_278_512;

/// A switchable failure.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// 429 with the rate-limit headers saying this window is spent (`day`: the 24-hour one).
    RateLimited {
        day: bool,
    },
    ServerError,
    Unauthorised,
}

/// The documents served, by kind.
#[derive(Debug, Clone, Default)]
pub struct Data {
    pub exercises: Vec<Value>,
    pub nights: Vec<Value>,
    pub recharges: Vec<Value>,
    pub activities: Vec<Value>,
    pub heart_rate: Vec<Value>,
}

#[derive(Clone)]
struct Fake {
    gate: Gate<Fault>,
    data: Arc<Mutex<Data>>,
    /// Registered tokens, with their member ids.
    registered: Arc<Mutex<HashMap<String, String>>>,
}

fake::running! {
    /// A running fake Polar AccessLink; its [`Gate`] (faults, token check, log) is reached through
    /// it.
    FakePolar(Fake, Fault),
    base: "http://127.0.0.1:<port>"
}

/// A fixture file of `testdata/providers/polar/`.
pub fn fixture(name: &str) -> Value {
    fake::fixture("polar", name)
}

/// The fixtures' documents.
pub fn fixture_data() -> Data {
    let list = |v: Value| v.as_array().unwrap().clone();
    Data {
        exercises: list(fixture("exercises.json")),
        nights: list(fixture("sleep.json")["nights"].clone()),
        recharges: list(fixture("nightly_recharge.json")["recharges"].clone()),
        activities: list(fixture("activities.json")),
        heart_rate: list(fixture("continuous_heart_rate.json")),
    }
}

impl FakePolar {
    /// Starts a fake serving `data`.
    pub async fn start(data: Data) -> FakePolar {
        let fake = Fake {
            gate: Gate::new(TOKEN),
            data: Arc::new(Mutex::new(data)),
            registered: Arc::default(),
        };
        let routes = Router::new()
            .route("/v3/users", post(register))
            .route("/v3/exercises", get(exercises))
            .route("/v3/users/sleep", get(nights))
            .route("/v3/users/nightly-recharge", get(recharges))
            .route("/v3/users/activities", get(activities))
            .route("/v3/users/continuous-heart-rate/{date}", get(heart_rate))
            .with_state(fake.clone());
        let base = fake::serve(routes, &fake.gate, &["", "/nights", "/recharges"]).await;
        FakePolar { base, fake }
    }

    /// Changes the documents served (the user synchronised something new).
    pub fn edit(&self, change: impl FnOnce(&mut Data)) {
        change(&mut self.fake.data.lock().unwrap());
    }

    /// Registers `token`'s user as another partner session did before.
    pub fn register(&self, token: &str, member_id: &str) {
        let mut registered = self.fake.registered.lock().unwrap();
        registered.insert(token.into(), member_id.into());
    }

    /// The member ids registered so far.
    pub fn members(&self) -> HashSet<String> {
        let registered = self.fake.registered.lock().unwrap();
        registered.values().cloned().collect()
    }
}

/// Polar's rate-limit headers: (usage, limit, reset), each `short, long`.
fn limits(usage: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("ratelimit-usage", HeaderValue::from_str(usage).unwrap());
    h.insert("ratelimit-limit", HeaderValue::from_static("520, 5100"));
    h.insert("ratelimit-reset", HeaderValue::from_static("7, 61230"));
    h
}

/// Logs the request; answers the fault or the token check's refusal, if any, else the token.
fn admit(fake: &Fake, line: String, headers: &HeaderMap) -> Result<String, Box<Response>> {
    fake.gate.note(line);
    let fault = fake.gate.meet();
    match fault {
        Some(Fault::RateLimited { day }) => {
            let usage = if day { "12, 5100" } else { "520, 3002" };
            return Err(Box::new(
                (StatusCode::TOO_MANY_REQUESTS, limits(usage)).into_response(),
            ));
        }
        Some(Fault::ServerError) => {
            return Err(Box::new(
                (StatusCode::INTERNAL_SERVER_ERROR, "error").into_response(),
            ));
        }
        Some(Fault::Unauthorised) => {
            return Err(Box::new(StatusCode::UNAUTHORIZED.into_response()));
        }
        None => {}
    }
    fake.gate
        .bearer(headers)
        .ok_or_else(|| Box::new(StatusCode::UNAUTHORIZED.into_response()))
}

/// A JSON answer with the rate-limit headers.
fn answer(value: Value) -> Response {
    (limits("12, 3002"), Json(value)).into_response()
}

fn registered(fake: &Fake, token: &str) -> bool {
    fake.registered.lock().unwrap().contains_key(token)
}

async fn register(State(fake): State<Fake>, headers: HeaderMap, body: String) -> Response {
    let token = match admit(&fake, "POST /v3/users".into(), &headers) {
        Ok(t) => t,
        Err(refused) => return *refused,
    };
    let member = serde_json::from_str::<Value>(&body).ok().and_then(|b| {
        b.get("member-id")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let Some(member) = member.filter(|m| !m.is_empty()) else {
        return (StatusCode::BAD_REQUEST, "member-id is required").into_response();
    };
    let mut registered = fake.registered.lock().unwrap();
    if registered.contains_key(&token) || registered.values().any(|m| *m == member) {
        return StatusCode::CONFLICT.into_response();
    }
    registered.insert(token, member.clone());
    answer(json!({
        "polar-user-id": POLAR_USER, "member-id": member,
        "registration-date": Utc::now().format("%Y-%m-%dT%H:%M:%S.000Z").to_string(),
        "first-name": "Eka", "last-name": "Toka", "birthdate": "1985-09-06", "gender": "MALE",
        "weight": 66, "height": 170, "extra-info": []
    }))
}

/// A list endpoint: the documents `pick` takes, or none before registration.
fn listed(fake: &Fake, line: &str, headers: &HeaderMap, pick: fn(&Data) -> Value) -> Response {
    let token = match admit(fake, format!("GET {line}"), headers) {
        Ok(t) => t,
        Err(refused) => return *refused,
    };
    let data = if registered(fake, &token) {
        fake.data.lock().unwrap().clone()
    } else {
        Data::default()
    };
    answer(pick(&data))
}

async fn exercises(State(fake): State<Fake>, headers: HeaderMap) -> Response {
    listed(&fake, "/v3/exercises", &headers, |d| json!(d.exercises))
}

async fn nights(State(fake): State<Fake>, headers: HeaderMap) -> Response {
    listed(
        &fake,
        "/v3/users/sleep",
        &headers,
        |d| json!({"nights": d.nights}),
    )
}

async fn recharges(State(fake): State<Fake>, headers: HeaderMap) -> Response {
    listed(
        &fake,
        "/v3/users/nightly-recharge",
        &headers,
        |d| json!({"recharges": d.recharges}),
    )
}

async fn activities(
    State(fake): State<Fake>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let line = fake::query_line("GET /v3/users/activities", &q);
    let token = match admit(&fake, line, &headers) {
        Ok(t) => t,
        Err(refused) => return *refused,
    };
    let today = Utc::now().date_naive();
    let date = |k: &str| q.get(k).map(|v| v.parse::<NaiveDate>());
    let (from, to) = match (date("from"), date("to")) {
        (Some(Ok(from)), None) => (from, today),
        (Some(Ok(from)), Some(Ok(to))) => (from, to),
        _ => return (StatusCode::BAD_REQUEST, "Invalid or too old date").into_response(),
    };
    if to < from || (to - from).num_days() > 28 || (today - from).num_days() > 365 {
        return (StatusCode::BAD_REQUEST, "Invalid or too old date").into_response();
    }
    if !registered(&fake, &token) {
        return answer(json!([]));
    }
    let all = fake.data.lock().unwrap().activities.clone();
    let days: Vec<Value> = all
        .into_iter()
        .filter(|a| {
            let day = a["start_time"].as_str().unwrap()[..10]
                .parse::<NaiveDate>()
                .unwrap();
            from <= day && day <= to
        })
        .collect();
    answer(json!(days))
}

async fn heart_rate(
    State(fake): State<Fake>,
    Path(date): Path<String>,
    headers: HeaderMap,
) -> Response {
    let line = format!("GET /v3/users/continuous-heart-rate/{date}");
    let token = match admit(&fake, line, &headers) {
        Ok(t) => t,
        Err(refused) => return *refused,
    };
    if date.parse::<NaiveDate>().is_err() {
        return StatusCode::BAD_REQUEST.into_response();
    }
    let found = registered(&fake, &token)
        .then(|| {
            let data = fake.data.lock().unwrap();
            data.heart_rate
                .iter()
                .find(|d| d["date"] == json!(date))
                .cloned()
        })
        .flatten();
    match found {
        Some(day) => answer(day),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
