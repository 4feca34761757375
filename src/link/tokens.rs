//! Link tokens (`linking.md` §Link tokens): random, stored as their SHA-256, bound to team,
//! user and the request's options, valid 60 minutes, consumed by the first successful
//! connection.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::{LinkConfig, LinkError, LinkErrorType};
use crate::providers::{self, AuthType, Provider};
use crate::store::metadata::MetadataStore;
use crate::store::metadata::link::{self, StoredLinkToken};

/// How long a link token works.
pub const LIFETIME: Duration = Duration::minutes(60);

/// What the token request asked for (validated by the HTTP layer).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkOptions {
    /// The one provider the hosted page goes straight to.
    pub provider: Option<String>,
    /// Where the hosted page sends the user back.
    pub redirect_url: Option<String>,
    /// The providers the hosted page offers.
    pub filter_on_providers: Option<Vec<String>>,
    /// Password and e-mail failures redirect instead of showing inline.
    pub on_error_redirect: bool,
    /// The Close button redirects with `user_cancelled`.
    pub on_close_redirect: bool,
}

/// Whether a provider can be linked with a token (SDK-only providers connect on the device).
pub fn is_linkable(provider: &Provider) -> bool {
    provider.auth_type != AuthType::Sdk
}

/// A verified, unexpired, unconsumed token.
#[derive(Debug, Clone)]
pub struct LinkSession {
    /// The token's hash (to consume it).
    pub token_hash: String,
    /// The team.
    pub team_id: Uuid,
    /// The user being linked.
    pub user_id: Uuid,
    /// The request's options.
    pub options: LinkOptions,
    /// When it expires.
    pub expires_at: DateTime<Utc>,
}

impl LinkSession {
    /// The providers this token may link: the token's provider, else its filter, else every
    /// linkable one; catalogue order.
    pub fn providers(&self) -> Vec<&'static Provider> {
        providers::CATALOGUE
            .iter()
            .filter(|p| is_linkable(p))
            .filter(
                |p| match (&self.options.provider, &self.options.filter_on_providers) {
                    (Some(only), _) => only == p.slug,
                    (None, Some(filter)) => filter.iter().any(|s| s == p.slug),
                    (None, None) => true,
                },
            )
            .collect()
    }

    /// The provider with this slug if the token may link it.
    pub fn provider(&self, slug: &str) -> Option<&'static Provider> {
        self.providers().into_iter().find(|p| p.slug == slug)
    }
}

/// A token as handed out: the secret and where the hosted page opens it.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    /// The token (shown once; only its hash is kept).
    pub token: String,
    /// `<public URL>/link?token=<token>`.
    pub link_web_url: String,
    /// When it expires.
    pub expires_at: DateTime<Utc>,
}

/// The stored form of a token.
pub fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Issues a token for the team's user.
pub async fn issue(
    meta: &MetadataStore,
    config: &LinkConfig,
    team: Uuid,
    user: Uuid,
    options: &LinkOptions,
    now: DateTime<Utc>,
) -> Result<IssuedToken, LinkError> {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let token = format!("lt_{}", URL_SAFE_NO_PAD.encode(bytes));
    let expires_at = now + LIFETIME;
    let stored = StoredLinkToken {
        team_id: team,
        user_id: user,
        options: serde_json::to_string(options).unwrap_or_default(),
        expires_at,
        consumed_at: None,
    };
    link::insert_token(&mut *meta.writer().await?, &hash(&token), &stored, now).await?;
    let encoded: String = url::form_urlencoded::byte_serialize(token.as_bytes()).collect();
    Ok(IssuedToken {
        link_web_url: format!("{}/link?token={encoded}", config.public_url),
        token,
        expires_at,
    })
}

fn refused(error_type: LinkErrorType, message: &str) -> LinkError {
    LinkError::Link {
        error_type,
        message: message.to_owned(),
    }
}

/// Verifies a token: `invalid_token` when unknown, `token_expired` after its hour,
/// `token_consumed` once a connection used it.
pub async fn check(
    meta: &MetadataStore,
    token: &str,
    now: DateTime<Utc>,
) -> Result<LinkSession, LinkError> {
    check_hash(meta, hash(token), now).await
}

/// [`check`] for a token known by its hash (an OAuth callback carries only that).
pub async fn check_hash(
    meta: &MetadataStore,
    token_hash: String,
    now: DateTime<Utc>,
) -> Result<LinkSession, LinkError> {
    let stored = link::token(&mut *meta.reader().await?, &token_hash)
        .await?
        .ok_or_else(|| refused(LinkErrorType::InvalidToken, "The link token is not valid."))?;
    if stored.consumed_at.is_some() {
        return Err(refused(
            LinkErrorType::TokenConsumed,
            "The link token was already used to connect a provider; ask for a new one.",
        ));
    }
    if stored.expires_at <= now {
        return Err(refused(
            LinkErrorType::TokenExpired,
            "The link token has expired (tokens work for 60 minutes); ask for a new one.",
        ));
    }
    let options = serde_json::from_str(&stored.options)
        .map_err(|_| refused(LinkErrorType::InvalidToken, "The link token is not valid."))?;
    Ok(LinkSession {
        token_hash,
        team_id: stored.team_id,
        user_id: stored.user_id,
        options,
        expires_at: stored.expires_at,
    })
}

/// Consumes the session's token in the caller's transaction (the one that records the
/// connection); `token_consumed` when another connection won the race.
pub async fn consume_on(
    conn: &mut sqlx::AnyConnection,
    session: &LinkSession,
    now: DateTime<Utc>,
) -> Result<(), LinkError> {
    if link::consume_token(conn, &session.token_hash, now).await? {
        Ok(())
    } else {
        Err(refused(
            LinkErrorType::TokenConsumed,
            "The link token was already used to connect a provider; ask for a new one.",
        ))
    }
}
