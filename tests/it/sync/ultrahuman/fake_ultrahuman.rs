//! A fake Ultrahuman partner API for the connector tests: an axum server on a loopback port
//! that stands in for `partner.ultrahuman.com`. It shares no code with `wearhouse::sync`, only
//! the wire format, as Ultrahuman documents it (`vision.ultrahuman.com/developer-docs`, the
//! partnership API's notion page, `blog.ultrahuman.com/blog/accessing-the-ultrahuman-
//! partnership-api/`):
//! - `GET /api/v1/partner/daily_metrics` with either `date` (`YYYY-MM-DD`) or `start_epoch`
//!   and `end_epoch` (unix seconds, at most 7 days apart), never both (a 400 otherwise),
//!   answering `{"status": 200, "error": null, "data": {"metrics": {"<date>": [{"type",
//!   "object"}]}, "latest_time_zone"}}`: the days (in the user's zone) the range touches.
//! - `Authorization: Bearer <token>` checked on every call (401 otherwise), and switchable
//!   faults of its [`Gate`]: 429 with `Retry-After`, 500, 401, or a hang, after a number of good
//!   answers. Ultrahuman documents no error body; the fake answers its envelope with the
//!   status and an `error` sentence.
//!
//! The skeleton (server, faults, log, malformed records) is the shared fake provider's,
//! `sync/fake/`; the days' entry lists are where a malformed record is slipped in.

use std::collections::{BTreeMap, HashMap};
use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{NaiveDate, TimeZone};
use serde_json::{Value, json};

use super::super::fake::{self, Gate};

/// The only access token the fake accepts until told otherwise.
pub const TOKEN: &str = "fake-ultrahuman-access-token";

/// The user's zone, as the fixtures' answers name it.
pub const ZONE: &str = "Asia/Kolkata";

/// The fixture files, one kind of metric each.
pub const FILES: [&str; 8] = [
    "sleep",
    "heart_rate",
    "hrv",
    "temperature",
    "spo2",
    "steps",
    "vo2_max",
    "glucose",
];

/// The longest `start_epoch`…`end_epoch` range answered, in seconds.
const MAX_RANGE: i64 = 7 * 86_400;

/// A switchable failure.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// 429 with `Retry-After` seconds.
    RateLimited {
        retry_after: u64,
    },
    ServerError,
    Unauthorised,
    Hang,
}

/// The user's metrics: per local day, its entries.
pub type Days = BTreeMap<String, Vec<Value>>;

#[derive(Clone)]
struct Fake {
    gate: Gate<Fault>,
    days: Arc<Mutex<Days>>,
}

/// A running fake Ultrahuman API; its [`Gate`] (faults, token check, log) is reached through it.
pub struct FakeUltrahuman {
    /// Its base URL, `http://127.0.0.1:<port>`.
    pub base: String,
    fake: Fake,
}

impl Deref for FakeUltrahuman {
    type Target = Gate<Fault>;
    fn deref(&self) -> &Gate<Fault> {
        &self.fake.gate
    }
}

/// A fixture file of `testdata/providers/ultrahuman/`.
pub fn fixture(name: &str) -> Value {
    fake::fixture("ultrahuman", name)
}

/// Every fixture file's days, merged: each day's entries of every kind.
pub fn fixture_days() -> Days {
    let mut days = Days::new();
    for file in FILES {
        let answer = fixture(&format!("{file}.json"));
        for (date, entries) in answer["data"]["metrics"].as_object().unwrap() {
            days.entry(date.clone())
                .or_default()
                .extend(entries.as_array().unwrap().iter().cloned());
        }
    }
    days
}

/// The unix second a local day begins in [`ZONE`].
fn day_start(date: &str) -> i64 {
    let zone: chrono_tz::Tz = ZONE.parse().unwrap();
    let day: NaiveDate = date.parse().unwrap();
    zone.from_local_datetime(&day.and_hms_opt(0, 0, 0).unwrap())
        .unwrap()
        .timestamp()
}

impl FakeUltrahuman {
    /// Starts a fake serving `days`.
    pub async fn start(days: Days) -> FakeUltrahuman {
        // The malformed record goes into a day's entry list: one pointer per day served.
        let records_at: &'static [&'static str] = Box::leak(
            days.keys()
                .map(|d| &*Box::leak(format!("/data/metrics/{d}").into_boxed_str()))
                .collect::<Vec<&'static str>>()
                .into_boxed_slice(),
        );
        let fake = Fake {
            gate: Gate::new(TOKEN),
            days: Arc::new(Mutex::new(days)),
        };
        let routes = Router::new()
            .route("/api/v1/partner/daily_metrics", get(serve))
            .with_state(fake.clone());
        let base = fake::serve(routes, &fake.gate, records_at).await;
        FakeUltrahuman { base, fake }
    }

    /// Changes the user's metrics (new readings, a revised total).
    pub fn edit(&self, change: impl FnOnce(&mut Days)) {
        change(&mut self.fake.days.lock().unwrap());
    }
}

/// Ultrahuman's envelope around a failure.
fn failure(status: StatusCode, error: &str) -> Response {
    let body = json!({"status": status.as_u16(), "error": error, "data": null});
    (status, Json(body)).into_response()
}

/// The answer to a request the fault or the token check refuses, if any.
async fn refusal(fake: &Fake, headers: &HeaderMap) -> Option<Response> {
    match fake.gate.meet() {
        Some(Fault::RateLimited { retry_after }) => {
            let mut response = failure(StatusCode::TOO_MANY_REQUESTS, "Too many requests");
            let value = retry_after.to_string().parse().unwrap();
            response.headers_mut().insert(header::RETRY_AFTER, value);
            return Some(response);
        }
        Some(Fault::ServerError) => {
            return Some(failure(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong",
            ));
        }
        Some(Fault::Unauthorised) => {
            return Some(failure(StatusCode::UNAUTHORIZED, "Unauthorized"));
        }
        Some(Fault::Hang) => tokio::time::sleep(Duration::from_secs(30)).await,
        None => {}
    }
    (!fake.gate.bearer_ok(headers)).then(|| failure(StatusCode::UNAUTHORIZED, "Unauthorized"))
}

async fn serve(
    State(fake): State<Fake>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    fake.gate.note_query("daily_metrics", &q);
    if let Some(refused) = refusal(&fake, &headers).await {
        return refused;
    }
    let epoch = |k: &str| q.get(k).map(|v| v.parse::<i64>().ok());
    let (from, to) = match (q.get("date"), epoch("start_epoch"), epoch("end_epoch")) {
        (Some(date), None, None) => match date.parse::<NaiveDate>() {
            Ok(_) => (day_start(date), day_start(date) + 86_400),
            Err(_) => return failure(StatusCode::BAD_REQUEST, "date must be YYYY-MM-DD"),
        },
        (None, Some(Some(from)), Some(Some(to))) if from < to && to - from <= MAX_RANGE => {
            (from, to)
        }
        (None, Some(Some(_)), Some(Some(_))) => {
            return failure(
                StatusCode::BAD_REQUEST,
                "end_epoch must be after start_epoch, at most 7 days later",
            );
        }
        _ => {
            return failure(
                StatusCode::BAD_REQUEST,
                "give either date or start_epoch and end_epoch",
            );
        }
    };
    let days = fake.days.lock().unwrap().clone();
    let metrics: serde_json::Map<String, Value> = days
        .into_iter()
        .filter(|(date, _)| {
            let start = day_start(date);
            start < to && start + 86_400 > from
        })
        .map(|(date, entries)| (date, Value::Array(entries)))
        .collect();
    Json(json!({
        "status": 200,
        "error": null,
        "data": {"metrics": metrics, "latest_time_zone": ZONE},
    }))
    .into_response()
}
