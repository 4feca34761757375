//! Team API keys: their rows in `api_keys`. The rules of creating, revoking and rotating them
//! are [`crate::keys`]'s; this module owns the SQL.
//!
//! A key is 32 random bytes (256 bits) shown once, as `wh_` plus 64 hex digits. Only its SHA-256
//! is stored: keys carry far more entropy than a password, so a fast hash is safe, and the
//! lookup by hash is followed by a constant-time comparison. Besides the hash a key keeps a
//! `hint`, the secret's last four hex digits (16 of its 256 bits), so a team can tell its keys
//! apart; the key's name is the `label` column.
//!
//! Authentication reads the key's row on every request: no process caches keys, so a
//! revocation or an expiry committed by any process sharing the database answers 401 on the
//! very next request everywhere. `expires_at` is compared with the authenticating process's
//! clock.
//!
//! How a key's use is recorded (`last_used_at`, at most once a minute) is [`usage`]'s.

pub mod usage;

pub use usage::{TOUCH_INTERVAL, Touches, touch_key};

use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::teams::{Team, team_from_row};
use super::{MetadataError, MetadataStore, get_opt_time, get_str, get_uuid, now, ts};

/// The columns of a [`KeyRecord`], in `SELECT` order.
const COLUMNS: &str =
    "id, team_id, label, hint, created_at, last_used_at, expires_at, revoked_at, replaced_by";

/// A freshly created API key; the only time its secret exists outside the caller's hands.
#[derive(Debug, Clone)]
pub struct ApiKey {
    /// The secret to send as `x-service-api-key`.
    pub secret: String,
    /// The team it belongs to.
    pub team_id: Uuid,
    /// Its stored record.
    pub record: KeyRecord,
}

/// A key as stored, without its secret or hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    /// Its id.
    pub id: Uuid,
    /// The team it belongs to.
    pub team_id: Uuid,
    /// The team's name for it.
    pub name: String,
    /// The secret's last four hex digits (none for keys made before hints were kept).
    pub hint: Option<String>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last authenticated a request (within [`TOUCH_INTERVAL`]).
    pub last_used_at: Option<DateTime<Utc>>,
    /// When a rotation retires it.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was revoked.
    pub revoked_at: Option<DateTime<Utc>>,
    /// The key a rotation made to replace it.
    pub replaced_by: Option<Uuid>,
}

/// The key that authenticated a request, and its team.
#[derive(Debug, Clone)]
pub struct Authenticated {
    /// The team.
    pub team: Team,
    /// The key's id.
    pub key_id: Uuid,
    /// The key's `last_used_at` before this use.
    pub last_used_at: Option<DateTime<Utc>>,
}

fn hash_key(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("wh_{}", hex::encode(bytes))
}

/// The last four characters of a secret.
fn hint_of(secret: &str) -> String {
    let start = secret.len().saturating_sub(4);
    secret.get(start..).unwrap_or_default().to_owned()
}

fn record_from_row(row: &AnyRow) -> Result<KeyRecord, MetadataError> {
    from_row!(row => KeyRecord {
        id, team_id, hint, created_at, last_used_at, expires_at, revoked_at, replaced_by,
    } with {
        name: get_str(row, "label")?,
    })
}

/// Creates a key for the team; the answer holds the only copy of its secret.
pub async fn create_key(
    conn: &mut AnyConnection,
    team: Uuid,
    name: &str,
) -> Result<ApiKey, MetadataError> {
    insert_key(conn, Uuid::new_v4(), team, name, now()).await
}

async fn insert_key(
    conn: &mut AnyConnection,
    id: Uuid,
    team: Uuid,
    name: &str,
    at: DateTime<Utc>,
) -> Result<ApiKey, MetadataError> {
    let secret = new_secret();
    let record = KeyRecord {
        id,
        team_id: team,
        name: name.to_owned(),
        hint: Some(hint_of(&secret)),
        created_at: at,
        last_used_at: None,
        expires_at: None,
        revoked_at: None,
        replaced_by: None,
    };
    sqlx::query(
        "INSERT INTO api_keys (id, team_id, key_hash, label, hint, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(id.to_string())
    .bind(team.to_string())
    .bind(hash_key(&secret))
    .bind(name)
    .bind(record.hint.clone())
    .bind(ts(at))
    .execute(conn)
    .await?;
    Ok(ApiKey {
        secret,
        team_id: team,
        record,
    })
}

/// Every key of the team, revoked and expired ones too, oldest first.
pub async fn list_keys(
    conn: &mut AnyConnection,
    team: Uuid,
) -> Result<Vec<KeyRecord>, MetadataError> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM api_keys WHERE team_id = $1 ORDER BY created_at, id"
    ))
    .bind(team.to_string())
    .fetch_all(conn)
    .await?;
    rows.iter().map(record_from_row).collect()
}

/// One key of the team (none for another team's).
pub async fn get_key(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
) -> Result<Option<KeyRecord>, MetadataError> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM api_keys WHERE id = $1 AND team_id = $2"
    ))
    .bind(id.to_string())
    .bind(team.to_string())
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(record_from_row).transpose()
}

/// Revokes one key of the team at `at` (a revoked key keeps its first revocation time); the key
/// as it now is, or none for another team's.
pub async fn revoke_key(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<Option<KeyRecord>, MetadataError> {
    sqlx::query(
        "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND team_id = $3 AND revoked_at IS NULL",
    )
    .bind(ts(at))
    .bind(id.to_string())
    .bind(team.to_string())
    .execute(&mut *conn)
    .await?;
    get_key(conn, team, id).await
}

/// Rotates one key of the team: when it is live at `at` and not rotated yet, it expires at
/// `expires_at` and a new key with its name replaces it. Answers the old key as it now is and
/// the new one, or none when the key is another team's, revoked, expired or already rotated
/// (nothing changed then). Run it in a transaction: both changes or neither.
pub async fn rotate_key(
    conn: &mut AnyConnection,
    team: Uuid,
    id: Uuid,
    expires_at: DateTime<Utc>,
    at: DateTime<Utc>,
) -> Result<Option<(KeyRecord, ApiKey)>, MetadataError> {
    let new_id = Uuid::new_v4();
    let changed = sqlx::query(
        "UPDATE api_keys SET expires_at = $1, replaced_by = $2 \
         WHERE id = $3 AND team_id = $4 AND revoked_at IS NULL AND replaced_by IS NULL \
         AND (expires_at IS NULL OR expires_at > $5)",
    )
    .bind(ts(expires_at))
    .bind(new_id.to_string())
    .bind(id.to_string())
    .bind(team.to_string())
    .bind(ts(at))
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if changed == 0 {
        return Ok(None);
    }
    let Some(old) = get_key(conn, team, id).await? else {
        return Ok(None);
    };
    let new = insert_key(conn, new_id, team, &old.name, at).await?;
    Ok(Some((old, new)))
}

/// The key `secret` and its team, when the key exists, is not revoked and has not expired at
/// `at`.
pub async fn authenticate(
    conn: &mut AnyConnection,
    secret: &str,
    at: DateTime<Utc>,
) -> Result<Option<Authenticated>, MetadataError> {
    let wanted = hash_key(secret);
    let row = sqlx::query(
        "SELECT t.id, t.name, t.created_at, k.id AS key_id, k.key_hash, k.last_used_at \
         FROM api_keys k JOIN teams t ON t.id = k.team_id \
         WHERE k.key_hash = $1 AND k.revoked_at IS NULL \
         AND (k.expires_at IS NULL OR k.expires_at > $2)",
    )
    .bind(&wanted)
    .bind(ts(at))
    .fetch_optional(conn)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let stored = get_str(&row, "key_hash")?;
    if !bool::from(stored.as_bytes().ct_eq(wanted.as_bytes())) {
        return Ok(None);
    }
    Ok(Some(Authenticated {
        team: team_from_row(&row)?,
        key_id: get_uuid(&row, "key_id")?,
        last_used_at: get_opt_time(&row, "last_used_at")?,
    }))
}

/// The team a key belongs to, when the key exists, is not revoked and has not expired.
pub async fn team_for_key(
    conn: &mut AnyConnection,
    secret: &str,
) -> Result<Option<Team>, MetadataError> {
    Ok(authenticate(conn, secret, now()).await?.map(|a| a.team))
}

impl MetadataStore {
    /// The team a key belongs to, when the key exists, is not revoked and has not expired (no
    /// use is recorded: that is [`MetadataStore::authenticate`]'s).
    pub async fn team_for_key(&self, secret: &str) -> Result<Option<Team>, MetadataError> {
        team_for_key(&mut *self.reader().await?, secret).await
    }

    /// Every key of the team, oldest first.
    pub async fn keys(&self, team: Uuid) -> Result<Vec<KeyRecord>, MetadataError> {
        list_keys(&mut *self.reader().await?, team).await
    }

    /// One key of the team.
    pub async fn key(&self, team: Uuid, id: Uuid) -> Result<Option<KeyRecord>, MetadataError> {
        get_key(&mut *self.reader().await?, team, id).await
    }

    /// Creates a key for the team.
    pub async fn create_key(&self, team: Uuid, name: &str) -> Result<ApiKey, MetadataError> {
        create_key(&mut *self.writer().await?, team, name).await
    }

    /// Revokes one key of the team now.
    pub async fn revoke_key(
        &self,
        team: Uuid,
        id: Uuid,
    ) -> Result<Option<KeyRecord>, MetadataError> {
        revoke_key(&mut *self.writer().await?, team, id, now()).await
    }

    /// Rotates one key of the team now, the old key expiring `overlap` from now (see
    /// [`rotate_key`]), in one transaction.
    pub async fn rotate_key(
        &self,
        team: Uuid,
        id: Uuid,
        overlap: Duration,
    ) -> Result<Option<(KeyRecord, ApiKey)>, MetadataError> {
        let at = now();
        let mut tx = self.begin().await?;
        let rotated = rotate_key(&mut tx, team, id, at + overlap, at).await?;
        if rotated.is_some() {
            tx.commit().await?;
        }
        Ok(rotated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_256_bits_and_hinted_by_their_end() {
        let secret = new_secret();
        assert_eq!(secret.len(), 3 + 64);
        assert!(secret.starts_with("wh_"));
        assert_ne!(secret, new_secret());
        let hint = hint_of(&secret);
        assert_eq!(hint.len(), 4);
        assert!(secret.ends_with(&hint));
        assert_eq!(hint_of("ab"), "ab");
    }

    #[test]
    fn the_stored_hash_is_sha256_in_lowercase_hex() {
        // Keys made before this module changed are found by this exact encoding.
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
