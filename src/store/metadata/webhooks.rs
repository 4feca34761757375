//! The `webhook_endpoints` table: a team's endpoints, their secrets and their health.
//!
//! Every lookup is by (team, id), so another team's endpoint answers exactly as a missing one.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::{MetadataError, get_opt_str, get_opt_time, ts};

/// A stored endpoint. Its secrets never leave the process except at creation and rotation.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Its id.
    pub id: Uuid,
    /// The owning team.
    pub team_id: Uuid,
    /// Where events are posted.
    pub url: String,
    /// Names and `*`-prefixes it receives; `None`: every type.
    pub event_types: Option<Vec<String>>,
    /// The team's note.
    pub description: Option<String>,
    /// The signing secret (`whsec_<base64>`).
    pub secret: String,
    /// The secret before the last rotation, signing alongside until `previous_expires_at`.
    pub previous_secret: Option<String>,
    /// End of the rotation overlap.
    pub previous_expires_at: Option<DateTime<Utc>>,
    /// First failure of the current run of failures.
    pub failing_since: Option<DateTime<Utc>>,
    /// When it was disabled (no more deliveries).
    pub disabled_at: Option<DateTime<Utc>>,
    /// Why.
    pub disabled_reason: Option<String>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl std::fmt::Debug for Endpoint {
    // Secrets never reach a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("id", &self.id)
            .field("team_id", &self.team_id)
            .field("url", &self.url)
            .field("event_types", &self.event_types)
            .field("disabled_at", &self.disabled_at)
            .finish_non_exhaustive()
    }
}

const COLUMNS: &str = "id, team_id, url, event_types, description, secret, previous_secret, \
    previous_secret_expires_at, failing_since, disabled_at, disabled_reason, created_at, updated_at";

fn endpoint_from_row(row: &AnyRow) -> Result<Endpoint, MetadataError> {
    let event_types = match get_opt_str(row, "event_types")? {
        None => None,
        Some(raw) => Some(
            serde_json::from_str(&raw).map_err(|_| MetadataError::Corrupt {
                column: "event_types",
                value: raw,
            })?,
        ),
    };
    from_row!(row => Endpoint {
        id, team_id, url, description, secret, previous_secret, failing_since, disabled_at,
        disabled_reason, created_at, updated_at,
    } with {
        event_types,
        previous_expires_at: get_opt_time(row, "previous_secret_expires_at")?,
    })
}

fn types_json(types: &Option<Vec<String>>) -> Option<String> {
    types
        .as_ref()
        .map(|t| serde_json::to_string(t).unwrap_or_else(|_| "[]".to_owned()))
}

/// Adds an endpoint.
pub async fn insert_endpoint(conn: &mut AnyConnection, e: &Endpoint) -> Result<(), MetadataError> {
    sqlx::query(
        "INSERT INTO webhook_endpoints (id, team_id, url, event_types, description, secret, \
         created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(e.id.to_string())
    .bind(e.team_id.to_string())
    .bind(&e.url)
    .bind(types_json(&e.event_types))
    .bind(e.description.clone())
    .bind(&e.secret)
    .bind(ts(e.created_at))
    .bind(ts(e.updated_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes every mutable column of an endpoint (url, types, description, secrets, health).
pub async fn update_endpoint(
    conn: &mut AnyConnection,
    e: &Endpoint,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE webhook_endpoints SET url = $3, event_types = $4, description = $5, secret = $6, \
         previous_secret = $7, previous_secret_expires_at = $8, failing_since = $9, \
         disabled_at = $10, disabled_reason = $11, updated_at = $12 \
         WHERE team_id = $1 AND id = $2",
    )
    .bind(e.team_id.to_string())
    .bind(e.id.to_string())
    .bind(&e.url)
    .bind(types_json(&e.event_types))
    .bind(e.description.clone())
    .bind(&e.secret)
    .bind(e.previous_secret.clone())
    .bind(e.previous_expires_at.map(ts))
    .bind(e.failing_since.map(ts))
    .bind(e.disabled_at.map(ts))
    .bind(e.disabled_reason.clone())
    .bind(ts(e.updated_at))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Records the health of an endpoint after attempts: the start of its run of failures (or
/// none), and its disabling.
pub async fn set_health(
    conn: &mut AnyConnection,
    id: Uuid,
    failing_since: Option<DateTime<Utc>>,
    disabled: Option<(DateTime<Utc>, &str)>,
) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE webhook_endpoints SET failing_since = $2, \
         disabled_at = COALESCE(disabled_at, $3), disabled_reason = COALESCE(disabled_reason, $4) \
         WHERE id = $1",
    )
    .bind(id.to_string())
    .bind(failing_since.map(ts))
    .bind(disabled.map(|d| ts(d.0)))
    .bind(disabled.map(|d| d.1.to_owned()))
    .execute(conn)
    .await?;
    Ok(())
}

/// One of the team's endpoints.
pub async fn endpoint(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
) -> Result<Option<Endpoint>, MetadataError> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM webhook_endpoints WHERE team_id = $1 AND id = $2"
    ))
    .bind(team.to_string())
    .bind(id.to_string())
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(endpoint_from_row).transpose()
}

/// One endpoint by id, whoever owns it (the delivery worker).
pub async fn endpoint_by_id(
    conn: &mut AnyConnection,
    id: Uuid,
) -> Result<Option<Endpoint>, MetadataError> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM webhook_endpoints WHERE id = $1"
    ))
    .bind(id.to_string())
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(endpoint_from_row).transpose()
}

/// The team's endpoints, oldest first.
pub async fn endpoints(
    conn: &mut AnyConnection,
    team: Uuid,
) -> Result<Vec<Endpoint>, MetadataError> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM webhook_endpoints WHERE team_id = $1 ORDER BY created_at, id"
    ))
    .bind(team.to_string())
    .fetch_all(conn)
    .await?;
    rows.iter().map(endpoint_from_row).collect()
}

/// Removes an endpoint (its deliveries first); false when the team has no such endpoint.
pub async fn delete_endpoint(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
) -> Result<bool, MetadataError> {
    if endpoint(&mut *conn, team, id).await?.is_none() {
        return Ok(false);
    }
    super::deliveries::delete_deliveries(&mut *conn, id).await?;
    let done = sqlx::query("DELETE FROM webhook_endpoints WHERE team_id = $1 AND id = $2")
        .bind(team.to_string())
        .bind(id.to_string())
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}
