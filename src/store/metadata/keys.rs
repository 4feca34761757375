//! Team API keys.
//!
//! A key is 32 random bytes (256 bits) shown once, as `wh_` plus 64 hex digits. Only its SHA-256
//! is stored: keys carry far more entropy than a password, so a fast hash is safe, and the
//! lookup by hash is followed by a constant-time comparison.

use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::AnyConnection;
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::teams::{Team, team_from_row};
use super::{MetadataError, MetadataStore, get_str, now, ts};

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

/// Creates a key for the team; the answer holds the only copy of its secret.
pub async fn create_key(
    conn: &mut AnyConnection,
    team: Uuid,
    label: &str,
) -> Result<ApiKey, MetadataError> {
    let secret = new_secret();
    sqlx::query(
        "INSERT INTO api_keys (id, team_id, key_hash, label, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(Uuid::new_v4().to_string())
    .bind(team.to_string())
    .bind(hash_key(&secret))
    .bind(label)
    .bind(ts(now()))
    .execute(conn)
    .await?;
    Ok(ApiKey {
        secret,
        team_id: team,
    })
}

/// The team a key belongs to, when the key exists and is not revoked.
pub async fn team_for_key(
    conn: &mut AnyConnection,
    secret: &str,
) -> Result<Option<Team>, MetadataError> {
    let wanted = hash_key(secret);
    let row = sqlx::query(
        "SELECT t.id, t.name, t.created_at, k.key_hash FROM api_keys k \
         JOIN teams t ON t.id = k.team_id \
         WHERE k.key_hash = $1 AND k.revoked_at IS NULL",
    )
    .bind(&wanted)
    .fetch_optional(conn)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let stored = get_str(&row, "key_hash")?;
    if !bool::from(stored.as_bytes().ct_eq(wanted.as_bytes())) {
        return Ok(None);
    }
    team_from_row(&row).map(Some)
}

impl MetadataStore {
    /// The team a key belongs to, when the key exists and is not revoked.
    pub async fn team_for_key(&self, secret: &str) -> Result<Option<Team>, MetadataError> {
        team_for_key(&mut *self.reader().await?, secret).await
    }
}
