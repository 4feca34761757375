//! `POST /v2/user/refresh/{user_id}` (`linking.md` §Refresh): an incremental pull of every
//! `connected` provider with a connector, now, waited for up to a timeout.
//!
//! The pull is the connection's `sync.incremental` job, asked to run now (its unique key makes
//! the request move the pending job earlier, never start a second one), so a refresh and the
//! 30-minute schedule never pull the same connection twice at once, and a refresh the wait gives
//! up on still finishes in the background. Each provider is then reported from its sync row:
//! refreshed once its last success is after the request began, failed once its last failure
//! is, in progress otherwise. Demo connections are pulled the same way (`sync::connectors::demo`).
//! Providers whose data arrives by push (SDK, app) are listed as refreshed for each resource the
//! user has data of.
//!
//! Entries are `<provider>/<resource>`: for a pulled provider, the resources that pull brought
//! (a pull that brought nothing new lists none); for a failed or unfinished one, the
//! resources of its historical pull, else its catalogue resources.
//!
//! At most [`LIMIT`] refreshes per user per hour (`linking.md`): the next is refused with the
//! seconds until the oldest of them leaves the hour. Requests are counted in the metadata
//! database, so the limit holds across restarts and (on SQLite) across concurrent requests;
//! on PostgreSQL two requests racing for the last place may both get it.

use std::time::Duration;

use serde::Serialize;
use uuid::Uuid;

use super::has_connector;
use super::pull::incremental_job;
use crate::data::DataError;
use crate::schema::Dataset;
use crate::store::health::HealthStore;
use crate::store::metadata::sync_pulls;
use crate::store::metadata::{self, ConnectionStatus, MetadataError, MetadataStore, User};

/// Refreshes allowed per user per hour.
pub const LIMIT: usize = 8;

/// Why a refresh was not done.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The user had [`LIMIT`] refreshes in the last hour.
    #[error("at most {LIMIT} refreshes per user per hour; retry in {retry_after} s")]
    Limited {
        /// Seconds until one more is allowed.
        retry_after: u64,
    },
    /// A store failed.
    #[error(transparent)]
    Data(#[from] DataError),
}

impl From<MetadataError> for RefreshError {
    fn from(e: MetadataError) -> Self {
        RefreshError::Data(e.into())
    }
}

/// How often the wait looks at the pulls.
const POLL: Duration = Duration::from_millis(100);

/// The answer of a refresh.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct RefreshResult {
    /// Whether nothing failed.
    pub success: bool,
    /// The user.
    pub user_id: Uuid,
    /// `<provider>/<resource>` refreshed.
    pub refreshed_sources: Vec<String>,
    /// `<provider>/<resource>` still being pulled when the wait ended (they finish in the
    /// background).
    pub in_progress_sources: Vec<String>,
    /// `<provider>/<resource>` whose pull failed.
    pub failed_sources: Vec<String>,
}

/// Asks for an incremental pull of each of the user's pulled connections and waits up to
/// `timeout` for them.
pub async fn refresh(
    meta: &MetadataStore,
    health: &HealthStore,
    user: &User,
    timeout: Duration,
) -> Result<RefreshResult, RefreshError> {
    let started = metadata::now();
    let hour = chrono::Duration::hours(1);
    let mut tx = meta.begin().await?;
    let recent = sync_pulls::recent_refreshes(&mut tx, user.id, started - hour).await?;
    if recent.len() >= LIMIT {
        let oldest = recent.first().copied().unwrap_or(started);
        let wait = (oldest + hour - started).num_seconds().max(0) + 1;
        return Err(RefreshError::Limited {
            retry_after: u64::try_from(wait).unwrap_or(1),
        });
    }
    sync_pulls::record_refresh(&mut tx, user.id, started).await?;
    tx.commit().await.map_err(MetadataError::from)?;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut out = RefreshResult {
        user_id: user.id,
        ..RefreshResult::default()
    };
    let connected: Vec<String> = meta
        .connections(user.id)
        .await?
        .into_iter()
        .filter(|c| c.status == ConnectionStatus::Connected)
        .map(|c| c.provider)
        .collect();
    // Pulled: a demo connection, or a provider with a connector and the credentials a link
    // stored.
    let mut pending = Vec::new();
    let mut demos = Vec::new();
    let mut pushed = Vec::new();
    for provider in connected {
        let mut conn = meta.reader().await?;
        let demo = sync_pulls::get(&mut conn, user.id, &provider)
            .await?
            .is_some_and(|s| s.demo_persona.is_some());
        let linked = !demo
            && has_connector(&provider)
            && metadata::connections::sealed_credentials(&mut conn, user.id, &provider)
                .await?
                .is_some();
        drop(conn);
        if demo {
            demos.push(provider.clone());
            pending.push(provider);
        } else if linked {
            pending.push(provider);
        } else {
            pushed.push(provider);
        }
    }
    if !pending.is_empty() {
        let mut tx = meta.begin().await?;
        for provider in &pending {
            if !demos.contains(provider) {
                // A connection made before pulls existed gets its history first.
                super::pull::start_on(&mut tx, user, provider, started).await?;
            }
            let job = incremental_job(user.team_id, user.id, provider, started);
            crate::jobs::enqueue(&mut tx, &job).await?;
        }
        tx.commit().await.map_err(MetadataError::from)?;
        meta.jobs_wake().notify_waiters();
    }
    if !pushed.is_empty() {
        let stored = health
            .datasets(user.team_id, user.id)
            .await
            .map_err(DataError::from)?;
        let supports = |provider: &str, name: &str| {
            crate::providers::provider(provider)
                .is_some_and(|p| p.supported_resources.contains(&name))
        };
        // Each dataset is read once; which pushed providers have rows in it is then found in
        // memory (a timeseries read comes back one source per batch).
        let mut found: Vec<(&str, &'static str)> = Vec::new();
        for dataset in stored {
            let name = crate::data::provider_list::resource_name(dataset);
            if !pushed.iter().any(|p| supports(p, name)) {
                continue;
            }
            let batches = health
                .read(user.team_id, user.id, dataset, None)
                .await
                .map_err(DataError::from)?;
            for provider in pushed.iter().filter(|p| supports(p, name)) {
                let rows = crate::data::keep_provider(batches.clone(), provider)?;
                if rows.iter().any(|b| b.num_rows() > 0) {
                    found.push((provider.as_str(), name));
                }
            }
        }
        for provider in &pushed {
            out.refreshed_sources.extend(
                found
                    .iter()
                    .filter(|(p, _)| *p == provider.as_str())
                    .map(|(p, name)| format!("{p}/{name}")),
            );
        }
    }
    loop {
        let mut still = Vec::new();
        for provider in pending {
            let sync = sync_pulls::get(&mut *meta.reader().await?, user.id, &provider).await?;
            match sync {
                Some(s) if s.synced_at.is_some_and(|at| at >= started) => {
                    out.refreshed_sources
                        .extend(sources(&provider, &s.synced_resources));
                }
                Some(s) if s.failed.as_ref().is_some_and(|(at, _)| *at >= started) => {
                    out.failed_sources
                        .extend(known_sources(&provider, &s.resources));
                }
                _ => still.push(provider),
            }
        }
        pending = still;
        if pending.is_empty() || tokio::time::Instant::now() + POLL > deadline {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    for provider in pending {
        let sync = sync_pulls::get(&mut *meta.reader().await?, user.id, &provider).await?;
        let history = sync.map(|s| s.resources).unwrap_or_default();
        out.in_progress_sources
            .extend(known_sources(&provider, &history));
    }
    out.success = out.failed_sources.is_empty();
    Ok(out)
}

/// `<provider>/<resource>` for dataset paths.
fn sources(provider: &str, paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .filter_map(|p| Dataset::from_path(p))
        .map(|d| {
            format!(
                "{provider}/{}",
                crate::data::provider_list::resource_name(d)
            )
        })
        .collect()
}

/// What a provider that has not (yet) refreshed is known to supply: its history's resources
/// (dataset paths), else its catalogue's.
fn known_sources(provider: &str, history: &[String]) -> Vec<String> {
    if !history.is_empty() {
        return sources(provider, history);
    }
    crate::providers::provider(provider)
        .map(|p| p.supported_resources)
        .unwrap_or_default()
        .iter()
        .map(|r| format!("{provider}/{r}"))
        .collect()
}
