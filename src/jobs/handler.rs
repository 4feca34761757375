//! What a job kind implements ([`JobHandler`]), what it answers ([`Outcome`], [`JobError`]),
//! what it is given ([`JobContext`]), and the [`Registry`] a runner looks kinds up in.
//!
//! A kind's payload is a serde type ([`JobHandler::Payload`]) that its enqueuer builds and its
//! handler is given, so both sides share one struct and the compiler checks the seam. The
//! stored form stays JSON (a job row's `payload`), written by [`NewJob::typed`] and read back
//! here in one place: a payload that does not decode fails the job at once
//! (`JobError::Permanent("malformed payload <json>")`), before the handler runs, as every
//! handler refused a malformed payload before payloads were typed. A kind that reads its
//! payload loosely may still take `serde_json::Value`.
//!
//! [`NewJob::typed`]: crate::jobs::NewJob::typed

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde::de::DeserializeOwned;
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

    /// What a job of this kind carries: the struct its enqueuer builds. Its JSON is what the
    /// job row stores, so a change to it must still read the rows queued before.
    type Payload: Serialize + DeserializeOwned + Send + 'static;

    /// Runs one job. Dropped at an `.await` if the lease is lost or shutdown's grace ends.
    async fn run(&self, ctx: &JobContext, payload: Self::Payload) -> Result<Outcome, JobError>;
}

/// A handler as the runner holds it: given the stored JSON, which it decodes into the kind's
/// payload (the one place a payload is validated) before running.
#[async_trait::async_trait]
pub(crate) trait StoredHandler: Send + Sync + 'static {
    /// Decodes `payload` and runs the job.
    async fn run_stored(&self, ctx: &JobContext, payload: Value) -> Result<Outcome, JobError>;
}

#[async_trait::async_trait]
impl<H: JobHandler> StoredHandler for H {
    async fn run_stored(&self, ctx: &JobContext, payload: Value) -> Result<Outcome, JobError> {
        let typed = decode::<H::Payload>(payload)?;
        self.run(ctx, typed).await
    }
}

/// A stored payload as its kind's type; one that does not decode fails the job for good.
fn decode<P: DeserializeOwned>(payload: Value) -> Result<P, JobError> {
    P::deserialize(&payload)
        .map_err(|_| JobError::Permanent(format!("malformed payload {payload}")))
}

/// The payload of a kind that carries none (a standing system job): stored as `{}`. Any stored
/// JSON reads as it, as those kinds never looked at theirs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Empty {}

impl<'de> serde::Deserialize<'de> for Empty {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Empty {})
    }
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
    handlers: HashMap<&'static str, Arc<dyn StoredHandler>>,
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
    pub(crate) fn get(&self, kind: &str) -> Option<Arc<dyn StoredHandler>> {
        self.handlers.get(kind).cloned()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_payload_that_does_not_decode_fails_the_job_as_malformed() {
        #[derive(Debug, serde::Deserialize)]
        struct P {
            #[allow(dead_code)]
            user: Uuid,
        }
        let bad = json!({ "user": "x" });
        assert_eq!(
            decode::<P>(bad).err(),
            Some(JobError::Permanent(
                r#"malformed payload {"user":"x"}"#.to_owned()
            ))
        );
        assert!(decode::<P>(json!({ "user": Uuid::nil(), "more": 1 })).is_ok());
    }

    #[test]
    fn an_empty_payload_is_stored_as_an_empty_object_and_reads_from_anything() {
        assert_eq!(serde_json::to_value(Empty {}).ok(), Some(json!({})));
        for stored in [json!({}), json!(null), json!({ "x": 1 }), json!([1])] {
            assert_eq!(decode::<Empty>(stored).ok(), Some(Empty {}));
        }
    }
}
