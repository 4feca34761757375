//! Retention of finished work: the `jobs.prune` job, a single standing system job like
//! `events.prune` (enqueued at every start, kept single by its unique key), runs every
//! [`EVERY`] and removes
//! - jobs that succeeded more than [`KEEP_SUCCEEDED`] ago;
//! - jobs that failed more than [`KEEP_FAILED`] ago (as long as events are kept, so a failure
//!   can be looked into as long as what caused it);
//! - webhook deliveries that succeeded more than [`KEEP_SUCCEEDED`] ago, with their attempts.
//!   Failed deliveries stay with their event and go with it (`events::retention`).
//!
//! Without it the metadata database grew with every push (a finished `events.push`,
//! `store.compact` and `webhook.deliver` job each) for ever (issue 43).

use chrono::{DateTime, Utc};

use super::handler::{Empty, JobContext, JobError, JobHandler, Outcome};
use crate::store::metadata::finished::{prune_jobs, prune_succeeded_deliveries};
use crate::store::metadata::jobs::NewJob;
use crate::store::metadata::{MetadataError, MetadataStore};

/// The kind's name.
pub const KIND: &str = "jobs.prune";

/// How long a succeeded job or delivery is kept after it finished.
pub const KEEP_SUCCEEDED: chrono::Duration = chrono::Duration::days(1);

/// How long a failed job is kept after it failed: as long as events (`events.md`'s 30 days;
/// `events::retention` checks that its `KEEP` is this, so the two cannot drift, and `jobs`
/// does not import `events`).
pub const KEEP_FAILED: chrono::Duration = chrono::Duration::days(30);

/// How often the job runs.
pub const EVERY: chrono::Duration = chrono::Duration::hours(1);

/// Rows removed per transaction.
const BATCH: i64 = 1000;

/// The pruning job, due at `at`.
pub fn job(at: DateTime<Utc>) -> NewJob {
    NewJob::typed(KIND, &Empty {}).at(at).unique(KIND)
}

/// What a pass removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Succeeded jobs.
    pub succeeded_jobs: u64,
    /// Failed jobs.
    pub failed_jobs: u64,
    /// Succeeded deliveries.
    pub deliveries: u64,
}

/// Removes the finished work whose retention is over at `now`.
pub async fn prune(meta: &MetadataStore, now: DateTime<Utc>) -> Result<Pruned, MetadataError> {
    let mut out = Pruned::default();
    for (state, keep) in [("succeeded", KEEP_SUCCEEDED), ("failed", KEEP_FAILED)] {
        loop {
            let mut tx = meta.begin().await?;
            let n = prune_jobs(&mut tx, state, now - keep, BATCH).await?;
            tx.commit().await?;
            match state {
                "succeeded" => out.succeeded_jobs += n,
                _ => out.failed_jobs += n,
            }
            if n < BATCH as u64 {
                break;
            }
        }
    }
    loop {
        let mut tx = meta.begin().await?;
        let n = prune_succeeded_deliveries(&mut tx, now - KEEP_SUCCEEDED, BATCH).await?;
        tx.commit().await?;
        out.deliveries += n;
        if n < BATCH as u64 {
            return Ok(out);
        }
    }
}

/// The `jobs.prune` handler.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pruner;

#[async_trait::async_trait]
impl JobHandler for Pruner {
    fn kind(&self) -> &'static str {
        KIND
    }

    type Payload = Empty;

    async fn run(&self, ctx: &JobContext, _payload: Empty) -> Result<Outcome, JobError> {
        let now = ctx.now();
        let out = prune(&ctx.meta, now)
            .await
            .map_err(|e| JobError::Retry(format!("pruning finished work: {e}")))?;
        tracing::info!(?out, "pruned finished jobs and deliveries");
        Ok(Outcome::RetryAt(now + EVERY))
    }
}
