//! The `push_events` table: one row per push whose events are still to be made (see
//! `data::announce`). A row is written before the push's data, released after it, and deleted
//! once its events are written.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::{MetadataError, get_opt_time, get_str, get_time, get_uuid, ts};

/// A push waiting for its events.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingPush {
    /// Its id.
    pub id: Uuid,
    /// The user's team.
    pub team_id: Uuid,
    /// The user pushed for.
    pub user_id: Uuid,
    /// What the push changed (`data::changes::Plan`, JSON).
    pub plan: String,
    /// When it was written (pushes of a user are announced in this order).
    pub created_at: DateTime<Utc>,
    /// When an unreleased row is resolved by looking at the store.
    pub expires_at: DateTime<Utc>,
    /// When its data became durable; `None` while the write is in flight (or died).
    pub released_at: Option<DateTime<Utc>>,
}

/// Writes a pending push.
pub async fn insert_pending(
    conn: &mut AnyConnection,
    push: &PendingPush,
) -> Result<(), MetadataError> {
    sqlx::query(
        "INSERT INTO push_events (id, team_id, user_id, plan, created_at, expires_at, \
         released_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(push.id.to_string())
    .bind(push.team_id.to_string())
    .bind(push.user_id.to_string())
    .bind(&push.plan)
    .bind(ts(push.created_at))
    .bind(ts(push.expires_at))
    .bind(push.released_at.map(ts))
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks a pending push's data durable; answers whether the row was still there.
pub async fn release_pending(
    conn: &mut AnyConnection,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let done = sqlx::query("UPDATE push_events SET released_at = $2 WHERE id = $1")
        .bind(id.to_string())
        .bind(ts(at))
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Removes a pending push (announced, or dropped).
pub async fn delete_pending(conn: &mut AnyConnection, id: Uuid) -> Result<(), MetadataError> {
    sqlx::query("DELETE FROM push_events WHERE id = $1")
        .bind(id.to_string())
        .execute(conn)
        .await?;
    Ok(())
}

/// The user's oldest pending push.
pub async fn oldest_pending(
    conn: &mut AnyConnection,
    user: Uuid,
) -> Result<Option<PendingPush>, MetadataError> {
    let row = sqlx::query(
        "SELECT id, team_id, user_id, plan, created_at, expires_at, released_at \
         FROM push_events WHERE user_id = $1 ORDER BY created_at, id LIMIT 1",
    )
    .bind(user.to_string())
    .fetch_optional(conn)
    .await?;
    row.map(|row| {
        Ok(PendingPush {
            id: get_uuid(&row, "id")?,
            team_id: get_uuid(&row, "team_id")?,
            user_id: get_uuid(&row, "user_id")?,
            plan: get_str(&row, "plan")?,
            created_at: get_time(&row, "created_at")?,
            expires_at: get_time(&row, "expires_at")?,
            released_at: get_opt_time(&row, "released_at")?,
        })
    })
    .transpose()
}
