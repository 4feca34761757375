//! The durable job runner every background task uses: provider pulls, bulk imports, webhook
//! deliveries, lab appointment confirmations, store compaction.
//!
//! A job is a row of the metadata database's `jobs` table (`store::metadata::jobs` holds the
//! SQL): kind, JSON payload, owning team (none for system jobs), `run_at`, attempts, lease owner
//! and expiry, last error, state. No in-memory queue holds anything that must not be lost.
//!
//! - **Enqueue** with [`enqueue`] on a connection or inside the caller's transaction
//!   (`begin → change → enqueue → commit`), so a job exists exactly when the change that asked
//!   for it commits; then `meta.jobs_wake().notify_waiters()` starts it at once in this process
//!   ([`enqueue_now`] does all three for a lone job). Other processes see it within their poll
//!   interval.
//! - **Claim** ([`Runner`]): a runner takes up to its free slots in one statement, under a lease
//!   (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so several processes share the queue without
//!   waiting on each other; one write statement under SQLite's single-writer lock). A running
//!   job's lease is renewed every `heartbeat`; a runner that dies stops renewing, and once the
//!   lease expires any runner takes the job over (its `last_error` records the takeover).
//! - **Fencing**: every claim increments `attempts`, and every later update of the run must
//!   match `(id, lease_owner, attempts)`. A runner that lost its lease drops the run at once and
//!   cannot record an end over the newer run's. Two runners therefore never run a job at once,
//!   provided the processes' clocks agree to well within a lease (instants are computed by the
//!   runners, not the database).
//! - **Throughput**: a runner claims as many jobs as it has free slots in one statement and
//!   claims again as soon as a job ends (no poll-sleep per job); the ends of runs are written in
//!   batches, one transaction each (`ends.rs`), so a queue of short jobs (webhook deliveries)
//!   pays one commit per batch, not per job.
//! - **Outcomes** ([`JobHandler::run`]): `Done` → `succeeded`; `RetryAt(t)` → `pending` at `t`
//!   without using an attempt; `JobError::Retry` → `pending` after exponential backoff with
//!   jitter ([`Backoff`]), `failed` with `last_error` once `max_attempts` claims are used;
//!   `JobError::Permanent` → `failed` now. A panic counts as a `Retry` failure. A kind no
//!   handler is registered for is retried (a newer process may know it) and fails in the end.
//! - **Uniqueness** (`unique_key`): at most one unfinished job per key. Enqueueing onto a pending
//!   holder moves its `run_at` earlier, never later; onto a running holder marks it to run again
//!   when this run ends. One pending compaction per dataset, or a periodic singleton, is a key.
//! - **Shutdown** ([`RunnerHandle::shutdown`]): stop claiming, tell handlers
//!   ([`JobContext::is_draining`]), let running jobs finish within `shutdown_grace`, then drop
//!   the rest and release their leases (`pending`, due now, attempt given back), so the next
//!   process resumes them at once instead of waiting for the lease to expire.
//! - **Visibility**: `GET /v2/team/jobs?state=&kind=` lists a team's own jobs ([`view`]).
//!
//! Delivery is **at least once**. A run cut short by SIGKILL, a lost lease or a crash between
//! the handler's last effect and the recorded end is run again, so handlers are idempotent or
//! resume from durable progress (as the SIGKILL test's handler does, step by step); what the
//! runner guarantees is that a job reaches `succeeded` once, that no two runs of it overlap,
//! and that re-execution is bounded by `max_attempts` claims. Finished rows are kept (their
//! pruning is future work).
//!
//! Handlers hold their dependencies (stores, HTTP clients) and get a [`JobContext`]; the
//! runner imports no domain. [`compaction`] is the first kind: each push asks for a
//! `store.compact` job per dataset it wrote (unique per dataset, due 30 s later), which replaces
//! the in-memory compactor loop; it merges once the dataset has `compact_min_segments` small
//! segments in a row (`HealthStore::compact_due`), as that loop did.

mod backoff;
mod clock;
pub mod compaction;
mod ends;
pub mod erasure;
mod handler;
pub mod prune;
mod runner;
pub mod view;

pub use backoff::Backoff;
pub use clock::{Clock, ManualClock, SystemClock};
pub use handler::{Empty, JobContext, JobError, JobHandler, Outcome, Registry};
pub use runner::{Runner, RunnerConfig, RunnerHandle};

pub use crate::store::metadata::jobs::{Enqueued, Job, JobState, NewJob};

use serde::Serialize;
use serde_json::Value;
use sqlx::AnyConnection;
use uuid::Uuid;

use crate::store::metadata::{MetadataError, MetadataStore};

impl NewJob {
    /// A job of `kind` carrying `payload` (the kind's [`JobHandler::Payload`]), due now: no
    /// team, no unique key, 10 attempts. The payloads of this crate are plain structs of ids,
    /// strings and numbers, whose JSON cannot fail; one that did would be stored as `null` and
    /// the job would fail as malformed when run, never panic here.
    pub fn typed<P: Serialize>(kind: impl Into<String>, payload: &P) -> Self {
        NewJob::new(kind, serde_json::to_value(payload).unwrap_or(Value::Null))
    }

    /// A job of `kind` due now with a payload given as JSON: no team, no unique key, 10
    /// attempts.
    pub fn new(kind: impl Into<String>, payload: Value) -> Self {
        NewJob {
            kind: kind.into(),
            team_id: None,
            payload,
            run_at: crate::store::metadata::now(),
            unique_key: None,
            max_attempts: 10,
        }
    }

    /// Owned by (and visible to) `team`.
    pub fn for_team(mut self, team: Uuid) -> Self {
        self.team_id = Some(team);
        self
    }

    /// Due at `at`.
    pub fn at(mut self, at: chrono::DateTime<chrono::Utc>) -> Self {
        self.run_at = at;
        self
    }

    /// At most one unfinished job with this key.
    pub fn unique(mut self, key: impl Into<String>) -> Self {
        self.unique_key = Some(key.into());
        self
    }

    /// Claims allowed before the job fails for good.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }
}

/// Enqueues `job` on `conn` (a transaction's connection to enqueue atomically with the change
/// that asks for it). Wake this process's runners after the commit (module docs).
pub async fn enqueue(conn: &mut AnyConnection, job: &NewJob) -> Result<Enqueued, MetadataError> {
    crate::store::metadata::jobs::enqueue_job(conn, job, crate::store::metadata::now()).await
}

/// Enqueues a lone job on its own connection and wakes this process's runners.
pub async fn enqueue_now(meta: &MetadataStore, job: &NewJob) -> Result<Enqueued, MetadataError> {
    let mut conn = meta.writer().await?;
    let enqueued = enqueue(&mut conn, job).await?;
    drop(conn);
    meta.jobs_wake().notify_waiters();
    Ok(enqueued)
}

/// One job by id, whoever owns it (operators and tests).
pub async fn get(meta: &MetadataStore, id: Uuid) -> Result<Option<Job>, MetadataError> {
    let mut conn = meta.reader().await?;
    crate::store::metadata::jobs::job(&mut conn, id).await
}
