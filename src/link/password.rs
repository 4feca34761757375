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
//! - A provider that asks for a second factor would answer `pending_provider_mfa`; neither
//!   password provider implemented (Peloton, FreeStyle Libre through LibreLinkUp) documents such
//!   a step, so neither has this module yet (no MFA state is kept and `complete_mfa` is not
//!   routed).
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
pub mod peloton;

/// The regions a provider's accounts live in, as the link page offers them (code, name); empty
/// for a provider without regions.
pub fn regions(provider: &str) -> &'static [(&'static str, &'static str)] {
    match provider {
        "freestyle_libre" => libre::REGION_NAMES,
        _ => &[],
    }
}

/// How many password sign-ins one link token allows.
pub const MAX_SIGN_INS: i64 = 5;

/// What a provider answered a sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignIn {
    /// Signed in: the user's id at the provider and the session to call its API with.
    Accepted {
        /// The user's id at the provider.
        provider_user_id: String,
        /// The provider's session token (sealed with the credentials).
        session: String,
    },
    /// Not signed in: the link error and a sentence for the user.
    Refused(LinkErrorType, String),
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
        let url = |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| default.into());
        let peloton = peloton::Peloton::new(&url(peloton::API_URL_ENV, peloton::DEFAULT_API_URL))?;
        let libre = libre::Libre::new(libre::Hosts::from_env())?;
        Ok(PasswordLogins::default()
            .with(Arc::new(peloton))
            .with(Arc::new(libre)))
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

/// Links the session's user to a password provider: signs in with `username` and `password`,
/// and records the connection (with the token's consumption and its event) when the provider
/// accepts. A provider without a sign-in here, a refusal and a duplicate account are answered as
/// a [`Landing`] with the error; only store failures are errors. Answers the landing and, once
/// connected, the user's id at the provider.
pub async fn connect(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    logins: &PasswordLogins,
    session: &LinkSession,
    provider: &Provider,
    login_with: Login<'_>,
    now: DateTime<Utc>,
) -> Result<(Landing, Option<String>), LinkError> {
    let key = key.ok_or(SecretError::Missing)?;
    let mut landing = Landing {
        redirect_url: session.options.redirect_url.clone(),
        provider: provider.slug.to_owned(),
        error: None,
    };
    let Some(login) = logins.get(provider.slug) else {
        landing.error = Some((
            LinkErrorType::ProviderApiError,
            format!("{} cannot be linked on this deployment yet.", provider.name),
        ));
        return Ok((landing, None));
    };
    let allowed = crate::store::metadata::link::take_sign_in(
        &mut *meta.writer().await?,
        &session.token_hash,
        MAX_SIGN_INS,
    )
    .await?;
    if !allowed {
        landing.error = Some((
            LinkErrorType::ProviderCredentialError,
            "Too many sign-in attempts with this link; ask the app for a new one.".into(),
        ));
        return Ok((landing, None));
    }
    let (provider_user_id, provider_session) = match login.sign_in(login_with).await {
        SignIn::Accepted {
            provider_user_id,
            session,
        } => (provider_user_id, session),
        SignIn::Refused(error_type, message) => {
            landing.error = Some((error_type, message));
            return Ok((landing, None));
        }
    };
    let linked = Linked {
        provider_user_id: Some(provider_user_id.clone()),
        scopes_granted: Vec::new(),
        scopes_denied: Vec::new(),
        credentials: Credentials {
            access_token: Some(provider_session),
            username: Some(login_with.username.to_owned()),
            password: Some(login_with.password.to_owned()),
            ..Default::default()
        },
    };
    landing.error = finish_link(meta, Some(key), session, provider, &linked, now).await?;
    let connected = landing.error.is_none().then_some(provider_user_id);
    Ok((landing, connected))
}
