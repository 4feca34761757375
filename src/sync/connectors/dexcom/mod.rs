//! The Dexcom API v3 connector: its endpoints, time windows and errors. The payload-to-push-body
//! mapping is `dexcom/normalise.rs`.
//!
//! Written against Dexcom's developer documentation (`developer.dexcom.com/docs/dexcomv3`: the
//! endpoint overview and the `getEstimatedGlucoseValuesV3` and `getDevicesV3` operations):
//! - `GET /v3/users/self/egvs?startDate=…&endDate=…` answers `{"recordType": "egv",
//!   "recordVersion": "3.0", "userId", "records": [...]}`, every record of the window in one
//!   answer (the operation documents no paging). `startDate` and `endDate` are required ISO 8601
//!   date-times, documented by example without an offset (`2022-02-06T09:12:35`). That they are
//!   read as UTC against the records' `systemTime`, and that one request may span at most
//!   [`MAX_WINDOW_DAYS`] (30) days, is not in the operation's page but in an OpenAPI
//!   transcription of the endpoint overview (`api-evangelist/dexcom` on GitHub); the connector
//!   keeps to both.
//! - Authentication is `Authorization: Bearer <access token>` (OAuth 2.0 authorisation code).
//! - 401 means the token is expired or revoked; 429 that the rate limit is exceeded (60,000
//!   requests per app per hour, per Dexcom's v2 endpoint overview, which names the 429).
//! - `GET /v3/users/self/devices` lists the user's receivers, apps and transmitters with their
//!   alert settings. The data model has no table for devices (`data-model.md`: sources are
//!   strings on every row, and a push body has one source), so the connector does not call it.
//!
//! The base URL defaults to [`DEFAULT_API_URL`] (US production; Dexcom also runs
//! `https://api.dexcom.eu`, `https://api.dexcom.jp` and the sandbox [`SANDBOX_API_URL`]);
//! deployments and tests override it with [`API_URL_ENV`]
//! (`WEARHOUSE_PROVIDER_DEXCOM_V3_API_URL`), passed to [`Dexcom::new`].
//!
//! Decisions where the documentation is silent:
//! - Whether `startDate` and `endDate` are inclusive is not said. A window is asked in chunks
//!   of at most [`MAX_WINDOW_DAYS`] with `startDate` = the chunk's start and `endDate` = its
//!   end (whole seconds: the start rounded down, the end up), and the answer is cut to records
//!   whose `systemTime` lies in the half-open chunk, so a record on a chunk boundary is kept
//!   once whichever way Dexcom reads the bounds.
//! - `Retry-After` is read as seconds or as an HTTP date; absent or unreadable, the error
//!   carries `None` and the caller picks its own backoff.
//! - 408 and every 5xx are transient; every other status but 2xx, 401 and 429 is permanent
//!   (a 400 is a window the API refused: a connector bug, not worth a retry).

mod normalise;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use chrono::{DateTime, TimeDelta, Timelike, Utc};
use serde_json::Value;

use crate::sync::http::Api;
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError, Window};
use normalise::Body;

/// Dexcom's production API host (United States).
pub const DEFAULT_API_URL: &str = "https://api.dexcom.com";

/// Dexcom's sandbox host (synthetic users `SandboxUser1` … `SandboxUser7`), for deployments
/// that test against it through [`API_URL_ENV`].
pub const SANDBOX_API_URL: &str = "https://sandbox-api.dexcom.com";

/// The environment variable a deployment sets to point the connector elsewhere.
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_DEXCOM_V3_API_URL";

/// Dexcom's OAuth sign-in page (`developer.dexcom.com/docs/dexcom/authentication`: API v3
/// keeps the `v2/oauth2` endpoints).
pub const OAUTH_AUTHORIZE_URL: &str = "https://api.dexcom.com/v2/oauth2/login";

/// Dexcom's OAuth token endpoint.
pub const OAUTH_TOKEN_URL: &str = "https://api.dexcom.com/v2/oauth2/token";

/// The longest span one EGV request may ask for, in days (Dexcom's documented limit).
pub const MAX_WINDOW_DAYS: i64 = 30;

/// The EGV endpoint's path.
const EGVS_PATH: &str = "/v3/users/self/egvs";

/// The Dexcom API v3 connector.
#[derive(Debug, Clone)]
pub struct Dexcom {
    api: Api,
}

impl Dexcom {
    fn from_api(api: Api) -> Dexcom {
        Dexcom { api }
    }

    api_constructors!(Dexcom, "Dexcom", Dexcom::from_api);

    /// Every EGV record of the window, asked in chunks the API accepts, each cut to its chunk.
    async fn egvs(&self, token: &str, window: &Window) -> Result<Vec<Value>, SyncError> {
        let mut records = Vec::new();
        for chunk in chunks(window) {
            let query = [
                ("startDate", query_time(chunk.start, false)),
                ("endDate", query_time(chunk.end, true)),
            ];
            let answer = self.api.get(token, EGVS_PATH, &query).await?;
            let found = envelope(answer, "egv")?;
            records.extend(found.into_iter().filter(|r| in_window(r, &chunk)));
        }
        Ok(records)
    }
}

#[async_trait::async_trait]
impl Connector for Dexcom {
    fn provider(&self) -> &'static str {
        "dexcom_v3"
    }

    async fn pull(&self, token: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let wanted: BTreeSet<Resource> = pull.resources.iter().copied().collect();
        let mut body = Body::default();
        if wanted.contains(&Resource::Glucose) {
            let records = self.egvs(token, &pull.window).await?;
            body.egvs(&records);
        }
        Ok(body.finish())
    }
}

/// Consecutive half-open chunks covering the window (so a record on a chunk boundary belongs
/// to one chunk only), each asked in at most [`MAX_WINDOW_DAYS`]: a chunk ends at most that
/// long after the whole second its `startDate` names, so its `endDate`, rounded up, does too
/// (a chunk of exactly 30 days from a fractional second would be asked as 30 days and 1 s,
/// which Dexcom refuses).
fn chunks(window: &Window) -> Vec<Window> {
    let step = TimeDelta::days(MAX_WINDOW_DAYS);
    let mut out = Vec::new();
    let mut start = window.start;
    while start < window.end {
        let asked_from = start.with_nanosecond(0).unwrap_or(start);
        let end = (asked_from + step).min(window.end);
        out.push(Window { start, end });
        start = end;
    }
    out
}

/// An instant as Dexcom's query parameters take it: UTC, whole seconds, no offset
/// (`2025-03-01T00:00:00`). `up` rounds a fractional second up instead of down, so that the
/// asked range always covers the chunk.
fn query_time(at: DateTime<Utc>, up: bool) -> String {
    let whole = at.with_nanosecond(0).unwrap_or(at);
    let at = if up && whole < at {
        whole + TimeDelta::seconds(1)
    } else {
        whole
    };
    at.format("%Y-%m-%dT%H:%M:%S").to_string()
}

/// Whether a record's `systemTime` lies in the window. A record without a readable
/// `systemTime` is kept: the normaliser counts it as malformed.
fn in_window(record: &Value, window: &Window) -> bool {
    match record
        .get("systemTime")
        .and_then(Value::as_str)
        .and_then(normalise::system_time)
    {
        Some(at) => window.contains(at),
        None => true,
    }
}

/// An answer's `records`, after checking it is the record type asked for.
fn envelope(answer: Value, record_type: &str) -> Result<Vec<Value>, SyncError> {
    let bad = |what: &str| SyncError::Permanent {
        reason: format!("Dexcom {record_type}s: {what}"),
    };
    let Value::Object(mut answer) = answer else {
        return Err(bad("the answer is not a JSON object"));
    };
    match answer.get("recordType").and_then(Value::as_str) {
        None => {}
        Some(t) if t == record_type => {}
        Some(other) => return Err(bad(&format!("the answer holds {other:?} records"))),
    }
    match answer.remove("records") {
        Some(Value::Array(records)) => Ok(records),
        _ => Err(bad("the answer has no `records` array")),
    }
}
