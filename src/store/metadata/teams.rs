//! Teams: the customer applications that own users, keys and settings.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::keys::{self, ApiKey};
use super::{MetadataError, MetadataStore, get_str, get_time, get_uuid, now, ts};

/// A team: a customer application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Team {
    /// Its id.
    pub id: Uuid,
    /// Display name.
    pub name: String,
    /// Creation time.
    pub created_at: DateTime<Utc>,
}

pub(super) fn team_from_row(row: &AnyRow) -> Result<Team, MetadataError> {
    Ok(Team {
        id: get_uuid(row, "id")?,
        name: get_str(row, "name")?,
        created_at: get_time(row, "created_at")?,
    })
}

/// Inserts a team and its first API key (run it in a transaction: both or neither).
pub async fn create_team(
    conn: &mut AnyConnection,
    name: &str,
) -> Result<(Team, ApiKey), MetadataError> {
    let team = Team {
        id: Uuid::new_v4(),
        name: name.to_owned(),
        created_at: now(),
    };
    sqlx::query("INSERT INTO teams (id, name, created_at) VALUES ($1, $2, $3)")
        .bind(team.id.to_string())
        .bind(&team.name)
        .bind(ts(team.created_at))
        .execute(&mut *conn)
        .await?;
    let key = keys::create_key(conn, team.id, "default").await?;
    Ok((team, key))
}

/// Every team, oldest first.
pub async fn list_teams(conn: &mut AnyConnection) -> Result<Vec<Team>, MetadataError> {
    let rows = sqlx::query("SELECT id, name, created_at FROM teams ORDER BY created_at, id")
        .fetch_all(conn)
        .await?;
    rows.iter().map(team_from_row).collect()
}

/// The team with this id, if any.
pub async fn team(conn: &mut AnyConnection, id: Uuid) -> Result<Option<Team>, MetadataError> {
    let row = sqlx::query("SELECT id, name, created_at FROM teams WHERE id = $1")
        .bind(id.to_string())
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(team_from_row).transpose()
}

/// The oldest team with this name, if any.
pub async fn team_by_name(
    conn: &mut AnyConnection,
    name: &str,
) -> Result<Option<Team>, MetadataError> {
    let row = sqlx::query(
        "SELECT id, name, created_at FROM teams WHERE name = $1 ORDER BY created_at, id LIMIT 1",
    )
    .bind(name)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(team_from_row).transpose()
}

impl MetadataStore {
    /// Creates a team and its first API key.
    pub async fn create_team(&self, name: &str) -> Result<(Team, ApiKey), MetadataError> {
        let mut tx = self.begin().await?;
        let created = create_team(&mut tx, name).await?;
        tx.commit().await?;
        Ok(created)
    }

    /// Every team, oldest first.
    pub async fn list_teams(&self) -> Result<Vec<Team>, MetadataError> {
        list_teams(&mut *self.reader().await?).await
    }

    /// The team with this id, if any.
    pub async fn team(&self, id: Uuid) -> Result<Option<Team>, MetadataError> {
        team(&mut *self.reader().await?, id).await
    }

    /// The oldest team with this name, if any.
    pub async fn team_by_name(&self, name: &str) -> Result<Option<Team>, MetadataError> {
        team_by_name(&mut *self.reader().await?, name).await
    }
}
