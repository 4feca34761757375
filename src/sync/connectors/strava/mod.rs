//! The Strava API v3 connector (`strava`): its endpoints, paging, rate limits and errors. The
//! payload-to-push-body mapping is `normalise.rs` (activities) and `streams.rs` (an activity's
//! streams); the webhook subscription's handshake and events are `webhook.rs`.
//!
//! Written against Strava's developer documentation: the API reference
//! (`developers.strava.com/docs/reference/`: `getLoggedInAthlete`, `getLoggedInAthleteActivities`,
//! `getActivityStreams`, the models `SummaryActivity`, `StreamSet`, `DetailedAthlete`),
//! `developers.strava.com/docs/authentication/`, `developers.strava.com/docs/rate-limits/` and
//! `developers.strava.com/docs/webhooks/`:
//! - `GET /athlete/activities?after=&before=&page=&per_page=` answers a JSON array of
//!   `SummaryActivity`, `after` and `before` being epoch seconds on the activity's start,
//!   `page` counting from 1 and `per_page` at most 200 (default 30).
//! - `GET /activities/{id}/streams?keys=time,heartrate,distance,watts&key_by_type=true` answers
//!   a `StreamSet`: `{"time": {"data": [...], "series_type", "original_size", "resolution"},
//!   "heartrate": {...}, ...}`, each stream as long as `time` (seconds since the activity's
//!   start), a stream the activity lacks left out.
//! - `GET /athlete` answers the authenticated athlete (`id`, `sex` `M`/`F`, ...).
//! - Authentication is `Authorization: Bearer <access token>`, the token from the OAuth 2.0
//!   authorisation code flow at `https://www.strava.com/oauth/authorize` and
//!   `https://www.strava.com/oauth/token` (client id and secret in the form; access tokens
//!   live six hours and are refreshed with the refresh token, which a refresh may replace);
//!   the scopes asked are `read,activity:read_all`, comma-separated (`providers::scopes`).
//! - 401 means the token is invalid or lacks a scope; 429 that the application's rate limit is
//!   exceeded. Strava sends no `Retry-After`: every answer carries `X-RateLimit-Limit` and
//!   `X-RateLimit-Usage` (and their `X-ReadRateLimit-*` twins for read requests), each two
//!   comma-separated numbers, the 15-minute window's then the day's. The 15-minute windows
//!   reset at 0, 15, 30 and 45 minutes past the hour, the day at midnight UTC ([`rate_limit_wait`]).
//!
//! The base URL defaults to [`DEFAULT_API_URL`]; deployments and tests override it with
//! [`API_URL_ENV`] (`WEARHOUSE_PROVIDER_STRAVA_API_URL`), passed to [`Strava::new`].
//!
//! Decisions where the documentation is silent:
//! - A window is asked with `after` = its start less one second and `before` = its end, and the
//!   answer is cut to activities whose `start_date` lies in the half-open window (Strava does
//!   not say whether its bounds are inclusive). Pages of [`PER_PAGE`] are read until one holds
//!   fewer (Strava names no last page); more than [`MAX_PAGES`] pages is a permanent failure.
//! - Streams are read for each activity in the window, except manual ones (they have none); a
//!   404 on an activity's streams (deleted since it was listed) leaves it without samples
//!   rather than failing the pull. Streams are asked only when the pull wants heart rate or
//!   workouts (the distance samples belong to the workout).
//! - Which resources a pull answers: [`Resource::Workouts`] (activities and their distance
//!   samples), [`Resource::Heartrate`] (their heart-rate samples), [`Resource::Profile`] (the
//!   athlete). The incremental pull re-reads the activities begun in its window (the last one's
//!   end less two days): an activity's title, type or privacy changed later than that is not
//!   re-read (a webhook's `update` names it, but pulls are windows, not records).
//! - Cost: every incremental pull (every 30 minutes, and on each webhook event) lists the
//!   activities begun in its window and reads the streams of each, one request per activity,
//!   against Strava's limits per application (by default 100 read requests per 15 minutes and
//!   1,000 a day): a deployment with many athletes needs Strava to raise them.
//! - A 429's wait: `Retry-After` if Strava ever sends one, else, when the day's usage has
//!   reached its limit, until midnight UTC, else until the next quarter hour.

mod normalise;
mod streams;
#[cfg(test)]
mod tests;
pub mod webhook;

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, DurationRound, Utc};
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::sync::http::Api;
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError, Window};
use normalise::Body;

/// Strava's production API.
pub const DEFAULT_API_URL: &str = "https://www.strava.com/api/v3";

/// The environment variable a deployment sets to point the connector elsewhere.
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_STRAVA_API_URL";

/// Strava's OAuth authorisation page (`developers.strava.com/docs/authentication/`).
pub const OAUTH_AUTHORIZE_URL: &str = "https://www.strava.com/oauth/authorize";

/// Strava's OAuth token endpoint (code exchange and refresh).
pub const OAUTH_TOKEN_URL: &str = "https://www.strava.com/oauth/token";

/// Activities asked a page (Strava's largest `per_page`).
pub const PER_PAGE: usize = 200;

/// The most pages one listing may take.
pub const MAX_PAGES: usize = 1_000;

/// The streams asked of every activity: `time` (the instants), and the ones kept.
pub const STREAM_KEYS: &str = "time,heartrate,distance,watts";

/// The Strava API v3 connector.
#[derive(Debug, Clone)]
pub struct Strava {
    api: Api,
    per_page: usize,
}

/// Strava's documents of one pull.
#[derive(Debug, Clone, Default)]
pub struct Documents {
    /// `SummaryActivity` documents of the window, each with its `StreamSet` when read.
    pub activities: Vec<(Value, Option<Value>)>,
    /// The `/athlete` document.
    pub athlete: Option<Value>,
}

/// What the documents of a pull are normalised into.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wanted {
    /// Workout rows and their `distance` samples.
    pub workouts: bool,
    /// `heartrate` samples.
    pub heartrate: bool,
}

/// Normalises the documents of a pull into its push body, as [`Strava`]'s pull does once it has
/// fetched them. Public so the normalisation can be measured on its own.
pub fn normalise(documents: &Documents, wanted: Wanted) -> Pulled {
    let mut body = Body::default();
    for (activity, streams) in &documents.activities {
        body.activity(activity, streams.as_ref(), wanted);
    }
    if let Some(athlete) = &documents.athlete {
        body.athlete(athlete);
    }
    body.finish()
}

impl Strava {
    fn from_api(api: Api) -> Strava {
        Strava {
            api: api.with_rate_limit_wait(rate_limit_wait),
            per_page: PER_PAGE,
        }
    }

    /// The same connector asking pages of `per_page` activities (1 to [`PER_PAGE`]): for tests
    /// that need several pages of a few activities.
    pub fn with_per_page(mut self, per_page: usize) -> Strava {
        self.per_page = per_page.clamp(1, PER_PAGE);
        self
    }

    api_constructors!(Strava, "Strava", Strava::from_api);

    /// Every activity begun in the window, all pages followed.
    async fn activities(&self, token: &str, window: &Window) -> Result<Vec<Value>, SyncError> {
        let bounds = [
            ("after", (window.start.timestamp() - 1).to_string()),
            ("before", window.end.timestamp().to_string()),
            ("per_page", self.per_page.to_string()),
        ];
        let mut found = Vec::new();
        for page in 1..=MAX_PAGES {
            let mut query = bounds.to_vec();
            query.push(("page", page.to_string()));
            let answer = self.api.get(token, "/athlete/activities", &query).await?;
            let Value::Array(items) = answer else {
                return Err(SyncError::Permanent {
                    reason: "Strava /athlete/activities: the page is not a JSON array".into(),
                });
            };
            let last = items.len() < self.per_page;
            found.extend(items.into_iter().filter(|a| starts_in(a, window)));
            if last {
                return Ok(found);
            }
        }
        Err(SyncError::Permanent {
            reason: format!("Strava /athlete/activities: more than {MAX_PAGES} pages"),
        })
    }

    /// The activity's streams, or `None` when it has none to read.
    async fn streams(&self, token: &str, activity: &Value) -> Result<Option<Value>, SyncError> {
        if activity.get("manual").and_then(Value::as_bool) == Some(true) {
            return Ok(None);
        }
        let Some(id) = activity.get("id").and_then(Value::as_i64) else {
            return Ok(None);
        };
        let query = [
            ("keys", STREAM_KEYS.to_owned()),
            ("key_by_type", "true".to_owned()),
        ];
        let path = format!("/activities/{id}/streams");
        self.api.get_optional(token, &path, &query).await
    }
}

#[async_trait::async_trait]
impl Connector for Strava {
    fn provider(&self) -> &'static str {
        "strava"
    }

    async fn pull(&self, token: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let asked: BTreeSet<Resource> = pull.resources.iter().copied().collect();
        let wanted = Wanted {
            workouts: asked.contains(&Resource::Workouts),
            heartrate: asked.contains(&Resource::Heartrate),
        };
        let mut docs = Documents::default();
        if wanted.workouts || wanted.heartrate {
            for activity in self.activities(token, &pull.window).await? {
                let streams = self.streams(token, &activity).await?;
                docs.activities.push((activity, streams));
            }
        }
        if asked.contains(&Resource::Profile) {
            docs.athlete = Some(self.api.get(token, "/athlete", &[]).await?);
        }
        Ok(normalise(&docs, wanted))
    }

    /// The athlete's `id`: the `owner_id` Strava's webhook events name.
    async fn account(&self, token: &str) -> Result<Option<String>, SyncError> {
        let athlete = self.api.get(token, "/athlete", &[]).await?;
        Ok(match athlete.get("id") {
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => None,
        })
    }
}

/// Whether an activity begins in the window. One without a readable `start_date` is kept: the
/// normaliser counts it as malformed.
fn starts_in(activity: &Value, window: &Window) -> bool {
    match activity
        .get("start_date")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
    {
        Some(at) => window.contains(at.with_timezone(&Utc)),
        None => true,
    }
}

/// The seconds a Strava 429 asks to wait, from its `X-RateLimit-*` (or `X-ReadRateLimit-*`)
/// headers at `now`: until midnight UTC when a day's usage has reached its limit, else until the
/// next quarter hour; `None` without readable headers.
pub fn rate_limit_wait(headers: &HeaderMap, now: DateTime<Utc>) -> Option<u64> {
    let pair = |name: &str| -> Option<(u64, u64)> {
        let text = headers.get(name)?.to_str().ok()?;
        let (a, b) = text.split_once(',')?;
        Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
    };
    let mut read_any = false;
    let mut daily_spent = false;
    for (limit, usage) in [
        ("x-ratelimit-limit", "x-ratelimit-usage"),
        ("x-readratelimit-limit", "x-readratelimit-usage"),
    ] {
        if let (Some((_, day_limit)), Some((_, day_usage))) = (pair(limit), pair(usage)) {
            read_any = true;
            daily_spent |= day_usage >= day_limit;
        }
    }
    if !read_any {
        return None;
    }
    let until = if daily_spent {
        now.duration_trunc(Duration::days(1)).ok()? + Duration::days(1)
    } else {
        now.duration_trunc(Duration::minutes(15)).ok()? + Duration::minutes(15)
    };
    u64::try_from((until - now).num_seconds()).ok()
}
