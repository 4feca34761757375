//! The Garmin Connect Developer Program connector (`garmin`): the Health API's and Activity
//! API's summary endpoints, read by upload time. The document-to-push-body mapping is
//! `normalise.rs` (sleep stages in `sleep.rs`); notifications are `webhook.rs`.
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
//! - **No backfill request**: data uploaded before the user connected is served only after a
//!   backfill request (`/wellness-api/rest/backfill/{type}`, asynchronous, delivered later as
//!   pings, once per user and period). A historical pull therefore finds what was uploaded
//!   since the connection; requesting backfill needs a seam the pull jobs do not have yet
//!   (a connector hook given the historical window), so it is not requested.
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

/// The upload windows a pull window is asked in: `[start, end)` cut into spans of at most
/// [`MAX_UPLOAD_WINDOW`] seconds, oldest first, in whole seconds (the start rounded down, the
/// end up, so no instant of the window is left out).
pub fn upload_windows(window: &Window) -> Vec<(i64, i64)> {
    let start = window.start.timestamp();
    let end = ceil_seconds(window.end);
    let mut windows = Vec::new();
    let mut from = start;
    while from < end {
        let to = (from + MAX_UPLOAD_WINDOW).min(end);
        windows.push((from, to));
        from = to;
    }
    windows
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
}

impl Garmin {
    /// A connector for the API at `base_url` (e.g. [`DEFAULT_API_URL`]), with its own HTTP
    /// client (30 s per request, no redirects followed).
    pub fn new(base_url: &str) -> Result<Garmin, SyncError> {
        Ok(Garmin {
            api: Api::new("Garmin", base_url)?,
        })
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
