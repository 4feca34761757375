//! The WHOOP API v2 connector (`whoop_v2`): its endpoints, paging and errors. The
//! payload-to-push-body mapping is `whoop/normalise.rs` (sleep and recovery in
//! `whoop/sleep.rs`).
//!
//! Written against WHOOP's developer documentation: the API reference and its OpenAPI document
//! (`developer.whoop.com/api`, served as `api.prod.whoop.com/developer/doc/openapi.json`; read
//! in the archived copy `api-evangelist/whoop`, `openapi/_original/whoop-openapi.yml`), and the
//! guides `developer.whoop.com/docs/developing/{oauth, webhooks, rate-limiting}`:
//! - `GET /v2/cycle`, `/v2/recovery`, `/v2/activity/sleep` and `/v2/activity/workout` take
//!   `limit` (at most 25), `start` (date-time, inclusive: records that occurred after or
//!   during it), `end` (date-time, exclusive: records that intersect it or ended before it) and
//!   `nextToken`; each answers `{"records": [...], "next_token": "..."}`, newest first, and a
//!   page without `next_token` is the last.
//! - `GET /v2/user/profile/basic` answers `{user_id, email, first_name, last_name}`;
//!   `GET /v2/user/measurement/body` answers `{height_meter, weight_kilogram, max_heart_rate}`.
//! - Authentication is `Authorization: Bearer <access token>` (OAuth 2.0 authorisation code at
//!   `https://api.prod.whoop.com/oauth/oauth2/auth` and `/oauth/oauth2/token`; the scopes are
//!   `read:recovery read:cycles read:workout read:sleep read:profile read:body_measurement`,
//!   and `offline` for a refresh token: `providers::scopes`).
//! - 401 means the token is invalid; 429 that a rate limit is exceeded (100 requests a minute,
//!   10,000 a day by default), with `X-RateLimit-Reset` naming the seconds until it resets.
//!
//! The base URL defaults to [`DEFAULT_API_URL`]; deployments and tests override it with
//! [`API_URL_ENV`] (`WEARHOUSE_PROVIDER_WHOOP_V2_API_URL`), passed to [`Whoop::new`].
//!
//! Decisions where the documentation is silent:
//! - A window is asked with `start` = its start and `end` = its end, at most [`PAGE_LIMIT`]
//!   records a page, and the answer is cut to records whose `start` lies in the half-open
//!   window (WHOOP answers every record the bounds intersect, so a record spanning a boundary
//!   would otherwise come in two pulls). Recoveries carry no time: each is kept with the sleep
//!   it names (`sleep_id`), asked over the same window.
//! - A 429's wait is `Retry-After` when WHOOP sends one, else `X-RateLimit-Reset`; 408 and every
//!   5xx are transient; every other status but 2xx, 401 and 429 is permanent.
//! - A `next_token` seen twice in one request, or more than [`MAX_PAGES`] pages, is a permanent
//!   failure rather than an endless loop.
//! - Which collections a pull asks: sleep and recovery for [`Resource::Sleep`] (the sleep rows
//!   carry the recovery's resting heart rate, HRV and skin temperature), [`Resource::Hrv`],
//!   [`Resource::Heartrate`] and [`Resource::BloodOxygen`]; cycles for [`Resource::Activity`];
//!   workouts for [`Resource::Workouts`]; the body measurement for [`Resource::Profile`] only.
//!   The body measurement is the user's current height and weight with no time of its own, so,
//!   like a profile, it is read by the historical pull and not every 30 minutes (each read
//!   would be a changed record).

mod normalise;
mod sleep;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashSet};

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

use crate::sync::http::{Api, instant_in, token_page};
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError, Window};
use normalise::Body;

/// WHOOP's production API (the OpenAPI document's server).
pub const DEFAULT_API_URL: &str = "https://api.prod.whoop.com/developer";

/// The environment variable a deployment sets to point the connector elsewhere.
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_WHOOP_V2_API_URL";

/// WHOOP's OAuth authorisation page (`developer.whoop.com/docs/developing/oauth`).
pub const OAUTH_AUTHORIZE_URL: &str = "https://api.prod.whoop.com/oauth/oauth2/auth";

/// WHOOP's OAuth token endpoint.
pub const OAUTH_TOKEN_URL: &str = "https://api.prod.whoop.com/oauth/oauth2/token";

/// The most records one page may hold (WHOOP's maximum `limit`).
pub const PAGE_LIMIT: usize = 25;

/// The most pages one collection request may answer.
pub const MAX_PAGES: usize = 10_000;

/// The header naming the seconds until WHOOP's rate limit resets.
const RESET_HEADER: &str = "x-ratelimit-reset";

/// The WHOOP API v2 connector.
#[derive(Debug, Clone)]
pub struct Whoop {
    api: Api,
}

/// WHOOP's documents of one pull, by collection, as its pages answered them.
#[derive(Debug, Clone, Default)]
pub struct Documents {
    /// `/v2/cycle` records.
    pub cycles: Vec<Value>,
    /// `/v2/activity/sleep` records.
    pub sleeps: Vec<Value>,
    /// `/v2/recovery` records.
    pub recoveries: Vec<Value>,
    /// `/v2/activity/workout` records.
    pub workouts: Vec<Value>,
    /// The `/v2/user/measurement/body` document.
    pub body_measurement: Option<Value>,
}

/// What the documents of a pull are normalised into.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wanted {
    /// Sleep rows (and the skin-temperature samples measured over them).
    pub sleep: bool,
    /// `hrv` samples from recoveries.
    pub hrv: bool,
    /// Resting `heartrate` samples from recoveries.
    pub heartrate: bool,
    /// `blood_oxygen` samples from recoveries.
    pub blood_oxygen: bool,
    /// The instant the body measurement is stamped with: the pull's end.
    pub measured_at: Option<DateTime<Utc>>,
}

/// Normalises the documents of a pull into its push body, as [`Whoop`]'s pull does once it has
/// fetched them. Public so the normalisation can be measured on its own.
pub fn normalise(documents: &Documents, wanted: Wanted) -> Pulled {
    let mut body = Body::default();
    if wanted.sleep {
        body.sleep(&documents.sleeps, &documents.recoveries);
    }
    body.recovery(&documents.recoveries, &documents.sleeps, wanted);
    body.cycles(&documents.cycles);
    body.workouts(&documents.workouts);
    if let (Some(document), Some(at)) = (&documents.body_measurement, wanted.measured_at) {
        body.body_measurement(document, at);
    }
    body.finish()
}

impl Whoop {
    fn from_api(api: Api) -> Whoop {
        Whoop {
            api: api.with_reset_header(RESET_HEADER),
        }
    }

    api_constructors!(Whoop, "WHOOP", Whoop::from_api);

    /// Every record of a collection (`/v2/cycle`, ...) whose window the request intersects,
    /// all pages followed; cut to the window unless `cut` is false (recoveries carry no time).
    async fn collection(
        &self,
        token: &str,
        path: &str,
        window: &Window,
        cut: bool,
    ) -> Result<Vec<Value>, SyncError> {
        let range = [
            ("limit", PAGE_LIMIT.to_string()),
            ("start", rfc3339(window.start)),
            ("end", rfc3339(window.end)),
        ];
        let mut records = Vec::new();
        let mut next: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_PAGES {
            let mut query: Vec<(&str, String)> = range.to_vec();
            if let Some(t) = &next {
                query.push(("nextToken", t.clone()));
            }
            let page = self.api.get(token, path, &query).await?;
            let (data, token_after) =
                token_page(page, ("records", "next_token"), &format!("WHOOP {path}"))?;
            records.extend(
                data.into_iter()
                    .filter(|r| !cut || instant_in(r, "start", window)),
            );
            match token_after {
                None => return Ok(records),
                Some(t) if !seen.insert(t.clone()) => {
                    return Err(SyncError::Permanent {
                        reason: format!("WHOOP {path}: next_token {t:?} came back a second time"),
                    });
                }
                Some(t) => next = Some(t),
            }
        }
        Err(SyncError::Permanent {
            reason: format!("WHOOP {path}: more than {MAX_PAGES} pages"),
        })
    }
}

#[async_trait::async_trait]
impl Connector for Whoop {
    fn provider(&self) -> &'static str {
        "whoop_v2"
    }

    async fn pull(&self, token: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let asked: BTreeSet<Resource> = pull.resources.iter().copied().collect();
        let has = |r: Resource| asked.contains(&r);
        let w = &pull.window;
        let wanted = Wanted {
            sleep: has(Resource::Sleep),
            hrv: has(Resource::Hrv),
            heartrate: has(Resource::Heartrate),
            blood_oxygen: has(Resource::BloodOxygen),
            measured_at: has(Resource::Profile).then_some(w.end),
        };
        let mut docs = Documents::default();
        if wanted.sleep || wanted.hrv || wanted.heartrate || wanted.blood_oxygen {
            docs.sleeps = self
                .collection(token, "/v2/activity/sleep", w, true)
                .await?;
            docs.recoveries = self.collection(token, "/v2/recovery", w, false).await?;
        }
        if has(Resource::Activity) {
            docs.cycles = self.collection(token, "/v2/cycle", w, true).await?;
        }
        if has(Resource::Workouts) {
            docs.workouts = self
                .collection(token, "/v2/activity/workout", w, true)
                .await?;
        }
        if has(Resource::Profile) {
            let body = self
                .api
                .get(token, "/v2/user/measurement/body", &[])
                .await?;
            docs.body_measurement = Some(body);
        }
        Ok(normalise(&docs, wanted))
    }

    /// The basic profile's `user_id`: the user WHOOP's webhooks name (its token answer does not
    /// carry it).
    async fn account(&self, token: &str) -> Result<Option<String>, SyncError> {
        let profile = self.api.get(token, "/v2/user/profile/basic", &[]).await?;
        Ok(match profile.get("user_id") {
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => None,
        })
    }
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}
