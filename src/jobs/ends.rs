//! Recording how runs end, batched: every finished run hands its end to one writer task per
//! runner, which writes all the ends waiting at that moment in one transaction. A busy queue
//! then pays one commit (one fsync) per batch instead of one per job, which is what lets short
//! jobs such as webhook deliveries run at hundreds per second with the database as the queue.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::clock::Clock;
use crate::store::metadata::MetadataStore;
use crate::store::metadata::jobs::{self, Fence, Finish};

/// Ends written in one transaction at most.
const BATCH: usize = 64;

type Reply = oneshot::Sender<Result<bool, ()>>;

/// The sending side: what the job tasks use.
#[derive(Debug, Clone)]
pub(super) struct Ends(mpsc::Sender<(Fence, Finish, Reply)>);

impl Ends {
    /// Starts the writer on `meta`; it stops once every `Ends` is dropped.
    pub(super) fn spawn(
        meta: MetadataStore,
        clock: Arc<dyn Clock>,
    ) -> (Ends, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel(BATCH * 4);
        (Ends(tx), tokio::spawn(write_ends(meta, clock, rx)))
    }

    /// Records one end with the others waiting: `Ok(false)` when the run no longer held its
    /// lease, `Err` when the batch's transaction failed (the caller may retry on its own).
    pub(super) async fn record(&self, fence: &Fence, finish: &Finish) -> Result<bool, ()> {
        let (reply, answer) = oneshot::channel();
        if self
            .0
            .send((fence.clone(), finish.clone(), reply))
            .await
            .is_err()
        {
            return Err(());
        }
        answer.await.unwrap_or(Err(()))
    }
}

async fn write_ends(
    meta: MetadataStore,
    clock: Arc<dyn Clock>,
    mut rx: mpsc::Receiver<(Fence, Finish, Reply)>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        let results = write_batch(&meta, clock.now(), &batch).await;
        if let Err(error) = &results {
            tracing::warn!(%error, ends = batch.len(), "recording job ends failed");
        }
        for (i, (_, _, reply)) in batch.drain(..).enumerate() {
            let answer = match &results {
                Ok(flags) => Ok(flags.get(i).copied().unwrap_or(false)),
                Err(_) => Err(()),
            };
            let _ = reply.send(answer);
        }
    }
}

async fn write_batch(
    meta: &MetadataStore,
    now: chrono::DateTime<chrono::Utc>,
    batch: &[(Fence, Finish, Reply)],
) -> Result<Vec<bool>, crate::store::metadata::MetadataError> {
    let mut tx = meta.begin().await?;
    let mut flags = Vec::with_capacity(batch.len());
    for (fence, finish, _) in batch {
        flags.push(jobs::finish_job(&mut tx, fence, finish, now).await?);
    }
    tx.commit().await?;
    Ok(flags)
}
