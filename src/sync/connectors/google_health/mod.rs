//! The Google Health API connector (`google_health`), the successor of the Fitbit Web API that
//! Google turned off on 2 November 2026: its endpoints and paging (`pull.rs`), its OAuth
//! specifics (`access.rs`), and the payload-to-push-body mapping (`normalise.rs`, sleep in
//! `sleep.rs`).
//!
//! Written against Google's documentation of the API (`developers.google.com/health`): the REST
//! reference of `health.googleapis.com/v4` and its discovery document (`health:v4`, revision
//! 20260527, as vendored by `googleapis/google-api-go-client`, `health/v4/health-api.json`),
//! the data-types table (`/health/data-types`), the endpoint conventions (`/health/endpoints`),
//! the scopes (`/health/scopes`) and the Fitbit migration guide (`/health/migration`):
//! - One uniform resource per data type: `GET /v4/users/me/dataTypes/{type}/dataPoints`
//!   (`users.dataTypes.dataPoints.list`) with `filter` (AIP-160: `{type}.sample_time.
//!   physical_time >= "…" AND … < "…"` for sample types, `sleep.interval.end_time` for sleep),
//!   `pageSize` (at most 10,000; 25 for `sleep` and `exercise`) and `pageToken`; it answers
//!   `{"dataPoints": [...], "nextPageToken": "…"}`, newest first, an empty or absent token on
//!   the last page. Each data point carries one member named after its type (`heartRate`,
//!   `sleep`, …), physical instants (RFC 3339, UTC) with the wearer's UTC offset beside them
//!   (`utcOffset`, `startUtcOffset`, a `google-duration` such as `"3600s"`), int64 values as
//!   JSON strings, and, for identifiable types, a `name`
//!   `users/{user}/dataTypes/{type}/dataPoints/{id}`.
//! - Daily totals: `POST /v4/users/me/dataTypes/{type}/dataPoints:dailyRollUp` with
//!   `{"range": {"start": CivilDateTime, "end": CivilDateTime}, "windowSizeDays": 1}` answers
//!   `{"rollupDataPoints": [{"civilStartTime", "civilEndTime", "<type>": {...Sum}}]}`, one per
//!   civil day of the user; at most 14 days a request for `total-calories` (90 for the rest).
//! - `GET /v4/users/me/identity` answers `{healthUserId, legacyUserId}`: the id webhooks name,
//!   and the legacy Fitbit user id.
//! - Authentication is `Authorization: Bearer <access token>`; errors are Google's
//!   `{"error": {"code", "message", "status"}}` with the HTTP status (401 `UNAUTHENTICATED`,
//!   403 `PERMISSION_DENIED` for a scope not granted, 429 `RESOURCE_EXHAUSTED`).
//!
//! The base URL defaults to [`DEFAULT_API_URL`]; deployments and tests override it with
//! [`API_URL_ENV`] (`WEARHOUSE_PROVIDER_GOOGLE_HEALTH_API_URL`); the OAuth endpoints are in
//! `--oauth-apps` (defaults [`access::OAUTH_AUTHORIZE_URL`], [`access::OAUTH_TOKEN_URL`]).
//!
//! ## The Fitbit story
//! `google_health` is a provider of its own, not a new wire behind the `fitbit` slug: Google's
//! migration guide says a legacy token cannot be carried over ("your users must re-consent";
//! the OAuth client, scopes and user ids all change), so a `fitbit` connection cannot become a
//! Google Health one without the user. A legacy `fitbit` connection keeps its stored data under
//! `fitbit`; its pulls fail at Google's turned-off host (a failed job each time, or the
//! connection in `error` once Fitbit's token endpoint refuses a refresh), and the user re-links
//! through `google_health`, whose historical pull brings the same Fitbit account's last 90 days
//! (Google Health serves the account's Fitbit history) under `google_health`, which ranks where
//! `fitbit` does in the default provider priority. `identity.legacyUserId` is the bridge a team
//! can use to match the two.
//!
//! ## Decisions where the documentation is silent or thin
//! - Which types a pull reads: `sleep` ([`Resource::Sleep`]); the daily roll-ups of `steps`,
//!   `distance`, `total-calories` and `active-energy-burned` ([`Resource::Activity`]);
//!   `heart-rate`, `heart-rate-variability`, `oxygen-saturation` samples ([`Resource::Heartrate`],
//!   [`Resource::Hrv`], [`Resource::BloodOxygen`]); `weight` and `body-fat`
//!   ([`Resource::Body`]); the newest `height` ([`Resource::Profile`]: the profile resource,
//!   `users/me/profile`, holds only an age and stride lengths, none of which the data model
//!   keeps). Exercises and the daily summaries without a time of day (`daily-resting-heart-rate`,
//!   `daily-heart-rate-variability`, `daily-oxygen-saturation`) are not read.
//! - Windows: sample types are asked by physical time over the window; sleep by its end (the
//!   only sleep filter on physical time), so a night belongs to the pull its end falls in.
//!   Roll-ups are asked per UTC calendar day the window touches (the user's civil day is not
//!   known before the answer), in ranges of [`ROLLUP_MAX_DAYS`]; a day at either edge is asked
//!   whole, and a later pull replaces it (activity rows are keyed by day).
//! - The docs give no limit on a list's time range: a window is one filter, its pages followed.
//! - A `nextPageToken` seen twice in one request, or more than [`MAX_PAGES`] pages, is a
//!   permanent failure rather than an endless loop. 408 and 5xx are transient; 403 (a scope
//!   not granted) and every other 4xx but 401 and 429 permanent.
//! - Webhooks (`webhook.rs`): verified by the subscriber's `Authorization` secret; each
//!   queues the named user's incremental pull.

pub mod access;
mod normalise;
mod pull;
mod sleep;
#[cfg(test)]
mod tests;
pub mod webhook;

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::sync::http::Api;
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError};
use normalise::Body;

/// Google Health API's production host (the discovery document's `rootUrl`).
pub const DEFAULT_API_URL: &str = "https://health.googleapis.com";

/// The environment variable a deployment sets to point the connector elsewhere.
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_GOOGLE_HEALTH_API_URL";

/// The most days one `dailyRollUp` request covers (`total-calories`' limit, the smallest).
pub const ROLLUP_MAX_DAYS: u64 = 14;

/// The most pages one list request may answer.
pub const MAX_PAGES: usize = 10_000;

/// The provider slug.
pub const SLUG: &str = "google_health";

/// The Google Health API connector.
#[derive(Debug, Clone)]
pub struct GoogleHealth {
    api: Api,
}

/// The documents of one pull, by data type, as the API answered them.
#[derive(Debug, Clone, Default)]
pub struct Documents {
    /// `sleep` data points.
    pub sleep: Vec<Value>,
    /// `heart-rate` data points.
    pub heart_rate: Vec<Value>,
    /// `heart-rate-variability` data points.
    pub hrv: Vec<Value>,
    /// `oxygen-saturation` data points.
    pub oxygen: Vec<Value>,
    /// `weight` data points.
    pub weight: Vec<Value>,
    /// `body-fat` data points.
    pub body_fat: Vec<Value>,
    /// The newest `height` data point, if any.
    pub height: Option<Value>,
    /// Daily roll-up points by data type (`steps`, `distance`, `total-calories`,
    /// `active-energy-burned`).
    pub rollups: Vec<(String, Vec<Value>)>,
}

/// Normalises the documents of a pull into its push body, as [`GoogleHealth`]'s pull does once
/// it has fetched them. Public so the normalisation can be measured on its own.
pub fn normalise(documents: &Documents) -> Pulled {
    let mut body = Body::default();
    body.sleep(&documents.sleep);
    body.samples(pull::HEART_RATE, &documents.heart_rate);
    body.samples(pull::HRV, &documents.hrv);
    body.samples(pull::OXYGEN, &documents.oxygen);
    body.weights(&documents.weight, &documents.body_fat);
    if let Some(height) = &documents.height {
        body.height(height);
    }
    body.activity(&documents.rollups);
    body.finish()
}

impl GoogleHealth {
    fn from_api(api: Api) -> GoogleHealth {
        GoogleHealth { api }
    }

    api_constructors!(GoogleHealth, "Google Health", GoogleHealth::from_api);
}

#[async_trait::async_trait]
impl Connector for GoogleHealth {
    fn provider(&self) -> &'static str {
        SLUG
    }

    async fn pull(&self, token: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let asked: BTreeSet<Resource> = pull.resources.iter().copied().collect();
        let has = |r: Resource| asked.contains(&r);
        let w = &pull.window;
        let api = &self.api;
        let mut docs = Documents::default();
        if has(Resource::Sleep) {
            docs.sleep = pull::list(api, token, &pull::SLEEP, Some(w)).await?;
        }
        if has(Resource::Activity) {
            for kind in pull::ROLLED_UP {
                let points = pull::daily_rollup(api, token, kind, w).await?;
                docs.rollups.push((kind.to_owned(), points));
            }
        }
        if has(Resource::Heartrate) {
            docs.heart_rate = pull::list(api, token, &pull::HEART_RATE, Some(w)).await?;
        }
        if has(Resource::Hrv) {
            docs.hrv = pull::list(api, token, &pull::HRV, Some(w)).await?;
        }
        if has(Resource::BloodOxygen) {
            docs.oxygen = pull::list(api, token, &pull::OXYGEN, Some(w)).await?;
        }
        if has(Resource::Body) {
            docs.weight = pull::list(api, token, &pull::WEIGHT, Some(w)).await?;
            docs.body_fat = pull::list(api, token, &pull::BODY_FAT, Some(w)).await?;
        }
        if has(Resource::Profile) {
            docs.height = pull::newest(api, token, &pull::HEIGHT).await?;
        }
        Ok(normalise(&docs))
    }

    /// The identity's `healthUserId`: the user Google's webhooks name (its token answer does
    /// not carry it).
    async fn account(&self, token: &str) -> Result<Option<String>, SyncError> {
        let identity = self.api.get(token, "/v4/users/me/identity", &[]).await?;
        Ok(identity
            .get("healthUserId")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map(str::to_owned))
    }
}

/// An instant as Google's filters and bodies write it (RFC 3339, UTC, whole seconds).
fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
