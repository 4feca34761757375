//! Retention: stored events are kept [`KEEP`] (`events.md`: "kept 30 days"), then removed with
//! their deliveries by the `events.prune` job, a single system job that runs once a day on
//! whichever process claims it (enqueued at every start; its unique key keeps it single).
//! An event with a delivery still pending is kept until that delivery is sent or fails.

use chrono::{DateTime, Utc};

use crate::jobs::{Empty, JobContext, JobError, JobHandler, NewJob, Outcome};
use crate::store::metadata::events::prune_events;
use crate::store::metadata::{MetadataError, MetadataStore};

/// The kind's name.
pub const KIND: &str = "events.prune";

/// How long events are kept.
pub const KEEP: chrono::Duration = chrono::Duration::days(30);

// Failed jobs are kept as long as events (`jobs::prune::KEEP_FAILED`, which `jobs` states
// itself so as not to import `events`): checked at compile time.
const _: () = assert!(KEEP.num_seconds() == crate::jobs::prune::KEEP_FAILED.num_seconds());

/// How often the job runs.
pub const EVERY: chrono::Duration = chrono::Duration::days(1);

/// Events removed per transaction.
const BATCH: i64 = 1000;

/// The pruning job, due at `at`.
pub fn job(at: DateTime<Utc>) -> NewJob {
    NewJob::typed(KIND, &Empty {}).at(at).unique(KIND)
}

/// Removes the events older than [`KEEP`] at `now`; answers how many.
pub async fn prune(meta: &MetadataStore, now: DateTime<Utc>) -> Result<u64, MetadataError> {
    let mut removed = 0;
    loop {
        let mut tx = meta.begin().await?;
        let n = prune_events(&mut tx, now - KEEP, BATCH).await?;
        tx.commit().await?;
        removed += n;
        if n < BATCH as u64 {
            return Ok(removed);
        }
    }
}

/// The `events.prune` handler.
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
        let removed = prune(&ctx.meta, now)
            .await
            .map_err(|e| JobError::Retry(format!("pruning events: {e}")))?;
        tracing::info!(removed, "pruned events older than {} days", KEEP.num_days());
        Ok(Outcome::RetryAt(now + EVERY))
    }
}
