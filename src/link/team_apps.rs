//! Teams' own OAuth applications (`linking.md` §Team provider credentials): set, shown
//! without the secret, removed; OAuth links of the team use them instead of the deployment's
//! client, with the deployment's endpoints, or the provider's own when the deployment has no
//! application for it ([`Endpoints`]).

use std::collections::HashMap;

use uuid::Uuid;

use super::oauth::OAuthApp;
use super::{LinkConfig, LinkError};
use crate::secret::{SecretError, SecretKey};
use crate::store::metadata::MetadataStore;
use crate::store::metadata::team_apps::{self, TeamApp};
use crate::sync::registry::OAUTH_ENDPOINTS;

fn context(team: Uuid, provider: &str) -> String {
    format!("team-app:{team}:{provider}")
}

/// A team's own application for one provider, as the team gives it.
#[derive(Debug, Clone, Copy)]
pub struct NewTeamApp<'a> {
    /// Client id.
    pub client_id: &'a str,
    /// Client secret (sealed before it is stored).
    pub client_secret: &'a str,
    /// The redirect URI registered with the provider, when not this service's callback.
    pub redirect_uri: Option<&'a str>,
    /// The verification token of the team's own change-notification subscription (Oura's
    /// webhooks), when it has one (hashed before it is stored).
    pub verification_token: Option<&'a str>,
}

/// Sets the team's application for `provider` (an OAuth provider, checked by the caller).
pub async fn set(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    team: Uuid,
    provider: &str,
    app: NewTeamApp<'_>,
) -> Result<TeamApp, LinkError> {
    let key = key.ok_or(SecretError::Missing)?;
    let sealed = key.seal(app.client_secret.as_bytes(), &context(team, provider))?;
    let token_hash = app.verification_token.map(super::tokens::hash);
    let stored = team_apps::StoredApp {
        client_id: app.client_id,
        sealed_secret: &sealed,
        redirect_uri: app.redirect_uri,
        verification_token_hash: token_hash.as_deref(),
    };
    Ok(team_apps::upsert(&mut *meta.writer().await?, team, provider, stored).await?)
}

/// Whether `token` is the change-notification verification token of some team's own
/// application for `provider` (looked up by its hash).
pub async fn verification_token_known(
    meta: &MetadataStore,
    provider: &str,
    token: &str,
) -> Result<bool, LinkError> {
    let hash = super::tokens::hash(token);
    Ok(team_apps::verification_token_known(&mut *meta.reader().await?, provider, &hash).await?)
}

/// The teams whose own application for `provider` has `token` as its verification token
/// (looked up by its hash).
pub async fn verification_token_teams(
    meta: &MetadataStore,
    provider: &str,
    token: &str,
) -> Result<Vec<Uuid>, LinkError> {
    let hash = super::tokens::hash(token);
    Ok(team_apps::verification_token_teams(&mut *meta.reader().await?, provider, &hash).await?)
}

/// The team's application for `provider` (its secret stays sealed).
pub async fn get(meta: &MetadataStore, team: Uuid, provider: &str) -> Result<TeamApp, LinkError> {
    team_apps::get(&mut *meta.reader().await?, team, provider)
        .await?
        .ok_or_else(|| LinkError::TeamAppNotFound(provider.to_owned()))
}

/// Removes the team's application for `provider`.
pub async fn delete(meta: &MetadataStore, team: Uuid, provider: &str) -> Result<(), LinkError> {
    if team_apps::delete(&mut *meta.writer().await?, team, provider).await? {
        Ok(())
    } else {
        Err(LinkError::TeamAppNotFound(provider.to_owned()))
    }
}

/// Every team's own client secret for `provider`, opened: (team, secret). For checking what a
/// provider signed with a team's application (change notifications).
pub async fn secrets(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    provider: &str,
) -> Result<Vec<(Uuid, String)>, LinkError> {
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

/// The team's own client id and secret for `provider`, opened; `None` when it has none.
pub async fn own_secret(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    team: Uuid,
    provider: &str,
) -> Result<Option<(String, String)>, LinkError> {
    let Some(own) = team_apps::get(&mut *meta.reader().await?, team, provider).await? else {
        return Ok(None);
    };
    let key = key.ok_or(SecretError::Missing)?;
    let secret = String::from_utf8(key.open(&own.sealed_secret, &context(team, provider))?)
        .map_err(|_| SecretError::Unsealable)?;
    Ok(Some((own.client_id, secret)))
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
pub fn team_endpoints<'a>(config: &'a LinkConfig, provider: &str) -> Option<(&'a str, &'a str)> {
    match config.oauth_apps.0.get(provider) {
        Some(app) => Some((app.authorize_url.as_str(), app.token_url.as_str())),
        None => config.oauth_endpoints.get(provider),
    }
}

/// The application an OAuth link of `team` uses for `provider`: the team's client (when set) on
/// the deployment's endpoints (else the provider's own, [`Endpoints`]), else the deployment's.
pub async fn resolve(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    config: &LinkConfig,
    team: Uuid,
    provider: &str,
) -> Result<OAuthApp, LinkError> {
    let not_configured = || LinkError::OAuthNotConfigured(provider.to_owned());
    let Some(own) = team_apps::get(&mut *meta.reader().await?, team, provider).await? else {
        return config
            .oauth_apps
            .0
            .get(provider)
            .cloned()
            .ok_or_else(not_configured);
    };
    let (authorize_url, token_url) = team_endpoints(config, provider).ok_or_else(not_configured)?;
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

/// The providers `team` has its own application (or follower account) for.
pub async fn providers_of(meta: &MetadataStore, team: Uuid) -> Result<Vec<String>, LinkError> {
    Ok(team_apps::providers_of(&mut *meta.reader().await?, team).await?)
}
