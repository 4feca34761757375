//! A fake Fitbit Web API for the connector tests: an axum server on a loopback port that stands
//! in for `api.fitbit.com`. It shares no code with `wearhouse::sync`, only the wire format: it
//! serves the answers of `testdata/providers/fitbit/` (or generated ones) under the documented
//! paths, checks the bearer token (its own, or those a test accepts), filters the date-range endpoints by day (inclusive; sleep
//! by `dateOfSleep`, body logs by `date`) and refuses ranges over Fitbit's limits (sleep 100
//! days, weight 31, fat 30) the way Fitbit does (400 with an `errors` list), answers a day
//! without data with a zero summary or an empty dataset, and answers the faults of its
//! [`Gate`] in Fitbit's words: 429 (with `Retry-After` and `Fitbit-Rate-Limit-Reset`), 500 or
//! 401 after a number of good answers. The skeleton (server, faults, log) is the shared fake
//! provider's, `sync/fake/`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use chrono::NaiveDate;
use serde_json::{Value, json};

use super::super::fake::{self, Gate};

/// The only access token the fake accepts.
pub const TOKEN: &str = "fake-fitbit-access-token";

/// A switchable failure.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// 429 with `Retry-After: retry_after` and `Fitbit-Rate-Limit-Reset: reset`.
    RateLimited {
        retry_after: u64,
        reset: u64,
    },
    /// 429 with only `Fitbit-Rate-Limit-Reset: reset`.
    RateLimitedResetOnly {
        reset: u64,
    },
    ServerError,
    Unauthorised,
}

/// What the fake serves.
#[derive(Debug, Clone, Default)]
pub struct Data {
    pub profile: Value,
    /// Sleep logs (v1.2 shape), filtered by `dateOfSleep`.
    pub sleep: Vec<Value>,
    /// Day → daily activity summary answer.
    pub activities: HashMap<String, Value>,
    /// Day → intraday heart-rate answer.
    pub heart: HashMap<String, Value>,
    /// Day → intraday steps answer.
    pub steps: HashMap<String, Value>,
    /// Weight logs, filtered by `date`.
    pub weight: Vec<Value>,
    /// Body-fat logs, filtered by `date`.
    pub fat: Vec<Value>,
}

#[derive(Clone)]
struct Fake {
    gate: Gate<Fault>,
    data: Arc<Mutex<Data>>,
}

fake::running! {
    /// A running fake Fitbit API; its [`Gate`] (faults, token check, log) is reached through it.
    FakeFitbit(Fake, Fault),
    base: "http://127.0.0.1:<port>"
}

/// Where Fitbit's answers carry records.
const RECORDS_AT: &[&str] = &[
    "/sleep",
    "/weight",
    "/fat",
    "/activities-heart-intraday/dataset",
    "/activities-steps-intraday/dataset",
];

impl FakeFitbit {
    /// Starts a fake serving `data`.
    pub async fn start(data: Data) -> FakeFitbit {
        let fake = Fake {
            gate: Gate::new(TOKEN),
            data: Arc::new(Mutex::new(data)),
        };
        // Fitbit's paths end in `{date}.json`: one handler reads them segment by segment.
        let routes = Router::new().fallback(serve).with_state(fake.clone());
        let base = fake::serve(routes, &fake.gate, RECORDS_AT).await;
        FakeFitbit { base, fake }
    }

    /// Adds a sleep log, replacing the one with the same `logId` (the user slept, or Fitbit
    /// revised a night).
    pub fn put_sleep(&self, log: Value) {
        let mut data = self.fake.data.lock().unwrap();
        data.sleep.retain(|l| l["logId"] != log["logId"]);
        data.sleep.push(log);
    }

    /// Serves `answer` as the daily activity summary of `day` from now on.
    pub fn put_activities(&self, day: NaiveDate, answer: Value) {
        let mut data = self.fake.data.lock().unwrap();
        data.activities.insert(day.to_string(), answer);
    }

    /// Serves `answer` as the intraday heart rate of `day` from now on.
    pub fn put_heart(&self, day: NaiveDate, answer: Value) {
        let mut data = self.fake.data.lock().unwrap();
        data.heart.insert(day.to_string(), answer);
    }
}

/// A fixture file of `testdata/providers/fitbit/`.
pub fn fixture(name: &str) -> Value {
    fake::fixture("fitbit", name)
}

/// The data of the fixture files.
pub fn fixture_data() -> Data {
    let per_day = |name: &str| -> HashMap<String, Value> {
        match fixture(name) {
            Value::Object(days) => days.into_iter().collect(),
            _ => panic!("{name}"),
        }
    };
    let list = |name: &str, member: &str| fixture(name)[member].as_array().unwrap().clone();
    Data {
        profile: fixture("profile.json"),
        sleep: list("sleep.json", "sleep"),
        activities: per_day("activities.json"),
        heart: per_day("heart_intraday.json"),
        steps: per_day("steps_intraday.json"),
        weight: list("weight.json", "weight"),
        fat: list("fat.json", "fat"),
    }
}

fn errors(status: StatusCode, kind: &str, message: &str) -> Response {
    (
        status,
        Json(json!({
            "errors": [{"errorType": kind, "fieldName": "n/a", "message": message}],
            "success": false
        })),
    )
        .into_response()
}

/// The answer to a request the fault or the token check refuses, if any.
fn refusal(fake: &Fake, headers: &HeaderMap) -> Option<Response> {
    let fault = fake.gate.meet();
    let limited = |reset: u64, retry_after: Option<u64>| {
        let mut response = errors(StatusCode::TOO_MANY_REQUESTS, "system", "Too Many Requests");
        let h = response.headers_mut();
        h.insert("fitbit-rate-limit-limit", 150.into());
        h.insert("fitbit-rate-limit-remaining", 0.into());
        h.insert("fitbit-rate-limit-reset", reset.into());
        if let Some(seconds) = retry_after {
            h.insert(header::RETRY_AFTER, seconds.into());
        }
        response
    };
    match fault {
        Some(Fault::RateLimited { retry_after, reset }) => {
            return Some(limited(reset, Some(retry_after)));
        }
        Some(Fault::RateLimitedResetOnly { reset }) => return Some(limited(reset, None)),
        Some(Fault::ServerError) => {
            return Some(errors(
                StatusCode::INTERNAL_SERVER_ERROR,
                "system",
                "An unexpected error occurred",
            ));
        }
        Some(Fault::Unauthorised) => {
            return Some(errors(
                StatusCode::UNAUTHORIZED,
                "expired_token",
                "Access token expired",
            ));
        }
        None => {}
    }
    (!fake.gate.bearer_ok(headers)).then(|| {
        errors(
            StatusCode::UNAUTHORIZED,
            "invalid_token",
            "Access token invalid",
        )
    })
}

async fn serve(State(fake): State<Fake>, uri: Uri, headers: HeaderMap) -> Response {
    let path = uri.path().to_owned();
    fake.gate.note(path.clone());
    if let Some(refused) = refusal(&fake, &headers) {
        return refused;
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let data = fake.data.lock().unwrap().clone();
    match segments.as_slice() {
        ["1", "user", "-", "profile.json"] => Json(data.profile.clone()).into_response(),
        ["1.2", "user", "-", "sleep", "date", from, to] => {
            ranged(&data.sleep, "sleep", "dateOfSleep", from, to, 100)
        }
        ["1", "user", "-", "body", "log", "weight", "date", from, to] => {
            ranged(&data.weight, "weight", "date", from, to, 31)
        }
        ["1", "user", "-", "body", "log", "fat", "date", from, to] => {
            ranged(&data.fat, "fat", "date", from, to, 30)
        }
        ["1", "user", "-", "activities", "date", day] => match date(day) {
            Some(d) => Json(
                data.activities
                    .get(&d.to_string())
                    .cloned()
                    .unwrap_or_else(empty_day),
            )
            .into_response(),
            None => not_found(&path),
        },
        [
            "1",
            "user",
            "-",
            "activities",
            kind @ ("heart" | "steps"),
            "date",
            day,
            "1d",
            detail,
        ] => {
            let (map, wanted) = if *kind == "heart" {
                (&data.heart, "1min.json")
            } else {
                (&data.steps, "15min.json")
            };
            match date(&format!("{day}.json")) {
                Some(d) if *detail == wanted => Json(
                    map.get(&d.to_string())
                        .cloned()
                        .unwrap_or_else(|| empty_intraday(kind, d)),
                )
                .into_response(),
                _ => not_found(&path),
            }
        }
        _ => not_found(&path),
    }
}

fn not_found(path: &str) -> Response {
    errors(
        StatusCode::NOT_FOUND,
        "not_found",
        &format!("{path} not found"),
    )
}

/// `2025-03-01.json` → the day.
fn date(segment: &str) -> Option<NaiveDate> {
    segment.strip_suffix(".json")?.parse().ok()
}

/// The records of `items` whose `key` day lies in `from..=to`, as `{member: [...]}`.
fn ranged(
    items: &[Value],
    member: &str,
    key: &str,
    from: &str,
    to: &str,
    max_days: i64,
) -> Response {
    let (Some(from), Some(to)) = (from.parse::<NaiveDate>().ok(), date(to)) else {
        return errors(StatusCode::BAD_REQUEST, "validation", "Invalid date");
    };
    if to < from || (to - from).num_days() + 1 > max_days {
        return errors(
            StatusCode::BAD_REQUEST,
            "validation",
            &format!("The time range cannot be greater than {max_days} days"),
        );
    }
    let keep: Vec<Value> = items
        .iter()
        .filter(|item| {
            let day: NaiveDate = item[key].as_str().unwrap().parse().unwrap();
            from <= day && day <= to
        })
        .cloned()
        .collect();
    Json(json!({ member: keep })).into_response()
}

/// Fitbit's answer for a day the tracker recorded nothing: the basal calories only.
fn empty_day() -> Value {
    json!({
        "activities": [],
        "goals": {"activeMinutes": 30, "caloriesOut": 2200, "distance": 5, "steps": 10000},
        "summary": {
            "activeScore": -1, "activityCalories": 0, "caloriesBMR": 1401, "caloriesOut": 1401,
            "distances": [{"activity": "total", "distance": 0}],
            "fairlyActiveMinutes": 0, "lightlyActiveMinutes": 0, "marginalCalories": 0,
            "sedentaryMinutes": 1440, "steps": 0, "veryActiveMinutes": 0
        }
    })
}

fn empty_intraday(kind: &str, day: NaiveDate) -> Value {
    let (summary, interval) = if kind == "heart" {
        (json!({"customHeartRateZones": [], "heartRateZones": []}), 1)
    } else {
        (json!("0"), 15)
    };
    let mut answer = serde_json::Map::new();
    answer.insert(
        format!("activities-{kind}"),
        json!([{"dateTime": day.to_string(), "value": summary}]),
    );
    answer.insert(
        format!("activities-{kind}-intraday"),
        json!({"dataset": [], "datasetInterval": interval, "datasetType": "minute"}),
    );
    Value::Object(answer)
}
