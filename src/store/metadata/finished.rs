//! Removing finished work: jobs that ended and webhook deliveries that were sent, once their
//! retention is over (`jobs::prune` decides the retention and runs it on a schedule).
//!
//! Each function removes at most `limit` rows, so a caller deletes in bounded transactions.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;

use super::{MetadataError, ts};

/// Removes up to `limit` jobs in `state` (`succeeded` or `failed`) that finished before
/// `cutoff`; answers how many. Pending and running jobs are never touched.
pub async fn prune_jobs(
    conn: &mut AnyConnection,
    state: &str,
    cutoff: DateTime<Utc>,
    limit: i64,
) -> Result<u64, MetadataError> {
    let done = sqlx::query(
        "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE state = $1 \
         AND state IN ('succeeded', 'failed') AND finished_at < $2 LIMIT $3)",
    )
    .bind(state)
    .bind(ts(cutoff))
    .bind(limit)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}

/// Removes up to `limit` deliveries that succeeded, last tried before `cutoff`, with their
/// attempts; answers how many. Pending and failed deliveries stay (failed ones go with their
/// event, `events::prune_events`).
pub async fn prune_succeeded_deliveries(
    conn: &mut AnyConnection,
    cutoff: DateTime<Utc>,
    limit: i64,
) -> Result<u64, MetadataError> {
    let ids: Vec<String> = sqlx::query_scalar(
        "SELECT id FROM webhook_deliveries WHERE status = 'succeeded' AND last_attempt_at < $1 \
         LIMIT $2",
    )
    .bind(ts(cutoff))
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    super::delete_ids(
        conn,
        &[
            "DELETE FROM webhook_attempts WHERE delivery_id IN ({list})",
            "DELETE FROM webhook_deliveries WHERE id IN ({list})",
        ],
        &ids,
    )
    .await
}
