//! The Polar AccessLink API v3 connector (`polar`): its endpoints, registration, rate limits and
//! errors. The payload-to-push-body mapping is `normalise.rs`; webhooks are `webhook.rs`.
//!
//! Written against Polar's AccessLink documentation (`www.polar.com/accesslink-api/`, read in
//! the copy `newpush/coach`, `docs/apis/polar.md`): its sections *Authentication*, *Users*,
//! *Exercises*, *Daily activity*, *Continuous Heart Rate*, *Sleep*, *Nightly Recharge*,
//! *Rate limiting* and *Accesslink webhooks*, and the schemas `exerciseHashId`,
//! `activity-summary-with-all-samples`, `continuous-heartrate`, `nights`, `recharges`:
//! - OAuth 2.0 authorisation code at `https://flow.polar.com/oauth2/authorization`, token at
//!   `https://polarremote.com/v2/oauth2/token` with the client in HTTP Basic; the answer is
//!   `{access_token, token_type, expires_in, x_user_id}`: no refresh token ("access tokens will
//!   not expire unless explicitly revoked"), and `x_user_id` the Polar user id the webhooks name.
//!   The one scope is `accesslink.read_all` (`providers::scopes`).
//! - `POST /v3/users` with `{"member-id": ...}` registers the user with the client; the API
//!   serves a user's data only once registered ("only exercises that have been uploaded to Flow
//!   after the user is registered with your client will be returned"). 200 answers the user,
//!   409 "user already registered to partner or duplicated member-id", 403 missing consents.
//! - `GET /v3/exercises` (uploaded in the last 30 days), `GET /v3/users/sleep` (`{"nights"}`,
//!   last 28 days), `GET /v3/users/nightly-recharge` (`{"recharges"}`, last 28 days), `GET
//!   /v3/users/activities?from=&to=` (dates, at most 28 days apart, `from` within 365 days) and
//!   `GET /v3/users/continuous-heart-rate/{date}` (404: no data that day). Every call carries
//!   `Authorization: Bearer <access token>`.
//! - Every answer carries `RateLimit-Usage`, `RateLimit-Limit` and `RateLimit-Reset`, each two
//!   comma-separated numbers (the 15-minute window's, then the 24-hour window's; the reset in
//!   seconds); over a limit Polar answers 429 ([`rate_limit_wait`]).
//!
//! The base URL defaults to [`DEFAULT_API_URL`]; deployments and tests override it with
//! [`API_URL_ENV`] (`WEARHOUSE_PROVIDER_POLAR_API_URL`), passed to [`Polar::new`].
//!
//! Decisions where the documentation is silent or leaves a choice:
//! - **Non-transactional endpoints**, not the exercise and activity transactions: those are
//!   marked deprecated, answer only what no earlier transaction committed (a commit is
//!   destructive, so a crashed pull would lose data and a historical re-pull would see nothing),
//!   and cannot be asked for a window. The list endpoints are idempotent reads that a window can
//!   be cut from, so the historical and the incremental pull are the same read, and a re-read
//!   replaces by id. The price: Polar keeps exercises, sleep and recharges there for 28–30
//!   days, so a historical pull finds no older ones (activities and continuous heart rate are
//!   asked by date and reach a year back).
//! - Registration ([`Connector::register`]): each historical run starts with `POST /v3/users`,
//!   the member id being the wearhouse user id; 409 counts as registered.
//! - Cut to the window: an exercise by its start, a sleep by its start, an activity day by its
//!   UTC midnight, a heart-rate sample by its instant, so adjacent chunks never share a record.
//!   Activities are asked in ranges of at most [`MAX_RANGE_DAYS`] days, none older than
//!   [`MAX_AGE_DAYS`] (Polar refuses the range otherwise); continuous heart rate
//!   day by day, from the day before the window's (local days run ahead of UTC) to its last.
//! - Which collections a pull asks: sleep and recharges for [`Resource::Sleep`] (the recharge
//!   fills the night's heart rate, HRV and breathing), exercises for [`Resource::Workouts`],
//!   activities for [`Resource::Activity`], continuous heart rate for [`Resource::Heartrate`]
//!   (with sleep and exercises, whose offsets place its local times).
//! - A 429's wait: `Retry-After` if Polar sends one, else the reset of the 24-hour window when
//!   its usage has reached its limit, else the 15-minute window's.
//! - Not pulled: the profile (`GET /v3/users/{user-id}` needs the Polar user id, which a pull is
//!   not given), physical info (transactional only), exercise samples, zones and routes.

mod heart_rate;
mod normalise;
#[cfg(test)]
mod tests;
pub mod webhook;

use std::collections::BTreeSet;

use chrono::{DateTime, Days, NaiveDate, Utc};
use reqwest::header::{ACCEPT, HeaderMap};
use serde_json::{Value, json};

use crate::sync::http::Api;
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError, Window};
pub use normalise::{Documents, Wanted, normalise};

/// The provider's catalogue slug.
pub const SLUG: &str = "polar";

/// Polar AccessLink's production API (the documentation's base URL).
pub const DEFAULT_API_URL: &str = "https://www.polaraccesslink.com";

/// The environment variable a deployment sets to point the connector elsewhere.
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_POLAR_API_URL";

/// Polar's OAuth authorisation page.
pub const OAUTH_AUTHORIZE_URL: &str = "https://flow.polar.com/oauth2/authorization";

/// Polar's OAuth token endpoint.
pub const OAUTH_TOKEN_URL: &str = "https://polarremote.com/v2/oauth2/token";

/// The longest range `/v3/users/activities` takes, `from` and `to` included.
pub const MAX_RANGE_DAYS: u64 = 28;

/// The oldest day `/v3/users/activities` answers, in days before today.
pub const MAX_AGE_DAYS: u64 = 365;

/// The Polar AccessLink API v3 connector.
#[derive(Debug, Clone)]
pub struct Polar {
    api: Api,
    /// The client and base URL of the registration call, which [`Api`] has no verb for.
    http: reqwest::Client,
    base: String,
}

impl Polar {
    fn from_parts(base: url::Url, http: reqwest::Client) -> Polar {
        let trimmed = base.as_str().trim_end_matches('/').to_owned();
        Polar {
            api: Api::with_client("Polar", base, http.clone())
                .with_rate_limit_wait(rate_limit_wait),
            http,
            base: trimmed,
        }
    }

    /// A connector for the API at `base_url` (e.g. [`DEFAULT_API_URL`]), with its own HTTP
    /// client (30 s per request, no redirects followed).
    pub fn new(base_url: &str) -> Result<Polar, SyncError> {
        let parsed = url::Url::parse(base_url).map_err(|e| SyncError::Permanent {
            reason: format!("invalid Polar API URL {base_url:?}: {e}"),
        })?;
        Ok(Polar::from_parts(parsed, crate::sync::http::client()?))
    }

    /// A connector for the API at `base_url` over an existing client.
    pub fn with_client(base_url: url::Url, http: reqwest::Client) -> Polar {
        Polar::from_parts(base_url, http)
    }

    /// The members `key` of the document at `path` (`{"nights": [...]}`), or the document
    /// itself when it is an array (`/v3/exercises`).
    async fn list(
        &self,
        token: &str,
        path: &str,
        key: Option<&str>,
    ) -> Result<Vec<Value>, SyncError> {
        let document = self.api.get(token, path, &[]).await?;
        let found = match key {
            Some(k) => document.get(k).cloned().unwrap_or(Value::Array(Vec::new())),
            None => document,
        };
        match found {
            Value::Array(items) => Ok(items),
            // Polar's answer to "nothing yet" is not documented: an empty body reads as none.
            Value::Null => Ok(Vec::new()),
            _ => Err(SyncError::Permanent {
                reason: format!("Polar {path}: not a list"),
            }),
        }
    }

    /// The activity summaries of the days the window touches, in ranges Polar accepts (none
    /// older than [`MAX_AGE_DAYS`]).
    async fn activities(&self, token: &str, window: &Window) -> Result<Vec<Value>, SyncError> {
        let (first, last) = days(window);
        let oldest = Utc::now().date_naive() - Days::new(MAX_AGE_DAYS);
        let mut all = Vec::new();
        let mut from = first.max(oldest);
        while from <= last {
            let to = from
                .checked_add_days(Days::new(MAX_RANGE_DAYS - 1))
                .map_or(last, |d| d.min(last));
            let query = [("from", from.to_string()), ("to", to.to_string())];
            match self.api.get(token, "/v3/users/activities", &query).await? {
                Value::Array(items) => all.extend(items),
                _ => {
                    return Err(SyncError::Permanent {
                        reason: "Polar /v3/users/activities: not a list".into(),
                    });
                }
            }
            let Some(next) = to.succ_opt() else { break };
            from = next;
        }
        Ok(all)
    }

    /// The continuous heart-rate documents of the days whose local times may fall in the
    /// window: the day before its first through its last.
    async fn heart_rate(&self, token: &str, window: &Window) -> Result<Vec<Value>, SyncError> {
        let (first, last) = days(window);
        let mut day = first.pred_opt().unwrap_or(first);
        let mut all = Vec::new();
        while day <= last {
            let path = format!("/v3/users/continuous-heart-rate/{day}");
            if let Some(document) = self.api.get_optional(token, &path, &[]).await? {
                all.push(document);
            }
            let Some(next) = day.succ_opt() else { break };
            day = next;
        }
        Ok(all)
    }
}

/// The UTC calendar days of the window's first and last instants.
fn days(window: &Window) -> (NaiveDate, NaiveDate) {
    let last = window.end - chrono::Duration::microseconds(1);
    (
        window.start.date_naive(),
        last.date_naive().max(window.start.date_naive()),
    )
}

#[async_trait::async_trait]
impl Connector for Polar {
    fn provider(&self) -> &'static str {
        SLUG
    }

    async fn pull(&self, token: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let asked: BTreeSet<Resource> = pull.resources.iter().copied().collect();
        let has = |r: Resource| asked.contains(&r);
        let w = &pull.window;
        let mut docs = Documents::default();
        let heart = has(Resource::Heartrate);
        if has(Resource::Sleep) || heart {
            docs.nights = self.list(token, "/v3/users/sleep", Some("nights")).await?;
        }
        if has(Resource::Sleep) {
            docs.recharges = self
                .list(token, "/v3/users/nightly-recharge", Some("recharges"))
                .await?;
        }
        if has(Resource::Workouts) || heart {
            docs.exercises = self.list(token, "/v3/exercises", None).await?;
        }
        if has(Resource::Activity) {
            docs.activities = self.activities(token, w).await?;
        }
        if heart {
            docs.heart_rate = self.heart_rate(token, w).await?;
        }
        let wanted = Wanted {
            sleep: has(Resource::Sleep),
            workouts: has(Resource::Workouts),
            activity: has(Resource::Activity),
            heartrate: heart,
        };
        Ok(normalise(&docs, wanted, w))
    }

    /// `POST /v3/users` with the member id: registered now (200) or before (409).
    async fn register(&self, token: &str, member_id: &str) -> Result<(), SyncError> {
        let path = "/v3/users";
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .header(ACCEPT, "application/json")
            .json(&json!({ "member-id": member_id }))
            .send()
            .await
            .map_err(|e| SyncError::Transient {
                reason: format!("Polar registration request failed: {e}"),
                source: Some(e),
            })?;
        let status = response.status().as_u16();
        let wait = crate::sync::http::retry_after(response.headers(), Utc::now(), None)
            .or_else(|| rate_limit_wait(response.headers(), Utc::now()));
        match status {
            200..=299 | 409 => Ok(()),
            401 => Err(SyncError::Unauthorised),
            429 => Err(SyncError::RateLimited {
                retry_after_seconds: wait,
            }),
            403 => Err(SyncError::Permanent {
                reason: "Polar refused the registration: the user has not accepted all mandatory consents".into(),
            }),
            408 | 500..=599 => Err(SyncError::Transient {
                reason: format!("Polar answered {status} to {path}"),
                source: None,
            }),
            _ => Err(SyncError::Permanent {
                reason: format!("Polar answered {status} to {path}"),
            }),
        }
    }
}

/// The seconds a 429 asks to wait, from Polar's `RateLimit-*` headers (two comma-separated
/// numbers each, the 15-minute window's then the 24-hour window's): the 24-hour reset when
/// that window's usage has reached its limit, else the 15-minute reset.
pub fn rate_limit_wait(headers: &HeaderMap, _now: DateTime<Utc>) -> Option<u64> {
    let pair = |name: &str| -> Option<(u64, u64)> {
        let text = headers.get(name)?.to_str().ok()?;
        let (a, b) = text.split_once(',')?;
        Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
    };
    let (short, long) = pair("ratelimit-reset")?;
    let day_spent = match (pair("ratelimit-usage"), pair("ratelimit-limit")) {
        (Some((_, used)), Some((_, limit))) => used >= limit,
        _ => false,
    };
    Some(if day_spent { long } else { short })
}
