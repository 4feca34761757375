//! A user's connections to providers.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::{MetadataError, MetadataStore, get_str, get_time, now, parse, ts};

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

/// A user's connection to a provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// Provider slug.
    pub provider: String,
    /// Where it stands.
    pub status: ConnectionStatus,
    /// When the connection was first made.
    pub created_at: DateTime<Utc>,
}

fn connection_from_row(row: &AnyRow) -> Result<Connection, MetadataError> {
    Ok(Connection {
        provider: get_str(row, "provider")?,
        status: parse("status", get_str(row, "status")?)?,
        created_at: get_time(row, "created_at")?,
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
         RETURNING provider, status, created_at",
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
    let rows = sqlx::query(
        "SELECT provider, status, created_at FROM connections WHERE user_id = $1 \
         ORDER BY created_at, provider",
    )
    .bind(user.to_string())
    .fetch_all(conn)
    .await?;
    rows.iter().map(connection_from_row).collect()
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
}
