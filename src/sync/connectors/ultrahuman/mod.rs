//! The Ultrahuman connector (the Ultrahuman Ring AIR and the M1 glucose sensor, through
//! Ultrahuman's partner API, "UltraSignal"): its endpoint, windows and errors. How a user lets
//! wearhouse in (OAuth 2.0) and the sources of that decision are `ultrahuman/access.rs`; the
//! document-to-push-body mapping is `ultrahuman/normalise.rs`.
//!
//! Written against Ultrahuman's published documentation: `vision.ultrahuman.com/developer-docs`
//! (the UltraSignal API; `?type=oauth` for the OAuth provider), the partnership API's notion
//! page (`ultrahumanapp.notion.site/API-Documentation-5f32ec15ef6b4fa5bc8249f7b875d212`) and
//! `blog.ultrahuman.com/blog/accessing-the-ultrahuman-partnership-api/`:
//! - `GET /api/v1/partner/daily_metrics` (host `partner.ultrahuman.com`) takes either `date`
//!   (`YYYY-MM-DD`, the whole day in the user's zone) or `start_epoch` and `end_epoch` (unix
//!   seconds, a range of at most 7 days), never both, and answers
//!   `{"status", "error", "data": {"metrics": {"YYYY-MM-DD": [{"type", "object"}, ...]},
//!   "latest_time_zone": "<IANA zone>"}}`: per day, one entry per metric, the entry's `object`
//!   shaped by its `type` (`sleep`, `hr`, `hrv`, `temp`, `spo2`, `steps`, `glucose`,
//!   `vo2_max`, `recovery_index`, `movement_index`, `night_rhr`, `sleep_rhr`,
//!   `avg_sleep_hrv`, `metabolic_score`, ...). The older `GET /api/v1/metrics` (`email`,
//!   `date`) answers the same document for one day.
//! - Authentication is the `Authorization` header: `Bearer <access token>` for an OAuth
//!   application's users, as the OAuth documentation says partner endpoints are called.
//! - 401 means the token is expired or revoked ("On 401, refresh and retry once"); the
//!   documentation names no rate limit, so a 429 is honoured with whatever `Retry-After` it
//!   carries.
//!
//! The base URL defaults to [`DEFAULT_API_URL`]; deployments and tests override it with
//! [`API_URL_ENV`] (`WEARHOUSE_PROVIDER_ULTRAHUMAN_API_URL`), passed to [`Ultrahuman::new`]; the
//! OAuth endpoints are [`access::OAUTH_AUTHORIZE_URL`] and [`access::OAUTH_TOKEN_URL`],
//! overridable like every provider's (`--oauth-apps`).
//!
//! Decisions where the documentation is silent:
//! - A window is asked in consecutive half-open chunks of at most [`MAX_SPAN_DAYS`] (7) days,
//!   with `start_epoch` = the chunk's start and `end_epoch` = its end. A day answered by two
//!   chunks (one whose boundary falls inside it) is kept as the later chunk answered it.
//! - What a window keeps: samples whose instant lies in it, sleeps and days that overlap it
//!   (a sleep is keyed by its day and a day's total by its date, so a night or a day seen by
//!   two pulls replaces itself rather than doubling).
//! - `latest_time_zone` is the zone the answer's instants are rendered in; missing or not an
//!   IANA name, UTC.
//! - Which resources a pull answers: everything comes from the one endpoint, fetched once per
//!   chunk when any resource is asked; [`Resource::Sleep`] gives sleep rows and the ring's skin
//!   temperature, [`Resource::Activity`] the day's steps and VO2 max, [`Resource::Heartrate`],
//!   [`Resource::Hrv`], [`Resource::BloodOxygen`] and [`Resource::Glucose`] their samples.
//!   No profile is pulled: Ultrahuman's `user_info` (the `profile` scope) names the user's id
//!   and zone, none of the profile table's fields.
//! - 408 and every 5xx are transient; every other status but 2xx, 401 and 429 is permanent; an
//!   answer whose `status` member is not 200, or without `data.metrics`, is permanent.

pub mod access;
mod normalise;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use chrono::TimeDelta;
use serde_json::Value;

use crate::sync::http::Api;
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError, Window};
pub use access::{OAUTH_AUTHORIZE_URL, OAUTH_TOKEN_URL};

/// The provider's catalogue slug.
pub const SLUG: &str = "ultrahuman";

/// Ultrahuman's partner API host.
pub const DEFAULT_API_URL: &str = "https://partner.ultrahuman.com";

/// The environment variable a deployment sets to point the connector elsewhere.
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_ULTRAHUMAN_API_URL";

/// The daily metrics endpoint, under the API URL.
pub const METRICS_PATH: &str = "/api/v1/partner/daily_metrics";

/// The longest span one request asks for, in days (the documented limit of an epoch range).
pub const MAX_SPAN_DAYS: i64 = 7;

/// The Ultrahuman connector.
#[derive(Debug, Clone)]
pub struct Ultrahuman {
    api: Api,
}

/// One day of a daily_metrics answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Day {
    /// The day's entries (`{"type", "object"}`), as answered.
    pub entries: Vec<Value>,
    /// The answer's `latest_time_zone`, if any.
    pub zone: Option<String>,
}

/// The days of one pull, by date (`YYYY-MM-DD`), as the answers gave them.
pub type Documents = BTreeMap<String, Day>;

/// What the documents of a pull are normalised into.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wanted {
    /// Sleep rows, and the skin temperature samples.
    pub sleep: bool,
    /// Activity rows (steps) and VO2 max samples.
    pub activity: bool,
    /// Heart rate samples.
    pub heartrate: bool,
    /// HRV samples.
    pub hrv: bool,
    /// Blood oxygen samples.
    pub blood_oxygen: bool,
    /// Glucose samples.
    pub glucose: bool,
}

impl Wanted {
    /// What a pull of `resources` wants.
    pub fn of(resources: &[Resource]) -> Wanted {
        let asked: BTreeSet<Resource> = resources.iter().copied().collect();
        let has = |r| asked.contains(&r);
        Wanted {
            sleep: has(Resource::Sleep),
            activity: has(Resource::Activity),
            heartrate: has(Resource::Heartrate),
            hrv: has(Resource::Hrv),
            blood_oxygen: has(Resource::BloodOxygen),
            glucose: has(Resource::Glucose),
        }
    }

    /// Whether anything is wanted (else nothing is fetched).
    pub fn any(&self) -> bool {
        self.sleep
            || self.activity
            || self.heartrate
            || self.hrv
            || self.blood_oxygen
            || self.glucose
    }

    /// Everything.
    pub fn all() -> Wanted {
        Wanted::of(&Resource::ALL)
    }
}

/// Normalises the days of a pull over `window` into its push body, as [`Ultrahuman`]'s pull
/// does once it has fetched them. Public so the normalisation can be measured on its own.
pub fn normalise(documents: &Documents, wanted: Wanted, window: &Window) -> Pulled {
    normalise::Body::new(wanted, *window).days(documents)
}

impl Ultrahuman {
    fn from_api(api: Api) -> Ultrahuman {
        Ultrahuman { api }
    }

    api_constructors!(Ultrahuman, "Ultrahuman", Ultrahuman::from_api);

    /// Every day the window's chunks answer; a day two chunks answer is kept as the later one
    /// did.
    async fn days(&self, token: &str, window: &Window) -> Result<Documents, SyncError> {
        let mut days = Documents::new();
        for chunk in chunks(window) {
            let query = [
                ("start_epoch", chunk.start.timestamp().to_string()),
                ("end_epoch", chunk.end.timestamp().to_string()),
            ];
            let answer = self.api.get(token, METRICS_PATH, &query).await?;
            days.extend(envelope(answer)?);
        }
        Ok(days)
    }
}

#[async_trait::async_trait]
impl Connector for Ultrahuman {
    fn provider(&self) -> &'static str {
        SLUG
    }

    async fn pull(&self, token: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let wanted = Wanted::of(&pull.resources);
        let days = if wanted.any() {
            self.days(token, &pull.window).await?
        } else {
            Documents::new()
        };
        Ok(normalise(&days, wanted, &pull.window))
    }
}

/// Consecutive half-open chunks of at most [`MAX_SPAN_DAYS`] covering the window.
fn chunks(window: &Window) -> Vec<Window> {
    let step = TimeDelta::days(MAX_SPAN_DAYS);
    let mut out = Vec::new();
    let mut start = window.start;
    while start < window.end {
        let end = (start + step).min(window.end);
        out.push(Window { start, end });
        start = end;
    }
    out
}

/// An answer's days: `data.metrics` by date, each with `data.latest_time_zone`.
fn envelope(answer: Value) -> Result<Documents, SyncError> {
    let bad = |what: &str| SyncError::Permanent {
        reason: format!("Ultrahuman daily_metrics: {what}"),
    };
    let Value::Object(mut answer) = answer else {
        return Err(bad("the answer is not a JSON object"));
    };
    match answer.get("status") {
        None | Some(Value::Null) => {}
        Some(s) if s.as_i64() == Some(200) => {}
        Some(s) => {
            let error = answer.get("error").cloned().unwrap_or(Value::Null);
            return Err(bad(&format!("status {s}, error {error}")));
        }
    }
    let Some(Value::Object(mut data)) = answer.remove("data") else {
        return Err(bad("the answer has no `data` object"));
    };
    let zone = data
        .get("latest_time_zone")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let metrics = match data.remove("metrics") {
        Some(Value::Object(m)) => m,
        // A user without any data for the range: nothing to keep.
        Some(Value::Null) | None => return Ok(Documents::new()),
        Some(_) => return Err(bad("`data.metrics` is not an object of days")),
    };
    let mut days = Documents::new();
    for (date, entries) in metrics {
        let entries = match entries {
            Value::Array(items) => items,
            Value::Null => Vec::new(),
            _ => return Err(bad(&format!("the metrics of {date} are not a list"))),
        };
        let zone = zone.clone();
        days.insert(date, Day { entries, zone });
    }
    Ok(days)
}
