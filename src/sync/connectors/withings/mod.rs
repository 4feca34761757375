//! The Withings Public API connector: its endpoints, envelope, paging and errors. The
//! payload-to-push-body mapping is `withings/normalise.rs` (measure groups in
//! `withings/measures.rs`, workouts in `withings/workouts.rs`).
//!
//! Written against Withings' API reference (`developer.withings.com/api-reference`, read in its
//! OpenAPI transcription `api-evangelist/withings`, `openapi/_original/withings-data-api-openapi.yml`:
//! the operations `measure-getmeas`, `sleepv2-getsummary`, `measurev2-getactivity`,
//! `measurev2-getworkouts` and the "Response Status" section):
//! - Every call names its operation with an `action` parameter, carries
//!   `Authorization: Bearer <access token>`, and answers `{"status": 0, "body": {...}}`. A
//!   non-zero `status` is an error even under HTTP 200 (an expired token answers HTTP 200 with
//!   `{"status": 401, "body": {}, "error": "... invalid_token ..."}`).
//! - `/measure?action=getmeas` (`startdate`, `enddate`: unix seconds; `category=1`: real
//!   measures, not objectives; `meastypes`: a comma list) answers `body.measuregrps[]`, one
//!   group per measurement (`grpid`, `date`, `measures[{value, type, unit}]`, each value being
//!   `value × 10^unit`) and `body.timezone`; `more`/`offset` page it.
//! - `/v2/sleep?action=getsummary` (`startdateymd`, `enddateymd`: `YYYY-MM-DD`; `data_fields`:
//!   the fields wanted, several are only sent when asked for) answers `body.series[]` (`id`,
//!   `startdate`, `enddate`, `timezone`, `data{...}`), paged by `more`/`offset`.
//! - `/v2/measure?action=getactivity` (`startdateymd`, `enddateymd`, `data_fields`) answers
//!   `body.activities[]`, one per local day (`date`, `timezone`, `steps`, `distance` m,
//!   `calories`, `totalcalories`, `soft`/`moderate`/`intense`/`active` s, `hr_*`), paged by
//!   `more`/`offset`.
//! - `/v2/measure?action=getworkouts` (`startdateymd`, `enddateymd`, `data_fields`) answers
//!   `body.series[]` (`id`, `category`, `timezone`, `startdate`, `enddate`, `data{...}`), paged
//!   by `more`/`offset`.
//! - The reference writes every call as a `POST` with form parameters; its own examples and
//!   Withings' integrations also send them as a query string, which is what the shared client
//!   ([`crate::sync::http::Api`]) does: one `GET` path for every connector.
//!
//! Status mapping ("Response Status": Withings names families of errors, not causes):
//!
//! | `status` | family | [`SyncError`] |
//! |---|---|---|
//! | 100–102, 200, 401 | Authentication failed | `Unauthorised` (refresh the token once) |
//! | 601 | Too many requests | `RateLimited` (the wait is that of an HTTP `Retry-After` if any, else `None`) |
//! | 522, 524 | Timeout, Bad state | `Transient` |
//! | "Invalid params" ranges ([`INVALID_PARAMS`]) | Invalid params | `Permanent` |
//! | 214, 277, 2553, 2555 | Unauthorized (the app may not call this service) | `Permanent` |
//! | 2554 | Not implemented | `Permanent` |
//! | any other | An error occurred ("if the error persists please contact us") | `Transient` |
//!
//! An HTTP status other than 2xx is mapped by the shared client (401, 429, 5xx, other 4xx).
//!
//! The base URL defaults to [`DEFAULT_API_URL`]; deployments and tests override it with
//! [`API_URL_ENV`] (`WEARHOUSE_PROVIDER_WITHINGS_API_URL`), passed to [`Withings::new`].
//!
//! Decisions where the documentation is silent:
//! - `getmeas` is asked once over the window (`startdate` = its start, `enddate` = its end,
//!   rounded outward to whole seconds) and cut to groups whose `date` lies in the half-open
//!   window. The date-range endpoints are asked in chunks of [`MAX_RANGE_DAYS`] (7, the span
//!   the reference gives for one sleep call) over the window's UTC days with one day more on
//!   each side; sleep is then cut to sessions whose end lies in the window, activity to days
//!   whose local day overlaps it, workouts to those whose start lies in it.
//! - One `getmeas` call serves [`Resource::Body`] (body rows, weight, fat and the cuff's blood
//!   pressure: the data model has no blood-pressure resource of its own) and
//!   [`Resource::Heartrate`] (the heart pulse of scales and cuffs, type 11).
//! - Each sleep summary kept is asked its states: `/v2/sleep?action=get` (`startdate`,
//!   `enddate`: the night's, unix seconds) answers `body.series[]` (`startdate`, `enddate`,
//!   `state`: 0 awake, 1 light, 2 deep, 3 REM, 4 manual, 5 unspecified, 15 out of bed), which
//!   becomes the night's hypnogram, a code a minute (`withings/normalise.rs`). One call a night:
//!   a night is shorter than the 24 hours one call answers.
//! - [`Resource::Heartrate`] also takes a watch's continuous heart rate:
//!   `/v2/measure?action=getintradayactivity` (`startdate`, `enddate`: unix seconds;
//!   `data_fields=heart_rate`) answers `body.series`, an object keyed by unix seconds whose
//!   entries carry `heart_rate` (bpm) with `deviceid` and `model`. Withings answers only the first
//!   24 hours after `startdate`, so it is asked a day at a time ([`INTRADAY_SECONDS`]). Its
//!   entries carry no zone: they take the `getmeas` answer's `timezone`, asked in the same pull.
//! - Paging stops when `more` is false or `0`; a page that says `more` without moving `offset`
//!   forward is a `Permanent` error (a loop, not data), and so is a pull over [`MAX_PAGES`]
//!   pages of one range.

mod measures;
mod normalise;
#[cfg(test)]
mod tests;
mod workouts;

use crate::sync::date_chunks;
use std::collections::BTreeSet;

use chrono::{DateTime, Days, NaiveDate, TimeDelta, Timelike, Utc};
use serde_json::{Map, Value};

use crate::sync::http::Api;
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError, Window};
use normalise::Body;

/// Withings' production API host.
pub const DEFAULT_API_URL: &str = "https://wbsapi.withings.net";

/// The environment variable a deployment sets to point the connector elsewhere.
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_WITHINGS_API_URL";

/// Withings' OAuth authorisation page (`developer.withings.com/api-reference`, OAuth 2.0).
pub const OAUTH_AUTHORIZE_URL: &str = "https://account.withings.com/oauth2_user/authorize2";

/// Withings' token endpoint (its own wire: `sync::token_wire`).
pub const OAUTH_TOKEN_URL: &str = "https://wbsapi.withings.net/v2/oauth2";

/// The longest range one `startdateymd`/`enddateymd` request asks for, in days.
pub const MAX_RANGE_DAYS: u64 = 7;

/// The most pages one range may take before the pull gives up on it.
pub const MAX_PAGES: usize = 1000;

/// The measure types asked of `getmeas` (`measures.rs` reads them).
pub const MEASURE_TYPES: &str = "1,5,6,8,9,10,11,76,77,88,170";

/// The sleep summary fields asked of `getsummary`.
pub const SLEEP_FIELDS: &str = "total_timeinbed,total_sleep_time,lightsleepduration,\
remsleepduration,deepsleepduration,wakeupduration,wakeupcount,sleep_efficiency,sleep_latency,\
hr_average,hr_min,hr_max,rr_average,sleep_score";

/// The activity fields asked of `getactivity`.
pub const ACTIVITY_FIELDS: &str = "steps,distance,elevation,soft,moderate,intense,active,\
calories,totalcalories,hr_average,hr_min,hr_max";

/// The workout fields asked of `getworkouts`.
pub const WORKOUT_FIELDS: &str = "calories,distance,elevation,steps,hr_average,hr_min,hr_max,\
pause_duration";

/// The fields asked of `getintradayactivity`.
pub const INTRADAY_FIELDS: &str = "heart_rate";

/// The span one `getintradayactivity` call answers, in seconds: Withings returns only the first
/// 24 hours after `startdate`.
pub const INTRADAY_SECONDS: i64 = 86_400;

/// The `status` codes Withings files under "Invalid params".
pub const INVALID_PARAMS: &[(i64, i64)] = &[
    (201, 213),
    (216, 218),
    (220, 221),
    (223, 223),
    (225, 225),
    (227, 230),
    (234, 236),
    (238, 238),
    (240, 252),
    (254, 254),
    (260, 267),
    (271, 272),
    (275, 276),
    (283, 288),
    (290, 290),
    (293, 295),
    (297, 297),
    (300, 304),
    (321, 321),
    (323, 353),
    (380, 382),
    (400, 400),
    (501, 511),
    (523, 523),
    (532, 532),
    (3017, 3019),
];

/// One paged endpoint: its path, action, and the member of `body` its records are in.
#[derive(Debug, Clone, Copy)]
struct Endpoint {
    path: &'static str,
    action: &'static str,
    member: &'static str,
}

const GETMEAS: Endpoint = Endpoint {
    path: "/measure",
    action: "getmeas",
    member: "measuregrps",
};

const SLEEP_SUMMARY: Endpoint = Endpoint {
    path: "/v2/sleep",
    action: "getsummary",
    member: "series",
};

const ACTIVITY: Endpoint = Endpoint {
    path: "/v2/measure",
    action: "getactivity",
    member: "activities",
};

const WORKOUTS: Endpoint = Endpoint {
    path: "/v2/measure",
    action: "getworkouts",
    member: "series",
};

/// The Withings Public API connector.
#[derive(Debug, Clone)]
pub struct Withings {
    api: Api,
}

impl Withings {
    fn from_api(api: Api) -> Withings {
        Withings { api }
    }

    api_constructors!(Withings, "Withings", Withings::from_api);

    /// Every record of `endpoint` for `params`, page by page, and the `body` of the last page
    /// (less its records) for the answer-wide fields (`timezone`).
    async fn paged(
        &self,
        token: &str,
        endpoint: Endpoint,
        params: &[(&str, String)],
    ) -> Result<(Vec<Value>, Map<String, Value>), SyncError> {
        let mut records = Vec::new();
        let mut offset: Option<i64> = None;
        for _ in 0..MAX_PAGES {
            let mut query = vec![("action", endpoint.action.to_owned())];
            query.extend(params.iter().cloned());
            if let Some(at) = offset {
                query.push(("offset", at.to_string()));
            }
            let answer = self.api.get(token, endpoint.path, &query).await?;
            let mut body = envelope(answer, endpoint.action)?;
            match body.remove(endpoint.member) {
                Some(Value::Array(items)) => records.extend(items),
                None | Some(Value::Null) => {}
                Some(_) => {
                    return Err(bad(endpoint.action, "the records are not an array"));
                }
            }
            let more = match body.get("more") {
                Some(Value::Bool(b)) => *b,
                Some(Value::Number(n)) => n.as_i64().is_some_and(|n| n != 0),
                _ => false,
            };
            if !more {
                return Ok((records, body));
            }
            let next = body.get("offset").and_then(Value::as_i64);
            match next {
                Some(n) if offset.is_none_or(|o| n > o) => offset = Some(n),
                _ => return Err(bad(endpoint.action, "`more` without a new `offset`")),
            }
        }
        Err(bad(
            endpoint.action,
            &format!("more than {MAX_PAGES} pages for one range"),
        ))
    }

    /// Every record of a date-range endpoint over `first..=last`, in chunks of
    /// [`MAX_RANGE_DAYS`].
    async fn ranged(
        &self,
        token: &str,
        endpoint: Endpoint,
        (first, last): (NaiveDate, NaiveDate),
        fields: &str,
    ) -> Result<Vec<Value>, SyncError> {
        let mut records = Vec::new();
        for (from, to) in date_chunks(first, last, MAX_RANGE_DAYS) {
            let params = [
                ("startdateymd", from.to_string()),
                ("enddateymd", to.to_string()),
                ("data_fields", fields.to_owned()),
            ];
            let (found, _) = self.paged(token, endpoint, &params).await?;
            records.extend(found);
        }
        Ok(records)
    }
}

impl Withings {
    /// Every `getintradayactivity` entry of the window, asked a day at a time: `(unix seconds
    /// as the key Withings sends, entry)`. The answer is not paged.
    async fn intraday(&self, token: &str, w: &Window) -> Result<Vec<(String, Value)>, SyncError> {
        let (mut from, end) = (w.start.timestamp(), ceil_seconds(w.end));
        let mut entries = Vec::new();
        while from < end {
            let to = (from + INTRADAY_SECONDS).min(end);
            let query = [
                ("action", "getintradayactivity".to_owned()),
                ("startdate", from.to_string()),
                ("enddate", to.to_string()),
                ("data_fields", INTRADAY_FIELDS.to_owned()),
            ];
            let answer = self.api.get(token, "/v2/measure", &query).await?;
            let mut body = envelope(answer, "getintradayactivity")?;
            match body.remove("series") {
                Some(Value::Object(series)) => entries.extend(series),
                None | Some(Value::Null) => {}
                Some(Value::Array(none)) if none.is_empty() => {}
                Some(_) => return Err(bad("getintradayactivity", "the series is not an object")),
            }
            from = to;
        }
        Ok(entries)
    }
}

#[async_trait::async_trait]
impl Connector for Withings {
    fn provider(&self) -> &'static str {
        "withings"
    }

    async fn pull(&self, token: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let wanted: BTreeSet<Resource> = pull.resources.iter().copied().collect();
        let w = pull.window;
        let mut body = Body::new(Some(w));
        let days = around(&w);
        if wanted.contains(&Resource::Sleep) {
            let series = self
                .ranged(token, SLEEP_SUMMARY, days, SLEEP_FIELDS)
                .await?;
            body.sleep(&series);
            for (night, start, end) in body.nights() {
                let query = [
                    ("action", "get".to_owned()),
                    ("startdate", start.to_string()),
                    ("enddate", end.to_string()),
                ];
                let answer = self.api.get(token, "/v2/sleep", &query).await?;
                let mut states = envelope(answer, "get")?;
                match states.remove("series") {
                    Some(Value::Array(segments)) => body.stages(night, &segments),
                    None | Some(Value::Null) => {}
                    Some(_) => return Err(bad("get", "the sleep states are not an array")),
                }
            }
        }
        if wanted.contains(&Resource::Activity) {
            let activities = self.ranged(token, ACTIVITY, days, ACTIVITY_FIELDS).await?;
            body.activity(&activities);
        }
        if wanted.contains(&Resource::Workouts) {
            let series = self.ranged(token, WORKOUTS, days, WORKOUT_FIELDS).await?;
            body.workouts(&series);
        }
        let body_wanted = wanted.contains(&Resource::Body);
        let pulse_wanted = wanted.contains(&Resource::Heartrate);
        if body_wanted || pulse_wanted {
            let params = [
                ("startdate", w.start.timestamp().to_string()),
                ("enddate", ceil_seconds(w.end).to_string()),
                ("category", "1".to_owned()),
                ("meastypes", MEASURE_TYPES.to_owned()),
            ];
            let (groups, rest) = self.paged(token, GETMEAS, &params).await?;
            let zone = rest.get("timezone").and_then(Value::as_str);
            body.measure_groups(&groups, zone, (body_wanted, pulse_wanted));
            if pulse_wanted {
                let entries = self.intraday(token, &w).await?;
                body.intraday(&entries, zone);
            }
        }
        Ok(body.finish())
    }
}

/// An answer's `body`, or the error its `status` names.
fn envelope(answer: Value, action: &str) -> Result<Map<String, Value>, SyncError> {
    let Value::Object(mut answer) = answer else {
        return Err(bad(action, "the answer is not a JSON object"));
    };
    let Some(status) = answer.get("status").and_then(Value::as_i64) else {
        return Err(bad(action, "the answer has no numeric `status`"));
    };
    if status != 0 {
        let detail = answer
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        return Err(status_error(status, action, &detail));
    }
    match answer.remove("body") {
        Some(Value::Object(body)) => Ok(body),
        _ => Err(bad(action, "status 0 without a `body` object")),
    }
}

/// The [`SyncError`] of a non-zero Withings `status` (the table in the module's docs).
pub fn status_error(status: i64, action: &str, detail: &str) -> SyncError {
    let reason = format!("Withings {action} answered status {status}: {detail}");
    match status {
        100..=102 | 200 | 401 => SyncError::Unauthorised,
        601 => SyncError::RateLimited {
            retry_after_seconds: None,
        },
        214 | 277 | 2553..=2555 => SyncError::Permanent { reason },
        s if INVALID_PARAMS
            .iter()
            .any(|(lo, hi)| (*lo..=*hi).contains(&s)) =>
        {
            SyncError::Permanent { reason }
        }
        _ => SyncError::Transient {
            reason,
            source: None,
        },
    }
}

fn bad(action: &str, what: &str) -> SyncError {
    SyncError::Permanent {
        reason: format!("Withings {action}: {what}"),
    }
}

/// The UTC days of the window with one day more on each side.
fn around(w: &Window) -> (NaiveDate, NaiveDate) {
    let first = w.start.date_naive();
    let last = (w.end - TimeDelta::seconds(1)).date_naive();
    (
        first.checked_sub_days(Days::new(1)).unwrap_or(first),
        last.checked_add_days(Days::new(1)).unwrap_or(last),
    )
}

/// An instant in unix seconds, a fractional second rounded up.
fn ceil_seconds(at: DateTime<Utc>) -> i64 {
    at.timestamp() + i64::from(at.nanosecond() > 0)
}
