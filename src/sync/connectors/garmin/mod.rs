//! The Garmin Connect Developer Program connector (`garmin`): the Health API's and Activity
//! API's summary endpoints, read by upload time. The document-to-push-body mapping is
//! `normalise.rs` (days in `daily.rs`, sleep stages in `sleep.rs`); notifications are `webhook.rs`.
//!
//! Written against Garmin's documentation, which Garmin gives to approved developers only and
//! which was read in text copies held in public repositories: the *Health API* v1.2.2 and the
//! *Activity API* v1.2.3 (sections *Ping Service*, *Push Service*, *Health API Integration
//! Tips*, *Summary Endpoints*, *Summary Backfill*, *Appendix E – Error Responses*), and a
//! public summary of the *OAuth2 PKCE* specification and *Start Guide* (StrideIQ's notes
//! "Garmin Connect Developer Program — API Reference"). Public clients agree on the wire:
//! `JCxYIS/garmin-health-api` (`garmin_api/const.py`: the summary paths under
//! `https://apis.garmin.com/wellness-api/rest/`) and
//! `GoFast-Athlete-Training/gofastbackendv2-fall2025` (the OAuth 2.0 endpoints):
//! - OAuth 2.0 authorisation code with PKCE (S256): the page `https://connect.garmin.com/oauth2Confirm`,
//!   the token endpoint `https://diauth.garmin.com/di-oauth2-service/oauth/token` with the
//!   client's id and secret in the form; access tokens last 24 h, refresh tokens 90 days and
//!   are replaced at each refresh. No scope: the user's own data-sharing toggles decide.
//! - `GET /wellness-api/rest/user/id` answers `{"userId"}`, the id notifications name, stable
//!   across tokens ([`Connector::account`]).
//! - Summaries: `GET /wellness-api/rest/{dailies|sleeps|bodyComps|stressDetails|...}` and the
//!   Activity API's `GET /wellness-api/rest/activities`, each with `uploadStartTimeInSeconds`
//!   and `uploadEndTimeInSeconds`: the time the user *synced*, not the data's own time, at most
//!   24 hours ([`MAX_UPLOAD_WINDOW`]) per call; a JSON array of summaries. "The latest summary
//!   should always take precedence": records come back updated with the same `summaryId`.
//! - Errors: 400 (a bad parameter), 401, 403 (an unknown or revoked token), 412 (the user
//!   switched this summary type off), 500, each with `{"errorMessage"}`.
//!
//! The base URL defaults to [`DEFAULT_API_URL`]; deployments and tests override it with
//! [`API_URL_ENV`] (`WEARHOUSE_PROVIDER_GARMIN_API_URL`), passed to [`Garmin::new`].
//!
//! Decisions where the documentation is silent or leaves a choice:
//! - **Read by upload time, pulled**: the pull window is cut into upload windows of at most
//!   24 h ([`upload_windows`]), `[start, end)` in whole seconds, each asked of every summary type
//!   the pull needs. A record belongs to the window it was uploaded in, so every record a
//!   window answers is kept, whatever its own time: adjacent chunks never share an upload, and
//!   a record re-synced later comes back in a later window with the same id and replaces the
//!   first. Garmin asks production integrations to pull only when a ping says so; here the
//!   pings ([`webhook`]) only move the connection's incremental pull earlier, and the pull reads
//!   the same endpoints with the connection's own token, never a URL a notification named.
//! - **Backfill** ([`Connector::backfill`], at the start of each historical run): data
//!   uploaded before the user connected is served only after a backfill request
//!   (`GET /wellness-api/rest/backfill/{type}?summaryStartTimeInSeconds=&summaryEndTimeInSeconds=`,
//!   by the data's own time; 202 with no body, 409 for a period asked before). Garmin delivers
//!   it later "as if data for that period was newly synced": as pings, which move the
//!   incremental pull earlier, and with recent upload times, which that pull reads. Each
//!   summary type the connector pulls is asked over the historical window in ranges of at most
//!   [`BACKFILL_RANGE_DAYS`] days (the Activity API's limit; the Health API allows 90); a 409 is
//!   success, so a resumed run asks again harmlessly. A 400, 403 or 412 (a range refused, a
//!   summary type or its history not shared by the user) is logged and passed over: the
//!   history is not to be had, and the pull of what is goes on.
//! - Which summaries a pull asks: `sleeps` for [`Resource::Sleep`] and
//!   [`Resource::BloodOxygen`] (the night's SpO2), `dailies` for [`Resource::Activity`] and
//!   [`Resource::Heartrate`] (the day's 15-s samples), `stressDetails` for
//!   [`Resource::Activity`] (the day's stress, into the `stress_level` timeseries: the pull
//!   seam has no resource of its own for it), `activities` for [`Resource::Workouts`],
//!   `bodyComps` for [`Resource::Body`]. Not pulled: epochs, user metrics, HRV, pulse ox,
//!   respiration, health snapshots, blood pressure, skin temperature, activity details and
//!   files, and a profile (the API has none).
//! - 403 and 412 are permanent failures ([`crate::sync::http::Api`]'s reading of another 4xx):
//!   a token Garmin no longer knows is also answered 401 first.

mod daily;
mod normalise;
mod sleep;
#[cfg(test)]
mod tests;
pub mod webhook;

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::sync::http::Api;
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError, Window};
pub use normalise::{Documents, Wanted, normalise};

/// The provider's catalogue slug.
pub const SLUG: &str = "garmin";

/// Garmin's production API host (the documentation's base URL).
pub const DEFAULT_API_URL: &str = "https://apis.garmin.com";

/// The environment variable a deployment sets to point the connector elsewhere.
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_GARMIN_API_URL";

/// Garmin's OAuth 2.0 (PKCE) authorisation page.
pub const OAUTH_AUTHORIZE_URL: &str = "https://connect.garmin.com/oauth2Confirm";

/// Garmin's OAuth 2.0 token endpoint.
pub const OAUTH_TOKEN_URL: &str = "https://diauth.garmin.com/di-oauth2-service/oauth/token";

/// Where the summary endpoints live under the API host.
pub const REST_PATH: &str = "/wellness-api/rest";

/// The longest upload window one summary call takes, in seconds (24 hours).
pub const MAX_UPLOAD_WINDOW: i64 = 86_400;

/// The longest range one backfill request asks, in days.
pub const BACKFILL_RANGE_DAYS: i64 = 30;

/// Every summary type the connector pulls, in the order it asks for their backfill.
pub const SUMMARIES: [Summary; 5] = [
    Summary::Dailies,
    Summary::Sleeps,
    Summary::Activities,
    Summary::BodyComps,
    Summary::StressDetails,
];

/// The API URL of this process: [`API_URL_ENV`], else [`DEFAULT_API_URL`].
pub fn api_url() -> String {
    std::env::var(API_URL_ENV).unwrap_or_else(|_| DEFAULT_API_URL.into())
}

/// A summary type, named as its endpoint is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Summary {
    /// `dailies`: one per day.
    Dailies,
    /// `sleeps`: one per night.
    Sleeps,
    /// `activities` (Activity API): one per fitness activity.
    Activities,
    /// `bodyComps`: one per weigh-in.
    BodyComps,
    /// `stressDetails`: one per day.
    StressDetails,
}

impl Summary {
    /// The endpoint's last path segment.
    pub fn path(self) -> &'static str {
        match self {
            Summary::Dailies => "dailies",
            Summary::Sleeps => "sleeps",
            Summary::Activities => "activities",
            Summary::BodyComps => "bodyComps",
            Summary::StressDetails => "stressDetails",
        }
    }
}

/// The backfill ranges of a window: `[start, end)` in whole seconds cut into spans of at most
/// [`BACKFILL_RANGE_DAYS`] days, oldest first.
pub fn backfill_ranges(window: &Window) -> Vec<(i64, i64)> {
    cut(window, BACKFILL_RANGE_DAYS * 86_400)
}

/// The upload windows a pull window is asked in: `[start, end)` cut into spans of at most
/// [`MAX_UPLOAD_WINDOW`] seconds, oldest first, in whole seconds (the start rounded down, the
/// end up, so no instant of the window is left out).
pub fn upload_windows(window: &Window) -> Vec<(i64, i64)> {
    cut(window, MAX_UPLOAD_WINDOW)
}

/// `window` in whole seconds (the start rounded down, the end up) cut into spans of `longest`.
fn cut(window: &Window, longest: i64) -> Vec<(i64, i64)> {
    let start = window.start.timestamp();
    let end = ceil_seconds(window.end);
    let mut spans = Vec::new();
    let mut from = start;
    while from < end {
        let to = (from + longest).min(end);
        spans.push((from, to));
        from = to;
    }
    spans
}

fn ceil_seconds(at: DateTime<Utc>) -> i64 {
    let whole = at.timestamp();
    if at.timestamp_subsec_nanos() > 0 {
        whole + 1
    } else {
        whole
    }
}

/// The summary types a pull of `resources` reads.
pub fn summaries(resources: &BTreeSet<Resource>) -> BTreeSet<Summary> {
    let mut wanted = BTreeSet::new();
    for r in resources {
        match r {
            Resource::Sleep | Resource::BloodOxygen => {
                wanted.insert(Summary::Sleeps);
            }
            Resource::Activity => {
                wanted.insert(Summary::Dailies);
                wanted.insert(Summary::StressDetails);
            }
            Resource::Heartrate => {
                wanted.insert(Summary::Dailies);
            }
            Resource::Workouts => {
                wanted.insert(Summary::Activities);
            }
            Resource::Body => {
                wanted.insert(Summary::BodyComps);
            }
            Resource::Hrv | Resource::Glucose | Resource::Profile => {}
        }
    }
    wanted
}

/// The Garmin Health and Activity API connector.
#[derive(Debug, Clone)]
pub struct Garmin {
    api: Api,
    /// The client and base URL of the backfill requests, whose empty 202 [`Api`] does not read.
    http: reqwest::Client,
    base: String,
}

impl Garmin {
    /// A connector for the API at `base_url` (e.g. [`DEFAULT_API_URL`]), with its own HTTP
    /// client (30 s per request, no redirects followed).
    pub fn new(base_url: &str) -> Result<Garmin, SyncError> {
        let parsed = url::Url::parse(base_url).map_err(|e| SyncError::Permanent {
            reason: format!("invalid Garmin API URL {base_url:?}: {e}"),
        })?;
        let http = crate::sync::http::client()?;
        Ok(Garmin {
            base: parsed.as_str().trim_end_matches('/').to_owned(),
            api: Api::with_client("Garmin", parsed, http.clone()),
            http,
        })
    }

    /// `GET /wellness-api/rest/backfill/{type}` for `[from, to)`: asked now (202) or before
    /// (409).
    async fn backfill_one(
        &self,
        token: &str,
        summary: Summary,
        (from, to): (i64, i64),
    ) -> Result<(), SyncError> {
        let path = format!("{REST_PATH}/backfill/{}", summary.path());
        let query = [
            ("summaryStartTimeInSeconds", from.to_string()),
            ("summaryEndTimeInSeconds", to.to_string()),
        ];
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .query(&query)
            .bearer_auth(token)
            .send()
            .await
            .map_err(|e| SyncError::Transient {
                reason: format!("Garmin backfill request failed: {e}"),
                source: Some(e),
            })?;
        let status = response.status().as_u16();
        match status {
            200..=299 | 409 => Ok(()),
            // The user did not share this summary type or its history (403, 412), or Garmin
            // refuses the range (400): the history is not to be had, the pull goes on.
            400 | 403 | 412 => {
                tracing::warn!(
                    provider = SLUG,
                    path,
                    status,
                    "Garmin refused a backfill request"
                );
                Ok(())
            }
            401 => Err(SyncError::Unauthorised),
            429 => Err(SyncError::RateLimited {
                retry_after_seconds: crate::sync::http::retry_after(
                    response.headers(),
                    Utc::now(),
                    None,
                ),
            }),
            408 | 500..=599 => Err(SyncError::Transient {
                reason: format!("Garmin answered {status} to {path}"),
                source: None,
            }),
            _ => Err(SyncError::Permanent {
                reason: format!("Garmin answered {status} to {path}"),
            }),
        }
    }

    /// The summaries of type `summary` uploaded in each of `windows`.
    async fn summaries(
        &self,
        token: &str,
        summary: Summary,
        windows: &[(i64, i64)],
    ) -> Result<Vec<Value>, SyncError> {
        let path = format!("{REST_PATH}/{}", summary.path());
        let mut all = Vec::new();
        for (from, to) in windows {
            let query = [
                ("uploadStartTimeInSeconds", from.to_string()),
                ("uploadEndTimeInSeconds", to.to_string()),
            ];
            match self.api.get(token, &path, &query).await? {
                Value::Array(items) => all.extend(items),
                // An empty answer is no summary; anything else is not the documented shape.
                Value::Null => {}
                _ => {
                    return Err(SyncError::Permanent {
                        reason: format!("Garmin {path}: not a list"),
                    });
                }
            }
        }
        Ok(all)
    }
}

#[async_trait::async_trait]
impl Connector for Garmin {
    fn provider(&self) -> &'static str {
        SLUG
    }

    async fn pull(&self, token: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let asked: BTreeSet<Resource> = pull.resources.iter().copied().collect();
        let windows = upload_windows(&pull.window);
        let mut docs = Documents::default();
        for summary in summaries(&asked) {
            let found = self.summaries(token, summary, &windows).await?;
            match summary {
                Summary::Dailies => docs.dailies = found,
                Summary::Sleeps => docs.sleeps = found,
                Summary::Activities => docs.activities = found,
                Summary::BodyComps => docs.body_comps = found,
                Summary::StressDetails => docs.stress = found,
            }
        }
        Ok(normalise(&docs, Wanted::of(&asked)))
    }

    /// Backfill of every summary type over `window`, in [`backfill_ranges`].
    async fn backfill(&self, token: &str, window: &Window) -> Result<(), SyncError> {
        let ranges = backfill_ranges(window);
        for summary in SUMMARIES {
            for range in &ranges {
                self.backfill_one(token, summary, *range).await?;
            }
        }
        Ok(())
    }

    /// `GET /wellness-api/rest/user/id`: the `userId` Garmin's notifications name.
    async fn account(&self, token: &str) -> Result<Option<String>, SyncError> {
        let path = format!("{REST_PATH}/user/id");
        let answer = self.api.get(token, &path, &[]).await?;
        match answer.get("userId") {
            Some(Value::String(id)) if !id.trim().is_empty() => Ok(Some(id.trim().to_owned())),
            _ => Err(SyncError::Permanent {
                reason: format!("Garmin {path}: no userId"),
            }),
        }
    }
}
