//! `X-Idempotency-Key` on `POST /v3/order`: the first answer for a key (status and body,
//! failures included; with `X-Idempotency-Error: no-cache` successes only) is kept for 24 hours
//! and replayed; the same key with a different body answers 422; a duplicate that arrives while
//! the first request is still running answers 409.
//!
//! "The same body" means the same bytes (hashed with SHA-256): clients retry by resending what
//! they sent.

use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::super::LabError;
use crate::loc;
use crate::store::metadata::MetadataStore;
use crate::store::metadata::lab::idempotency as store;
use crate::validation::Violation;

/// How long an answer is kept.
pub const KEEP: chrono::Duration = chrono::Duration::hours(24);

/// The longest key accepted.
pub const MAX_KEY_CHARS: usize = 255;

/// The keys the OpenAPI document promises to accept: 1 to [`MAX_KEY_CHARS`] printable ASCII
/// characters other than the space (the rule above admits more).
pub const KEY_PATTERN: &str = "^[!-~]{1,255}$";

/// What a key lets the request do.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The request runs; record its answer with [`finish`].
    Owner,
    /// An earlier request's answer to replay.
    Replay {
        /// Its status.
        status: u16,
        /// Its body.
        body: String,
    },
}

/// Claims `key` for a request with `body`.
pub async fn claim(
    meta: &MetadataStore,
    team: Uuid,
    key: &str,
    body: &[u8],
) -> Result<Claim, LabError> {
    if key.is_empty() || key.chars().count() > MAX_KEY_CHARS || key.chars().any(char::is_control) {
        return Err(LabError::invalid(
            Violation::value(
                loc!["header", "x-idempotency-key"],
                format!("X-Idempotency-Key must be 1 to {MAX_KEY_CHARS} printable characters"),
            )
            .with_input(key.into()),
        ));
    }
    let hash = hex::encode(Sha256::digest(body));
    let now = crate::store::metadata::now();
    let held = store::claim(
        &mut *meta.writer().await?,
        team,
        key,
        &hash,
        now,
        now + KEEP,
    )
    .await?;
    match held {
        None => Ok(Claim::Owner),
        Some(h) if h.request_hash != hash => Err(LabError::invalid(
            Violation::value(
                loc!["header", "x-idempotency-key"],
                "this X-Idempotency-Key was used with a different request body",
            )
            .with_input(key.into()),
        )),
        Some(store::Stored {
            status: Some(status),
            body: Some(body),
            ..
        }) => Ok(Claim::Replay { status, body }),
        Some(_) => Err(LabError::Conflict(
            "a request with this X-Idempotency-Key is still being processed".into(),
        )),
    }
}

/// Records the owner's answer (`keep` false frees the key instead).
pub async fn finish(
    meta: &MetadataStore,
    team: Uuid,
    key: &str,
    status: u16,
    body: &str,
    keep: bool,
) -> Result<(), LabError> {
    let mut conn = meta.writer().await?;
    if keep {
        store::complete(&mut conn, team, key, status, body).await?;
    } else {
        store::release(&mut conn, team, key).await?;
    }
    Ok(())
}
