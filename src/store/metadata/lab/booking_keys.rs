//! `lab_booking_keys`: the keys availability hands out.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::super::{MetadataError, get_opt_time, get_str, get_time, ts};

/// A key as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct BookingKey {
    /// The key.
    pub key: String,
    /// Team it was issued to.
    pub team_id: Uuid,
    /// `phlebotomy` or `patient_service_center`.
    pub kind: String,
    /// The slot (JSON).
    pub slot: String,
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
    /// When it was used.
    pub used_at: Option<DateTime<Utc>>,
}

/// Stores issued keys.
pub async fn insert(
    conn: &mut AnyConnection,
    keys: &[BookingKey],
    now: DateTime<Utc>,
) -> Result<(), MetadataError> {
    for k in keys {
        sqlx::query(
            "INSERT INTO lab_booking_keys (booking_key, team_id, kind, slot, expires_at, used_at, created_at) \
             VALUES ($1, $2, $3, $4, $5, NULL, $6)",
        )
        .bind(&k.key)
        .bind(k.team_id.to_string())
        .bind(&k.kind)
        .bind(&k.slot)
        .bind(ts(k.expires_at))
        .bind(ts(now))
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The team's key, if it issued it.
pub async fn get(
    conn: &mut AnyConnection,
    team: Uuid,
    key: &str,
) -> Result<Option<BookingKey>, MetadataError> {
    let row = sqlx::query(
        "SELECT booking_key, team_id, kind, slot, expires_at, used_at FROM lab_booking_keys \
         WHERE booking_key = $1 AND team_id = $2",
    )
    .bind(key)
    .bind(team.to_string())
    .fetch_optional(conn)
    .await?;
    let Some(row) = row else { return Ok(None) };
    Ok(Some(BookingKey {
        key: get_str(&row, "booking_key")?,
        team_id: team,
        kind: get_str(&row, "kind")?,
        slot: get_str(&row, "slot")?,
        expires_at: get_time(&row, "expires_at")?,
        used_at: get_opt_time(&row, "used_at")?,
    }))
}

/// Marks a key used; false when it was already (a concurrent booking won).
pub async fn mark_used(
    conn: &mut AnyConnection,
    key: &str,
    now: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE lab_booking_keys SET used_at = $1 WHERE booking_key = $2 AND used_at IS NULL",
    )
    .bind(ts(now))
    .bind(key)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
