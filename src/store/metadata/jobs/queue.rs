//! The queue at a glance, for the metrics: per kind, how many jobs are due, waiting for a later
//! time and running, and since when the longest-waiting due job has been due. Two grouped
//! counts over the `(state, run_at)` index, whatever the queue's history.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;

use super::super::{MetadataError, get_opt_time, get_str, ts};
use super::count;

/// One kind's jobs in the queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueStat {
    /// The job kind.
    pub kind: String,
    /// Pending jobs whose time has come (waiting for a runner).
    pub queued: u32,
    /// Pending jobs waiting for a later time (retries, periodic pulls).
    pub scheduled: u32,
    /// Jobs claimed by a runner.
    pub running: u32,
    /// How long the longest-waiting due job has been due (zero when none is).
    pub oldest_queued_age: Duration,
}

/// Every kind with a pending or running job, by name, as of `now`.
pub async fn queue_stats(
    conn: &mut AnyConnection,
    now: DateTime<Utc>,
) -> Result<Vec<QueueStat>, MetadataError> {
    let mut kinds: BTreeMap<String, QueueStat> = BTreeMap::new();
    let rows = sqlx::query(
        "SELECT kind, state, COUNT(*) AS n FROM jobs \
         WHERE state IN ('pending', 'running') GROUP BY kind, state",
    )
    .fetch_all(&mut *conn)
    .await?;
    for row in &rows {
        let kind = get_str(row, "kind")?;
        let n = count(row, "n")?;
        let stat = kinds.entry(kind.clone()).or_insert_with(|| QueueStat {
            kind,
            ..QueueStat::default()
        });
        match get_str(row, "state")?.as_str() {
            "running" => stat.running = n,
            _ => stat.scheduled = n,
        }
    }
    let due = sqlx::query(
        "SELECT kind, COUNT(*) AS n, MIN(run_at) AS oldest FROM jobs \
         WHERE state = 'pending' AND run_at <= $1 GROUP BY kind",
    )
    .bind(ts(now))
    .fetch_all(&mut *conn)
    .await?;
    for row in &due {
        let Some(stat) = kinds.get_mut(&get_str(row, "kind")?) else {
            continue; // enqueued between the two statements: counted at the next scrape
        };
        let n = count(row, "n")?;
        stat.queued = n;
        stat.scheduled = stat.scheduled.saturating_sub(n);
        if let Some(oldest) = get_opt_time(row, "oldest")? {
            stat.oldest_queued_age = (now - oldest).to_std().unwrap_or_default();
        }
    }
    Ok(kinds.into_values().collect())
}
