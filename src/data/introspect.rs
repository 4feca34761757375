//! Introspection of provider pulls (`GET /v2/introspect/resources`, `.../historical_pull`), in
//! the reference's shapes (`UserResourcesResponse`, `UserHistoricalPullsResponse`), read from
//! the `sync_pulls` rows (one per connection with a connector, `sync::pull`) and their
//! connections. Pushed data has no pull and is not listed.
//!
//! Decisions where the reference is silent or our records differ:
//! - pages hold at most `user_limit` users (with every pull of each), ordered by user id; the
//!   cursor is the page's last user id, null on the last page; `next` repeats `next_cursor`
//!   (the reference's deprecated name);
//! - a pull's resources are the datasets it stored records of (`workouts`, `heartrate`, ...);
//! - **resources**: per resource, `last_attempt` is the connection's latest pull outcome (a
//!   historical completion or incremental success, or a failure, whichever is newest);
//!   `oldest_data`, `newest_data` and `sent_count` are not recorded per pull: null;
//! - **historical pull status**: `success` once complete; after a failure, `failure` when the
//!   connection is in error or gone (the job ended), else `retrying`; `in_progress` once a
//!   chunk is stored; `scheduled` before. Until it completes, `pulled` lists the resources
//!   stored so far, or, before any, every resource wearhouse pulls (all with the pull's
//!   status); once complete, `pulled` lists those that received records and `not_pulled` the
//!   others of [`crate::providers::Resource::ALL`];
//! - `timeline`: `scheduled_at` is when the link was made; chunk start times are not recorded,
//!   so `started_at` reads `scheduled_at` once the pull has stored a chunk or ended (its job
//!   starts when enqueued, as soon as a runner is free); `ended_at` is the completion (or the
//!   failure that ended it); `release` is this service's version; `trace_id` is null;
//!   `error_details` is `non_retriable_error` on a failure, else null.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::DataError;
use crate::data::provider_list::resource_name;
use crate::schema::Dataset;
use crate::store::metadata::sync_introspect::{PullFilter, PullRow, team_pulls};
use crate::store::metadata::{ConnectionStatus, MetadataStore};

/// The outcome of a connection's latest pull.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LastAttempt {
    /// When it ended.
    pub timestamp: DateTime<Utc>,
    /// `success` or `failure`.
    pub status: &'static str,
}

/// One resource of one connection (the reference's `SingleResourceStatistics`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ResourceStatistics {
    /// The connection's latest pull outcome.
    pub last_attempt: Option<LastAttempt>,
    /// Not recorded: null.
    pub oldest_data: Option<DateTime<Utc>>,
    /// Not recorded: null.
    pub newest_data: Option<DateTime<Utc>>,
    /// Not recorded: null.
    pub sent_count: Option<i64>,
}

/// One user's pulled resources, by provider then resource.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserResources {
    /// The user.
    pub user_id: Uuid,
    /// Provider slug → resource → statistics.
    pub provider: BTreeMap<String, BTreeMap<String, ResourceStatistics>>,
}

/// `GET /v2/introspect/resources`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserResourcesPage {
    /// One entry per user.
    pub data: Vec<UserResources>,
    /// Deprecated alias of `next_cursor`.
    pub next: Option<String>,
    /// Pass as `next_cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
}

/// A historical pull's timeline.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PullTimeline {
    /// When it was scheduled (the link was made).
    pub scheduled_at: DateTime<Utc>,
    /// When it started (see the module docs).
    pub started_at: Option<DateTime<Utc>>,
    /// When it ended.
    pub ended_at: Option<DateTime<Utc>>,
}

/// One resource of a historical pull (the reference's `SingleHistoricalPullStatistics`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PullStatistics {
    /// `success`, `failure`, `in_progress`, `scheduled` or `retrying`.
    pub status: &'static str,
    /// The window's start.
    pub range_start: Option<DateTime<Utc>>,
    /// The window's end.
    pub range_end: Option<DateTime<Utc>>,
    /// Its timeline.
    pub timeline: PullTimeline,
    /// This service's version.
    pub release: &'static str,
    /// Not recorded: null.
    pub trace_id: Option<String>,
    /// `non_retriable_error` on a failure, else null.
    pub error_details: Option<&'static str>,
}

/// One provider's historical pull.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProviderPull {
    /// Resource → statistics.
    pub pulled: BTreeMap<String, PullStatistics>,
    /// Resources wearhouse pulls that this pull brought nothing of (once complete).
    pub not_pulled: Vec<String>,
}

/// One user's historical pulls, by provider.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserPulls {
    /// The user.
    pub user_id: Uuid,
    /// Provider slug → its pull.
    pub provider: BTreeMap<String, ProviderPull>,
}

/// `GET /v2/introspect/historical_pull`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserPullsPage {
    /// One entry per user.
    pub data: Vec<UserPulls>,
    /// Deprecated alias of `next_cursor`.
    pub next: Option<String>,
    /// Pass as `next_cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
}

/// The resource names of dataset paths.
fn names(paths: &[String]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = paths
        .iter()
        .filter_map(|p| Dataset::from_path(p))
        .map(resource_name)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Every resource a pull fetches, by name.
fn every_resource() -> Vec<&'static str> {
    crate::providers::Resource::ALL
        .iter()
        .map(|r| resource_label(*r))
        .collect()
}

/// A sync resource's name in the reference's list.
fn resource_label(r: crate::providers::Resource) -> &'static str {
    use crate::providers::Resource;
    match r {
        Resource::Sleep => "sleep",
        Resource::Activity => "activity",
        Resource::Workouts => "workouts",
        Resource::Heartrate => "heartrate",
        Resource::Hrv => "hrv",
        Resource::BloodOxygen => "blood_oxygen",
        Resource::Glucose => "glucose",
        Resource::Body => "body",
        Resource::Profile => "profile",
    }
}

fn last_attempt(row: &PullRow) -> Option<LastAttempt> {
    let success = [row.completed_at, row.synced_at]
        .into_iter()
        .flatten()
        .max();
    let failure = row.failed.as_ref().map(|(at, _)| *at);
    match (success, failure) {
        (Some(s), Some(f)) if f > s => Some(LastAttempt {
            timestamp: f,
            status: "failure",
        }),
        (None, Some(f)) => Some(LastAttempt {
            timestamp: f,
            status: "failure",
        }),
        (Some(s), _) => Some(LastAttempt {
            timestamp: s,
            status: "success",
        }),
        (None, None) => None,
    }
}

fn pull_status(row: &PullRow) -> &'static str {
    let ended = !matches!(row.status, Some(ConnectionStatus::Connected));
    match (&row.completed_at, &row.failed) {
        (Some(_), _) => "success",
        (None, Some(_)) if ended => "failure",
        (None, Some(_)) => "retrying",
        (None, None) if row.done_until > row.window.0 => "in_progress",
        (None, None) => "scheduled",
    }
}

fn provider_pull(row: &PullRow) -> ProviderPull {
    let status = pull_status(row);
    let begun = status != "scheduled";
    let ended_at = match status {
        "success" => row.completed_at,
        "failure" => row.failed.as_ref().map(|(at, _)| *at),
        _ => None,
    };
    let stats = PullStatistics {
        status,
        range_start: Some(row.window.0),
        range_end: Some(row.window.1),
        timeline: PullTimeline {
            scheduled_at: row.created_at,
            started_at: begun.then_some(row.created_at),
            ended_at,
        },
        release: env!("CARGO_PKG_VERSION"),
        trace_id: None,
        error_details: (status == "failure").then_some("non_retriable_error"),
    };
    let stored = names(&row.resources);
    let every = every_resource();
    let (pulled, not_pulled): (Vec<&str>, Vec<&str>) = if status == "success" {
        let missing = every.into_iter().filter(|r| !stored.contains(r)).collect();
        (stored, missing)
    } else if stored.is_empty() {
        (every, Vec::new())
    } else {
        (stored, Vec::new())
    };
    ProviderPull {
        pulled: pulled
            .into_iter()
            .map(|r| (r.to_owned(), stats.clone()))
            .collect(),
        not_pulled: not_pulled.into_iter().map(str::to_owned).collect(),
    }
}

/// The page's rows by user (read for `limit` + 1 users), and its cursor: the last listed
/// user's id when more users follow.
fn by_user(rows: Vec<PullRow>, limit: i64) -> (Vec<(Uuid, Vec<PullRow>)>, Option<String>) {
    let mut users: Vec<(Uuid, Vec<PullRow>)> = Vec::new();
    for row in rows {
        match users.last_mut() {
            Some((id, list)) if *id == row.user_id => list.push(row),
            _ => users.push((row.user_id, vec![row])),
        }
    }
    let keep = usize::try_from(limit).unwrap_or(usize::MAX);
    if users.len() <= keep {
        return (users, None);
    }
    users.truncate(keep);
    let cursor = users.last().map(|(id, _)| id.to_string());
    (users, cursor)
}

/// One page of the team's users' pulled resources.
pub async fn resources(
    meta: &MetadataStore,
    team: Uuid,
    filter: &PullFilter,
    limit: i64,
) -> Result<UserResourcesPage, DataError> {
    let rows = team_pulls(&mut *meta.reader().await?, team, filter, limit + 1).await?;
    let (users, cursor) = by_user(rows, limit);
    let data = users
        .into_iter()
        .map(|(user_id, rows)| {
            let provider = rows
                .iter()
                .map(|row| {
                    let attempt = last_attempt(row);
                    let mut all = names(&row.resources);
                    all.extend(names(&row.synced_resources));
                    all.sort_unstable();
                    all.dedup();
                    let stats = all
                        .into_iter()
                        .map(|r| {
                            let s = ResourceStatistics {
                                last_attempt: attempt.clone(),
                                oldest_data: None,
                                newest_data: None,
                                sent_count: None,
                            };
                            (r.to_owned(), s)
                        })
                        .collect();
                    (row.provider.clone(), stats)
                })
                .collect();
            UserResources { user_id, provider }
        })
        .collect();
    Ok(UserResourcesPage {
        data,
        next: cursor.clone(),
        next_cursor: cursor,
    })
}

/// One page of the team's users' historical pulls.
pub async fn historical_pulls(
    meta: &MetadataStore,
    team: Uuid,
    filter: &PullFilter,
    limit: i64,
) -> Result<UserPullsPage, DataError> {
    let rows = team_pulls(&mut *meta.reader().await?, team, filter, limit + 1).await?;
    let (users, cursor) = by_user(rows, limit);
    let data = users
        .into_iter()
        .map(|(user_id, rows)| UserPulls {
            user_id,
            provider: rows
                .iter()
                .map(|row| (row.provider.clone(), provider_pull(row)))
                .collect(),
        })
        .collect();
    Ok(UserPullsPage {
        data,
        next: cursor.clone(),
        next_cursor: cursor,
    })
}
