//! Password providers (`linking.md` §The hosted link page, §The link API): the user's username
//! and password are checked by signing in at the provider, and only a sign-in the provider
//! accepts becomes a connection. The credentials (with the session the provider gave) are
//! sealed like OAuth tokens and are never logged or returned.
//!
//! Each provider's sign-in is a [`PasswordLogin`]; [`PasswordLogins`] holds those this process
//! has, by slug, as the sync registry holds connectors. Adding a password provider is adding
//! its module and one line in [`PasswordLogins::from_env`].
//!
//! Decisions where the spec is silent:
//! - A provider that asks for a second factor (Abbott LibreView) answers
//!   `pending_provider_mfa` with where the code went; the half-finished sign-in is kept sealed
//!   in the metadata store until the code comes (`mfa.rs`: bounds, resends, expiry).
//! - `region` is where a regional provider is asked first; the provider may send the sign-in to
//!   the account's own region, which is followed. A region the provider does not have is
//!   `unsupported_region`.
//! - `provider_id` in the answer is the user's id at the provider (Peloton's `user_id`).
//! - A link token allows [`MAX_SIGN_INS`] sign-ins, counted in the metadata store, so the
//!   hosted page and the link API cannot be used to try password after password against a
//!   provider; the next attempt is refused with `provider_credential_error` before the
//!   provider is asked, and the user needs a new link.

use chrono::{DateTime, Utc};

use super::lifecycle::{Linked, finish_link};
use super::tokens::LinkSession;
use super::{Landing, LinkError, LinkErrorType};
use crate::providers::Provider;
use crate::secret::{SecretError, SecretKey};
use crate::store::metadata::MetadataStore;
use crate::sync::credentials::Credentials;

pub mod mfa;

pub use crate::sync::access::{Login, Mfa, MfaMethod, PasswordLogin, Renewal, SignIn};
pub use crate::sync::registry::PasswordLogins;

/// The regions a provider's accounts live in, as the link page offers them (code, name); empty
/// for a provider without regions.
pub fn regions(provider: &str) -> &'static [(&'static str, &'static str)] {
    match provider {
        "freestyle_libre" | "abbott_libreview" => {
            crate::sync::connectors::libre::access::REGION_NAMES
        }
        _ => &[],
    }
}

/// How many password sign-ins one link token allows.
pub const MAX_SIGN_INS: i64 = 5;

/// What a password (or e-mail) link answered: where it lands, the user's id at the provider once
/// connected, and where the code went when the provider waits for a second factor.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The landing (its `error` is `None` on success and while a code is awaited).
    pub landing: Landing,
    /// The user's id at the provider, once connected.
    pub provider_id: Option<String>,
    /// Set while the provider waits for the code it sent (`pending_provider_mfa`).
    pub mfa: Option<Mfa>,
}

impl Outcome {
    /// An outcome without a second factor.
    pub fn of(landing: Landing, provider_id: Option<String>) -> Outcome {
        Outcome {
            landing,
            provider_id,
            mfa: None,
        }
    }

    /// `success`, `error` or `pending_provider_mfa`.
    pub fn state(&self) -> &'static str {
        match (&self.landing.error, &self.mfa) {
            (Some(_), _) => "error",
            (None, Some(_)) => "pending_provider_mfa",
            (None, None) => "success",
        }
    }

    /// Whether the user is now connected.
    pub fn connected(&self) -> bool {
        self.landing.error.is_none() && self.mfa.is_none()
    }
}

/// The landing of a link of `provider` with the session's redirect and no error yet.
pub(crate) fn landing(session: &LinkSession, provider: &Provider) -> Landing {
    Landing {
        redirect_url: session.options.redirect_url.clone(),
        provider: provider.slug.to_owned(),
        error: None,
    }
}

/// Links the session's user to a password provider: signs in with `username` and `password`,
/// and records the connection (with the token's consumption and its event) when the provider
/// accepts; a provider that asks for a second factor leaves the sign-in waiting for its code
/// ([`mfa::complete`]). A provider without a sign-in here, a refusal and a duplicate account
/// are answered as an [`Outcome`] with the error; only store failures are errors.
pub async fn connect(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    logins: &PasswordLogins,
    session: &LinkSession,
    provider: &Provider,
    login_with: Login<'_>,
    now: DateTime<Utc>,
) -> Result<Outcome, LinkError> {
    let key = key.ok_or(SecretError::Missing)?;
    let mut landing = landing(session, provider);
    let Some(login) = logins.get(provider.slug) else {
        landing.error = Some((
            LinkErrorType::ProviderApiError,
            format!("{} cannot be linked on this deployment yet.", provider.name),
        ));
        return Ok(Outcome::of(landing, None));
    };
    if let Some(refusal) = take_sign_in(meta, session).await? {
        landing.error = Some(refusal);
        return Ok(Outcome::of(landing, None));
    }
    match login.sign_in(login_with).await {
        SignIn::Accepted {
            provider_user_id,
            session: provider_session,
            refresh_token,
        } => {
            let signed_in = SignedIn {
                provider_user_id,
                session: provider_session,
                refresh_token,
                username: login_with.username,
                password: login_with.password,
            };
            connect_signed_in(meta, key, session, provider, signed_in, now).await
        }
        SignIn::Pending { mfa, state } => {
            let waiting = mfa::Waiting {
                state,
                username: login_with.username.to_owned(),
                password: login_with.password.to_owned(),
                mfa,
            };
            mfa::wait(meta, key, session, provider.slug, &waiting, now).await?;
            Ok(Outcome {
                landing,
                provider_id: None,
                mfa: Some(waiting.mfa),
            })
        }
        SignIn::Refused(error_type, message) => {
            landing.error = Some((error_type, message));
            Ok(Outcome::of(landing, None))
        }
    }
}

/// Counts a sign-in against the link token; the refusal once it has had [`MAX_SIGN_INS`].
pub(crate) async fn take_sign_in(
    meta: &MetadataStore,
    session: &LinkSession,
) -> Result<Option<(LinkErrorType, String)>, LinkError> {
    let allowed = crate::store::metadata::link::take_sign_in(
        &mut *meta.writer().await?,
        &session.token_hash,
        MAX_SIGN_INS,
    )
    .await?;
    Ok((!allowed).then(|| {
        (
            LinkErrorType::ProviderCredentialError,
            "Too many sign-in attempts with this link; ask the app for a new one.".into(),
        )
    }))
}

/// A sign-in the provider accepted, with what the connection keeps of it.
pub(crate) struct SignedIn<'a> {
    /// The user's id at the provider.
    pub provider_user_id: String,
    /// The provider's session.
    pub session: String,
    /// The provider's refresh token, if it gave one.
    pub refresh_token: Option<String>,
    /// The username signed in with.
    pub username: &'a str,
    /// The password signed in with.
    pub password: &'a str,
}

/// Records the connection of a sign-in the provider accepted (after its second factor, if it
/// asked for one).
pub(crate) async fn connect_signed_in(
    meta: &MetadataStore,
    key: &SecretKey,
    session: &LinkSession,
    provider: &Provider,
    signed_in: SignedIn<'_>,
    now: DateTime<Utc>,
) -> Result<Outcome, LinkError> {
    let mut landing = landing(session, provider);
    let linked = Linked {
        provider_user_id: Some(signed_in.provider_user_id.clone()),
        scopes_granted: Vec::new(),
        scopes_denied: Vec::new(),
        credentials: Credentials {
            access_token: Some(signed_in.session),
            refresh_token: signed_in.refresh_token,
            username: Some(signed_in.username.to_owned()),
            password: Some(signed_in.password.to_owned()),
            ..Default::default()
        },
    };
    landing.error = finish_link(meta, Some(key), session, provider, &linked, now).await?;
    let connected = landing
        .error
        .is_none()
        .then_some(signed_in.provider_user_id);
    Ok(Outcome::of(landing, connected))
}
