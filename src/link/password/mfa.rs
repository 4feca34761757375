//! The second factor of a password sign-in (`linking.md` §The link API:
//! `pending_provider_mfa` → `complete_mfa`).
//!
//! When a provider answers a sign-in with "a code was sent" ([`SignIn::Pending`]), the
//! half-finished sign-in (the provider's temporary ticket, the username and the password) is
//! kept in the metadata store (`link_pending_sign_ins`), sealed with the deployment's secret key
//! like connection credentials and bound to the link token, so a restart between the sign-in and
//! the code loses nothing and nothing readable is at rest. It is never returned or logged.
//!
//! Decisions where the spec is silent:
//! - **Bounds.** A pending sign-in takes the code for [`LIFETIME`] (10 minutes) and at most
//!   [`MAX_TRIES`] (5) wrong codes; [`MAX_RESENDS`] (3) new codes may be asked for within that
//!   time. Each wrong code answers `incorrect_mfa_code` saying how many tries are left; the
//!   fifth forgets the sign-in. A code after the sign-in expired, after the last try, or
//!   without any sign-in waiting answers `provider_credential_error` asking to sign in again
//!   (a client that shows `incorrect_mfa_code` would ask for the code again, which cannot help).
//! - Tries are counted before the provider is asked, atomically, so concurrent codes cannot
//!   pass the bound.
//! - A new sign-in with the same link token replaces a pending one; the pending sign-in is
//!   forgotten when the link succeeds or fails for another reason than a wrong code.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::{LinkSession, Outcome, PasswordLogins, SignIn, SignedIn, landing};
use crate::link::{LinkError, LinkErrorType};
use crate::providers::Provider;
use crate::secret::{SecretError, SecretKey};
use crate::store::metadata::MetadataStore;
use crate::store::metadata::pending_sign_ins::{self, PendingSignIn};
use crate::sync::access::{Mfa, PasswordLogin};

/// How long a pending sign-in takes its code.
pub const LIFETIME: Duration = Duration::minutes(10);
/// How many wrong codes a pending sign-in takes.
pub const MAX_TRIES: i64 = 5;
/// How many new codes a pending sign-in may ask for.
pub const MAX_RESENDS: i64 = 3;

/// A sign-in waiting for its code, as it is sealed.
#[derive(Clone, Serialize, Deserialize)]
pub struct Waiting {
    /// The provider's half-finished sign-in.
    pub state: String,
    /// The username signed in with.
    pub username: String,
    /// The password signed in with.
    pub password: String,
    /// Where the code went.
    pub mfa: Mfa,
}

impl std::fmt::Debug for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiting")
            .field("mfa", &self.mfa)
            .finish_non_exhaustive()
    }
}

fn context(session: &LinkSession, provider: &str) -> String {
    format!("pending-sign-in:{}:{provider}", session.token_hash)
}

fn seal(
    key: &SecretKey,
    session: &LinkSession,
    provider: &str,
    waiting: &Waiting,
) -> Result<String, SecretError> {
    let plain = serde_json::to_vec(waiting).map_err(|_| SecretError::Unsealable)?;
    key.seal(&plain, &context(session, provider))
}

/// Keeps `waiting` for the session's token (replacing a sign-in it had waiting).
pub(crate) async fn wait(
    meta: &MetadataStore,
    key: &SecretKey,
    session: &LinkSession,
    provider: &str,
    waiting: &Waiting,
    now: DateTime<Utc>,
) -> Result<(), LinkError> {
    let pending = PendingSignIn {
        provider: provider.to_owned(),
        sealed_state: seal(key, session, provider, waiting)?,
        tries: 0,
        resends: 0,
        expires_at: now + LIFETIME,
    };
    pending_sign_ins::put(
        &mut *meta.writer().await?,
        &session.token_hash,
        &pending,
        now,
    )
    .await?;
    Ok(())
}

/// The token's sign-in of `provider` waiting for a code, opened; `None` (and forgotten) when
/// there is none or it expired.
async fn waiting(
    meta: &MetadataStore,
    key: &SecretKey,
    session: &LinkSession,
    provider: &str,
    now: DateTime<Utc>,
) -> Result<Option<(PendingSignIn, Waiting)>, LinkError> {
    let Some(pending) = pending_sign_ins::get(&mut *meta.reader().await?, &session.token_hash)
        .await?
        .filter(|p| p.provider == provider)
    else {
        return Ok(None);
    };
    if pending.expires_at <= now {
        forget(meta, session).await?;
        return Ok(None);
    }
    let plain = key.open(&pending.sealed_state, &context(session, provider))?;
    let waiting: Waiting = serde_json::from_slice(&plain).map_err(|_| SecretError::Unsealable)?;
    Ok(Some((pending, waiting)))
}

async fn forget(meta: &MetadataStore, session: &LinkSession) -> Result<(), LinkError> {
    pending_sign_ins::remove(&mut *meta.writer().await?, &session.token_hash).await?;
    Ok(())
}

/// The provider's sign-in with the session's pending sign-in of it and what waits; `None`
/// when nothing waits (or the provider signs in otherwise).
async fn waiting_sign_in<'l>(
    meta: &MetadataStore,
    key: &SecretKey,
    logins: &'l PasswordLogins,
    session: &LinkSession,
    provider: &Provider,
    now: DateTime<Utc>,
) -> Result<Option<(&'l Arc<dyn PasswordLogin>, PendingSignIn, Waiting)>, LinkError> {
    let Some(login) = logins.get(provider.slug) else {
        return Ok(None);
    };
    Ok(waiting(meta, key, session, provider.slug, now)
        .await?
        .map(|(pending, waiting)| (login, pending, waiting)))
}

fn nothing_waiting(provider: &Provider) -> (LinkErrorType, String) {
    (
        LinkErrorType::ProviderCredentialError,
        format!(
            "No sign-in to {} is waiting for a code with this link: a code is taken for {} \
             minutes after the sign-in and at most {MAX_TRIES} times. Sign in again.",
            provider.name,
            LIFETIME.num_minutes()
        ),
    )
}

/// Finishes the session's pending sign-in of `provider` with `code`: connects on success,
/// answers `incorrect_mfa_code` on a wrong code (the sign-in stays for the tries left), and a
/// refusal saying to sign in again when no sign-in waits.
pub async fn complete(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    logins: &PasswordLogins,
    session: &LinkSession,
    provider: &Provider,
    code: &str,
    now: DateTime<Utc>,
) -> Result<Outcome, LinkError> {
    let key = key.ok_or(SecretError::Missing)?;
    let mut landing = landing(session, provider);
    let Some((login, pending, waiting)) =
        waiting_sign_in(meta, key, logins, session, provider, now).await?
    else {
        landing.error = Some(nothing_waiting(provider));
        return Ok(Outcome::of(landing, None));
    };
    let counted =
        pending_sign_ins::take_try(&mut *meta.writer().await?, &session.token_hash, MAX_TRIES)
            .await?;
    if !counted {
        forget(meta, session).await?;
        landing.error = Some(nothing_waiting(provider));
        return Ok(Outcome::of(landing, None));
    }
    match login.complete_mfa(&waiting.state, code.trim()).await {
        SignIn::Accepted {
            provider_user_id,
            session: provider_session,
            refresh_token,
        } => {
            forget(meta, session).await?;
            let signed_in = SignedIn {
                provider_user_id,
                session: provider_session,
                refresh_token,
                username: &waiting.username,
                password: &waiting.password,
            };
            super::connect_signed_in(meta, key, session, provider, signed_in, now).await
        }
        SignIn::Pending { mfa, state } => {
            let next = Waiting {
                state,
                mfa,
                ..waiting
            };
            wait(meta, key, session, provider.slug, &next, now).await?;
            Ok(Outcome {
                landing,
                provider_id: None,
                mfa: Some(next.mfa),
            })
        }
        SignIn::Refused(LinkErrorType::IncorrectMfaCode, _) => {
            let left = MAX_TRIES - (pending.tries + 1);
            let message = if left > 0 {
                format!(
                    "That code is not the one {} sent to {}. Check it and try again \
                     ({left} {} left).",
                    provider.name,
                    waiting.mfa.hint,
                    if left == 1 { "try" } else { "tries" }
                )
            } else {
                forget(meta, session).await?;
                format!(
                    "That code is not the one {} sent, and it was the last try. Sign in again.",
                    provider.name
                )
            };
            landing.error = Some((LinkErrorType::IncorrectMfaCode, message));
            Ok(Outcome {
                landing,
                provider_id: None,
                mfa: (left > 0).then_some(waiting.mfa),
            })
        }
        SignIn::Refused(error_type, message) => {
            forget(meta, session).await?;
            landing.error = Some((error_type, message));
            Ok(Outcome::of(landing, None))
        }
    }
}

/// Asks the provider to send a new code for the session's pending sign-in of `provider`.
pub async fn resend(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    logins: &PasswordLogins,
    session: &LinkSession,
    provider: &Provider,
    now: DateTime<Utc>,
) -> Result<Outcome, LinkError> {
    let key = key.ok_or(SecretError::Missing)?;
    let mut landing = landing(session, provider);
    let Some((login, pending, waiting)) =
        waiting_sign_in(meta, key, logins, session, provider, now).await?
    else {
        landing.error = Some(nothing_waiting(provider));
        return Ok(Outcome::of(landing, None));
    };
    if pending.resends >= MAX_RESENDS {
        landing.error = Some((
            LinkErrorType::ProviderCredentialError,
            format!(
                "{} new codes were sent already; use the last one, or sign in again.",
                MAX_RESENDS
            ),
        ));
        return Ok(Outcome {
            landing,
            provider_id: None,
            mfa: Some(waiting.mfa),
        });
    }
    match login.resend_mfa(&waiting.state).await {
        Ok(state) => {
            let next = Waiting { state, ..waiting };
            let sealed = seal(key, session, provider.slug, &next)?;
            pending_sign_ins::resent(&mut *meta.writer().await?, &session.token_hash, &sealed)
                .await?;
            Ok(Outcome {
                landing,
                provider_id: None,
                mfa: Some(next.mfa),
            })
        }
        Err((error_type, message)) => {
            landing.error = Some((error_type, message));
            Ok(Outcome {
                landing,
                provider_id: None,
                mfa: Some(waiting.mfa),
            })
        }
    }
}

/// Where the code of the session's pending sign-in of `provider` went; `None` when no sign-in
/// waits (for a page that asks for the code again without spending a try).
pub async fn hint(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    session: &LinkSession,
    provider: &Provider,
    now: DateTime<Utc>,
) -> Result<Option<Mfa>, LinkError> {
    let key = key.ok_or(SecretError::Missing)?;
    Ok(waiting(meta, key, session, provider.slug, now)
        .await?
        .map(|(_, w)| w.mfa))
}
