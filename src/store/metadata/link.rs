//! Link tokens, link codes and the push credentials codes are exchanged for. Every secret is
//! stored as its SHA-256 only; the callers hash.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use uuid::Uuid;

use super::{MetadataError, get_opt_time, get_str, get_time, get_uuid, ts};

/// A stored link token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLinkToken {
    /// The team that asked for it.
    pub team_id: Uuid,
    /// The user it links.
    pub user_id: Uuid,
    /// The request's options, as JSON.
    pub options: String,
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
    /// When a connection consumed it.
    pub consumed_at: Option<DateTime<Utc>>,
}

fn token_from_row(row: &AnyRow) -> Result<StoredLinkToken, MetadataError> {
    from_row!(row => StoredLinkToken {
        team_id, user_id, options, expires_at, consumed_at,
    })
}

/// Stores a new link token's hash.
pub async fn insert_token(
    conn: &mut AnyConnection,
    hash: &str,
    token: &StoredLinkToken,
    now: DateTime<Utc>,
) -> Result<(), MetadataError> {
    sqlx::query(
        "INSERT INTO link_tokens (token_hash, team_id, user_id, options, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(hash)
    .bind(token.team_id.to_string())
    .bind(token.user_id.to_string())
    .bind(token.options.as_str())
    .bind(ts(now))
    .bind(ts(token.expires_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// The link token with this hash.
pub async fn token(
    conn: &mut AnyConnection,
    hash: &str,
) -> Result<Option<StoredLinkToken>, MetadataError> {
    let row = sqlx::query(
        "SELECT team_id, user_id, options, expires_at, consumed_at FROM link_tokens \
         WHERE token_hash = $1",
    )
    .bind(hash)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(token_from_row).transpose()
}

/// Consumes a link token unless it already was; `false` when it was (or does not exist).
pub async fn consume_token(
    conn: &mut AnyConnection,
    hash: &str,
    now: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE link_tokens SET consumed_at = $2 WHERE token_hash = $1 AND consumed_at IS NULL",
    )
    .bind(hash)
    .bind(ts(now))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Counts one password sign-in against a link token, unless it has had `max` already;
/// answers whether this one may go ahead (atomic: concurrent attempts cannot pass the limit).
pub async fn take_sign_in(
    conn: &mut AnyConnection,
    hash: &str,
    max: i64,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE link_tokens SET sign_ins = sign_ins + 1 WHERE token_hash = $1 AND sign_ins < $2",
    )
    .bind(hash)
    .bind(max)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A stored link code or push credential: whose, until when, and whether it was used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCode {
    /// The team.
    pub team_id: Uuid,
    /// The user.
    pub user_id: Uuid,
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
    /// When it was exchanged (codes only).
    pub used_at: Option<DateTime<Utc>>,
}

/// Stores a link code's hash; `false` when an unexpired code with the same hash exists (the
/// caller draws another code).
pub async fn insert_code(
    conn: &mut AnyConnection,
    hash: &str,
    code: &StoredCode,
    now: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    // An expired code's hash may be drawn again: its row is replaced.
    sqlx::query("DELETE FROM link_codes WHERE code_hash = $1 AND expires_at <= $2")
        .bind(hash)
        .bind(ts(now))
        .execute(&mut *conn)
        .await?;
    let done = sqlx::query(
        "INSERT INTO link_codes (code_hash, team_id, user_id, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (code_hash) DO NOTHING",
    )
    .bind(hash)
    .bind(code.team_id.to_string())
    .bind(code.user_id.to_string())
    .bind(ts(now))
    .bind(ts(code.expires_at))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A code's or push credential's row (its `team_id`, `user_id`, `expires_at`).
fn stored_code(row: &AnyRow, used_at: Option<DateTime<Utc>>) -> Result<StoredCode, MetadataError> {
    Ok(StoredCode {
        team_id: get_uuid(row, "team_id")?,
        user_id: get_uuid(row, "user_id")?,
        expires_at: get_time(row, "expires_at")?,
        used_at,
    })
}

/// The link code with this hash.
pub async fn code(
    conn: &mut AnyConnection,
    hash: &str,
) -> Result<Option<StoredCode>, MetadataError> {
    let row = sqlx::query(
        "SELECT team_id, user_id, expires_at, used_at FROM link_codes WHERE code_hash = $1",
    )
    .bind(hash)
    .fetch_optional(conn)
    .await?;
    row.as_ref()
        .map(|row| stored_code(row, get_opt_time(row, "used_at")?))
        .transpose()
}

/// Marks a code used unless it already was; `false` when it was.
pub async fn use_code(
    conn: &mut AnyConnection,
    hash: &str,
    now: DateTime<Utc>,
) -> Result<bool, MetadataError> {
    let done =
        sqlx::query("UPDATE link_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL")
            .bind(hash)
            .bind(ts(now))
            .execute(conn)
            .await?;
    Ok(done.rows_affected() == 1)
}

/// Stores the hash of a push credential answered by a code exchange.
pub async fn insert_code_token(
    conn: &mut AnyConnection,
    hash: &str,
    token: &StoredCode,
    now: DateTime<Utc>,
) -> Result<(), MetadataError> {
    sqlx::query(
        "INSERT INTO link_code_tokens (token_hash, team_id, user_id, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(hash)
    .bind(token.team_id.to_string())
    .bind(token.user_id.to_string())
    .bind(ts(now))
    .bind(ts(token.expires_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// The push credential with this hash.
pub async fn code_token(
    conn: &mut AnyConnection,
    hash: &str,
) -> Result<Option<StoredCode>, MetadataError> {
    let row = sqlx::query(
        "SELECT team_id, user_id, expires_at FROM link_code_tokens WHERE token_hash = $1",
    )
    .bind(hash)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(|row| stored_code(row, None)).transpose()
}

/// An OAuth authorisation in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthState {
    /// The link token's hash.
    pub token_hash: String,
    /// The provider.
    pub provider: String,
    /// The PKCE verifier (sealed by the caller).
    pub pkce_verifier: String,
}

/// Records an authorisation in flight.
pub async fn insert_oauth_state(
    conn: &mut AnyConnection,
    id: &str,
    state: &OAuthState,
    now: DateTime<Utc>,
) -> Result<(), MetadataError> {
    sqlx::query(
        "INSERT INTO link_oauth_states (id, token_hash, provider, pkce_verifier, created_at) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(id)
    .bind(state.token_hash.as_str())
    .bind(state.provider.as_str())
    .bind(state.pkce_verifier.as_str())
    .bind(ts(now))
    .execute(conn)
    .await?;
    Ok(())
}

/// Takes an authorisation in flight, once: `None` when unknown or already taken.
pub async fn take_oauth_state(
    conn: &mut AnyConnection,
    id: &str,
    now: DateTime<Utc>,
) -> Result<Option<OAuthState>, MetadataError> {
    let done =
        sqlx::query("UPDATE link_oauth_states SET used_at = $2 WHERE id = $1 AND used_at IS NULL")
            .bind(id)
            .bind(ts(now))
            .execute(&mut *conn)
            .await?;
    if done.rows_affected() != 1 {
        return Ok(None);
    }
    let row = sqlx::query(
        "SELECT token_hash, provider, pkce_verifier FROM link_oauth_states WHERE id = $1",
    )
    .bind(id)
    .fetch_one(conn)
    .await?;
    Ok(Some(OAuthState {
        token_hash: get_str(&row, "token_hash")?,
        provider: get_str(&row, "provider")?,
        pkce_verifier: get_str(&row, "pkce_verifier")?,
    }))
}

/// The link token with this hash, for a callback that carries only the state.
pub async fn token_by_hash(
    conn: &mut AnyConnection,
    hash: &str,
) -> Result<Option<StoredLinkToken>, MetadataError> {
    token(conn, hash).await
}
