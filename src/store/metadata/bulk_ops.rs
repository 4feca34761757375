//! The connection reads and changes of `POST /v2/link/bulk_pause` and `bulk_export`
//! (`link::bulk_ops`): pausing the team's users' connections to one provider, and reading
//! them, with their sealed credentials, a page at a time by user id.

use sqlx::AnyConnection;
use uuid::Uuid;

use super::{MetadataError, get_opt_str, get_uuid, now, ts};

/// One connection to export: sealed credentials are opened by the caller.
#[derive(Clone)]
pub struct ExportRow {
    /// The team's user.
    pub user_id: Uuid,
    /// The user's id at the provider, when known.
    pub provider_user_id: Option<String>,
    /// The granted scopes (JSON list), when known.
    pub scopes_granted: Option<String>,
    /// The sealed credentials, when the connection has any.
    pub sealed: Option<String>,
}

/// Pauses the `connected` connection of `user` (a live user of `team`) to `provider`;
/// answers whether it did.
pub async fn pause(
    conn: &mut AnyConnection,
    team: Uuid,
    user: Uuid,
    provider: &str,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE connections SET status = 'paused', updated_at = $4 \
         WHERE user_id = $1 AND provider = $2 AND status = 'connected' \
         AND user_id IN (SELECT id FROM users WHERE team_id = $3 AND deleted_at IS NULL)",
    )
    .bind(user.to_string())
    .bind(provider)
    .bind(team.to_string())
    .bind(ts(now()))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

const EXPORT: &str = "SELECT c.user_id, c.provider_user_id, c.scopes_granted, c.credentials \
     FROM connections c JOIN users u ON u.id = c.user_id \
     WHERE u.team_id = $1 AND u.deleted_at IS NULL AND c.provider = $2 \
     AND c.status IN ('connected', 'paused')";

fn export_row(row: &sqlx::any::AnyRow) -> Result<ExportRow, MetadataError> {
    Ok(ExportRow {
        user_id: get_uuid(row, "user_id")?,
        provider_user_id: get_opt_str(row, "provider_user_id")?,
        scopes_granted: get_opt_str(row, "scopes_granted")?,
        sealed: get_opt_str(row, "credentials")?,
    })
}

/// Up to `limit` live (connected or paused) connections of the team's users to `provider`,
/// by user id, after `after`.
pub async fn export_page(
    conn: &mut AnyConnection,
    team: Uuid,
    provider: &str,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<ExportRow>, MetadataError> {
    let rows = sqlx::query(&format!(
        "{EXPORT} AND c.user_id > $3 ORDER BY c.user_id LIMIT $4"
    ))
    .bind(team.to_string())
    .bind(provider)
    .bind(after.map(|u| u.to_string()).unwrap_or_default())
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.iter().map(export_row).collect()
}

/// The live connection of one of the team's users to `provider`, for export.
pub async fn export_one(
    conn: &mut AnyConnection,
    team: Uuid,
    provider: &str,
    user: Uuid,
) -> Result<Option<ExportRow>, MetadataError> {
    let row = sqlx::query(&format!("{EXPORT} AND c.user_id = $3"))
        .bind(team.to_string())
        .bind(provider)
        .bind(user.to_string())
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(export_row).transpose()
}
