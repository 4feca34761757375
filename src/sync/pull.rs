//! Pulls from providers (`provider-sync.md` §Pulls), as durable jobs.
//!
//! **Historical pulls**: when a user links a provider that has a connector, the last
//! [`HISTORY`] of their data is pulled, chunk by chunk, by the `sync.historical` job, stored,
//! and announced with one `historical.data.<resource>.created` per resource that received
//! records once the last chunk is stored.
//!
//! - **Start**: [`start_on`] runs in the link's own transaction (`link::lifecycle`): it
//!   records the pull's window in `sync_pulls` and enqueues the job, so a link is never
//!   committed without its pull.
//! - **Window**: `[now - HISTORY, now)`, narrowed to the user's `ingestion_start` /
//!   `ingestion_end` days; empty, nothing is pulled.
//! - **Registration**: each run first has the connector register the user with the provider
//!   where its API wants that ([`Connector::register`]: Polar), then ask for the window's
//!   older data where the provider delivers it only on request ([`Connector::backfill`]:
//!   Garmin); a failure ends the run as a failed pull does.
//! - **Chunks** of [`CHUNK`], oldest first, every resource the connector has. A chunk's data is
//!   validated (`sync::screen`: a record ingest refuses is dropped and logged, its neighbours
//!   kept), written to the health store (`data::write_parsed`: durable, no daily events), and
//!   only then is the row's `done_until` moved past it. A crash in between pulls the chunk
//!   again: records keep the provider's ids, so the second copy replaces the first, and every
//!   record is stored once. A shutdown hands the rest to the next runner between chunks.
//! - **Failures**: a `429` waits out its `Retry-After` (or [`RATE_LIMIT_WAIT`]) without counting
//!   as a failed attempt; a `401` refreshes the access token once per run (a password
//!   provider's session with its refresh token if it gave one, else, or when that is refused,
//!   by signing in again with the stored username and password; stored sealed, like the
//!   link's) and retries the chunk; a refresh (or sign-in) the provider
//!   refuses puts the connection in `error` with `provider.connection.error` and ends the job;
//!   5xx and timeouts are retried with the runner's backoff; anything else fails the job with
//!   its reason.
//! - A connection no longer `connected` (deregistered, in error) is not pulled: the job ends.
//!
//! **Incremental pulls** (`sync.incremental`, one job per connection, enqueued with the
//! historical one): from where the last one ended less [`OVERLAP`] to now, every resource but
//! the profile, stored like a push (`data::store_push`: `daily.data.<resource>.created` for new
//! records, `.updated` for changed ones, nothing for identical ones), then again [`INTERVAL`]
//! later. `POST /v2/user/refresh` moves the pending job to now (`refresh.rs`). It waits while
//! the historical pull is incomplete. Both kinds record their last failure on the sync row.
//!
//! **Demo connections** (`sync::connectors::demo`) are pulled the same way: their sync row names a persona,
//! and [`super::connectors::demo::Demo`], which runs the demo generator, stands in for the connector (no
//! credentials, no token to refresh).
//!
//! Decisions where the spec is silent: the window's end is fixed when the link is made (data
//! arriving later is the incremental pull's); a pull that finds no record of any resource
//! completes without events.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use uuid::Uuid;

use super::access::LinkErrorType;
use super::credentials::Credentials;
use super::oauth::Refreshed;
use super::{Connector, Connectors, Pull, Resource, SyncError, Window, screen};
use crate::events::outbox;
use crate::ingest::{PulledBody, PushBatches};
use crate::jobs::{JobContext, JobError, JobHandler, NewJob, Outcome};
use crate::schema::Dataset;
use crate::store::health::HealthStore;
use crate::store::metadata::sync_pulls::{self, ConnectionSync};
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
    NewJob::typed(KIND, &PullPayload::new(user, provider))
        .for_team(team)
        .at(at)
        .unique(format!("{KIND}:{user}:{provider}"))
        .max_attempts(8)
}

/// The window a pull started at `now` covers for `user`, if any.
pub fn window(user: &User, now: DateTime<Utc>) -> Option<Window> {
    narrowed(user, now - HISTORY, now)
}

/// `[start, end)` narrowed to the user's `ingestion_start` / `ingestion_end` days; `None` when
/// nothing is left.
pub fn narrowed(user: &User, mut start: DateTime<Utc>, mut end: DateTime<Utc>) -> Option<Window> {
    let midnight = |day: NaiveDate| day.and_hms_opt(0, 0, 0).map(|t| t.and_utc());
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

/// Starts the pulls of the user's new connection to `provider`, on the caller's transaction:
/// records the historical pull's window and enqueues its job, and the incremental pull's,
/// [`INTERVAL`] later. Does nothing for a provider without a connector or an empty window. A
/// connection linked again keeps its first historical pull and has its incremental pulls
/// resumed (the first one covers the time it was not connected); one that was a demo
/// connection starts a real history. Answers whether it started a historical pull.
pub async fn start_on(
    conn: &mut sqlx::AnyConnection,
    user: &User,
    provider: &str,
    now: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    if !super::has_connector(provider) {
        return Ok(false);
    }
    begin_on(conn, user, provider, window(user, now), None, now).await
}

/// [`start_on`] over `window`, for the provider's connector (`demo` None) or the demo
/// generator living `demo`'s persona (`sync::connectors::demo`). A pull of the other kind, or a demo pull,
/// recorded before is started again over the new window, even while it runs: the run notices
/// before its next write and ends, and the job runs again for the new pull.
pub(crate) async fn begin_on(
    conn: &mut sqlx::AnyConnection,
    user: &User,
    provider: &str,
    window: Option<Window>,
    demo: Option<crate::sync::connectors::demo::generator::Persona>,
    now: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let Some(window) = window else {
        return Ok(false);
    };
    let pull = ConnectionSync::new(
        (user.id, user.team_id),
        provider,
        (window.start, window.end),
        demo.map(|p| p.name().to_owned()),
    );
    let started = match sync_pulls::get(&mut *conn, user.id, provider).await? {
        None => sync_pulls::start(&mut *conn, &pull, now).await?,
        Some(before) if before.demo_persona.is_some() || demo.is_some() => {
            sync_pulls::restart(&mut *conn, &pull).await?
        }
        Some(_) => false,
    };
    if started {
        crate::jobs::enqueue(&mut *conn, &job(user.team_id, user.id, provider, now)).await?;
    }
    let next = incremental_job(user.team_id, user.id, provider, now + INTERVAL);
    crate::jobs::enqueue(conn, &next).await?;
    Ok(started)
}

/// What pulls share: where they store, which connectors, how credentials are opened and
/// tokens refreshed. The two job kinds, [`HistoricalPuller`] and [`IncrementalPuller`], are
/// this with a different run.
#[derive(Clone)]
pub struct Puller {
    health: HealthStore,
    connectors: Connectors,
    secret: Option<crate::secret::SecretKey>,
    access: Arc<dyn super::apps::AccessSettings>,
    http: reqwest::Client,
    metrics: crate::metrics::Metrics,
}

impl std::fmt::Debug for Puller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Puller")
            .field("connectors", &self.connectors)
            .finish_non_exhaustive()
    }
}

/// One run's connection: its user, provider, connector, credentials and sync row.
struct Session {
    user: User,
    provider: &'static crate::providers::Provider,
    connector: Arc<dyn Connector>,
    credentials: Credentials,
    /// Whether this run refreshed the token already (a run refreshes at most once).
    refreshed: bool,
    sync: ConnectionSync,
}

impl Puller {
    /// Pulls storing into `health`, with `connectors`, opening credentials with `secret` and
    /// refreshing tokens with the link settings' OAuth applications.
    pub fn new(
        health: HealthStore,
        connectors: Connectors,
        secret: Option<crate::secret::SecretKey>,
        access: Arc<dyn super::apps::AccessSettings>,
    ) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()?;
        Ok(Puller {
            health,
            connectors,
            secret,
            access,
            http,
            metrics: crate::metrics::Metrics::default(),
        })
    }

    /// The same puller counting its runs in `metrics` (`wearhouse_provider_pulls_total`).
    pub fn with_metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Counts one run's result by provider, kind and outcome.
    fn count(&self, provider: &str, kind: &'static str, result: &Result<Outcome, JobError>) {
        let outcome = match result {
            Ok(Outcome::Done) => "done",
            Ok(Outcome::RetryAt(_)) => "rescheduled",
            Err(JobError::Retry(_)) => "retry",
            Err(JobError::Permanent(_)) => "failed",
        };
        self.metrics.pull(provider, kind, outcome);
    }

    /// The connection's session, or `None` when there is nothing to pull (no sync row, the
    /// user is gone, the connection is no longer `connected`).
    async fn open(
        &self,
        meta: &MetadataStore,
        user: Uuid,
        provider: &str,
    ) -> Result<Option<Session>, JobError> {
        let Some(sync) = sync_pulls::get(&mut *meta.reader().await?, user, provider).await? else {
            return Ok(None);
        };
        let connected = meta
            .connection(user, provider)
            .await?
            .is_some_and(|c| c.status == ConnectionStatus::Connected);
        let Some(user) = meta.user(sync.team_id, user).await? else {
            return Ok(None);
        };
        if !connected {
            return Ok(None);
        }
        let entry = crate::providers::provider(provider)
            .ok_or_else(|| permanent(format!("{provider} is not in the catalogue")))?;
        let (connector, credentials) = match &sync.demo_persona {
            Some(name) => {
                let demo = crate::sync::connectors::demo::generator::Persona::from_name(name)
                    .and_then(|persona| {
                        super::connectors::demo::Demo::new(provider, persona, user.id)
                    })
                    .ok_or_else(|| permanent(format!("no demo of {provider} as {name:?}")))?;
                let connector: Arc<dyn Connector> = Arc::new(demo);
                (connector, Credentials::default())
            }
            None => (
                self.connectors
                    .get(provider)
                    .ok_or_else(|| permanent(format!("no connector for {provider}")))?
                    .clone(),
                super::connection::credentials(meta, self.secret.as_ref(), user.id, provider)
                    .await
                    .map_err(|e| permanent(format!("the connection's credentials: {e}")))?
                    .ok_or_else(|| permanent("the connection has no credentials".to_owned()))?,
            ),
        };
        Ok(Some(Session {
            user,
            provider: entry,
            connector,
            credentials,
            refreshed: false,
            sync,
        }))
    }

    /// Pulls `asked` and validates the answer as ingested at `now` (records
    /// ingest refuses are dropped and logged): on a refused token, refreshes it once per run and
    /// asks again. `Err(Ok(outcome))`: the run ends with it (a rate-limit wait).
    async fn fetch(
        &self,
        ctx: &JobContext,
        session: &mut Session,
        asked: Pull,
        now: DateTime<Utc>,
    ) -> Result<PushBatches, Result<Outcome, JobError>> {
        loop {
            let token = session.credentials.access_token.clone().unwrap_or_default();
            match session.connector.pull(&token, &asked).await {
                Ok(pulled) => {
                    return self.screened(session, pulled.body, now).map_err(Err);
                }
                Err(SyncError::Unauthorised) if !session.refreshed => {
                    session.refreshed = true;
                    session.credentials = self.refresh(&ctx.meta, session).await.map_err(Err)?;
                }
                Err(error) => return Err(self.failed(ctx, session, error).await),
            }
        }
    }

    /// Has the connector register the user with the provider ([`Connector::register`]) and ask
    /// for the window's older data ([`Connector::backfill`]): on a refused token, refreshes it
    /// once per run and asks again, as [`Puller::fetch`] does.
    async fn register(
        &self,
        ctx: &JobContext,
        session: &mut Session,
    ) -> Result<(), Result<Outcome, JobError>> {
        let member = session.user.id.to_string();
        loop {
            let token = session.credentials.access_token.clone().unwrap_or_default();
            let asked: Result<(), SyncError> = async {
                session.connector.register(&token, &member).await?;
                match Window::new(session.sync.window_start, session.sync.window_end) {
                    Some(window) => session.connector.backfill(&token, &window).await,
                    None => Ok(()),
                }
            }
            .await;
            match asked {
                Ok(()) => return Ok(()),
                Err(SyncError::Unauthorised) if !session.refreshed => {
                    session.refreshed = true;
                    session.credentials = self.refresh(&ctx.meta, session).await.map_err(Err)?;
                }
                Err(error) => return Err(self.failed(ctx, session, error).await),
            }
        }
    }

    fn screened(
        &self,
        session: &Session,
        body: PulledBody,
        now: DateTime<Utc>,
    ) -> Result<PushBatches, JobError> {
        let zone = crate::ingest::PushUser {
            fallback_time_zone: crate::data::fallback_zone(&session.user),
            user_id: session.user.id,
        };
        let screened = screen(body, &zone, now).map_err(|e| {
            permanent(format!(
                "the {} connector built a body ingest refuses: {e}",
                session.connector.provider()
            ))
        })?;
        Ok(screened.batches)
    }

    /// Refreshes the access token (a password provider's session: [`sign_in_again`]) and
    /// stores the new credentials; a refusal puts the connection in `error` and ends the job.
    async fn refresh(
        &self,
        meta: &MetadataStore,
        session: &Session,
    ) -> Result<Credentials, JobError> {
        let (user, provider) = (&session.user, session.provider);
        let key = self.secret.as_ref();
        let mut refusal = LinkErrorType::ProviderCredentialError;
        let answer = match self.access.password_logins().get(provider.slug) {
            Some(login) => {
                let (answer, error_type) =
                    sign_in_again(login.as_ref(), &session.credentials).await;
                refusal = error_type;
                answer
            }
            None => super::oauth::refresh(
                meta,
                key,
                self.access.as_ref(),
                &self.http,
                user.team_id,
                provider,
                &session.credentials,
            )
            .await
            .map_err(|e| JobError::Retry(format!("token refresh: {e}")))?,
        };
        match answer {
            Refreshed::Tokens(fresh) => {
                let sealed = super::credentials::seal(key, user.id, provider.slug, &fresh)
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
                super::connection::fail(meta, user, provider, refusal, &message, metadata::now())
                    .await
                    .map_err(|e| JobError::Retry(format!("recording the error: {e}")))?;
                Err(permanent(message))
            }
            Refreshed::Failed(message) => Err(JobError::Retry(message)),
        }
    }

    /// What a failed pull does to the job.
    async fn failed(
        &self,
        ctx: &JobContext,
        session: &Session,
        error: SyncError,
    ) -> Result<Outcome, JobError> {
        let (user, provider) = (&session.user, session.provider.slug);
        match error {
            SyncError::RateLimited {
                retry_after_seconds,
            } => {
                let wait = retry_after_seconds
                    .and_then(|s| i64::try_from(s).ok())
                    .map_or(RATE_LIMIT_WAIT, chrono::Duration::seconds)
                    .min(LONGEST_WAIT);
                tracing::info!(user = %user.id, provider, wait_s = wait.num_seconds(),
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

    /// Records a run's failure on the connection's sync row (for `POST /v2/user/refresh`),
    /// best effort, and passes it on.
    async fn note<T>(
        meta: &MetadataStore,
        user: Uuid,
        provider: &str,
        result: Result<T, JobError>,
    ) -> Result<T, JobError> {
        if let Err(error) = &result {
            let noted = async {
                let mut conn = meta.writer().await?;
                sync_pulls::failed(
                    &mut conn,
                    user,
                    provider,
                    metadata::now(),
                    &error.to_string(),
                )
                .await
            };
            if let Err(e) = noted.await {
                tracing::warn!(error = %e, %user, provider, "could not record a failed pull");
            }
        }
        result
    }

    /// Records the user's id at the provider when the link did not bring one (Oura's token
    /// answer has none), so the provider's change notifications find the connection. Best
    /// effort: a failure is logged and the pull goes on; the next historical pull asks again.
    async fn remember_account(&self, meta: &MetadataStore, session: &Session) {
        let (user, provider) = (session.user.id, session.provider.slug);
        let known = match meta.connection(user, provider).await {
            Ok(c) => c.and_then(|c| c.provider_user_id).is_some(),
            Err(_) => true,
        };
        if known {
            return;
        }
        let token = session.credentials.access_token.clone().unwrap_or_default();
        let account = match session.connector.account(&token).await {
            Ok(Some(account)) => account,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(%user, provider, error = %e, "could not read the provider account id");
                return;
            }
        };
        let stored = async {
            let mut conn = meta.writer().await?;
            metadata::connections::remember_provider_user_id(&mut conn, user, provider, &account)
                .await
        };
        if let Err(e) = stored.await {
            tracing::warn!(%user, provider, error = %e, "could not record the provider account id");
        }
    }

    async fn historical(
        &self,
        ctx: &JobContext,
        user: Uuid,
        provider: &str,
    ) -> Result<Outcome, JobError> {
        let meta = &ctx.meta;
        let Some(mut session) = self.open(meta, user, provider).await? else {
            return Ok(Outcome::Done);
        };
        if session.sync.completed_at.is_some() {
            return Ok(Outcome::Done);
        }
        self.remember_account(meta, &session).await;
        if let Err(stop) = self.register(ctx, &mut session).await {
            return stop;
        }
        while session.sync.done_until < session.sync.window_end {
            if ctx.is_draining() {
                return Ok(Outcome::RetryAt(ctx.now()));
            }
            let end = (session.sync.done_until + CHUNK).min(session.sync.window_end);
            let Some(chunk) = Window::new(session.sync.done_until, end) else {
                break;
            };
            let asked = Pull {
                resources: Resource::ALL.to_vec(),
                window: chunk,
            };
            let batches = match self.fetch(ctx, &mut session, asked, metadata::now()).await {
                Ok(batches) => batches,
                Err(stop) => return stop,
            };
            if !self.current(meta, &session.sync).await? {
                return Ok(overtaken(&session));
            }
            if !batches.batches.is_empty() {
                let written = crate::data::write_parsed(meta, &self.health, &session.user, batches)
                    .await
                    .map_err(|e| JobError::Retry(format!("storing a chunk: {e}")))?;
                let mut seen: BTreeSet<String> = session.sync.resources.drain(..).collect();
                seen.extend(written.into_iter().map(|d| d.path()));
                session.sync.resources = seen.into_iter().collect();
            }
            let from = std::mem::replace(&mut session.sync.done_until, end);
            if !sync_pulls::advance(&mut *meta.writer().await?, &session.sync, from).await? {
                return Ok(overtaken(&session));
            }
        }
        if !self.complete(meta, &session.user, &session.sync).await? {
            return Ok(overtaken(&session));
        }
        Ok(Outcome::Done)
    }

    /// Whether the connection's sync row still describes the pull `pull` is running, where it
    /// left it (not restarted by a new demo connection or a real link over a demo one).
    async fn current(&self, meta: &MetadataStore, pull: &ConnectionSync) -> Result<bool, JobError> {
        let now = sync_pulls::get(&mut *meta.reader().await?, pull.user_id, &pull.provider).await?;
        Ok(now.is_some_and(|row| {
            row.window_start == pull.window_start
                && row.demo_persona == pull.demo_persona
                && row.done_until == pull.done_until
                && row.completed_at.is_none()
        }))
    }

    /// Marks the historical pull complete and emits its events, in one transaction; `false`,
    /// with nothing done, when the pull was restarted under this run.
    async fn complete(
        &self,
        meta: &MetadataStore,
        user: &User,
        pull: &ConnectionSync,
    ) -> Result<bool, JobError> {
        let names: Vec<&'static str> = pull
            .resources
            .iter()
            .filter_map(|path| Dataset::from_path(path))
            .map(crate::data::provider_list::resource_name)
            .collect();
        let last_day = (pull.window_end - chrono::Duration::microseconds(1)).date_naive();
        let days = (pull.window_start.date_naive(), last_day);
        let events = crate::data::historical_created(user, &pull.provider, &names, days);
        let mut tx = meta.begin().await?;
        if !sync_pulls::complete(&mut tx, pull, metadata::now()).await? {
            return Ok(false);
        }
        let enqueued = outbox::enqueue(&mut tx, user.team_id, &events, metadata::now()).await?;
        tx.commit().await.map_err(MetadataError::from)?;
        if enqueued.deliveries > 0 {
            meta.jobs_wake().notify_waiters();
        }
        Ok(true)
    }

    async fn incremental(
        &self,
        ctx: &JobContext,
        user: Uuid,
        provider: &str,
    ) -> Result<Outcome, JobError> {
        let meta = &ctx.meta;
        let Some(mut session) = self.open(meta, user, provider).await? else {
            return Ok(Outcome::Done);
        };
        let now = ctx.now();
        if session.sync.completed_at.is_none() {
            // The history comes first; its window ends where incremental pulls begin.
            return Ok(Outcome::RetryAt(now + HISTORY_WAIT));
        }
        let mut start = (session.sync.synced_until - OVERLAP).max(session.sync.window_start);
        let mut brought: BTreeSet<String> = BTreeSet::new();
        while let Some(chunk) = Window::new(start, (start + CHUNK).min(now)) {
            // The records' ingestion time is the push's stamp, by which its events find them.
            let stamp = metadata::now();
            let asked = Pull {
                resources: incremental_resources(),
                window: chunk,
            };
            let batches = match self.fetch(ctx, &mut session, asked, stamp).await {
                Ok(batches) => batches,
                Err(stop) => return stop,
            };
            if !batches.batches.is_empty() {
                brought.extend(batches.batches.iter().map(|(d, _)| d.path()));
                crate::data::store_push(meta, &self.health, &session.user, batches, stamp)
                    .await
                    .map_err(|e| JobError::Retry(format!("storing a pull: {e}")))?;
            }
            start = chunk.end;
        }
        let brought: Vec<String> = brought.into_iter().collect();
        sync_pulls::synced(&mut *meta.writer().await?, user, provider, now, &brought).await?;
        Ok(Outcome::RetryAt(now + INTERVAL))
    }
}

/// A password provider's renewal, as a refresh answers, with the link error a refusal records.
/// A connection holding a refresh token (Peloton's) is renewed with it first; only when the
/// provider refuses it (expired, revoked) is it signed in again with the stored username and
/// password (no region: a regional provider sends the sign-in on to the account's), and an
/// outage of the refresh is retried, not answered with the password. A refused username or
/// password, a password the provider wants changed (`provider_password_expired`) and a second
/// factor asked again (no one is there to enter the code) are refusals: only a new link fixes
/// them; anything else the sign-in answers (an outage) is worth retrying.
async fn sign_in_again(
    login: &dyn super::access::PasswordLogin,
    credentials: &Credentials,
) -> (Refreshed, LinkErrorType) {
    use super::access::{Renewal, SignIn};
    let refused = LinkErrorType::ProviderCredentialError;
    if let Some(refresh_token) = &credentials.refresh_token {
        match login.refresh(refresh_token).await {
            Renewal::Renewed {
                session,
                refresh_token: rotated,
            } => {
                let fresh = Credentials {
                    access_token: Some(session),
                    refresh_token: rotated.or_else(|| credentials.refresh_token.clone()),
                    ..credentials.clone()
                };
                return (Refreshed::Tokens(fresh), refused);
            }
            Renewal::Refused => {}
            Renewal::Failed(message) => return (Refreshed::Failed(message), refused),
        }
    }
    let (Some(username), Some(password)) = (&credentials.username, &credentials.password) else {
        let why = "no stored username and password to sign in again";
        return (Refreshed::Refused(why.into()), refused);
    };
    let again = super::access::Login {
        username,
        password,
        region: None,
    };
    match login.sign_in(again).await {
        SignIn::Accepted {
            session,
            refresh_token,
            ..
        } => {
            let previous = credentials.access_token.as_deref().unwrap_or_default();
            let fresh = Credentials {
                access_token: Some(login.renewed(previous, session)),
                refresh_token,
                ..credentials.clone()
            };
            (Refreshed::Tokens(fresh), refused)
        }
        SignIn::Pending { .. } => {
            let why = "the provider asks for a second factor again; link the provider again";
            (Refreshed::Refused(why.into()), refused)
        }
        SignIn::Refused(
            t @ (LinkErrorType::ProviderCredentialError | LinkErrorType::ProviderPasswordExpired),
            message,
        ) => (Refreshed::Refused(message), t),
        SignIn::Refused(_, message) => (
            Refreshed::Failed(format!("signing in again: {message}")),
            refused,
        ),
    }
}

/// What incremental pulls ask for: everything but the profile, which is not windowed (the
/// provider's current one) and carries no time of its own, so pulled every 30 minutes it would
/// be a new record each time. The historical pull takes it once.
fn incremental_resources() -> Vec<Resource> {
    Resource::ALL
        .into_iter()
        .filter(|r| *r != Resource::Profile)
        .collect()
}

/// How often a connection is pulled incrementally.
pub const INTERVAL: chrono::Duration = chrono::Duration::minutes(30);

/// How far back an incremental pull starts before the last one's end: providers finalise a
/// night's sleep or a day's activity hours after it began.
pub const OVERLAP: chrono::Duration = chrono::Duration::days(2);

/// How long an incremental pull waits for the connection's historical pull to complete.
const HISTORY_WAIT: chrono::Duration = chrono::Duration::minutes(1);

/// The `sync.incremental` kind's name.
pub const INCREMENTAL_KIND: &str = "sync.incremental";

/// The connection's incremental pull job, due at `at` (one per connection; enqueuing it again
/// only moves it earlier, which is how `POST /v2/user/refresh` asks for a pull now).
pub fn incremental_job(team: Uuid, user: Uuid, provider: &str, at: DateTime<Utc>) -> NewJob {
    NewJob::typed(INCREMENTAL_KIND, &PullPayload::new(user, provider))
        .for_team(team)
        .at(at)
        .unique(format!("{INCREMENTAL_KIND}:{user}:{provider}"))
        .max_attempts(8)
}

/// How a run ends when its pull was restarted under it: done, leaving the new pull to the job's
/// next run (the restart enqueued it; a running job is marked to run again).
fn overtaken(session: &Session) -> Outcome {
    tracing::info!(user = %session.user.id, provider = session.provider.slug,
        "the pull was started again; this run ends for the new one");
    Outcome::Done
}

fn permanent(message: String) -> JobError {
    JobError::Permanent(message)
}

/// The payload of both pull kinds: the connection pulled.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PullPayload {
    /// The connection's user.
    pub user: Uuid,
    /// The provider's slug.
    pub provider: String,
}

impl PullPayload {
    fn new(user: Uuid, provider: &str) -> Self {
        PullPayload {
            user,
            provider: provider.to_owned(),
        }
    }
}

/// The `sync.historical` handler.
#[derive(Debug, Clone)]
pub struct HistoricalPuller(pub Puller);

#[async_trait::async_trait]
impl JobHandler for HistoricalPuller {
    fn kind(&self) -> &'static str {
        KIND
    }

    type Payload = PullPayload;

    async fn run(&self, ctx: &JobContext, payload: PullPayload) -> Result<Outcome, JobError> {
        let PullPayload { user, provider } = payload;
        let result = self.0.historical(ctx, user, &provider).await;
        let result = Puller::note(&ctx.meta, user, &provider, result).await;
        self.0.count(&provider, "historical", &result);
        result
    }
}

/// The `sync.incremental` handler: pulls from where the last pull ended (less [`OVERLAP`]) to
/// now, stored like a push (`daily.data.*` events for new and changed records, none for
/// identical ones), then runs again [`INTERVAL`] later.
#[derive(Debug, Clone)]
pub struct IncrementalPuller(pub Puller);

#[async_trait::async_trait]
impl JobHandler for IncrementalPuller {
    fn kind(&self) -> &'static str {
        INCREMENTAL_KIND
    }

    type Payload = PullPayload;

    async fn run(&self, ctx: &JobContext, payload: PullPayload) -> Result<Outcome, JobError> {
        let PullPayload { user, provider } = payload;
        let result = self.0.incremental(ctx, user, &provider).await;
        let result = Puller::note(&ctx.meta, user, &provider, result).await;
        self.0.count(&provider, "incremental", &result);
        result
    }
}
