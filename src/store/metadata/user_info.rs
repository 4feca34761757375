//! A user's patient details (the validated JSON of `PATCH /v2/user/{user_id}/info`).

use serde_json::Value;
use sqlx::AnyConnection;
use uuid::Uuid;

use super::{MetadataError, MetadataStore, get_str, now, ts};

/// Stores the user's patient details, replacing earlier ones (one upsert statement).
pub async fn set_user_info(
    conn: &mut AnyConnection,
    user: Uuid,
    details: &Value,
) -> Result<(), MetadataError> {
    sqlx::query(
        "INSERT INTO user_info (user_id, details, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id) DO UPDATE \
         SET details = excluded.details, updated_at = excluded.updated_at",
    )
    .bind(user.to_string())
    .bind(details.to_string())
    .bind(ts(now()))
    .execute(conn)
    .await?;
    Ok(())
}

/// The user's latest patient details.
pub async fn user_info(
    conn: &mut AnyConnection,
    user: Uuid,
) -> Result<Option<Value>, MetadataError> {
    let row = sqlx::query("SELECT details FROM user_info WHERE user_id = $1")
        .bind(user.to_string())
        .fetch_optional(conn)
        .await?;
    let Some(row) = row else { return Ok(None) };
    let raw = get_str(&row, "details")?;
    serde_json::from_str(&raw)
        .map(Some)
        .map_err(|_| MetadataError::Corrupt {
            column: "details",
            value: raw,
        })
}

impl MetadataStore {
    /// Stores the user's patient details (validated JSON), replacing earlier ones.
    pub async fn set_user_info(&self, user: Uuid, details: &Value) -> Result<(), MetadataError> {
        set_user_info(&mut *self.writer().await?, user, details).await
    }

    /// The user's latest patient details.
    pub async fn user_info(&self, user: Uuid) -> Result<Option<Value>, MetadataError> {
        user_info(&mut *self.reader().await?, user).await
    }
}
