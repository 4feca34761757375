//! Provider sync: pulling a provider's cloud API and normalising what it answers into a push
//! body (`provider-sync.md`). This module owns the seam every connector implements; the jobs
//! that schedule pulls, store their results and emit events live elsewhere and call it.
//!
//! - A [`Connector`] is asked for a [`Pull`] (a set of [`Resource`]s over a [`Window`]
//!   `[start, end)` of UTC instants) with the connection's access token, and answers
//!   [`Pulled`]: a typed push body ([`PulledBody`]: `data-model.md` §Reading and writing, the
//!   shape `POST /v2/user/{user_id}/data` takes, each summary record with the provider document
//!   it was made from beside it, a dense series as [`crate::ingest::TypedSamples`] rather than
//!   a JSON object per sample) plus how many provider records it skipped.
//! - Pulled data goes through ingest's push rules ([`crate::ingest::parse_pulled`]) like any
//!   push: one validation path. The documents become the raw getters' payloads.
//!   [`screen`] does that and drops, record by record, whatever ingest refuses, so that one odd
//!   provider value never costs the rest of the pull.
//! - A failure is a [`SyncError`], typed by what the caller should do next: wait
//!   (`RateLimited`), refresh the token (`Unauthorised`), retry with backoff (`Transient`) or
//!   give up (`Permanent`).
//!
//! - Each provider is one folder, [`connectors`]`/<slug>/`: its access (OAuth specifics,
//!   password or e-mail sign-ins, implementing [`access`]'s seams), its pull and its
//!   normalisers; [`registry`] holds the connectors and sign-ins this process has. `link`
//!   drives sign-ins and starts pulls through this room; nothing here imports `link`'s
//!   provider code.

pub mod access;
pub mod apps;
mod body;
pub mod connection;
pub mod connectors;
pub mod credentials;
pub mod http;
pub mod notify;
pub mod oauth;
pub mod pull;
pub mod refresh;
pub mod registry;
pub mod token_wire;

pub use registry::{Connectors, has_connector};

use chrono::{DateTime, Utc};
#[cfg(test)]
use serde_json::Value;

use crate::ingest::{PulledBody, PushBatches, PushUser, parse_pulled};
use crate::validation::{Invalid, Loc, Violation};

/// A kind of data a connector can pull: the catalogue's (`providers`) so that rooms below
/// `sync` name resources without importing it.
pub use crate::providers::Resource;

/// A half-open span of time `[start, end)` in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The first instant included.
    pub start: DateTime<Utc>,
    /// The first instant after the window.
    pub end: DateTime<Utc>,
}

impl Window {
    /// The window `[start, end)`; `None` when `end` is not after `start`.
    pub fn new(start: DateTime<Utc>, end: DateTime<Utc>) -> Option<Window> {
        (end > start).then_some(Window { start, end })
    }

    /// Whether `at` lies in the window.
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.start <= at && at < self.end
    }
}

/// Consecutive inclusive ranges of at most `max_days` days covering `first..=last`.
pub(crate) fn date_chunks(
    first: chrono::NaiveDate,
    last: chrono::NaiveDate,
    max_days: u64,
) -> Vec<(chrono::NaiveDate, chrono::NaiveDate)> {
    let mut out = Vec::new();
    let mut from = first;
    while from <= last {
        let to = from
            .checked_add_days(chrono::Days::new(max_days.max(1) - 1))
            .map_or(last, |t| t.min(last));
        out.push((from, to));
        match to.succ_opt() {
            Some(next) => from = next,
            None => break,
        }
    }
    out
}

/// What to pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pull {
    /// The resources wanted; the order does not matter and duplicates are ignored.
    pub resources: Vec<Resource>,
    /// The span of time wanted.
    pub window: Window,
}

/// What a pull answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Pulled {
    /// The push body, with only the parts that received records.
    pub body: PulledBody,
    /// Provider records that could not be normalised (each logged with `tracing::warn!`).
    pub skipped: usize,
}

/// A failed pull, by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// HTTP 429: wait, then pull again.
    #[error("the provider is rate limiting us (retry after {retry_after_seconds:?} s)")]
    RateLimited {
        /// The provider's `Retry-After`, in seconds; `None` when it named no (readable) delay.
        retry_after_seconds: Option<u64>,
    },
    /// HTTP 401: the access token is expired, malformed or revoked; refresh it once and retry.
    #[error("the provider refused the access token (expired or revoked)")]
    Unauthorised,
    /// A failure worth retrying with backoff: 5xx, a timeout, a broken connection.
    #[error("transient provider failure: {reason}")]
    Transient {
        /// What happened (status or transport failure), for the job's `last_error`.
        reason: String,
        /// The transport error, when there was one.
        #[source]
        source: Option<reqwest::Error>,
    },
    /// A failure no retry fixes: another 4xx, or a response that is not the documented shape.
    #[error("permanent provider failure: {reason}")]
    Permanent {
        /// What was wrong, for the job's `last_error`.
        reason: String,
    },
}

/// A connector to one provider's cloud API. Shared by every connection of the provider: the
/// connection's access token comes with each pull.
#[async_trait::async_trait]
pub trait Connector: Send + Sync {
    /// The provider's catalogue slug (`oura`).
    fn provider(&self) -> &'static str;

    /// Pulls `pull` with `access_token` and normalises it into a push body. Every page of every
    /// resource is fetched before it answers; the first failing request ends the pull.
    async fn pull(&self, access_token: &str, pull: &Pull) -> Result<Pulled, SyncError>;

    /// The user's id at the provider, for providers whose token answer does not carry it but
    /// whose change notifications name users by it (Oura's `personal_info.id`). `None`: the
    /// provider has no such id to ask for.
    async fn account(&self, _access_token: &str) -> Result<Option<String>, SyncError> {
        Ok(None)
    }

    /// Registers the user with the provider, for providers whose API serves only the users a
    /// client has registered (Polar's `POST /v3/users`); `member_id` names the user to the
    /// provider (the wearhouse user id). Called at the start of each historical run, so it must
    /// accept a user registered before. By default there is nothing to register.
    async fn register(&self, _access_token: &str, _member_id: &str) -> Result<(), SyncError> {
        Ok(())
    }

    /// Asks the provider to deliver the user's data of `window` later, for providers that
    /// serve data recorded before the connection only on request and asynchronously (Garmin's
    /// backfill, whose data arrives as change notifications and is read by incremental pulls).
    /// Called at the start of each historical run, after [`Connector::register`], so it must
    /// accept a request made before. By default there is nothing to ask.
    async fn backfill(&self, _access_token: &str, _window: &Window) -> Result<(), SyncError> {
        Ok(())
    }
}

/// A pulled body after ingest's validation: what was admitted and what was dropped.
#[derive(Debug, Clone)]
pub struct Screened {
    /// The body less the dropped records: ingest accepts it.
    pub body: PulledBody,
    /// Its batches, as [`parse_pulled`] built them.
    pub batches: PushBatches,
    /// One violation per dropped record, in the order they were found.
    pub dropped: Vec<Violation>,
}

/// Runs `body` through [`parse_pulled`], dropping each record ingest refuses (logged with
/// `tracing::warn!`) until the rest is accepted. A violation that names no single record (the
/// provider slug, the source) is returned as the error: that is a connector bug, not data.
///
/// Each refusal costs one more parse, so a connector should not rely on this for checks it can
/// make itself; it is the safety net that keeps one odd value from costing a whole pull.
pub fn screen(
    mut body: PulledBody,
    user: &PushUser,
    now: DateTime<Utc>,
) -> Result<Screened, Invalid> {
    let mut dropped = Vec::new();
    loop {
        let violation = match parse_pulled(&body, user, now) {
            Ok(batches) => {
                return Ok(Screened {
                    body,
                    batches,
                    dropped,
                });
            }
            Err(invalid) => invalid.0.into_iter().next().ok_or_else(|| {
                Violation::value(vec![Loc::from("body")], "rejected without a violation")
            })?,
        };
        if !body.drop_record(&violation.loc) {
            return Err(violation.into());
        }
        tracing::warn!(
            loc = ?violation.loc,
            msg = %violation.msg,
            "dropped a pulled record that ingest refused"
        );
        dropped.push(violation);
    }
}

/// What ingest counts in a pulled body, which it must accept: the connectors' unit tests.
#[cfg(test)]
pub(crate) fn ingest_counts(body: &PulledBody) -> Value {
    let now = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 1, 0, 0, 0).unwrap();
    parse_pulled(body, &PushUser::default(), now)
        .unwrap_or_else(|e| panic!("ingest refused the body: {e:?}"))
        .counts()
}

/// Checks what a normaliser made of the fixture `name` of `provider`: `skipped` malformed
/// records, the body exactly `<name>.expected.json`, and ingest accepting it with `counts`.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn assert_fixture(
    provider: &str,
    name: &str,
    pulled: &Pulled,
    skipped: usize,
    counts: Value,
) {
    assert_eq!(pulled.skipped, skipped, "{name}");
    let expected = fixture(provider, &format!("{name}.expected.json"));
    let body = pulled.body.to_json();
    assert_eq!(
        body,
        expected,
        "{name}: got\n{}",
        serde_json::to_string_pretty(&body).unwrap()
    );
    assert_eq!(ingest_counts(&pulled.body), counts, "{name}");
}

/// A fixture of `testdata/providers/<provider>/`, for the connectors' unit tests.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn fixture(provider: &str, name: &str) -> Value {
    let path = format!(
        "{}/testdata/providers/{provider}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use chrono::TimeZone;
    use serde_json::json;

    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
    }

    fn pulled(body: Value) -> PulledBody {
        PulledBody::from_json(body).unwrap()
    }

    #[test]
    fn windows_are_half_open() {
        let start = Utc.with_ymd_and_hms(2025, 3, 1, 0, 0, 0).unwrap();
        let end = Utc.with_ymd_and_hms(2025, 3, 2, 0, 0, 0).unwrap();
        let w = Window::new(start, end).unwrap();
        assert!(w.contains(start));
        assert!(!w.contains(end));
        assert!(Window::new(end, start).is_none());
        assert!(Window::new(start, start).is_none());
    }

    #[test]
    fn screen_drops_only_the_refused_records() {
        let body = json!({
            "provider": "oura",
            "source": {"type": "ring"},
            "workouts": [
                {"id": "w1", "time_start": "2025-03-01T10:00:00+01:00", "time_end": "2025-03-01T11:00:00+01:00"},
                {"id": "w2", "time_start": "2025-03-01T12:00:00+01:00", "time_end": "2025-03-01T11:00:00+01:00"},
                {"id": "w3", "time_start": "2025-03-01T14:00:00+01:00", "time_end": "2025-03-01T15:00:00+01:00"}
            ],
            "timeseries": {"heartrate": [
                {"timestamp": "2025-03-01T10:00:00Z", "unit": "bpm", "value": 61},
                {"timestamp": "2025-03-01T10:05:00Z", "unit": "bpm", "value": 900},
                {"timestamp": "2025-03-01T10:10:00Z", "unit": "bpm", "value": 63}
            ]}
        });
        let screened = screen(pulled(body), &PushUser::default(), now()).unwrap();
        assert_eq!(screened.dropped.len(), 2);
        assert_eq!(
            screened.batches.counts(),
            json!({"workouts": 2, "timeseries": {"heartrate": 2}})
        );
        let ids: Vec<_> = screened.body.to_json()["workouts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["id"].clone())
            .collect();
        assert_eq!(ids, [json!("w1"), json!("w3")]);
    }

    #[test]
    fn screen_refuses_a_body_level_error() {
        let body = json!({"provider": "no-such-provider", "sleep": []});
        let err = screen(pulled(body), &PushUser::default(), now()).unwrap_err();
        assert_eq!(err.0[0].loc, vec![Loc::from("body"), Loc::from("provider")]);
    }

    #[test]
    fn screen_drops_a_refused_profile() {
        let body = json!({
            "provider": "oura",
            "profile": {"height": 178, "sex": "robot"},
            "timeseries": {"heartrate": [{"timestamp": "2025-03-01T10:00:00Z", "value": 61}]}
        });
        let screened = screen(pulled(body), &PushUser::default(), now()).unwrap();
        assert_eq!(screened.dropped.len(), 1);
        assert!(screened.body.profile.is_none());
        assert_eq!(
            screened.batches.counts(),
            json!({"timeseries": {"heartrate": 1}})
        );
    }
}
