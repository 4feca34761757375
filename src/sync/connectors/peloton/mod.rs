//! The Peloton connector: its endpoints, bearer token, paging and errors. The
//! payload-to-push-body mapping is `peloton/normalise.rs`.
//!
//! Peloton publishes no API reference. This follows the wire its web app uses, as the
//! community has written it down (`geudrik/peloton-client-library`'s `API_DOCS.md`, the
//! workout records of `jormon/peloton_api` and `allezgo`'s `PelotonActivity`, and the
//! `{total, count, data, limit, page, page_count}` page read by the community's C# and Python
//! clients):
//! - A password link signs in through Peloton's Auth0 PKCE flow (`sync::connectors::peloton::access`,
//!   which names its steps and sources) and keeps the access token it answers as the
//!   connection's, with its refresh token. Every call here sends it as
//!   `Authorization: Bearer <access_token>`, with `peloton-platform: web` and
//!   `Accept: application/json`; an expired or revoked token answers 401.
//! - `GET /api/me` answers the signed-in user, `{"id", "username", ...}`: its `id` names the
//!   user in the workouts path ([`Connector::account`] answers it too).
//! - `GET /api/user/{id}/workouts?joins=ride&limit=&page=&sort_by=-created` answers
//!   `{"data": [...], "page", "page_count", "total", "limit", "count", ...}`, newest first,
//!   `page` counting from 0. A workout has `id`, `created_at`, `start_time`, `end_time` (unix
//!   seconds; `end_time` null while in progress), `status`, `fitness_discipline`, `total_work`
//!   (joules) and, joined, `ride` (`title`, `duration` s, ...).
//!
//! Errors: HTTP 401 is `Unauthorised` (the puller renews the token once: with the refresh
//! token, else by signing in again), 429 `RateLimited` with
//! its `Retry-After`, 408 and 5xx and transport failures `Transient`, any other status or an
//! answer not of the shape above `Permanent`.
//!
//! The base URL is [`DEFAULT_API_URL`], or the one [`API_URL_ENV`]
//! (`WEARHOUSE_PROVIDER_PELOTON_API_URL`, the sign-in's variable too) names.
//!
//! Decisions where the community's notes are silent:
//! - Only [`Resource::Workouts`] is pulled: Peloton's other data (performance graphs, the
//!   profile) needs a call per workout or has nothing the data model keeps.
//! - Pages of [`PAGE_SIZE`] are asked newest first; paging stops after the last page
//!   (`page + 1 >= page_count`), an empty page, or a page whose oldest readable workout started
//!   before the window; a pull over [`MAX_PAGES`] pages is a `Permanent` error. Peloton's
//!   list has no date filter, so a pull of an older window pages through the newer workouts
//!   first (a 90-day history in 30-day chunks reads its newest pages three times).
//! - `/api/me` is asked once per pull: a connector is given only the access token, not the
//!   connection's stored `provider_user_id`.

pub mod access;
mod normalise;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::sync::http::Api;
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError};
use normalise::Body;

pub use access::{API_URL_ENV, DEFAULT_API_URL};

/// Workouts asked per page.
pub const PAGE_SIZE: usize = 50;

/// The most pages one pull may take before it gives up.
pub const MAX_PAGES: usize = 1000;

/// The Peloton connector.
#[derive(Debug, Clone)]
pub struct Peloton {
    api: Api,
}

impl Peloton {
    /// A connector for the API at `base_url` (e.g. [`DEFAULT_API_URL`]), with its own HTTP
    /// client (30 s per request, no redirects followed), sending the access token as a bearer
    /// token.
    pub fn new(base_url: &str) -> Result<Peloton, SyncError> {
        let api = Api::new("Peloton", base_url)?.with_header("peloton-platform", "web");
        Ok(Peloton { api })
    }

    /// `GET {base}{path}?{query}` with the access token, answering its JSON body.
    async fn get(
        &self,
        session: &str,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Value, SyncError> {
        self.api.get(session, path, query).await
    }

    /// The signed-in user's id (`GET /api/me`).
    async fn me(&self, session: &str) -> Result<String, SyncError> {
        let me = self.get(session, "/api/me", &[]).await?;
        match me.get("id") {
            Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
            _ => Err(bad("/api/me has no user `id`")),
        }
    }

    /// The user's workouts, newest first, page by page until one reaches before `since`.
    async fn workouts(
        &self,
        session: &str,
        user: &str,
        since: DateTime<Utc>,
    ) -> Result<Vec<Value>, SyncError> {
        let path = format!("/api/user/{user}/workouts");
        let mut records = Vec::new();
        for page in 0..MAX_PAGES {
            let query = [
                ("joins", "ride".to_owned()),
                ("limit", PAGE_SIZE.to_string()),
                ("page", page.to_string()),
                ("sort_by", "-created".to_owned()),
            ];
            let answer = self.get(session, &path, &query).await?;
            let data = match answer.get("data") {
                Some(Value::Array(items)) => items.clone(),
                _ => return Err(bad("a workouts page without a `data` array")),
            };
            let page_count = answer.get("page_count").and_then(Value::as_u64);
            let oldest = data
                .iter()
                .filter_map(|w| w.get("start_time").and_then(Value::as_i64))
                .min();
            let empty = data.is_empty();
            records.extend(data);
            let before = oldest.is_some_and(|at| at < since.timestamp());
            let last = page_count.is_none_or(|n| page as u64 + 1 >= n);
            if empty || before || last {
                return Ok(records);
            }
        }
        Err(bad(&format!("more than {MAX_PAGES} pages of workouts")))
    }
}

#[async_trait::async_trait]
impl Connector for Peloton {
    fn provider(&self) -> &'static str {
        "peloton"
    }

    async fn pull(&self, session: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let mut body = Body::new(Some(pull.window));
        if pull.resources.contains(&Resource::Workouts) {
            let user = self.me(session).await?;
            let workouts = self.workouts(session, &user, pull.window.start).await?;
            body.workouts(&workouts);
        }
        Ok(body.finish())
    }

    async fn account(&self, session: &str) -> Result<Option<String>, SyncError> {
        self.me(session).await.map(Some)
    }
}

fn bad(what: &str) -> SyncError {
    SyncError::Permanent {
        reason: format!("Peloton: {what}"),
    }
}
