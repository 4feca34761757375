//! Teams' own OAuth applications (`linking.md` §Team provider credentials): set, shown
//! without the secret, removed; OAuth links of the team use them instead of the deployment's
//! client, with the deployment's endpoints, or the provider's own when the deployment has no
//! application for it ([`Endpoints`]).

use uuid::Uuid;

use super::LinkError;
use crate::secret::{SecretError, SecretKey};
use crate::store::metadata::MetadataStore;
use crate::store::metadata::team_apps::{self, TeamApp};
use crate::sync::apps::context;
pub use crate::sync::apps::{
    Endpoints, resolve, secrets, team_endpoints, verification_token_known, verification_token_teams,
};

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
    let token_hash = app.verification_token.map(crate::sync::apps::hash_token);
    let stored = team_apps::StoredApp {
        client_id: app.client_id,
        sealed_secret: &sealed,
        redirect_uri: app.redirect_uri,
        verification_token_hash: token_hash.as_deref(),
    };
    Ok(team_apps::upsert(&mut *meta.writer().await?, team, provider, stored).await?)
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

/// The providers `team` has its own application (or follower account) for.
pub async fn providers_of(meta: &MetadataStore, team: Uuid) -> Result<Vec<String>, LinkError> {
    Ok(team_apps::providers_of(&mut *meta.reader().await?, team).await?)
}
