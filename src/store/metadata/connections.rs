//! A user's connections to providers.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::{
    MetadataError, MetadataStore, get_opt_str, get_str, get_time, get_uuid, now, parse, ts,
};

/// Where a connection stands (`linking.md`): data flows only while `connected`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionStatus {
    /// Linked and pulling (or receiving) data.
    Connected,
    /// Kept, but no data is pulled until resumed.
    Paused,
    /// The provider refused the credentials or failed permanently; `error_details` says why.
    Error,
    /// Disconnected by the team or the user; kept for the record.
    Deregistered,
}

impl ConnectionStatus {
    /// The stored and rendered name.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionStatus::Connected => "connected",
            ConnectionStatus::Paused => "paused",
            ConnectionStatus::Error => "error",
            ConnectionStatus::Deregistered => "deregistered",
        }
    }
}

impl fmt::Display for ConnectionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ConnectionStatus {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "connected" => ConnectionStatus::Connected,
            "paused" => ConnectionStatus::Paused,
            "error" => ConnectionStatus::Error,
            "deregistered" => ConnectionStatus::Deregistered,
            _ => return Err(()),
        })
    }
}

/// Why a connection failed (`linking.md`): rendered as `error_details`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct ErrorDetails {
    /// A link error type (`provider_credential_error`, ...).
    pub error_type: String,
    /// What happened, as a sentence.
    pub error_message: String,
    /// When it happened.
    pub occurred_at: DateTime<Utc>,
}

/// A user's connection to a provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// Provider slug.
    pub provider: String,
    /// Where it stands.
    pub status: ConnectionStatus,
    /// When the connection was first made.
    pub created_at: DateTime<Utc>,
    /// The user's id at the provider, when known.
    pub provider_user_id: Option<String>,
    /// OAuth scopes granted; `None` when the connection came without a grant (push, demo).
    pub scopes_granted: Option<Vec<String>>,
    /// OAuth scopes asked for but denied; `None` as for `scopes_granted`.
    pub scopes_denied: Option<Vec<String>>,
    /// Why it is in `error`, when it is.
    pub error_details: Option<ErrorDetails>,
}

const COLUMNS: &str =
    "provider, status, created_at, provider_user_id, scopes_granted, scopes_denied, error_details";

fn json_column<T: serde::de::DeserializeOwned>(
    row: &AnyRow,
    column: &'static str,
) -> Result<Option<T>, MetadataError> {
    get_opt_str(row, column)?
        .map(|text| {
            serde_json::from_str(&text).map_err(|_| MetadataError::Corrupt {
                column,
                value: text,
            })
        })
        .transpose()
}

fn connection_from_row(row: &AnyRow) -> Result<Connection, MetadataError> {
    Ok(Connection {
        provider: get_str(row, "provider")?,
        status: parse("status", get_str(row, "status")?)?,
        created_at: get_time(row, "created_at")?,
        provider_user_id: get_opt_str(row, "provider_user_id")?,
        scopes_granted: json_column(row, "scopes_granted")?,
        scopes_denied: json_column(row, "scopes_denied")?,
        error_details: json_column(row, "error_details")?,
    })
}

/// Records a connection, or sets the status of an existing one (keeping when it was first
/// made), in one upsert statement.
pub async fn upsert_connection(
    conn: &mut AnyConnection,
    user: Uuid,
    provider: &str,
    status: ConnectionStatus,
) -> Result<Connection, MetadataError> {
    let row = sqlx::query(
        "INSERT INTO connections (user_id, provider, status, created_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (user_id, provider) DO UPDATE SET status = excluded.status \
         RETURNING provider, status, created_at, provider_user_id, scopes_granted, \
         scopes_denied, error_details",
    )
    .bind(user.to_string())
    .bind(provider)
    .bind(status.as_str())
    .bind(ts(now()))
    .fetch_one(conn)
    .await?;
    connection_from_row(&row)
}

/// A user's connections, oldest first.
pub async fn connections(
    conn: &mut AnyConnection,
    user: Uuid,
) -> Result<Vec<Connection>, MetadataError> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM connections WHERE user_id = $1 ORDER BY created_at, provider"
    ))
    .bind(user.to_string())
    .fetch_all(conn)
    .await?;
    rows.iter().map(connection_from_row).collect()
}

/// One connection of a user.
pub async fn connection(
    conn: &mut AnyConnection,
    user: Uuid,
    provider: &str,
) -> Result<Option<Connection>, MetadataError> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM connections WHERE user_id = $1 AND provider = $2"
    ))
    .bind(user.to_string())
    .bind(provider)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(connection_from_row).transpose()
}

/// What a link records about a connection besides its status.
#[derive(Debug, Clone, Default)]
pub struct Grant {
    /// The user's id at the provider.
    pub provider_user_id: Option<String>,
    /// Scopes granted.
    pub scopes_granted: Vec<String>,
    /// Scopes denied.
    pub scopes_denied: Vec<String>,
    /// The credentials, already sealed (never plaintext here).
    pub sealed_credentials: String,
}

/// Records a linked connection as `connected` with its grant and sealed credentials, or brings
/// an existing one (paused, errored, deregistered) back, keeping when it was first made and
/// clearing its error. Answers the connection and whether it was already `connected`.
pub async fn link(
    conn: &mut AnyConnection,
    user: Uuid,
    provider: &str,
    grant: &Grant,
) -> Result<(Connection, bool), MetadataError> {
    let before = connection(&mut *conn, user, provider).await?;
    let at = ts(now());
    let granted = serde_json::to_string(&grant.scopes_granted).unwrap_or_default();
    let denied = serde_json::to_string(&grant.scopes_denied).unwrap_or_default();
    let row = sqlx::query(&format!(
        "INSERT INTO connections (user_id, provider, status, created_at, provider_user_id, \
         scopes_granted, scopes_denied, credentials, error_details, updated_at) \
         VALUES ($1, $2, 'connected', $3, $4, $5, $6, $7, NULL, $3) \
         ON CONFLICT (user_id, provider) DO UPDATE SET status = 'connected', \
         provider_user_id = excluded.provider_user_id, scopes_granted = excluded.scopes_granted, \
         scopes_denied = excluded.scopes_denied, credentials = excluded.credentials, \
         error_details = NULL, updated_at = excluded.updated_at RETURNING {COLUMNS}"
    ))
    .bind(user.to_string())
    .bind(provider)
    .bind(at)
    .bind(grant.provider_user_id.as_deref())
    .bind(granted)
    .bind(denied)
    .bind(grant.sealed_credentials.as_str())
    .fetch_one(conn)
    .await?;
    let was_connected = before.is_some_and(|c| c.status == ConnectionStatus::Connected);
    Ok((connection_from_row(&row)?, was_connected))
}

/// Whether another user of the team has a live (connected or paused) connection to the same
/// provider account.
pub async fn provider_account_taken(
    conn: &mut AnyConnection,
    team: Uuid,
    user: Uuid,
    provider: &str,
    provider_user_id: &str,
) -> Result<bool, MetadataError> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS n FROM connections c JOIN users u ON u.id = c.user_id \
         WHERE u.team_id = $1 AND c.user_id <> $2 AND c.provider = $3 \
         AND c.provider_user_id = $4 AND c.status IN ('connected', 'paused')",
    )
    .bind(team.to_string())
    .bind(user.to_string())
    .bind(provider)
    .bind(provider_user_id)
    .fetch_one(conn)
    .await?;
    Ok(sqlx::Row::try_get::<i64, _>(&row, "n")? > 0)
}

/// Records the user's id at the provider on a connection that has none yet (a provider whose
/// token answer does not carry it); answers whether it did.
pub async fn remember_provider_user_id(
    conn: &mut AnyConnection,
    user: Uuid,
    provider: &str,
    provider_user_id: &str,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE connections SET provider_user_id = $3 \
         WHERE user_id = $1 AND provider = $2 AND provider_user_id IS NULL",
    )
    .bind(user.to_string())
    .bind(provider)
    .bind(provider_user_id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// The (team, user) of every `connected` connection to this provider account, across teams
/// (a provider's change notification names only its own account id).
pub async fn connected_accounts(
    conn: &mut AnyConnection,
    provider: &str,
    provider_user_id: &str,
) -> Result<Vec<(Uuid, Uuid)>, MetadataError> {
    let rows = sqlx::query(
        "SELECT u.team_id AS team_id, c.user_id AS user_id FROM connections c \
         JOIN users u ON u.id = c.user_id \
         WHERE c.provider = $1 AND c.provider_user_id = $2 AND c.status = 'connected' \
         AND u.deleted_at IS NULL",
    )
    .bind(provider)
    .bind(provider_user_id)
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| Ok((get_uuid(row, "team_id")?, get_uuid(row, "user_id")?)))
        .collect()
}

/// The sealed credentials of a connection (`None` without a connection or credentials).
pub async fn sealed_credentials(
    conn: &mut AnyConnection,
    user: Uuid,
    provider: &str,
) -> Result<Option<String>, MetadataError> {
    let row =
        sqlx::query("SELECT credentials FROM connections WHERE user_id = $1 AND provider = $2")
            .bind(user.to_string())
            .bind(provider)
            .fetch_optional(conn)
            .await?;
    Ok(match row {
        Some(row) => get_opt_str(&row, "credentials")?,
        None => None,
    })
}

/// Replaces a connection's sealed credentials (after a token refresh).
pub async fn set_credentials(
    conn: &mut AnyConnection,
    user: Uuid,
    provider: &str,
    sealed: &str,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE connections SET credentials = $3, updated_at = $4 \
         WHERE user_id = $1 AND provider = $2",
    )
    .bind(user.to_string())
    .bind(provider)
    .bind(sealed)
    .bind(ts(now()))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// What a push does to the connection of the provider it names: makes it `connected` when the
/// user has none, and when it is `deregistered` and `revive` is set (a provider whose data only
/// ever arrives by push, whose SDK or app sending data again is how it reconnects). It leaves
/// every other status alone: a push repairs no pull credential (`error`) and resumes nothing
/// (`paused`), and a deregistered pull provider stays ended until it is linked again.
/// Answers whether the push made the connection (the moment for `provider.connection.created`).
pub async fn connect_by_push(
    conn: &mut AnyConnection,
    user: Uuid,
    provider: &str,
    revive: bool,
) -> Result<bool, MetadataError> {
    let on_conflict = if revive {
        "DO UPDATE SET status = 'connected', updated_at = excluded.created_at \
         WHERE connections.status = 'deregistered'"
    } else {
        "DO NOTHING"
    };
    let done = sqlx::query(&format!(
        "INSERT INTO connections (user_id, provider, status, created_at) \
         VALUES ($1, $2, 'connected', $3) ON CONFLICT (user_id, provider) {on_conflict}"
    ))
    .bind(user.to_string())
    .bind(provider)
    .bind(ts(now()))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// What [`set_error`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorTransition {
    /// The connection entered `error` (the moment `provider.connection.error` is for).
    Entered,
    /// It was in `error` already; only its details changed.
    Again,
    /// No such connection, or a deregistered one (which the user ended and nothing pulls).
    Missing,
}

/// Puts a connection in `error` with its details (credentials kept: a re-link replaces them)
/// and says whether it entered `error` now. The transition is one conditional update, so of
/// two processes failing the same connection at once exactly one sees `Entered` (PostgreSQL
/// re-checks the condition after the row lock; SQLite has one writer).
pub async fn set_error(
    conn: &mut AnyConnection,
    user: Uuid,
    provider: &str,
    details: &ErrorDetails,
) -> Result<ErrorTransition, MetadataError> {
    let details = serde_json::to_string(details).unwrap_or_default();
    let mut update = async |condition: &str| -> Result<bool, MetadataError> {
        let done = sqlx::query(&format!(
            "UPDATE connections SET status = 'error', error_details = $3, updated_at = $4 \
             WHERE user_id = $1 AND provider = $2 AND {condition}"
        ))
        .bind(user.to_string())
        .bind(provider)
        .bind(&details)
        .bind(ts(now()))
        .execute(&mut *conn)
        .await?;
        Ok(done.rows_affected() > 0)
    };
    Ok(
        if update("status NOT IN ('error', 'deregistered')").await? {
            ErrorTransition::Entered
        } else if update("status = 'error'").await? {
            ErrorTransition::Again
        } else {
            ErrorTransition::Missing
        },
    )
}

/// Marks a connection `deregistered` and forgets its credentials; the data stays.
/// `false` when the user has no such connection.
pub async fn deregister(
    conn: &mut AnyConnection,
    user: Uuid,
    provider: &str,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE connections SET status = 'deregistered', credentials = NULL, updated_at = $3 \
         WHERE user_id = $1 AND provider = $2",
    )
    .bind(user.to_string())
    .bind(provider)
    .bind(ts(now()))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

impl MetadataStore {
    /// Records (or refreshes the status of) a connection.
    pub async fn upsert_connection(
        &self,
        user: Uuid,
        provider: &str,
        status: ConnectionStatus,
    ) -> Result<Connection, MetadataError> {
        upsert_connection(&mut *self.writer().await?, user, provider, status).await
    }

    /// A user's connections, oldest first.
    pub async fn connections(&self, user: Uuid) -> Result<Vec<Connection>, MetadataError> {
        connections(&mut *self.reader().await?, user).await
    }

    /// One connection of a user.
    pub async fn connection(
        &self,
        user: Uuid,
        provider: &str,
    ) -> Result<Option<Connection>, MetadataError> {
        connection(&mut *self.reader().await?, user, provider).await
    }
}
