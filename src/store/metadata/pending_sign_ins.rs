//! Password sign-ins waiting for their second factor (`link_pending_sign_ins`), one per link
//! token. The state is stored sealed; this module never sees it in clear.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;

use super::{MetadataError, get_str, get_time, ts};

/// A stored pending sign-in.
#[derive(Clone, PartialEq, Eq)]
pub struct PendingSignIn {
    /// The provider slug.
    pub provider: String,
    /// The sealed state.
    pub sealed_state: String,
    /// Wrong codes so far.
    pub tries: i64,
    /// New codes asked for so far.
    pub resends: i64,
    /// When it stops being usable.
    pub expires_at: DateTime<Utc>,
}

impl std::fmt::Debug for PendingSignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingSignIn")
            .field("provider", &self.provider)
            .field("tries", &self.tries)
            .field("resends", &self.resends)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// Stores the token's pending sign-in, replacing one it had.
pub async fn put(
    conn: &mut AnyConnection,
    token_hash: &str,
    pending: &PendingSignIn,
    now: DateTime<Utc>,
) -> Result<(), MetadataError> {
    remove(conn, token_hash).await?;
    sqlx::query(
        "INSERT INTO link_pending_sign_ins \
         (token_hash, provider, state, tries, resends, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(token_hash)
    .bind(pending.provider.as_str())
    .bind(pending.sealed_state.as_str())
    .bind(pending.tries)
    .bind(pending.resends)
    .bind(ts(now))
    .bind(ts(pending.expires_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// The token's pending sign-in.
pub async fn get(
    conn: &mut AnyConnection,
    token_hash: &str,
) -> Result<Option<PendingSignIn>, MetadataError> {
    let row = sqlx::query(
        "SELECT provider, state, tries, resends, expires_at FROM link_pending_sign_ins \
         WHERE token_hash = $1",
    )
    .bind(token_hash)
    .fetch_optional(conn)
    .await?;
    row.map(|row| {
        Ok(PendingSignIn {
            provider: get_str(&row, "provider")?,
            sealed_state: get_str(&row, "state")?,
            tries: sqlx::Row::try_get::<i64, _>(&row, "tries")?,
            resends: sqlx::Row::try_get::<i64, _>(&row, "resends")?,
            expires_at: get_time(&row, "expires_at")?,
        })
    })
    .transpose()
}

/// Counts one wrong code, unless the sign-in already had `max`; answers whether it was counted
/// (atomic: concurrent codes cannot pass the limit).
pub async fn take_try(
    conn: &mut AnyConnection,
    token_hash: &str,
    max: i64,
) -> Result<bool, MetadataError> {
    let done = sqlx::query(
        "UPDATE link_pending_sign_ins SET tries = tries + 1 WHERE token_hash = $1 AND tries < $2",
    )
    .bind(token_hash)
    .bind(max)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Replaces the sealed state after a new code was sent, counting the resend.
pub async fn resent(
    conn: &mut AnyConnection,
    token_hash: &str,
    sealed_state: &str,
) -> Result<(), MetadataError> {
    sqlx::query(
        "UPDATE link_pending_sign_ins SET state = $2, resends = resends + 1 WHERE token_hash = $1",
    )
    .bind(token_hash)
    .bind(sealed_state)
    .execute(conn)
    .await?;
    Ok(())
}

/// Forgets the token's pending sign-in.
pub async fn remove(conn: &mut AnyConnection, token_hash: &str) -> Result<(), MetadataError> {
    sqlx::query("DELETE FROM link_pending_sign_ins WHERE token_hash = $1")
        .bind(token_hash)
        .execute(conn)
        .await?;
    Ok(())
}
