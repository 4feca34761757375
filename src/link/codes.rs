//! Link codes (`linking.md` §Link codes): a short code the team's mobile app exchanges, once,
//! for a credential that may only push on-device data of one user.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use rand::{Rng, RngCore};
use uuid::Uuid;

use super::tokens::hash;
use super::{LinkConfig, LinkError};
use crate::providers::{self, AuthType};
use crate::store::metadata::MetadataStore;
use crate::store::metadata::link::{self, StoredCode};

/// A code's lifetime when the request names none.
pub const DEFAULT_LIFETIME: Duration = Duration::hours(1);
/// How far ahead a code's `expires_at` may be.
pub const MAX_LIFETIME: Duration = Duration::days(7);
/// How long the push credential of an exchanged code works.
pub const PUSH_TOKEN_LIFETIME: Duration = Duration::hours(24);
/// The header carrying the push credential.
pub const PUSH_TOKEN_HEADER: &str = "x-link-code-token";

/// A created code.
#[derive(Debug, Clone)]
pub struct IssuedCode {
    /// `sk` + region + 8 lowercase hex digits.
    pub code: String,
    /// `<app URL>?code=<code>`.
    pub exchange_url: String,
    /// When it expires.
    pub expires_at: DateTime<Utc>,
}

/// The push credential a code is exchanged for.
#[derive(Debug, Clone)]
pub struct PushCredential {
    /// The one user it pushes for.
    pub user_id: Uuid,
    /// The credential (shown once; only its hash is kept).
    pub token: String,
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
}

/// Whether a push credential may push this provider's data: on-device (SDK) providers and
/// `manual`.
pub fn pushable(provider: &str) -> bool {
    providers::provider(provider)
        .is_some_and(|p| p.auth_type == AuthType::Sdk || p.slug == "manual")
}

/// Creates a code for the team's user; every code of this deployment is a server-key code
/// (`sk`). `expires_at` was checked by the caller (future, at most [`MAX_LIFETIME`] ahead).
pub async fn create(
    meta: &MetadataStore,
    config: &LinkConfig,
    team: Uuid,
    user: Uuid,
    expires_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<IssuedCode, LinkError> {
    let stored = StoredCode {
        team_id: team,
        user_id: user,
        expires_at,
        used_at: None,
    };
    // 32 random bits: a live collision is unlikely but possible, so draw again.
    for _ in 0..8 {
        let code = format!(
            "sk{}{:08x}",
            config.region.as_str(),
            rand::thread_rng().r#gen::<u32>()
        );
        if link::insert_code(&mut *meta.writer().await?, &hash(&code), &stored, now).await? {
            return Ok(IssuedCode {
                exchange_url: format!("{}?code={code}", config.app_url),
                code,
                expires_at,
            });
        }
    }
    Err(LinkError::CodeRefused(
        "no free link code could be drawn; try again".into(),
    ))
}

/// Exchanges a code, once, for a push credential of its user.
pub async fn exchange(
    meta: &MetadataStore,
    code: &str,
    now: DateTime<Utc>,
) -> Result<PushCredential, LinkError> {
    let code_hash = hash(code);
    let mut tx = meta.begin().await?;
    let stored = link::code(&mut tx, &code_hash)
        .await?
        .ok_or_else(|| LinkError::CodeRefused("The link code is not valid.".into()))?;
    if stored.used_at.is_some() {
        return Err(LinkError::CodeRefused(
            "The link code was already used; create a new one.".into(),
        ));
    }
    if stored.expires_at <= now {
        return Err(LinkError::CodeRefused(
            "The link code has expired; create a new one.".into(),
        ));
    }
    if !link::use_code(&mut tx, &code_hash, now).await? {
        return Err(LinkError::CodeRefused(
            "The link code was already used; create a new one.".into(),
        ));
    }
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let token = format!("lct_{}", URL_SAFE_NO_PAD.encode(bytes));
    let credential = StoredCode {
        team_id: stored.team_id,
        user_id: stored.user_id,
        expires_at: now + PUSH_TOKEN_LIFETIME,
        used_at: None,
    };
    link::insert_code_token(&mut tx, &hash(&token), &credential, now).await?;
    tx.commit()
        .await
        .map_err(crate::store::metadata::MetadataError::from)?;
    Ok(PushCredential {
        user_id: stored.user_id,
        token,
        expires_at: credential.expires_at,
    })
}

/// The (team, user) a push credential is for, when it is known and unexpired.
pub async fn push_user(
    meta: &MetadataStore,
    token: &str,
    now: DateTime<Utc>,
) -> Result<Option<(Uuid, Uuid)>, LinkError> {
    let stored = link::code_token(&mut *meta.reader().await?, &hash(token)).await?;
    Ok(stored
        .filter(|s| s.expires_at > now)
        .map(|s| (s.team_id, s.user_id)))
}
