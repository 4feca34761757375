//! The `bulk_import_ops` and `bulk_import_recipes` tables: bulk imports of OAuth connections,
//! their recipes (credentials arrive sealed) and each recipe's outcome; see
//! `link::bulk_import`.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::{MetadataError, get_opt_str, get_str, get_uuid, ts};

/// A stored operation, with the state of the job that works it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpRow {
    /// The operation's id.
    pub id: Uuid,
    /// The team that submitted it.
    pub team_id: Uuid,
    /// The provider slug.
    pub provider: String,
    /// Its type: `link_bulk_import` or `link_bulk_historical_trigger`.
    pub kind: String,
    /// The job that works it.
    pub job_id: Uuid,
    /// Recipes submitted.
    pub total: i64,
    /// Recipes handled (imported or failed).
    pub processed: i64,
    /// Recipes that failed.
    pub failed: i64,
    /// `in_progress` until the job ends it: `success`, `failure` or `aborted`.
    pub status: String,
    /// When it was submitted.
    pub started_at: DateTime<Utc>,
    /// When the job ended it.
    pub ended_at: Option<DateTime<Utc>>,
    /// The job's state (`None` when the job row is gone).
    pub job_state: Option<String>,
    /// When the job finished, if it did.
    pub job_finished_at: Option<DateTime<Utc>>,
}

/// A recipe to store: its tokens already sealed (never plaintext here).
#[derive(Debug, Clone)]
pub struct NewRecipe {
    /// The team's user.
    pub user_id: Uuid,
    /// The user's id at the provider.
    pub provider_id: String,
    /// The scopes the grant holds, when the submission named them.
    pub oauth_scopes: Option<Vec<String>>,
    /// The sealed credentials.
    pub sealed_credentials: String,
}

/// A recipe waiting to be handled.
#[derive(Debug, Clone)]
pub struct PendingRecipe {
    /// Its place in the submission (from 0).
    pub position: i64,
    /// The team's user.
    pub user_id: Uuid,
    /// The user's id at the provider.
    pub provider_id: String,
    /// The scopes the grant holds, when the submission named them.
    pub oauth_scopes: Option<Vec<String>>,
    /// The sealed credentials (`None` only in a hand-edited database).
    pub sealed_credentials: Option<String>,
}

/// How a recipe ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// A connection was made.
    Imported,
    /// It failed, for this reason.
    Failed(String),
}

const OP_COLUMNS: &str = "o.id, o.team_id, o.provider, o.kind, o.job_id, o.total, o.processed, \
     o.failed, o.status, o.started_at, o.ended_at, j.state AS job_state, \
     j.finished_at AS job_finished_at";

fn op_from_row(row: &AnyRow) -> Result<OpRow, MetadataError> {
    let int = |c: &'static str| -> Result<i64, MetadataError> {
        Ok(sqlx::Row::try_get::<i64, _>(row, c)?)
    };
    from_row!(row => OpRow {
        id, team_id, provider, kind, job_id, status, started_at, ended_at, job_state,
        job_finished_at,
    } with {
        total: int("total")?,
        processed: int("processed")?,
        failed: int("failed")?,
    })
}

/// Stores a new operation, `in_progress`, with nothing processed yet.
pub async fn insert_op(
    conn: &mut AnyConnection,
    op: &OpRow,
    recipes: &[NewRecipe],
) -> Result<(), MetadataError> {
    sqlx::query(
        "INSERT INTO bulk_import_ops (id, team_id, provider, job_id, total, processed, failed, \
         status, started_at, ended_at, kind) \
         VALUES ($1, $2, $3, $4, $5, 0, 0, 'in_progress', $6, NULL, $7)",
    )
    .bind(op.id.to_string())
    .bind(op.team_id.to_string())
    .bind(op.provider.as_str())
    .bind(op.job_id.to_string())
    .bind(op.total)
    .bind(ts(op.started_at))
    .bind(op.kind.as_str())
    .execute(&mut *conn)
    .await?;
    for (position, recipe) in (0i64..).zip(recipes) {
        let scopes = recipe
            .oauth_scopes
            .as_ref()
            .map(|s| serde_json::to_string(s).unwrap_or_default());
        sqlx::query(
            "INSERT INTO bulk_import_recipes (op_id, position, user_id, provider_id, \
             oauth_scopes, credentials) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(op.id.to_string())
        .bind(position)
        .bind(recipe.user_id.to_string())
        .bind(recipe.provider_id.as_str())
        .bind(scopes)
        .bind(recipe.sealed_credentials.as_str())
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// One operation (of `team`, when given).
pub async fn op(
    conn: &mut AnyConnection,
    team: Option<Uuid>,
    id: Uuid,
) -> Result<Option<OpRow>, MetadataError> {
    let row = sqlx::query(&format!(
        "SELECT {OP_COLUMNS} FROM bulk_import_ops o LEFT JOIN jobs j ON j.id = o.job_id \
         WHERE o.id = $1 AND ($2 = '' OR o.team_id = $2)"
    ))
    .bind(id.to_string())
    .bind(team.map(|t| t.to_string()).unwrap_or_default())
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(op_from_row).transpose()
}

/// Up to `limit` of the team's operations, newest first, after `after` (the last of the
/// previous page) when given.
pub async fn list_ops(
    conn: &mut AnyConnection,
    team: Uuid,
    after: Option<&OpRow>,
    limit: i64,
) -> Result<Vec<OpRow>, MetadataError> {
    let (at, id) = match after {
        Some(op) => (ts(op.started_at), op.id.to_string()),
        None => (String::new(), String::new()),
    };
    let rows = sqlx::query(&format!(
        "SELECT {OP_COLUMNS} FROM bulk_import_ops o LEFT JOIN jobs j ON j.id = o.job_id \
         WHERE o.team_id = $1 \
         AND ($2 = '' OR o.started_at < $2 OR (o.started_at = $2 AND o.id < $3)) \
         ORDER BY o.started_at DESC, o.id DESC LIMIT $4"
    ))
    .bind(team.to_string())
    .bind(at)
    .bind(id)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.iter().map(op_from_row).collect()
}

/// The first recipe of the operation not handled yet.
pub async fn next_pending(
    conn: &mut AnyConnection,
    op: Uuid,
) -> Result<Option<PendingRecipe>, MetadataError> {
    let row = sqlx::query(
        "SELECT position, user_id, provider_id, oauth_scopes, credentials \
         FROM bulk_import_recipes WHERE op_id = $1 AND outcome IS NULL \
         ORDER BY position LIMIT 1",
    )
    .bind(op.to_string())
    .fetch_optional(conn)
    .await?;
    row.map(|row| {
        let scopes = get_opt_str(&row, "oauth_scopes")?
            .map(|s| {
                serde_json::from_str(&s).map_err(|_| MetadataError::Corrupt {
                    column: "bulk_import_recipes.oauth_scopes",
                    value: s,
                })
            })
            .transpose()?;
        Ok(PendingRecipe {
            position: sqlx::Row::try_get::<i64, _>(&row, "position")?,
            user_id: get_uuid(&row, "user_id")?,
            provider_id: get_str(&row, "provider_id")?,
            oauth_scopes: scopes,
            sealed_credentials: get_opt_str(&row, "credentials")?,
        })
    })
    .transpose()
}

/// Replaces a waiting recipe's sealed credentials (refreshed tokens, kept before they are used
/// so a run cut short does not present the spent refresh token again).
pub async fn checkpoint(
    conn: &mut AnyConnection,
    op: Uuid,
    position: i64,
    sealed_credentials: &str,
) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE bulk_import_recipes SET credentials = $3 \
         WHERE op_id = $1 AND position = $2 AND outcome IS NULL",
    )
    .bind(op.to_string())
    .bind(position)
    .bind(sealed_credentials)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records how a waiting recipe ended (its credentials forgotten) and counts it on the
/// operation. Answers `false`, changing nothing, when the recipe was handled already: run it
/// in the transaction that made the connection, and roll back then.
pub async fn settle(
    conn: &mut AnyConnection,
    op: Uuid,
    position: i64,
    outcome: &Settled,
    now: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let (name, reason, failed) = match outcome {
        Settled::Imported => ("imported", None, 0i64),
        Settled::Failed(reason) => ("failed", Some(reason.as_str()), 1),
    };
    let done = sqlx::query(
        "UPDATE bulk_import_recipes SET outcome = $3, reason = $4, processed_at = $5, \
         credentials = NULL WHERE op_id = $1 AND position = $2 AND outcome IS NULL",
    )
    .bind(op.to_string())
    .bind(position)
    .bind(name)
    .bind(reason)
    .bind(ts(now))
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() != 1 {
        return Ok(false);
    }
    sqlx::query(
        "UPDATE bulk_import_ops SET processed = processed + 1, failed = failed + $2 WHERE id = $1",
    )
    .bind(op.to_string())
    .bind(failed)
    .execute(conn)
    .await?;
    Ok(true)
}

/// Fails every recipe still waiting with `reason` and counts them; answers how many.
pub async fn fail_rest(
    conn: &mut AnyConnection,
    op: Uuid,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<i64, MetadataError> {
    let done = sqlx::query(
        "UPDATE bulk_import_recipes SET outcome = 'failed', reason = $2, processed_at = $3, \
         credentials = NULL WHERE op_id = $1 AND outcome IS NULL",
    )
    .bind(op.to_string())
    .bind(reason)
    .bind(ts(now))
    .execute(&mut *conn)
    .await?;
    let n = i64::try_from(done.rows_affected()).unwrap_or(i64::MAX);
    sqlx::query(
        "UPDATE bulk_import_ops SET processed = processed + $2, failed = failed + $2 \
         WHERE id = $1",
    )
    .bind(op.to_string())
    .bind(n)
    .execute(conn)
    .await?;
    Ok(n)
}

/// Ends an `in_progress` operation with `status`.
pub async fn end_op(
    conn: &mut AnyConnection,
    op: Uuid,
    status: &str,
    now: DateTime<Utc>,
) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE bulk_import_ops SET status = $2, ended_at = $3 \
         WHERE id = $1 AND status = 'in_progress'",
    )
    .bind(op.to_string())
    .bind(status)
    .bind(ts(now))
    .execute(conn)
    .await?;
    Ok(())
}

/// Every handled recipe's user and outcome (`imported` or `failed`), in submission order.
pub async fn outcomes(
    conn: &mut AnyConnection,
    op: Uuid,
) -> Result<Vec<(Uuid, String)>, MetadataError> {
    let rows = sqlx::query(
        "SELECT user_id, outcome FROM bulk_import_recipes \
         WHERE op_id = $1 AND outcome IS NOT NULL ORDER BY position",
    )
    .bind(op.to_string())
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| Ok((get_uuid(row, "user_id")?, get_str(row, "outcome")?)))
        .collect()
}

/// Every failed recipe's user and reason, in submission order (the operation's details).
pub async fn failures(
    conn: &mut AnyConnection,
    op: Uuid,
) -> Result<Vec<(Uuid, String)>, MetadataError> {
    let rows = sqlx::query(
        "SELECT user_id, reason FROM bulk_import_recipes \
         WHERE op_id = $1 AND outcome = 'failed' ORDER BY position",
    )
    .bind(op.to_string())
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| {
            Ok((
                get_uuid(row, "user_id")?,
                get_opt_str(row, "reason")?.unwrap_or_default(),
            ))
        })
        .collect()
}
