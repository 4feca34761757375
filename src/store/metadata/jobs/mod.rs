//! The `jobs` table: every statement of the durable job queue (`src/jobs/` runs it).
//!
//! Functions take a connection (`&mut AnyConnection`; a `Transaction` derefs to one), so a
//! domain enqueues a job inside its own transaction and the job exists exactly when the change
//! that asked for it commits. Instants are passed in, never read from the database's clock, so
//! tests can move time and every process compares the same kind of value.
//!
//! Claims differ by backend, the rest is portable SQL:
//! - PostgreSQL picks due rows with `FOR UPDATE SKIP LOCKED` in a CTE and updates them in the
//!   same statement, so concurrent runners on several processes take disjoint rows and never
//!   wait on each other;
//! - SQLite has a single writer: one `UPDATE ... WHERE id IN (SELECT ... LIMIT n)` statement runs
//!   under the database's write lock, so two claims are serialised and the second sees the first's
//!   rows as running.
//!
//! Every update of a claimed run is fenced by `(id, lease_owner, attempts)`: a claim increments
//! `attempts`, so a runner whose lease was taken over (even by itself) cannot complete, renew or
//! release the newer run.

mod model;
mod queue;

pub use model::{Enqueued, Fence, Finish, Job, JobFilter, JobState, NewJob};
pub use queue::{QueueStat, queue_stats};

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::{MetadataError, get_str, get_uuid, parse, ts};

const COLUMNS: [&str; 17] = [
    "id",
    "team_id",
    "kind",
    "payload",
    "unique_key",
    "state",
    "run_at",
    "attempts",
    "max_attempts",
    "lease_owner",
    "lease_expires_at",
    "rerun_at",
    "last_error",
    "created_at",
    "updated_at",
    "finished_at",
    "request_id",
];

fn columns(prefix: &str) -> String {
    COLUMNS
        .iter()
        .map(|c| format!("{prefix}{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn count(row: &AnyRow, column: &'static str) -> Result<u32, MetadataError> {
    let value: i64 = sqlx::Row::try_get(row, column)?;
    u32::try_from(value).map_err(|_| MetadataError::Corrupt {
        column,
        value: value.to_string(),
    })
}

fn job_from_row(row: &AnyRow) -> Result<Job, MetadataError> {
    let raw = get_str(row, "payload")?;
    let payload = serde_json::from_str(&raw).map_err(|_| MetadataError::Corrupt {
        column: "payload",
        value: raw,
    })?;
    from_row!(row => Job {
        id, team_id, kind, unique_key, run_at, lease_owner, lease_expires_at, rerun_at,
        last_error, created_at, updated_at, finished_at, request_id,
    } with {
        payload,
        state: parse("state", get_str(row, "state")?)?,
        attempts: count(row, "attempts")?,
        max_attempts: count(row, "max_attempts")?,
    })
}

/// Adds a job, in the caller's transaction when `conn` is one.
///
/// With a `unique_key` held by an unfinished job, no row is added: a pending holder has its
/// `run_at` moved to the earlier of the two; a running holder is marked to run again at `run_at`
/// once its current run ends (work that arrives during a run is never folded into it). Uses
/// `ON CONFLICT DO NOTHING`, never a failing insert, so a PostgreSQL transaction stays usable.
///
/// A new job records the request it is enqueued for
/// ([`current_request_id`](crate::telemetry::current_request_id)); a holder keeps its own.
pub async fn enqueue_job(
    conn: &mut AnyConnection,
    job: &NewJob,
    now: DateTime<Utc>,
) -> Result<Enqueued, MetadataError> {
    let run_at = ts(job.run_at);
    let request_id = crate::telemetry::current_request_id();
    // The holder can finish between our statements; a few rounds settle it.
    for _ in 0..8 {
        let id = Uuid::new_v4();
        let inserted = sqlx::query(
            "INSERT INTO jobs (id, team_id, kind, payload, unique_key, state, run_at, attempts, \
             max_attempts, created_at, updated_at, request_id) \
             VALUES ($1, $2, $3, $4, $5, 'pending', $6, 0, $7, $8, $8, $9) ON CONFLICT DO NOTHING",
        )
        .bind(id.to_string())
        .bind(job.team_id.map(|t| t.to_string()))
        .bind(&job.kind)
        .bind(job.payload.to_string())
        .bind(job.unique_key.clone())
        .bind(&run_at)
        .bind(i64::from(job.max_attempts.max(1)))
        .bind(ts(now))
        .bind(request_id.clone())
        .execute(&mut *conn)
        .await?;
        if inserted.rows_affected() == 1 {
            return Ok(Enqueued::Created(id));
        }
        // Without a key only a random-id collision gets here; a fresh id settles it.
        let Some(key) = &job.unique_key else { continue };
        let holder = sqlx::query(
            "SELECT id, state FROM jobs WHERE unique_key = $1 AND state IN ('pending', 'running')",
        )
        .bind(key)
        .fetch_optional(&mut *conn)
        .await?;
        let Some(holder) = holder else { continue };
        let holder_id = get_uuid(&holder, "id")?;
        let sql = match get_str(&holder, "state")?.as_str() {
            "pending" => {
                "UPDATE jobs SET run_at = CASE WHEN run_at > $2 THEN $2 ELSE run_at END, \
                 updated_at = $3 WHERE id = $1 AND state = 'pending'"
            }
            _ => {
                "UPDATE jobs SET rerun_at = CASE WHEN rerun_at IS NULL OR rerun_at > $2 \
                 THEN $2 ELSE rerun_at END, updated_at = $3 WHERE id = $1 AND state = 'running'"
            }
        };
        let marked = sqlx::query(sql)
            .bind(holder_id.to_string())
            .bind(&run_at)
            .bind(ts(now))
            .execute(&mut *conn)
            .await?;
        if marked.rows_affected() == 1 {
            return Ok(Enqueued::Existing(holder_id));
        }
    }
    Err(MetadataError::UniqueKeyContended {
        key: job.unique_key.clone().unwrap_or_default(),
    })
}

/// Claims up to `limit` jobs for `owner` until `lease_until`: due pending jobs, and running jobs
/// whose lease expired (their `last_error` records the takeover). Each claim increments
/// `attempts`; the returned jobs carry their [`Fence`].
pub async fn claim_jobs(
    conn: &mut AnyConnection,
    owner: &str,
    limit: u32,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<Vec<Job>, MetadataError> {
    let due =
        "(state = 'pending' AND run_at <= $3) OR (state = 'running' AND lease_expires_at <= $3)";
    let set = "state = 'running', lease_owner = $1, lease_expires_at = $2, \
         attempts = attempts + 1, updated_at = $3, \
         last_error = CASE WHEN state = 'running' THEN 'the lease of runner ' || \
         COALESCE(lease_owner, '?') || ' expired at ' || COALESCE(lease_expires_at, '?') \
         ELSE last_error END";
    let sql = if conn.backend_name() == "PostgreSQL" {
        format!(
            "WITH picked AS (SELECT id FROM jobs WHERE {due} ORDER BY run_at, id LIMIT $4 \
             FOR UPDATE SKIP LOCKED) \
             UPDATE jobs SET {set} FROM picked WHERE jobs.id = picked.id RETURNING {}",
            columns("jobs.")
        )
    } else {
        format!(
            "UPDATE jobs SET {set} WHERE id IN \
             (SELECT id FROM jobs WHERE {due} ORDER BY run_at, id LIMIT $4) RETURNING {}",
            columns("")
        )
    };
    let rows = sqlx::query(&sql)
        .bind(owner)
        .bind(ts(lease_until))
        .bind(ts(now))
        .bind(i64::from(limit))
        .fetch_all(&mut *conn)
        .await?;
    let mut jobs = rows
        .iter()
        .map(job_from_row)
        .collect::<Result<Vec<_>, _>>()?;
    jobs.sort_by_key(|j| (j.run_at, j.id));
    Ok(jobs)
}

const FENCED: &str = "id = $1 AND state = 'running' AND lease_owner = $2 AND attempts = $3";

/// Extends a run's lease to `until`; false when the run no longer holds it.
pub async fn renew_lease(
    conn: &mut AnyConnection,
    fence: &Fence,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let sql = format!("UPDATE jobs SET lease_expires_at = $4, updated_at = $5 WHERE {FENCED}");
    let done = sqlx::query(&sql)
        .bind(fence.id.to_string())
        .bind(&fence.owner)
        .bind(i64::from(fence.attempt))
        .bind(ts(until))
        .bind(ts(now))
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Ends a claimed run; false when the run no longer held its lease (nothing changed).
pub async fn finish_job(
    conn: &mut AnyConnection,
    fence: &Fence,
    finish: &Finish,
    now: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let release = "lease_owner = NULL, lease_expires_at = NULL, updated_at = $4";
    let (sql, at, error) = match finish {
        Finish::Succeeded => (
            format!(
                "UPDATE jobs SET \
                 state = CASE WHEN rerun_at IS NULL THEN 'succeeded' ELSE 'pending' END, \
                 run_at = COALESCE(rerun_at, run_at), \
                 attempts = CASE WHEN rerun_at IS NULL THEN attempts ELSE 0 END, \
                 finished_at = CASE WHEN rerun_at IS NULL THEN $4 ELSE NULL END, \
                 rerun_at = NULL, {release} WHERE {FENCED}"
            ),
            None,
            None,
        ),
        Finish::Pending {
            at,
            error,
            count_attempt,
        } => {
            let attempts = if *count_attempt {
                "attempts"
            } else {
                "attempts - 1"
            };
            (
                // A rerun asked for during the run (an enqueue of its key) is not postponed by
                // the run's own later retry.
                format!(
                    "UPDATE jobs SET state = 'pending', \
                     run_at = CASE WHEN rerun_at IS NOT NULL AND rerun_at < $5 \
                     THEN rerun_at ELSE $5 END, \
                     last_error = COALESCE($6, last_error), attempts = {attempts}, \
                     rerun_at = NULL, {release} WHERE {FENCED}"
                ),
                Some(ts(*at)),
                error.clone(),
            )
        }
        Finish::Failed { error } => (
            format!(
                "UPDATE jobs SET state = 'failed', last_error = $6, finished_at = $4, \
                 rerun_at = NULL, run_at = COALESCE($5, run_at), {release} WHERE {FENCED}"
            ),
            None,
            Some(error.clone()),
        ),
    };
    let mut query = sqlx::query(&sql)
        .bind(fence.id.to_string())
        .bind(&fence.owner)
        .bind(i64::from(fence.attempt))
        .bind(ts(now));
    if !matches!(finish, Finish::Succeeded) {
        query = query.bind(at).bind(error);
    }
    let done = query.execute(conn).await?;
    Ok(done.rows_affected() == 1)
}

/// One job by id, whoever owns it.
pub async fn job(conn: &mut AnyConnection, id: Uuid) -> Result<Option<Job>, MetadataError> {
    let sql = format!("SELECT {} FROM jobs WHERE id = $1", columns(""));
    let row = sqlx::query(&sql)
        .bind(id.to_string())
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(job_from_row).transpose()
}

/// A page of the jobs `filter` selects, newest first, and how many it selects in all.
pub async fn list_jobs(
    conn: &mut AnyConnection,
    filter: &JobFilter,
    offset: i64,
    limit: i64,
) -> Result<(Vec<Job>, i64), MetadataError> {
    // Empty strings stand for "no filter"; the clauses are fixed text, values are bound.
    let team = filter.team.map(|t| t.to_string()).unwrap_or_default();
    let state = filter.state.map(JobState::as_str).unwrap_or_default();
    let kind = filter.kind.clone().unwrap_or_default();
    let filter_sql = "(($1 = '' AND team_id IS NULL) OR team_id = $1) \
                      AND ($2 = '' OR state = $2) AND ($3 = '' OR kind = $3)";
    let total: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM jobs WHERE {filter_sql}"))
        .bind(&team)
        .bind(state)
        .bind(&kind)
        .fetch_one(&mut *conn)
        .await?;
    let sql = format!(
        "SELECT {} FROM jobs WHERE {filter_sql} ORDER BY created_at DESC, id DESC \
         LIMIT $4 OFFSET $5",
        columns("")
    );
    let rows = sqlx::query(&sql)
        .bind(&team)
        .bind(state)
        .bind(&kind)
        .bind(limit)
        .bind(offset)
        .fetch_all(&mut *conn)
        .await?;
    let jobs = rows.iter().map(job_from_row).collect::<Result<_, _>>()?;
    Ok((jobs, total))
}
