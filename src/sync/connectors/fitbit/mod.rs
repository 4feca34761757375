//! The Fitbit Web API connector: its endpoints, chunking and errors. The payload-to-push-body
//! mapping is `fitbit/normalise.rs` (sleep in `fitbit/sleep.rs`, body logs and the profile in
//! `fitbit/body.rs`); local times are resolved in `fitbit/zone.rs`.
//!
//! Written against Fitbit's Web API reference (`dev.fitbit.com/build/reference/web-api/`):
//! - `GET /1/user/-/profile.json` answers `{"user": {...}}` with the user's `timezone` (IANA)
//!   and `offsetFromUTCMillis`; it is fetched first in every pull, because every other
//!   endpoint gives local times without an offset ("Fitbit does not support time zones for
//!   data", Web API Basics).
//! - `GET /1.2/user/-/sleep/date/{startDate}/{endDate}.json` (Get Sleep Log by Date Range,
//!   maximum range 100 days) answers `{"sleep": [...]}`; `dateOfSleep` is the day a log ended.
//! - `GET /1/user/-/activities/date/{date}.json` (Get Daily Activity Summary) answers one day's
//!   `{"activities", "goals", "summary"}`.
//! - `GET /1/user/-/activities/heart/date/{date}/1d/1min.json` and
//!   `GET /1/user/-/activities/steps/date/{date}/1d/15min.json` (Get Heart Rate / Activity
//!   Intraday by Date) answer the day's summary and `activities-<resource>-intraday.dataset`
//!   of `{"time": "HH:MM:SS", "value"}`; one day per request.
//! - `GET /1/user/-/body/log/weight/date/{start}/{end}.json` and `.../body/log/fat/date/...`
//!   (Get Weight / Body Fat Logs by Date Range, at most 31 and 30 days) answer
//!   `{"weight": [...]}` and `{"fat": [...]}`.
//! - Authentication is `Authorization: Bearer <access token>`. No `Accept-Language` is sent, so
//!   every value comes in the metric system (kg, cm, km; Web API Basics §Localization).
//! - 401 means the token is expired, invalid or revoked; 429 that the user's quota (150
//!   requests per hour) is spent, with `Retry-After` and `Fitbit-Rate-Limit-Reset` (seconds
//!   until the quota resets).
//!
//! The base URL defaults to [`DEFAULT_API_URL`]; deployments and tests override it with
//! [`API_URL_ENV`] (`WEARHOUSE_PROVIDER_FITBIT_API_URL`), passed to [`Fitbit::new`].
//!
//! Decisions where the documentation is silent:
//! - Which days to ask: the local calendar days (in the profile's zone) the window touches;
//!   sleep and body logs one day more on each side, then cut to records whose instant lies in
//!   the window (sleep: its end, the `sleep` index). Daily summaries are whole local days.
//! - Weight and fat logs come with [`Resource::Body`]; intraday steps with
//!   [`Resource::Activity`].
//! - `Retry-After` wins over `Fitbit-Rate-Limit-Reset`; each is read as seconds (and
//!   `Retry-After` also as an HTTP date); neither readable, the error carries `None`.
//! - 408 and every 5xx are transient; every other status but 2xx, 401 and 429 is permanent
//!   (403 is also what an app without intraday access gets: no retry fixes that).
//! - A profile without a readable `timezone` uses `offsetFromUTCMillis`, else the fallback zone
//!   given to [`Fitbit::with_fallback_zone`] (UTC unless set).

mod body;
mod normalise;
mod sleep;
#[cfg(test)]
mod tests;
mod zone;

use crate::sync::date_chunks;
use std::collections::BTreeSet;

use chrono::{Days, NaiveDate};
use serde_json::Value;

use crate::sync::http::Api;
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError};
use normalise::Body;
use zone::UserZone;

/// Fitbit's production API host.
pub const DEFAULT_API_URL: &str = "https://api.fitbit.com";

/// The environment variable a deployment sets to point the connector elsewhere.
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_FITBIT_API_URL";

/// Fitbit's OAuth authorisation page (`dev.fitbit.com/build/reference/web-api/authorization/`).
pub const OAUTH_AUTHORIZE_URL: &str = "https://www.fitbit.com/oauth2/authorize";

/// Fitbit's OAuth token endpoint.
pub const OAUTH_TOKEN_URL: &str = "https://api.fitbit.com/oauth2/token";

/// The longest range one sleep request may ask for, in days (Get Sleep Log by Date Range).
pub const MAX_SLEEP_RANGE_DAYS: u64 = 100;

/// The longest range one weight or body-fat request asks for, in days (31 for weight, 30 for
/// fat in Fitbit's reference: the smaller for both).
pub const MAX_BODY_RANGE_DAYS: u64 = 30;

/// The header Fitbit names the seconds until the rate-limit quota resets in.
pub const RATE_LIMIT_RESET: &str = "fitbit-rate-limit-reset";

/// The Fitbit Web API connector.
#[derive(Debug, Clone)]
pub struct Fitbit {
    api: Api,
    /// The zone used when the profile names none.
    fallback: UserZone,
}

impl Fitbit {
    fn from_api(api: Api) -> Fitbit {
        Fitbit {
            api: api.with_reset_header(RATE_LIMIT_RESET),
            fallback: UserZone::Named(chrono_tz::UTC),
        }
    }

    api_constructors!(Fitbit, "Fitbit", Fitbit::from_api);

    /// The zone local times are read in when the user's Fitbit profile names none (the
    /// deployment's fallback zone).
    pub fn with_fallback_zone(mut self, zone: chrono_tz::Tz) -> Fitbit {
        self.fallback = UserZone::Named(zone);
        self
    }

    /// Every record of a date-range endpoint (`{prefix}/{start}/{end}.json` answering
    /// `{member: [...]}`) over `first..=last`, asked in ranges of at most `max_days`.
    async fn ranged(
        &self,
        token: &str,
        prefix: &str,
        member: &str,
        (first, last): (NaiveDate, NaiveDate),
        max_days: u64,
    ) -> Result<Vec<Value>, SyncError> {
        let mut records = Vec::new();
        for (from, to) in date_chunks(first, last, max_days) {
            let page = self
                .api
                .get(token, &format!("{prefix}/{from}/{to}.json"), &[])
                .await?;
            records.extend(member_array(page, member)?);
        }
        Ok(records)
    }
}

#[async_trait::async_trait]
impl Connector for Fitbit {
    fn provider(&self) -> &'static str {
        "fitbit"
    }

    async fn pull(&self, token: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let wanted: BTreeSet<Resource> = pull.resources.iter().copied().collect();
        let w = pull.window;
        let profile = self.api.get(token, "/1/user/-/profile.json", &[]).await?;
        let zone = UserZone::of_profile(&profile).unwrap_or_else(|| {
            tracing::warn!(
                provider = "fitbit",
                "the Fitbit profile names no readable zone: local times are read in the fallback zone"
            );
            self.fallback
        });
        let (first, last) = zone.days(&w);
        let around = (shift(first, -1), shift(last, 1));
        let mut body = Body::new(zone, Some(w));
        if wanted.contains(&Resource::Sleep) {
            let logs = self
                .ranged(
                    token,
                    "/1.2/user/-/sleep/date",
                    "sleep",
                    around,
                    MAX_SLEEP_RANGE_DAYS,
                )
                .await?;
            body.sleep(&logs);
        }
        if wanted.contains(&Resource::Activity) {
            for day in each_day(first, last) {
                let doc = self
                    .api
                    .get(token, &format!("/1/user/-/activities/date/{day}.json"), &[])
                    .await?;
                body.activity(day, &doc);
                let path = format!("/1/user/-/activities/steps/date/{day}/1d/15min.json");
                let doc = self.api.get(token, &path, &[]).await?;
                body.steps(day, &doc);
            }
        }
        if wanted.contains(&Resource::Heartrate) {
            for day in each_day(first, last) {
                let path = format!("/1/user/-/activities/heart/date/{day}/1d/1min.json");
                let doc = self.api.get(token, &path, &[]).await?;
                body.heartrate(day, &doc);
            }
        }
        if wanted.contains(&Resource::Profile) {
            body.profile(&profile);
        }
        if wanted.contains(&Resource::Body) {
            let weights = self
                .ranged(
                    token,
                    "/1/user/-/body/log/weight/date",
                    "weight",
                    around,
                    MAX_BODY_RANGE_DAYS,
                )
                .await?;
            let fats = self
                .ranged(
                    token,
                    "/1/user/-/body/log/fat/date",
                    "fat",
                    around,
                    MAX_BODY_RANGE_DAYS,
                )
                .await?;
            body.body_logs(&weights, &fats);
        }
        Ok(body.finish())
    }
}

/// Every day of `first..=last`.
fn each_day(first: NaiveDate, last: NaiveDate) -> impl Iterator<Item = NaiveDate> {
    first.iter_days().take_while(move |d| *d <= last)
}

fn shift(day: NaiveDate, by: i64) -> NaiveDate {
    let moved = if by < 0 {
        day.checked_sub_days(Days::new(by.unsigned_abs()))
    } else {
        day.checked_add_days(Days::new(by.unsigned_abs()))
    };
    moved.unwrap_or(day)
}

/// The `member` array of a date-range answer.
fn member_array(page: Value, member: &str) -> Result<Vec<Value>, SyncError> {
    match page {
        Value::Object(mut obj) => match obj.remove(member) {
            Some(Value::Array(items)) => Ok(items),
            _ => Err(SyncError::Permanent {
                reason: format!("Fitbit {member}: the answer has no `{member}` array"),
            }),
        },
        _ => Err(SyncError::Permanent {
            reason: format!("Fitbit {member}: the answer is not a JSON object"),
        }),
    }
}
