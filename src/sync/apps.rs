//! The applications provider access uses: the deployment's OAuth applications and a team's
//! own (`linking.md` §Team provider credentials; stored sealed by `link::team_apps`), which
//! one a team's link or refresh uses ([`resolve`]), the endpoints a team's own application
//! is used with ([`Endpoints`]), and the secrets and verification tokens notifications are
//! checked against. [`AccessSettings`] is what this needs of the deployment's link settings;
//! `link::LinkConfig` implements it, so provider access reads them without importing `link`.

use std::collections::HashMap;

use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::oauth::{OAuthApp, OAuthApps};
use super::registry::{OAUTH_ENDPOINTS, PasswordLogins};
use crate::secret::{SecretError, SecretKey};
use crate::store::metadata::team_apps;
use crate::store::metadata::{MetadataError, MetadataStore};

/// What provider access reads of the deployment's link settings (`link::LinkConfig`).
pub trait AccessSettings: Send + Sync {
    /// The service's public URL, without a trailing slash (the OAuth redirect's base).
    fn public_url(&self) -> &str;
    /// The deployment's OAuth applications by provider (`--oauth-apps`).
    fn oauth_apps(&self) -> &OAuthApps;
    /// The endpoints a team's own application uses where the deployment has none.
    fn oauth_endpoints(&self) -> &Endpoints;
    /// The password providers' sign-ins.
    fn password_logins(&self) -> &PasswordLogins;
}

/// Why an application could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The provider has no usable OAuth application on this deployment or team (the text names
    /// the provider, and what is wrong when an URL is).
    #[error("{0} has no OAuth application configured on this deployment")]
    NotConfigured(String),
    /// A team's sealed secret could not be opened (no key, another key, a corrupt value).
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// The metadata store failed.
    #[error(transparent)]
    Metadata(#[from] MetadataError),
}

/// The stored form of a verification token (SHA-256, hex).
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

pub(crate) fn context(team: Uuid, provider: &str) -> String {
    format!("team-app:{team}:{provider}")
}

/// Whether `token` is the change-notification verification token of some team's own
/// application for `provider` (looked up by its hash).
pub async fn verification_token_known(
    meta: &MetadataStore,
    provider: &str,
    token: &str,
) -> Result<bool, AppError> {
    let hash = hash_token(token);
    Ok(team_apps::verification_token_known(&mut *meta.reader().await?, provider, &hash).await?)
}

/// The teams whose own application for `provider` has `token` as its verification token
/// (looked up by its hash).
pub async fn verification_token_teams(
    meta: &MetadataStore,
    provider: &str,
    token: &str,
) -> Result<Vec<Uuid>, AppError> {
    let hash = hash_token(token);
    Ok(team_apps::verification_token_teams(&mut *meta.reader().await?, provider, &hash).await?)
}

/// Every team's own client secret for `provider`, opened: (team, secret). For checking what a
/// provider signed with a team's application (change notifications).
pub async fn secrets(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    provider: &str,
) -> Result<Vec<(Uuid, String)>, AppError> {
    let sealed = team_apps::for_provider(&mut *meta.reader().await?, provider).await?;
    if sealed.is_empty() {
        return Ok(Vec::new());
    }
    let key = key.ok_or(SecretError::Missing)?;
    sealed
        .into_iter()
        .map(|(team, secret)| {
            let plain = key.open(&secret, &context(team, provider))?;
            let text = String::from_utf8(plain).map_err(|_| SecretError::Unsealable)?;
            Ok((team, text))
        })
        .collect()
}

/// The OAuth endpoints a team's own application is used with when the deployment configures
/// no application for the provider (`--oauth-apps`, whose endpoints win when present): by
/// default the providers' own hosts ([`OAUTH_ENDPOINTS`]), so that a team's credentials alone
/// connect a provider with a connector; tests point them at their fakes.
#[derive(Debug, Clone)]
pub struct Endpoints(HashMap<String, (String, String)>);

impl Default for Endpoints {
    fn default() -> Self {
        OAUTH_ENDPOINTS
            .iter()
            .fold(Endpoints::none(), |all, (slug, authorize, token)| {
                all.with(slug, authorize, token)
            })
    }
}

impl Endpoints {
    /// No endpoints: a team's own application then needs the deployment's.
    pub fn none() -> Endpoints {
        Endpoints(HashMap::new())
    }

    /// The same set with `provider`'s authorisation page and token endpoint (replacing any).
    pub fn with(mut self, provider: &str, authorize_url: &str, token_url: &str) -> Endpoints {
        self.0.insert(
            provider.to_owned(),
            (authorize_url.to_owned(), token_url.to_owned()),
        );
        self
    }

    /// `provider`'s (authorisation page, token endpoint).
    pub fn get(&self, provider: &str) -> Option<(&str, &str)> {
        self.0
            .get(provider)
            .map(|(authorize, token)| (authorize.as_str(), token.as_str()))
    }
}

/// The endpoints a team's own application for `provider` is used with: the deployment's
/// application's, else the built-in ones.
pub fn team_endpoints<'a>(
    settings: &'a dyn AccessSettings,
    provider: &str,
) -> Option<(&'a str, &'a str)> {
    match settings.oauth_apps().0.get(provider) {
        Some(app) => Some((app.authorize_url.as_str(), app.token_url.as_str())),
        None => settings.oauth_endpoints().get(provider),
    }
}

/// The application an OAuth link of `team` uses for `provider`: the team's client (when set) on
/// the deployment's endpoints (else the provider's own, [`Endpoints`]), else the deployment's.
pub async fn resolve(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    settings: &dyn AccessSettings,
    team: Uuid,
    provider: &str,
) -> Result<OAuthApp, AppError> {
    let not_configured = || AppError::NotConfigured(provider.to_owned());
    let Some(own) = team_apps::get(&mut *meta.reader().await?, team, provider).await? else {
        return settings
            .oauth_apps()
            .0
            .get(provider)
            .cloned()
            .ok_or_else(not_configured);
    };
    let (authorize_url, token_url) =
        team_endpoints(settings, provider).ok_or_else(not_configured)?;
    let key = key.ok_or(SecretError::Missing)?;
    let secret = String::from_utf8(key.open(&own.sealed_secret, &context(team, provider))?)
        .map_err(|_| SecretError::Unsealable)?;
    Ok(OAuthApp {
        client_id: own.client_id,
        client_secret: secret,
        authorize_url: authorize_url.to_owned(),
        token_url: token_url.to_owned(),
        redirect_uri: own.redirect_uri,
        verification_token: None,
        subscription_id: None,
    })
}
