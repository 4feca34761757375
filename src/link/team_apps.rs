//! Teams' own OAuth applications (`linking.md` §Team provider credentials): set, shown
//! without the secret, removed; OAuth links of the team use them instead of the deployment's
//! client, with the deployment's endpoints.

use uuid::Uuid;

use super::LinkError;
use super::oauth::{OAuthApp, OAuthApps};
use crate::secret::{SecretError, SecretKey};
use crate::store::metadata::MetadataStore;
use crate::store::metadata::team_apps::{self, TeamApp};

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

/// The application an OAuth link of `team` uses for `provider`: the team's client (when set)
/// on the deployment's endpoints, else the deployment's.
pub async fn resolve(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    apps: &OAuthApps,
    team: Uuid,
    provider: &str,
) -> Result<OAuthApp, LinkError> {
    let deployment = apps
        .0
        .get(provider)
        .ok_or_else(|| LinkError::OAuthNotConfigured(provider.to_owned()))?;
    let Some(own) = team_apps::get(&mut *meta.reader().await?, team, provider).await? else {
        return Ok(deployment.clone());
    };
    let key = key.ok_or(SecretError::Missing)?;
    let secret = String::from_utf8(key.open(&own.sealed_secret, &context(team, provider))?)
        .map_err(|_| SecretError::Unsealable)?;
    Ok(OAuthApp {
        client_id: own.client_id,
        client_secret: secret,
        authorize_url: deployment.authorize_url.clone(),
        token_url: deployment.token_url.clone(),
        redirect_uri: own.redirect_uri,
        verification_token: None,
    })
}
