//! Historical pulls (`provider-sync.md` §Pulls): when a user links a provider that has a
//! connector, the last [`HISTORY`] of their data is pulled, chunk by chunk, by the durable
//! `sync.historical` job, stored like a push, and announced with one
//! `historical.data.<resource>.created` per resource that received records once the last chunk
//! is stored.
//!
//! - **Start**: [`start_on`] runs in the link's own transaction (`link::connections`): it
//!   records the pull's window in `sync_pulls` and enqueues the job, so a link is never
//!   committed without its pull.
//! - **Window**: `[now - HISTORY, now)`, narrowed to the user's `ingestion_start` /
//!   `ingestion_end` days; empty, nothing is pulled.
//! - **Chunks** of [`CHUNK`], oldest first, every resource the connector has. A chunk's data is
//!   validated (`sync::screen`: a record ingest refuses is dropped and logged, its neighbours
//!   kept), written to the health store (`data::write_parsed`: durable, no daily events), and
//!   only then is the row's `done_until` moved past it. A crash in between pulls the chunk
//!   again: records keep the provider's ids, so the second copy replaces the first, and every
//!   record is stored once. A shutdown hands the rest to the next runner between chunks.
//! - **Failures**: a `429` waits out its `Retry-After` (or [`RATE_LIMIT_WAIT`]) without counting
//!   as a failed attempt; a `401` refreshes the access token once per run (stored sealed, like
//!   the link's) and retries the chunk; a refresh the provider refuses puts the connection in
//!   `error` with `provider.connection.error` and ends the job; 5xx and timeouts are retried
//!   with the runner's backoff; anything else fails the job with its reason.
//! - A connection no longer `connected` (deregistered, in error) is not pulled: the job ends.
//!
//! Decisions where the spec is silent: the window's end is fixed when the link is made (data
//! arriving later is the incremental pull's); a pull that finds no record of any resource
//! completes without events.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use super::{Connector, Connectors, Pull, Resource, SyncError, Window, screen};
use crate::events::outbox;
use crate::jobs::{JobContext, JobError, JobHandler, NewJob, Outcome};
use crate::link::LinkErrorType;
use crate::link::credentials::Credentials;
use crate::link::oauth::Refreshed;
use crate::schema::Dataset;
use crate::store::health::HealthStore;
use crate::store::metadata::sync_pulls::{self, HistoricalPull};
use crate::store::metadata::{self, ConnectionStatus, MetadataError, MetadataStore, User};

/// The kind's name.
pub const KIND: &str = "sync.historical";

/// How far back a new connection is pulled.
pub const HISTORY: chrono::Duration = chrono::Duration::days(90);

/// The span one chunk pulls: Oura's longest heart-rate window.
pub const CHUNK: chrono::Duration = chrono::Duration::days(30);

/// How long a `429` without a readable `Retry-After` waits.
pub const RATE_LIMIT_WAIT: chrono::Duration = chrono::Duration::seconds(60);

/// The longest `Retry-After` honoured as given (a longer one is cut to this).
const LONGEST_WAIT: chrono::Duration = chrono::Duration::hours(1);

/// The connection's historical pull job, due at `at` (one per connection).
pub fn job(team: Uuid, user: Uuid, provider: &str, at: DateTime<Utc>) -> NewJob {
    NewJob {
        kind: KIND.to_owned(),
        team_id: Some(team),
        payload: json!({ "user": user, "provider": provider }),
        run_at: at,
        unique_key: Some(format!("{KIND}:{user}:{provider}")),
        max_attempts: 8,
    }
}

/// The window a pull started at `now` covers for `user`, if any.
pub fn window(user: &User, now: DateTime<Utc>) -> Option<Window> {
    let midnight = |day: NaiveDate| day.and_hms_opt(0, 0, 0).map(|t| t.and_utc());
    let mut start = now - HISTORY;
    let mut end = now;
    if let Some(first) = user.ingestion_start.and_then(midnight) {
        start = start.max(first);
    }
    if let Some(after) = user
        .ingestion_end
        .and_then(|d| d.succ_opt())
        .and_then(midnight)
    {
        end = end.min(after);
    }
    Window::new(start, end)
}

/// Starts the historical pull of the user's new connection to `provider`, on the caller's
/// transaction: records its window and enqueues its job. Does nothing for a provider without a
/// connector, an empty window, or a connection whose pull was started before (a link made
/// again keeps the first pull). Answers whether it started one.
pub async fn start_on(
    conn: &mut sqlx::AnyConnection,
    user: &User,
    provider: &str,
    now: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    if !super::has_connector(provider) {
        return Ok(false);
    }
    let Some(window) = window(user, now) else {
        return Ok(false);
    };
    let pull = HistoricalPull {
        user_id: user.id,
        provider: provider.to_owned(),
        team_id: user.team_id,
        window_start: window.start,
        window_end: window.end,
        done_until: window.start,
        resources: Vec::new(),
        completed_at: None,
    };
    if !sync_pulls::start(&mut *conn, &pull, now).await? {
        return Ok(false);
    }
    crate::jobs::enqueue(conn, &job(user.team_id, user.id, provider, now)).await?;
    Ok(true)
}

/// The `sync.historical` handler.
#[derive(Clone)]
pub struct HistoricalPuller {
    health: HealthStore,
    connectors: Connectors,
    secret: Option<crate::secret::SecretKey>,
    link: Arc<crate::link::LinkConfig>,
    http: reqwest::Client,
}

impl std::fmt::Debug for HistoricalPuller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoricalPuller")
            .field("connectors", &self.connectors)
            .finish_non_exhaustive()
    }
}

impl HistoricalPuller {
    /// A handler storing into `health`, pulling with `connectors`, opening credentials with
    /// `secret` and refreshing tokens with the link settings' OAuth applications.
    pub fn new(
        health: HealthStore,
        connectors: Connectors,
        secret: Option<crate::secret::SecretKey>,
        link: Arc<crate::link::LinkConfig>,
    ) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()?;
        Ok(HistoricalPuller {
            health,
            connectors,
            secret,
            link,
            http,
        })
    }

    async fn pull(
        &self,
        ctx: &JobContext,
        user: Uuid,
        provider: &str,
    ) -> Result<Outcome, JobError> {
        let meta = &ctx.meta;
        let Some(mut pull) = sync_pulls::get(&mut *meta.reader().await?, user, provider).await?
        else {
            return Ok(Outcome::Done);
        };
        let connected = meta
            .connection(user, provider)
            .await?
            .is_some_and(|c| c.status == ConnectionStatus::Connected);
        let Some(user) = meta.user(pull.team_id, user).await? else {
            return Ok(Outcome::Done);
        };
        if pull.completed_at.is_some() || !connected {
            return Ok(Outcome::Done);
        }
        let entry = crate::providers::provider(provider)
            .ok_or_else(|| permanent(format!("{provider} is not in the catalogue")))?;
        let connector = self
            .connectors
            .get(provider)
            .ok_or_else(|| permanent(format!("no connector for {provider}")))?;
        let mut credentials =
            crate::link::connections::credentials(meta, self.secret.as_ref(), user.id, provider)
                .await
                .map_err(|e| permanent(format!("the connection's credentials: {e}")))?
                .ok_or_else(|| permanent("the connection has no credentials".to_owned()))?;
        let mut refreshed = false;
        while pull.done_until < pull.window_end {
            if ctx.is_draining() {
                return Ok(Outcome::RetryAt(ctx.now()));
            }
            let end = (pull.done_until + CHUNK).min(pull.window_end);
            let Some(chunk) = Window::new(pull.done_until, end) else {
                break;
            };
            let asked = Pull {
                resources: Resource::ALL.to_vec(),
                window: chunk,
            };
            let token = credentials.access_token.clone().unwrap_or_default();
            let pulled = match connector.pull(&token, &asked).await {
                Ok(pulled) => pulled,
                Err(SyncError::Unauthorised) if !refreshed => {
                    refreshed = true;
                    credentials = self.refresh(meta, &user, entry, &credentials).await?;
                    continue;
                }
                Err(e) => return self.failed(ctx, &user, entry, e).await,
            };
            self.store(meta, &user, connector.as_ref(), pulled.body, &mut pull)
                .await?;
            pull.done_until = end;
            sync_pulls::advance(&mut *meta.writer().await?, &pull).await?;
        }
        self.complete(meta, &user, &pull).await?;
        Ok(Outcome::Done)
    }

    /// Validates and writes one chunk's body; notes which resources received records.
    async fn store(
        &self,
        meta: &MetadataStore,
        user: &User,
        connector: &dyn Connector,
        body: Value,
        pull: &mut HistoricalPull,
    ) -> Result<(), JobError> {
        let zone = crate::ingest::PushUser {
            fallback_time_zone: crate::data::fallback_zone(user),
        };
        let screened = screen(body, &zone, metadata::now()).map_err(|e| {
            permanent(format!(
                "the {} connector built a body ingest refuses: {e}",
                connector.provider()
            ))
        })?;
        if screened.batches.batches.is_empty() {
            return Ok(());
        }
        let written = crate::data::write_parsed(meta, &self.health, user, screened.batches)
            .await
            .map_err(|e| JobError::Retry(format!("storing a chunk: {e}")))?;
        let mut seen: BTreeSet<String> = pull.resources.iter().cloned().collect();
        seen.extend(written.into_iter().map(|d| d.path()));
        pull.resources = seen.into_iter().collect();
        Ok(())
    }

    /// Marks the pull complete and emits its events, in one transaction.
    async fn complete(
        &self,
        meta: &MetadataStore,
        user: &User,
        pull: &HistoricalPull,
    ) -> Result<(), JobError> {
        let names: Vec<&'static str> = pull
            .resources
            .iter()
            .filter_map(|path| Dataset::from_path(path))
            .map(crate::data::connections::resource_name)
            .collect();
        let last_day = (pull.window_end - chrono::Duration::microseconds(1)).date_naive();
        let days = (pull.window_start.date_naive(), last_day);
        let events = crate::data::historical_created(user, &pull.provider, &names, days);
        let mut tx = meta.begin().await?;
        sync_pulls::complete(&mut tx, user.id, &pull.provider, metadata::now()).await?;
        let enqueued = outbox::enqueue(&mut tx, user.team_id, &events, metadata::now()).await?;
        tx.commit().await.map_err(MetadataError::from)?;
        if enqueued.deliveries > 0 {
            meta.jobs_wake().notify_waiters();
        }
        Ok(())
    }

    /// Refreshes the access token and stores the new credentials; a refusal puts the connection
    /// in `error` and ends the job.
    async fn refresh(
        &self,
        meta: &MetadataStore,
        user: &User,
        provider: &crate::providers::Provider,
        credentials: &Credentials,
    ) -> Result<Credentials, JobError> {
        let key = self.secret.as_ref();
        let answer = crate::link::oauth::refresh(
            meta,
            key,
            &self.link,
            &self.http,
            user.team_id,
            provider,
            credentials,
        )
        .await
        .map_err(|e| JobError::Retry(format!("token refresh: {e}")))?;
        match answer {
            Refreshed::Tokens(fresh) => {
                let sealed = crate::link::credentials::seal(key, user.id, provider.slug, &fresh)
                    .map_err(|e| permanent(format!("sealing refreshed tokens: {e}")))?;
                metadata::connections::set_credentials(
                    &mut *meta.writer().await?,
                    user.id,
                    provider.slug,
                    &sealed,
                )
                .await?;
                Ok(fresh)
            }
            Refreshed::Refused(message) => {
                crate::link::connections::fail(
                    meta,
                    user,
                    provider,
                    LinkErrorType::ProviderCredentialError,
                    &message,
                    metadata::now(),
                )
                .await
                .map_err(|e| JobError::Retry(format!("recording the error: {e}")))?;
                Err(permanent(message))
            }
            Refreshed::Failed(message) => Err(JobError::Retry(message)),
        }
    }

    /// What a failed chunk does to the job.
    async fn failed(
        &self,
        ctx: &JobContext,
        user: &User,
        provider: &crate::providers::Provider,
        error: SyncError,
    ) -> Result<Outcome, JobError> {
        match error {
            SyncError::RateLimited {
                retry_after_seconds,
            } => {
                let wait = retry_after_seconds
                    .and_then(|s| i64::try_from(s).ok())
                    .map_or(RATE_LIMIT_WAIT, chrono::Duration::seconds)
                    .min(LONGEST_WAIT);
                tracing::info!(user = %user.id, provider = provider.slug, wait_s = wait.num_seconds(),
                    "provider rate limit: the pull waits");
                Ok(Outcome::RetryAt(ctx.now() + wait))
            }
            // A token just refreshed and refused again.
            SyncError::Unauthorised => Err(JobError::Retry(
                "the provider refused a freshly refreshed access token".to_owned(),
            )),
            SyncError::Transient { reason, .. } => Err(JobError::Retry(reason)),
            SyncError::Permanent { reason } => Err(permanent(reason)),
        }
    }
}

fn permanent(message: String) -> JobError {
    JobError::Permanent(message)
}

#[async_trait::async_trait]
impl JobHandler for HistoricalPuller {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn run(&self, ctx: &JobContext, payload: Value) -> Result<Outcome, JobError> {
        let user = payload
            .get("user")
            .and_then(Value::as_str)
            .and_then(|u| u.parse::<Uuid>().ok());
        let provider = payload.get("provider").and_then(Value::as_str);
        let (Some(user), Some(provider)) = (user, provider) else {
            return Err(JobError::Permanent(format!("malformed payload {payload}")));
        };
        self.pull(ctx, user, provider).await
    }
}
