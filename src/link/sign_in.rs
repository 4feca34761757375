//! Sign-in tokens (`POST /v2/user/{user_id}/sign_in_token`, issue 42): a short-lived credential
//! the team's backend gives its mobile app so the app signs in as one user without the team key.
//!
//! What it is good for, decided here (the reference's SDK exchanges its token with the
//! reference's own identity service, which this service does not imitate): exactly what a link
//! code is good for. The app exchanges it, once, at `POST /v2/link/code/exchange`
//! (`{"code": "<sign_in_token>"}`) for the push credential of that user (`x-link-code-token`,
//! 24 hours), which pushes on-device (SDK) and manual data of that user and nothing else.
//!
//! - 256 random bits (`wst_` + base64url), shown once; only its SHA-256 is stored, in the link
//!   codes' table, so issuing, single use and expiry are the link code's;
//! - single use, and it expires [`LIFETIME`] after issue whether used or not;
//! - issuing another token leaves earlier ones valid until used or expired (an app on two
//!   devices signs in on both);
//! - never logged: neither the token nor its hash appears in any log line or error.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use uuid::Uuid;

use super::LinkError;
use super::tokens::hash;
use crate::store::metadata::MetadataStore;
use crate::store::metadata::link::{self, StoredCode};

/// How long a sign-in token can be exchanged.
pub const LIFETIME: Duration = Duration::hours(1);

/// The prefix of every sign-in token.
pub const PREFIX: &str = "wst_";

/// An issued sign-in token.
#[derive(Clone)]
pub struct SignInToken {
    /// The token (shown once).
    pub token: String,
    /// When it stops being exchangeable.
    pub expires_at: DateTime<Utc>,
}

impl std::fmt::Debug for SignInToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInToken")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// Issues a sign-in token for the team's user (the caller checked the user is the team's).
pub async fn issue(
    meta: &MetadataStore,
    team: Uuid,
    user: Uuid,
    now: DateTime<Utc>,
) -> Result<SignInToken, LinkError> {
    let stored = StoredCode {
        team_id: team,
        user_id: user,
        expires_at: now + LIFETIME,
        used_at: None,
    };
    // 256 random bits never collide in practice; a collision is refused, never overwritten.
    for _ in 0..4 {
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let token = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
        if link::insert_code(&mut *meta.writer().await?, &hash(&token), &stored, now).await? {
            return Ok(SignInToken {
                token,
                expires_at: stored.expires_at,
            });
        }
    }
    Err(LinkError::CodeRefused(
        "no sign-in token could be drawn; try again".into(),
    ))
}
