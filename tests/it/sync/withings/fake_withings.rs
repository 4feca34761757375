//! A fake Withings Public API for the connector tests: an axum server on a loopback port that
//! stands in for `wbsapi.withings.net`. It shares no code with `wearhouse::sync`, only the wire
//! format: `POST` (form body) or `GET` (query string) on `/measure` (`action=getmeas`),
//! `/v2/sleep` (`action=getsummary`) and `/v2/measure` (`action=getactivity`,
//! `action=getintradayactivity` (not paged, at most 24 hours from `startdate`), `/v2/sleep`
//! `action=get` (the state segments of a night, not paged) and
//! `action=getworkouts`), each answering
//! `{"status": 0, "body": {...}}` with the records of its range, paged by `more`/`offset`
//! (`more` as 0/1 for `getmeas`, as a boolean for the v2 services, as Withings sends them).
//! `getmeas` filters groups by `date` within `startdate..=enddate`, by `category` and
//! `meastypes`; the date-range services filter by the record's `date` within
//! `startdateymd..=enddateymd` (a record whose `date` is not a date is in every range) and keep
//! only the `data_fields` asked for, as Withings does. A bearer token it does not accept, like
//! an expired one, answers HTTP 200 with `status` 401. It can be switched to answer a fault
//! after a number of good answers: a `status` (601, 401, 522, 2554 ...) under HTTP 200, an HTTP
//! 429 with `Retry-After`, an HTTP 500, a `status` 0 without a `body`, or pages that say `more`
//! without moving `offset`. The skeleton (server, faults, log) is the shared fake provider's,
//! `sync/fake/`.

use std::collections::HashSet;
use std::ops::Deref;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use chrono::NaiveDate;
use serde_json::{Map, Value, json};

use super::super::fake::{self, Gate};

/// The access token the fake accepts unless told otherwise.
pub const TOKEN: &str = "fake-withings-access-token";

/// The `getactivity` keys that are not data fields: always sent.
const ACTIVITY_KEYS: &[&str] = &[
    "date",
    "timezone",
    "deviceid",
    "hash_deviceid",
    "brand",
    "is_tracker",
    "modified",
];

/// A switchable failure.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// HTTP 200 with `{"status": code}` (601 too many requests, 401 invalid token, 522
    /// timeout, 2554 not implemented ...).
    Status(i64),
    /// HTTP 429 with `Retry-After: retry_after`.
    HttpRateLimited { retry_after: u64 },
    /// HTTP 500.
    ServerError,
    /// HTTP 200 with `{"status": 0}` and no `body`.
    NoBody,
    /// An empty page that says `more` but never moves `offset` past 0.
    StuckOffset,
}

/// What the fake serves.
#[derive(Debug, Clone, Default)]
pub struct Data {
    /// The `timezone` of `getmeas` answers.
    pub timezone: String,
    /// `getmeas` measure groups.
    pub measuregrps: Vec<Value>,
    /// `getsummary` sleep summaries.
    pub series: Vec<Value>,
    /// `getactivity` days.
    pub activities: Vec<Value>,
    /// `getworkouts` workouts.
    pub workouts: Vec<Value>,
    /// `getintradayactivity` entries by unix seconds.
    pub intraday: Vec<(i64, Value)>,
    /// `sleep?action=get` state segments.
    pub states: Vec<Value>,
}

/// A request's parameters, query string and form body together, sorted.
struct Params(Vec<(String, String)>);

impl Params {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

struct Inner {
    data: Data,
    page_size: usize,
}

#[derive(Clone)]
struct Fake {
    gate: Gate<Fault>,
    inner: Arc<Mutex<Inner>>,
}

/// A running fake Withings API; its [`Gate`] (faults, token check, log) is reached through it.
pub struct FakeWithings {
    /// Its base URL, `http://127.0.0.1:<port>`.
    pub base: String,
    inner: Arc<Mutex<Inner>>,
    gate: Gate<Fault>,
}

impl Deref for FakeWithings {
    type Target = Gate<Fault>;
    fn deref(&self) -> &Gate<Fault> {
        &self.gate
    }
}

impl FakeWithings {
    /// Starts a fake serving `data`, `page_size` records per page.
    pub async fn start(data: Data, page_size: usize) -> FakeWithings {
        let inner = Arc::new(Mutex::new(Inner {
            data,
            page_size: page_size.max(1),
        }));
        let gate = Gate::new(TOKEN);
        let fake = Fake {
            gate: gate.clone(),
            inner: inner.clone(),
        };
        let routes = Router::new().fallback(serve).with_state(fake);
        let records_at = &[
            "/body/measuregrps",
            "/body/series",
            "/body/activities",
            "/body/workouts",
        ];
        let base = fake::serve(routes, &gate, records_at).await;
        FakeWithings { base, inner, gate }
    }

    /// Adds a measure group, or replaces the one of the same `grpid`.
    pub fn put_group(&self, group: Value) {
        put(
            &mut self.inner.lock().unwrap().data.measuregrps,
            "grpid",
            group,
        );
    }

    /// Adds a sleep summary, or replaces the one of the same `id`.
    pub fn put_series(&self, summary: Value) {
        put(&mut self.inner.lock().unwrap().data.series, "id", summary);
    }

    /// Adds an activity day, or replaces the one of the same `date`.
    pub fn put_activity(&self, day: Value) {
        put(&mut self.inner.lock().unwrap().data.activities, "date", day);
    }
}

fn put(records: &mut Vec<Value>, key: &str, record: Value) {
    records.retain(|r| r[key] != record[key]);
    records.push(record);
}

/// A fixture file of `testdata/providers/withings/`.
pub fn fixture(name: &str) -> Value {
    fake::fixture("withings", name)
}

/// The data of the fixture answers.
pub fn fixture_data() -> Data {
    let body = |name: &str| fixture(name)["body"].clone();
    let list = |v: &Value, member: &str| v[member].as_array().unwrap().clone();
    let measures = body("measures.json");
    Data {
        timezone: measures["timezone"].as_str().unwrap().to_owned(),
        measuregrps: list(&measures, "measuregrps"),
        series: list(&body("sleep.json"), "series"),
        activities: list(&body("activity.json"), "activities"),
        workouts: list(&body("workouts.json"), "series"),
        intraday: body("intraday.json")["series"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(at, entry)| (at.parse().unwrap(), entry.clone()))
            .collect(),
        states: list(&body("sleep_states.json"), "series"),
    }
}

/// `value` moved forward by `days` whole days: unix seconds under `date`, `startdate`,
/// `enddate`, `created` and `modified`, and every `YYYY-MM-DD` string.
pub fn shifted(value: &Value, days: i64) -> Value {
    const INSTANTS: &[&str] = &["date", "startdate", "enddate", "created", "modified"];
    match value {
        Value::String(s) => match NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            Ok(day) => Value::String((day + chrono::Duration::days(days)).to_string()),
            Err(_) => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| shifted(v, days)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let moved = match v.as_i64() {
                        Some(at) if INSTANTS.contains(&k.as_str()) => json!(at + days * 86_400),
                        _ => shifted(v, days),
                    };
                    (k.clone(), moved)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn status(code: i64, error: &str) -> Response {
    Json(json!({"status": code, "body": {}, "error": error})).into_response()
}

/// The answer to a request the fault or the token check refuses, if any.
fn refusal(gate: &Gate<Fault>, headers: &HeaderMap) -> Option<Response> {
    match gate.meet() {
        Some(Fault::Status(code)) => return Some(status(code, "fault")),
        Some(Fault::HttpRateLimited { retry_after }) => {
            let mut response = (StatusCode::TOO_MANY_REQUESTS, "Too Many Requests").into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, retry_after.into());
            return Some(response);
        }
        Some(Fault::ServerError) => {
            return Some(
                (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error").into_response(),
            );
        }
        Some(Fault::NoBody) => return Some(Json(json!({"status": 0})).into_response()),
        Some(Fault::StuckOffset) => {
            let page = json!({"series": [], "activities": [], "measuregrps": [], "more": true, "offset": 0});
            return Some(Json(json!({"status": 0, "body": page})).into_response());
        }
        None => {}
    }
    (!gate.bearer_ok(headers)).then(|| {
        status(
            401,
            "XRequestID: Not provided invalid_token: The access token provided is invalid",
        )
    })
}

async fn serve(State(fake): State<Fake>, uri: Uri, headers: HeaderMap, body: String) -> Response {
    let mut params: Vec<(String, String)> =
        url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .chain(url::form_urlencoded::parse(body.as_bytes()).into_owned())
            .collect();
    params.sort();
    let params = Params(params);
    let get = |k: &str| params.get(k);
    let path = uri.path().to_owned();
    let action = get("action").unwrap_or("").to_owned();
    let described: Vec<String> = params
        .0
        .iter()
        .filter(|(k, _)| k != "action")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    fake.gate
        .note(format!("{path} {action} {}", described.join("&")));
    if let Some(refused) = refusal(&fake.gate, &headers) {
        return refused;
    }
    let inner = fake.inner.lock().unwrap();
    let offset: usize = match get("offset").map(str::parse) {
        None => 0,
        Some(Ok(n)) => n,
        Some(Err(_)) => return status(503, "Invalid Params: offset"),
    };
    if (path.as_str(), action.as_str()) == ("/v2/measure", "getintradayactivity") {
        return intraday(&inner.data, &params);
    }
    if (path.as_str(), action.as_str()) == ("/v2/sleep", "get") {
        return states(&inner.data, &params);
    }
    let found = match (path.as_str(), action.as_str()) {
        ("/measure", "getmeas") => measures(&inner.data, &params),
        ("/v2/sleep", "getsummary") => ranged(&inner.data.series, &params, data_fields),
        ("/v2/measure", "getactivity") => ranged(&inner.data.activities, &params, activity_fields),
        ("/v2/measure", "getworkouts") => ranged(&inner.data.workouts, &params, data_fields),
        ("/measure" | "/v2/sleep" | "/v2/measure", _) => {
            return status(2554, "Wrong action or wrong webservice");
        }
        _ => return (StatusCode::NOT_FOUND, "Not Found").into_response(),
    };
    let records = match found {
        Ok(records) => records,
        Err(e) => return status(503, &e),
    };
    let end = (offset + inner.page_size).min(records.len());
    let page: Vec<Value> = records.get(offset..end).unwrap_or_default().to_vec();
    let more = end < records.len();
    let mut body = Map::new();
    let (member, more_value) = match action.as_str() {
        "getmeas" => {
            body.insert("updatetime".into(), json!(1_741_046_400));
            body.insert("timezone".into(), json!(inner.data.timezone));
            ("measuregrps", json!(i64::from(more)))
        }
        "getsummary" | "getworkouts" => ("series", json!(more)),
        _ => ("activities", json!(more)),
    };
    body.insert(member.into(), Value::Array(page));
    body.insert("more".into(), more_value);
    body.insert("offset".into(), json!(if more { end } else { 0 }));
    Json(json!({"status": 0, "body": body})).into_response()
}

/// `sleep?action=get`: the state segments that overlap `startdate..enddate` (at most 24 hours);
/// not paged.
fn states(data: &Data, params: &Params) -> Response {
    let int = |k: &str| params.get(k).and_then(|v| v.parse::<i64>().ok());
    let (Some(start), Some(end)) = (int("startdate"), int("enddate")) else {
        return status(503, "Invalid Params: startdate, enddate");
    };
    let end = end.min(start + 86_400);
    let series: Vec<Value> = data
        .states
        .iter()
        .filter(|s| {
            let (from, to) = (
                s["startdate"].as_i64().unwrap_or(0),
                s["enddate"].as_i64().unwrap_or(0),
            );
            from < end && to > start
        })
        .cloned()
        .collect();
    Json(json!({"status": 0, "body": {"series": series}})).into_response()
}

/// `getintradayactivity`: the entries of the first 24 hours from `startdate` (and not after
/// `enddate`), keyed by unix seconds, cut to `data_fields`; not paged.
fn intraday(data: &Data, params: &Params) -> Response {
    let int = |k: &str| params.get(k).and_then(|v| v.parse::<i64>().ok());
    let (Some(start), Some(end)) = (int("startdate"), int("enddate")) else {
        return status(503, "Invalid Params: startdate, enddate");
    };
    let fields: HashSet<&str> = params.get("data_fields").unwrap_or("").split(',').collect();
    let mut series = Map::new();
    for (at, entry) in &data.intraday {
        if *at < start || *at > end.min(start + 86_400) {
            continue;
        }
        let kept: Map<String, Value> = entry
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| !k.starts_with("heart") || fields.contains(k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        series.insert(at.to_string(), Value::Object(kept));
    }
    Json(json!({"status": 0, "body": {"series": series}})).into_response()
}

/// The measure groups `getmeas` answers for the request's range, category and types.
fn measures(data: &Data, params: &Params) -> Result<Vec<Value>, String> {
    let get = |k: &str| params.get(k);
    let int = |k: &str| -> Result<Option<i64>, String> {
        get(k)
            .map(|v| v.parse::<i64>().map_err(|_| format!("Invalid Params: {k}")))
            .transpose()
    };
    let (start, end, category) = (int("startdate")?, int("enddate")?, int("category")?);
    let types: Option<HashSet<i64>> =
        get("meastypes").map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect());
    let mut out = Vec::new();
    for group in &data.measuregrps {
        let date = group["date"].as_i64().unwrap_or(0);
        if start.is_some_and(|s| date < s) || end.is_some_and(|e| date > e) {
            continue;
        }
        if category.is_some_and(|c| group["category"].as_i64() != Some(c)) {
            continue;
        }
        let mut group = group.clone();
        if let Some(types) = &types {
            let kept: Vec<Value> = group["measures"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["type"].as_i64().is_some_and(|t| types.contains(&t)))
                .cloned()
                .collect();
            if kept.is_empty() {
                continue;
            }
            group["measures"] = Value::Array(kept);
        }
        out.push(group);
    }
    out.sort_by_key(|g| g["date"].as_i64());
    Ok(out)
}

/// The records of a date-range service for the request's `startdateymd..=enddateymd`, each
/// cut to the `data_fields` asked for by `keep`.
fn ranged(
    records: &[Value],
    params: &Params,
    keep: fn(&Value, &HashSet<&str>) -> Value,
) -> Result<Vec<Value>, String> {
    let get = |k: &str| params.get(k);
    let day = |k: &str| -> Result<NaiveDate, String> {
        get(k)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("Invalid Params: {k}"))
    };
    let (from, to) = (day("startdateymd")?, day("enddateymd")?);
    if to < from {
        return Err("Invalid Params: enddateymd".into());
    }
    let fields: Option<HashSet<&str>> = get("data_fields").map(|v| v.split(',').collect());
    Ok(records
        .iter()
        .filter(
            |r| match r["date"].as_str().and_then(|d| d.parse::<NaiveDate>().ok()) {
                Some(d) => from <= d && d <= to,
                None => true,
            },
        )
        .map(|r| match &fields {
            Some(f) => keep(r, f),
            None => r.clone(),
        })
        .collect())
}

/// A sleep summary or workout with only the asked `data` fields.
fn data_fields(record: &Value, fields: &HashSet<&str>) -> Value {
    let mut record = record.clone();
    if let Some(Value::Object(data)) = record.get_mut("data") {
        data.retain(|k, _| fields.contains(k.as_str()));
    }
    record
}

/// An activity day with only its keys and the asked fields.
fn activity_fields(record: &Value, fields: &HashSet<&str>) -> Value {
    let mut record = record.clone();
    if let Value::Object(day) = &mut record {
        day.retain(|k, _| ACTIVITY_KEYS.contains(&k.as_str()) || fields.contains(k.as_str()));
    }
    record
}
