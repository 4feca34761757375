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

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::connections::{Linked, finish_link};
use super::credentials::Credentials;
use super::tokens::LinkSession;
use super::{Landing, LinkError, LinkErrorType};
use crate::providers::Provider;
use crate::secret::{SecretError, SecretKey};
use crate::store::metadata::MetadataStore;

pub mod libre;
pub mod libreview;
pub mod mfa;
pub mod peloton;

pub use mfa::{Mfa, MfaMethod};

/// The regions a provider's accounts live in, as the link page offers them (code, name); empty
/// for a provider without regions.
pub fn regions(provider: &str) -> &'static [(&'static str, &'static str)] {
    match provider {
        "freestyle_libre" | "abbott_libreview" => libre::REGION_NAMES,
        _ => &[],
    }
}

/// How many password sign-ins one link token allows.
pub const MAX_SIGN_INS: i64 = 5;

/// What a provider answered a sign-in. Its `Debug` never shows a session or a pending state.
#[derive(Clone, PartialEq, Eq)]
pub enum SignIn {
    /// Signed in: the user's id at the provider and the session to call its API with.
    Accepted {
        /// The user's id at the provider.
        provider_user_id: String,
        /// The provider's session token (sealed with the credentials).
        session: String,
        /// A token that renews the session without the password ([`PasswordLogin::refresh`]),
        /// for providers that give one (Peloton's OAuth refresh token; sealed too).
        refresh_token: Option<String>,
    },
    /// Not signed in yet: the provider sent a code (second factor) and waits for it. `state`
    /// is the provider's half-finished sign-in, which [`PasswordLogin::complete_mfa`] and
    /// [`PasswordLogin::resend_mfa`] take back (secret: it is stored sealed only).
    Pending {
        /// Where the code went.
        mfa: Mfa,
        /// The provider's half-finished sign-in.
        state: String,
    },
    /// Not signed in: the link error and a sentence for the user.
    Refused(LinkErrorType, String),
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignIn::Accepted {
                provider_user_id, ..
            } => f
                .debug_struct("Accepted")
                .field("provider_user_id", provider_user_id)
                .finish_non_exhaustive(),
            SignIn::Pending { mfa, .. } => f
                .debug_struct("Pending")
                .field("mfa", mfa)
                .finish_non_exhaustive(),
            SignIn::Refused(t, message) => {
                f.debug_tuple("Refused").field(t).field(message).finish()
            }
        }
    }
}

/// What a refresh-token renewal answered. Its `Debug` never shows a token.
#[derive(Clone, PartialEq, Eq)]
pub enum Renewal {
    /// A new session, and the new refresh token if the provider rotated it (else the old one
    /// stays valid).
    Renewed {
        /// The provider's new session token.
        session: String,
        /// The rotated refresh token, if any.
        refresh_token: Option<String>,
    },
    /// The provider refused the refresh token (expired, revoked): sign in again.
    Refused,
    /// Anything else (unreachable, a 5xx): worth retrying later. The text names no secret.
    Failed(String),
}

impl std::fmt::Debug for Renewal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Renewal::Renewed { .. } => f.debug_struct("Renewed").finish_non_exhaustive(),
            Renewal::Refused => f.write_str("Refused"),
            Renewal::Failed(why) => f.debug_tuple("Failed").field(why).finish(),
        }
    }
}

/// What a user signs in with.
#[derive(Clone, Copy)]
pub struct Login<'a> {
    /// The username (or e-mail address) at the provider.
    pub username: &'a str,
    /// The password (never logged).
    pub password: &'a str,
    /// The account's region, for providers with regional accounts: where to sign in first.
    pub region: Option<&'a str>,
}

impl std::fmt::Debug for Login<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("username", &self.username)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

/// One provider's username-and-password sign-in.
#[async_trait::async_trait]
pub trait PasswordLogin: Send + Sync {
    /// The provider slug.
    fn provider(&self) -> &'static str;

    /// Signs in at the provider. Every answer the provider can give is a [`SignIn`]; the
    /// sign-in never fails otherwise (an unreachable provider is `provider_api_error`).
    async fn sign_in(&self, login: Login<'_>) -> SignIn;

    /// The session a renewal keeps (a pull signing in again): by default the fresh one; a
    /// provider whose session carries more than the sign-in gives (LibreLinkUp's chosen
    /// patient) carries it over from the `previous` one.
    fn renewed(&self, previous: &str, fresh: String) -> String {
        let _ = previous;
        fresh
    }

    /// Renews the session with the refresh token a sign-in gave, without the password. By
    /// default refused: a provider without refresh tokens is signed in again.
    async fn refresh(&self, refresh_token: &str) -> Renewal {
        let _ = refresh_token;
        Renewal::Refused
    }

    /// Finishes a sign-in that answered [`SignIn::Pending`] with the code the user received: a
    /// wrong code is `Refused(IncorrectMfaCode, ..)`; the sign-in may go on being pending (a
    /// further step). A provider without a second factor refuses.
    async fn complete_mfa(&self, state: &str, code: &str) -> SignIn {
        let _ = (state, code);
        SignIn::Refused(
            LinkErrorType::ProviderApiError,
            "This provider does not ask for a second factor.".into(),
        )
    }

    /// Asks the provider to send a new code for a pending sign-in; answers the new state.
    async fn resend_mfa(&self, state: &str) -> Result<String, (LinkErrorType, String)> {
        let _ = state;
        Err((
            LinkErrorType::ProviderApiError,
            "This provider does not ask for a second factor.".into(),
        ))
    }
}

/// The password sign-ins of this process by provider slug.
#[derive(Clone, Default)]
pub struct PasswordLogins(HashMap<&'static str, Arc<dyn PasswordLogin>>);

impl std::fmt::Debug for PasswordLogins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut slugs: Vec<_> = self.0.keys().collect();
        slugs.sort();
        f.debug_tuple("PasswordLogins").field(&slugs).finish()
    }
}

impl PasswordLogins {
    /// Every password sign-in, at the URL its environment variable names, else the provider's
    /// own host.
    pub fn from_env() -> Result<PasswordLogins, reqwest::Error> {
        let peloton = peloton::Peloton::from_env()?;
        let libre = libre::Libre::new(libre::Hosts::from_env())?;
        let libreview = libreview::LibreView::new(libreview::hosts_from_env())?;
        Ok(PasswordLogins::default()
            .with(Arc::new(peloton))
            .with(Arc::new(libre))
            .with(Arc::new(libreview)))
    }

    /// The same set with `login` added (replacing one of the same provider).
    pub fn with(mut self, login: Arc<dyn PasswordLogin>) -> PasswordLogins {
        self.0.insert(login.provider(), login);
        self
    }

    /// The provider's sign-in.
    pub fn get(&self, provider: &str) -> Option<&Arc<dyn PasswordLogin>> {
        self.0.get(provider)
    }
}

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
