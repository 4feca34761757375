//! `lab_idempotency`: the first answer per (team, `X-Idempotency-Key`).

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::super::{MetadataError, get_opt_str, get_str, get_time, is_unique_violation, ts};

/// What a key holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// Hash of the first request's body.
    pub request_hash: String,
    /// Its answer's status, `None` while it runs.
    pub status: Option<u16>,
    /// Its answer's body.
    pub body: Option<String>,
    /// When the key may be reused.
    pub expires_at: DateTime<Utc>,
}

/// Claims `key` for a request with `hash`: `Ok(None)` when the caller now owns it, else what
/// the key holds. An expired holder is replaced.
pub async fn claim(
    conn: &mut AnyConnection,
    team: Uuid,
    key: &str,
    hash: &str,
    now: DateTime<Utc>,
    expires_at: DateTime<Utc>,
) -> Result<Option<Stored>, MetadataError> {
    sqlx::query(
        "DELETE FROM lab_idempotency WHERE team_id = $1 AND idem_key = $2 AND expires_at <= $3",
    )
    .bind(team.to_string())
    .bind(key)
    .bind(ts(now))
    .execute(&mut *conn)
    .await?;
    let inserted = sqlx::query(
        "INSERT INTO lab_idempotency (team_id, idem_key, request_hash, status, body, created_at, expires_at) \
         VALUES ($1, $2, $3, NULL, NULL, $4, $5)",
    )
    .bind(team.to_string())
    .bind(key)
    .bind(hash)
    .bind(ts(now))
    .bind(ts(expires_at))
    .execute(&mut *conn)
    .await;
    match inserted {
        Ok(_) => Ok(None),
        Err(e) if is_unique_violation(&e) => {
            let row = sqlx::query(
                "SELECT request_hash, status, body, expires_at FROM lab_idempotency \
                 WHERE team_id = $1 AND idem_key = $2",
            )
            .bind(team.to_string())
            .bind(key)
            .fetch_one(&mut *conn)
            .await?;
            let status: Option<i64> = sqlx::Row::try_get(&row, "status")?;
            Ok(Some(Stored {
                request_hash: get_str(&row, "request_hash")?,
                status: status.and_then(|s| u16::try_from(s).ok()),
                body: get_opt_str(&row, "body")?,
                expires_at: get_time(&row, "expires_at")?,
            }))
        }
        Err(e) => Err(e.into()),
    }
}

/// Records the answer of the request that owns `key`.
pub async fn complete(
    conn: &mut AnyConnection,
    team: Uuid,
    key: &str,
    status: u16,
    body: &str,
) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE lab_idempotency SET status = $1, body = $2 WHERE team_id = $3 AND idem_key = $4",
    )
    .bind(i64::from(status))
    .bind(body)
    .bind(team.to_string())
    .bind(key)
    .execute(conn)
    .await?;
    Ok(())
}

/// Frees `key` (an answer that is not kept).
pub async fn release(conn: &mut AnyConnection, team: Uuid, key: &str) -> Result<(), MetadataError> {
    sqlx::query("DELETE FROM lab_idempotency WHERE team_id = $1 AND idem_key = $2")
        .bind(team.to_string())
        .bind(key)
        .execute(conn)
        .await?;
    Ok(())
}
