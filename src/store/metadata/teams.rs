//! Teams, their API keys and their provider priorities.
//!
//! A key is 32 random bytes (256 bits) shown once, as `wh_` plus 64 hex digits. Only its SHA-256
//! is stored: keys carry far more entropy than a password, so a fast hash is safe, and the
//! lookup by hash is followed by a constant-time comparison.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use uuid::Uuid;

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

/// A freshly created API key; the only time its secret exists outside the caller's hands.
#[derive(Debug, Clone)]
pub struct ApiKey {
    /// The secret to send as `x-service-api-key`.
    pub secret: String,
    /// The team it belongs to.
    pub team_id: Uuid,
}

fn hash_key(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("wh_{}", hex::encode(bytes))
}

fn team_from_row(row: &sqlx::any::AnyRow) -> Result<Team, MetadataError> {
    Ok(Team {
        id: get_uuid(row, "id")?,
        name: get_str(row, "name")?,
        created_at: get_time(row, "created_at")?,
    })
}

impl MetadataStore {
    /// Creates a team and its first API key.
    pub async fn create_team(&self, name: &str) -> Result<(Team, ApiKey), MetadataError> {
        let team = Team {
            id: Uuid::new_v4(),
            name: name.to_owned(),
            created_at: now(),
        };
        let mut tx = self.pool().begin().await?;
        sqlx::query("INSERT INTO teams (id, name, created_at) VALUES ($1, $2, $3)")
            .bind(team.id.to_string())
            .bind(&team.name)
            .bind(ts(team.created_at))
            .execute(&mut *tx)
            .await?;
        let secret = new_secret();
        sqlx::query(
            "INSERT INTO api_keys (id, team_id, key_hash, label, created_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(Uuid::new_v4().to_string())
        .bind(team.id.to_string())
        .bind(hash_key(&secret))
        .bind("default")
        .bind(ts(team.created_at))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let key = ApiKey {
            secret,
            team_id: team.id,
        };
        Ok((team, key))
    }

    /// Every team, oldest first.
    pub async fn list_teams(&self) -> Result<Vec<Team>, MetadataError> {
        let rows = sqlx::query("SELECT id, name, created_at FROM teams ORDER BY created_at, id")
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(team_from_row).collect()
    }

    /// The oldest team with this name, if any.
    pub async fn team_by_name(&self, name: &str) -> Result<Option<Team>, MetadataError> {
        let row = sqlx::query(
            "SELECT id, name, created_at FROM teams WHERE name = $1 ORDER BY created_at, id LIMIT 1",
        )
        .bind(name)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(team_from_row).transpose()
    }

    /// The team a key belongs to, when the key exists and is not revoked.
    pub async fn team_for_key(&self, secret: &str) -> Result<Option<Team>, MetadataError> {
        let wanted = hash_key(secret);
        let row = sqlx::query(
            "SELECT t.id, t.name, t.created_at, k.key_hash FROM api_keys k \
             JOIN teams t ON t.id = k.team_id \
             WHERE k.key_hash = $1 AND k.revoked_at IS NULL",
        )
        .bind(&wanted)
        .fetch_optional(self.pool())
        .await?;
        let Some(row) = row else { return Ok(None) };
        let stored = get_str(&row, "key_hash")?;
        if !bool::from(stored.as_bytes().ct_eq(wanted.as_bytes())) {
            return Ok(None);
        }
        team_from_row(&row).map(Some)
    }

    /// The team's configured provider order for every data type it has set.
    pub async fn team_priorities(
        &self,
        team: Uuid,
    ) -> Result<HashMap<String, Vec<String>>, MetadataError> {
        let rows =
            sqlx::query("SELECT data_type, priorities FROM team_priorities WHERE team_id = $1")
                .bind(team.to_string())
                .fetch_all(self.pool())
                .await?;
        let mut out = HashMap::new();
        for row in &rows {
            let raw = get_str(row, "priorities")?;
            let order: Vec<String> =
                serde_json::from_str(&raw).map_err(|_| MetadataError::Corrupt {
                    column: "priorities",
                    value: raw.clone(),
                })?;
            out.insert(get_str(row, "data_type")?, order);
        }
        Ok(out)
    }

    /// Replaces the team's provider order for one data type.
    pub async fn set_team_priorities(
        &self,
        team: Uuid,
        data_type: &str,
        order: &[String],
    ) -> Result<(), MetadataError> {
        let encoded = serde_json::Value::from(order.to_vec()).to_string();
        let mut tx = self.pool().begin().await?;
        sqlx::query("DELETE FROM team_priorities WHERE team_id = $1 AND data_type = $2")
            .bind(team.to_string())
            .bind(data_type)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO team_priorities (team_id, data_type, priorities, updated_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(team.to_string())
        .bind(data_type)
        .bind(encoded)
        .bind(ts(now()))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
}
