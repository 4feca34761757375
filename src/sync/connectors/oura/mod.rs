//! The Oura API v2 connector: its endpoints, paging and errors. The payload-to-push-body
//! mapping is `oura/normalise.rs`.
//!
//! Written against Oura's OpenAPI document (`Oura API` 2.0, schema 1.29, the one behind
//! `cloud.ouraring.com/v2/docs`; read from a public client library's copy):
//! - `GET /v2/usercollection/{sleep, daily_activity, workout, daily_spo2}` take `start_date`
//!   and `end_date` (`YYYY-MM-DD`) and `next_token`; `GET /v2/usercollection/heartrate` takes
//!   `start_datetime` and `end_datetime` (ISO 8601) and `next_token`. Each answers
//!   `{"data": [...], "next_token": "..." | null}`; a pull follows `next_token` until it is
//!   null or absent. `GET /v2/usercollection/personal_info` answers one object.
//! - Authentication is `Authorization: Bearer <access token>` (OAuth 2.0 or a personal token).
//! - 401 means the token is expired, malformed or revoked; 403 that the user's Oura
//!   subscription has lapsed (permanent until they renew); 429 that the rate limit is
//!   exceeded (5,000 requests per 5 minutes per token, per Oura's documentation).
//!
//! The base URL defaults to [`DEFAULT_API_URL`]; deployments and tests override it with
//! [`API_URL_ENV`] (`WEARHOUSE_PROVIDER_OURA_API_URL`), passed to [`Oura::new`].
//!
//! Decisions where the documentation is silent:
//! - Which days a date-range request covers differs between Oura's collections (some read
//!   `start_date` as exclusive, some `end_date`). A request asks for one day more on each side
//!   of the window's days, and the answer is cut to documents whose `day` is one of the UTC
//!   calendar days the window touches. Heart-rate samples are cut to the window itself.
//! - `Retry-After` is read as seconds or as an HTTP date; absent or unreadable, the error
//!   carries `None` and the caller picks its own backoff.
//! - 408 and every 5xx are transient; every other status but 2xx, 401 and 429 is permanent.
//! - Heart rate is asked in chunks of at most [`MAX_INSTANT_SPAN_DAYS`] (30) days, the range
//!   Oura's heart-rate endpoint is known to accept (other clients chunk the same way).
//! - A `next_token` seen twice in one pull, or more than [`MAX_PAGES`] pages, is a permanent
//!   failure rather than an endless loop.

mod normalise;
mod sleep;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashSet};

use chrono::{DateTime, Days, NaiveDate, SecondsFormat, TimeDelta, Utc};
use serde_json::Value;

use crate::sync::http::{Api, instant_in, token_page};
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError, Window};
use normalise::Body;

/// Oura's production API host.
pub const DEFAULT_API_URL: &str = "https://api.ouraring.com";

/// The environment variable a deployment sets to point the connector elsewhere.
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_OURA_API_URL";

/// Oura's OAuth authorisation page (`cloud.ouraring.com/docs/authentication`).
pub const OAUTH_AUTHORIZE_URL: &str = "https://cloud.ouraring.com/oauth/authorize";

/// Oura's OAuth token endpoint.
pub const OAUTH_TOKEN_URL: &str = "https://api.ouraring.com/oauth/token";

/// The most pages one request (one resource, one chunk) may answer.
pub const MAX_PAGES: usize = 10_000;

/// The longest span one heart-rate request asks for, in days. Not in Oura's OpenAPI document:
/// the limit Oura's heart-rate endpoint is known to enforce, which other clients chunk by.
pub const MAX_INSTANT_SPAN_DAYS: i64 = 30;

/// The Oura API v2 connector.
#[derive(Debug, Clone)]
pub struct Oura {
    api: Api,
}

/// How a collection is windowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Span {
    /// `start_date`/`end_date`; documents carry a `day`.
    Days,
    /// `start_datetime`/`end_datetime`; documents carry a `timestamp`.
    Instants,
}

impl Oura {
    fn from_api(api: Api) -> Oura {
        Oura { api }
    }

    api_constructors!(Oura, "Oura", Oura::from_api);

    /// Every document of a collection in the window, all pages followed; instant-windowed
    /// collections are asked in chunks of at most [`MAX_INSTANT_SPAN_DAYS`].
    async fn collection(
        &self,
        token: &str,
        name: &str,
        span: Span,
        window: &Window,
    ) -> Result<Vec<Value>, SyncError> {
        let mut documents = Vec::new();
        for chunk in chunks(span, window) {
            documents.extend(self.pages(token, name, span, &chunk).await?);
        }
        Ok(documents)
    }

    /// Every page of one request's answer, cut to `window`.
    async fn pages(
        &self,
        token: &str,
        name: &str,
        span: Span,
        window: &Window,
    ) -> Result<Vec<Value>, SyncError> {
        let path = format!("/v2/usercollection/{name}");
        let range = match span {
            Span::Days => {
                let (first, last) = days(window);
                [
                    ("start_date", shift(first, -1).to_string()),
                    ("end_date", shift(last, 1).to_string()),
                ]
            }
            Span::Instants => [
                ("start_datetime", rfc3339(window.start)),
                ("end_datetime", rfc3339(window.end)),
            ],
        };
        let mut documents = Vec::new();
        let mut next: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_PAGES {
            let mut query: Vec<(&str, String)> = range.to_vec();
            if let Some(t) = &next {
                query.push(("next_token", t.clone()));
            }
            let page = self.api.get(token, &path, &query).await?;
            let (data, token_after) =
                token_page(page, ("data", "next_token"), &format!("Oura {name}"))?;
            documents.extend(data.into_iter().filter(|d| in_window(d, span, window)));
            match token_after {
                None => return Ok(documents),
                Some(t) if !seen.insert(t.clone()) => {
                    return Err(SyncError::Permanent {
                        reason: format!("Oura {name}: next_token {t:?} came back a second time"),
                    });
                }
                Some(t) => next = Some(t),
            }
        }
        Err(SyncError::Permanent {
            reason: format!("Oura {name}: more than {MAX_PAGES} pages"),
        })
    }
}

/// Oura's documents of one pull, by collection, as its pages answered them.
#[derive(Debug, Clone, Default)]
pub struct Documents {
    /// `sleep` periods (rows and their HRV series).
    pub sleep: Vec<Value>,
    /// `daily_activity` documents.
    pub daily_activity: Vec<Value>,
    /// `workout` documents.
    pub workout: Vec<Value>,
    /// `heartrate` samples.
    pub heartrate: Vec<Value>,
    /// `daily_spo2` documents.
    pub daily_spo2: Vec<Value>,
    /// The `personal_info` document.
    pub personal_info: Option<Value>,
}

/// Normalises the documents of a pull into its push body, as [`Oura`]'s pull does once it has
/// fetched them (`sleep_rows` and `hrv` choose what the sleep periods give). Public so the
/// normalisation can be measured on its own (`benches/sync/oura.rs`).
pub fn normalise(documents: &Documents, sleep_rows: bool, hrv: bool) -> Pulled {
    let mut body = Body::default();
    if sleep_rows || hrv {
        body.sleep(&documents.sleep, sleep_rows, hrv);
    }
    body.activity(&documents.daily_activity);
    body.workouts(&documents.workout);
    body.heartrate(&documents.heartrate);
    body.spo2(&documents.daily_spo2);
    if let Some(info) = &documents.personal_info {
        body.personal_info(info);
    }
    body.finish()
}

#[async_trait::async_trait]
impl Connector for Oura {
    fn provider(&self) -> &'static str {
        "oura"
    }

    async fn pull(&self, token: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let wanted: BTreeSet<Resource> = pull.resources.iter().copied().collect();
        let w = &pull.window;
        let asked = |r: Resource| wanted.contains(&r);
        let mut docs = Documents::default();
        let (sleep_rows, hrv) = (asked(Resource::Sleep), asked(Resource::Hrv));
        if sleep_rows || hrv {
            docs.sleep = self.collection(token, "sleep", Span::Days, w).await?;
        }
        if asked(Resource::Activity) {
            docs.daily_activity = self
                .collection(token, "daily_activity", Span::Days, w)
                .await?;
        }
        if asked(Resource::Workouts) {
            docs.workout = self.collection(token, "workout", Span::Days, w).await?;
        }
        if asked(Resource::Heartrate) {
            docs.heartrate = self
                .collection(token, "heartrate", Span::Instants, w)
                .await?;
        }
        if asked(Resource::BloodOxygen) {
            docs.daily_spo2 = self.collection(token, "daily_spo2", Span::Days, w).await?;
        }
        if asked(Resource::Profile) {
            let info = self
                .api
                .get(token, "/v2/usercollection/personal_info", &[])
                .await?;
            docs.personal_info = Some(info);
        }
        Ok(normalise(&docs, sleep_rows, hrv))
    }

    /// `personal_info.id`: the `user_id` Oura's change notifications name the user by.
    async fn account(&self, token: &str) -> Result<Option<String>, SyncError> {
        let info = self
            .api
            .get(token, "/v2/usercollection/personal_info", &[])
            .await?;
        Ok(info.get("id").and_then(Value::as_str).map(str::to_owned))
    }
}

/// The windows one request each: the whole window for day-windowed collections, consecutive
/// half-open chunks of at most [`MAX_INSTANT_SPAN_DAYS`] for instant-windowed ones (so a
/// sample on a chunk boundary belongs to one chunk only).
fn chunks(span: Span, window: &Window) -> Vec<Window> {
    if span == Span::Days {
        return vec![*window];
    }
    let step = TimeDelta::days(MAX_INSTANT_SPAN_DAYS);
    let mut out = Vec::new();
    let mut start = window.start;
    while start < window.end {
        let end = (start + step).min(window.end);
        out.push(Window { start, end });
        start = end;
    }
    out
}

/// The first and last UTC calendar days the window touches.
fn days(window: &Window) -> (NaiveDate, NaiveDate) {
    let last = window.end - TimeDelta::nanoseconds(1);
    (window.start.date_naive(), last.date_naive())
}

fn shift(day: NaiveDate, by: i64) -> NaiveDate {
    let moved = if by < 0 {
        day.checked_sub_days(Days::new(by.unsigned_abs()))
    } else {
        day.checked_add_days(Days::new(by.unsigned_abs()))
    };
    moved.unwrap_or(day)
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Whether a document belongs to the window. A document without a readable `day` or
/// `timestamp` is kept: the normaliser counts it as malformed.
fn in_window(document: &Value, span: Span, window: &Window) -> bool {
    match span {
        Span::Days => {
            let (first, last) = days(window);
            match document
                .get("day")
                .and_then(Value::as_str)
                .and_then(|d| d.parse::<NaiveDate>().ok())
            {
                Some(day) => first <= day && day <= last,
                None => true,
            }
        }
        Span::Instants => instant_in(document, "timestamp", window),
    }
}
