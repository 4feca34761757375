//! What a job kind implements ([`JobHandler`]), what it answers ([`Outcome`], [`JobError`]),
//! what it is given ([`JobContext`]), and the [`Registry`] a runner looks kinds up in.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::sync::watch;
use uuid::Uuid;

use super::clock::Clock;
use crate::store::metadata::MetadataStore;

/// How a run that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The work is done: the job succeeds.
    Done,
    /// Run again at this instant, without counting this run as a failed attempt (waiting on
    /// something outside: a lab's confirmation, a provider's `Retry-After`, a checkpoint taken
    /// at shutdown). The handler bounds how often it asks.
    RetryAt(DateTime<Utc>),
}

/// How a run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// A failure worth retrying (network, 5xx, a busy store): retried with backoff until the
    /// job's `max_attempts`, then the job fails with this message as `last_error`.
    #[error("{0}")]
    Retry(String),
    /// A failure no retry can fix (a malformed payload, a revoked grant): the job fails now.
    #[error("{0}")]
    Permanent(String),
}

/// A metadata-store failure in a handler is worth retrying (the database was busy, restarting,
/// unreachable): the job is retried with backoff.
impl From<crate::store::metadata::MetadataError> for JobError {
    fn from(e: crate::store::metadata::MetadataError) -> Self {
        JobError::Retry(format!("metadata store: {e}"))
    }
}

/// One kind of job. Runs are at-least-once: a run may be cut short (process killed, lease
/// lost) and run again, so a handler must be idempotent or resumable from durable progress.
#[async_trait::async_trait]
pub trait JobHandler: Send + Sync + 'static {
    /// The kind's stable name, stored in every job row (`store.compact`, `provider.pull`, ...).
    fn kind(&self) -> &'static str;

    /// Runs one job. Dropped at an `.await` if the lease is lost or shutdown's grace ends.
    async fn run(&self, ctx: &JobContext, payload: Value) -> Result<Outcome, JobError>;
}

/// What a handler knows about the run it performs.
#[derive(Debug, Clone)]
pub struct JobContext {
    /// The job's id.
    pub id: Uuid,
    /// The team it works for (`None`: a system job).
    pub team_id: Option<Uuid>,
    /// This run's attempt number (1 for the first claim).
    pub attempt: u32,
    /// Claims allowed.
    pub max_attempts: u32,
    /// The metadata store, for handlers that change metadata (and enqueue follow-up jobs in
    /// the same transaction).
    pub meta: MetadataStore,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) draining: watch::Receiver<bool>,
}

impl JobContext {
    /// Now, by the runner's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Whether the process is shutting down: a long handler may checkpoint and answer
    /// `Outcome::RetryAt(ctx.now())` to hand the rest to the next runner.
    pub fn is_draining(&self) -> bool {
        *self.draining.borrow()
    }

    /// Resolves when the process starts shutting down.
    pub async fn draining(&self) {
        let mut rx = self.draining.clone();
        let _ = rx.wait_for(|d| *d).await;
    }
}

/// The kinds a runner can run, by name.
#[derive(Clone, Default)]
pub struct Registry {
    handlers: HashMap<&'static str, Arc<dyn JobHandler>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.handlers.keys()).finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds a kind (replacing a handler registered under the same name).
    pub fn register(mut self, handler: impl JobHandler) -> Self {
        self.handlers.insert(handler.kind(), Arc::new(handler));
        self
    }

    /// The handler of a kind.
    pub fn get(&self, kind: &str) -> Option<Arc<dyn JobHandler>> {
        self.handlers.get(kind).cloned()
    }
}
