//! The OAuth 2.0 wire of provider access: the deployment's applications (`--oauth-apps`), the
//! client an application makes (with each provider's token-endpoint specifics,
//! [`token_wire`]), the redirect URI, and the token refresh a pull runs when an access token
//! is refused (RFC 6749 §6). The link flow (authorisation URL, callback, code exchange) is
//! `link::oauth`, which builds on this; the pull jobs use it without importing `link`.

use std::collections::HashMap;

use chrono::Utc;
use oauth2::basic::{
    BasicErrorResponse, BasicErrorResponseType, BasicRevocationErrorResponse,
    BasicTokenIntrospectionResponse, BasicTokenType,
};
use oauth2::{
    AuthUrl, ClientId, ClientSecret, ExtraTokenFields, RedirectUrl, RequestTokenError, Scope,
    StandardRevocableToken, StandardTokenResponse, TokenResponse, TokenUrl,
};
use serde::{Deserialize, Serialize};

use super::apps::{AccessSettings, AppError};
use super::credentials::Credentials;
use super::token_wire;
use crate::providers::{self, Provider, scopes};
use crate::secret::SecretKey;
use crate::store::metadata::MetadataStore;

/// Whether `provider` is linked by e-mail through an account configured like an OAuth
/// application (so `--oauth-apps` and team credentials accept it).
pub fn uses_account(provider: &str) -> bool {
    provider == "freestyle_libre"
}

/// One provider's OAuth application: client and endpoints.
#[derive(Clone, Deserialize)]
pub struct OAuthApp {
    /// Client id.
    pub client_id: String,
    /// Client secret (never logged).
    pub client_secret: String,
    /// The provider's authorisation endpoint (empty for an e-mail provider's follower account).
    #[serde(default)]
    pub authorize_url: String,
    /// The provider's token endpoint (empty for an e-mail provider's follower account).
    #[serde(default)]
    pub token_url: String,
    /// The redirect URI registered with the provider when it is not this service's callback
    /// (a team's own page that forwards to it).
    #[serde(default)]
    pub redirect_uri: Option<String>,
    /// The token the provider's change-notification subscription was created with (Oura's
    /// `verification_token`; never logged). Without it, the subscription handshake fails.
    #[serde(default)]
    pub verification_token: Option<String>,
    /// The id of the provider's webhook subscription for this application (Strava's
    /// `subscription_id`, which its events carry and which verifies them:
    /// `sync::connectors::strava::webhook`). Without it, Strava's events are refused.
    #[serde(default)]
    pub subscription_id: Option<i64>,
}

impl std::fmt::Debug for OAuthApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthApp")
            .field("client_id", &self.client_id)
            .field("authorize_url", &self.authorize_url)
            .field("token_url", &self.token_url)
            .finish_non_exhaustive()
    }
}

/// The deployment's OAuth applications by provider slug (a JSON object in the file named by
/// `--oauth-apps`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(transparent)]
pub struct OAuthApps(pub HashMap<String, OAuthApp>);

impl OAuthApps {
    /// Reads the JSON file; every key must be an OAuth provider of the catalogue (with both
    /// endpoints), or an e-mail provider whose follower account is configured here (its
    /// e-mail address as `client_id`, its password as `client_secret`: `link::email`).
    pub fn from_json(text: &str) -> Result<OAuthApps, String> {
        let apps: OAuthApps = serde_json::from_str(text).map_err(|e| e.to_string())?;
        for (slug, app) in &apps.0 {
            let oauth = providers::provider(slug).is_some_and(scopes::is_oauth);
            if !oauth && !uses_account(slug) {
                return Err(format!(
                    "{slug:?} is not an OAuth provider of the catalogue"
                ));
            }
            if oauth && (app.authorize_url.is_empty() || app.token_url.is_empty()) {
                return Err(format!("{slug:?} needs authorize_url and token_url"));
            }
        }
        Ok(apps)
    }
}

/// The provider user id some providers put beside the tokens.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProviderUser {
    /// The user's id at the provider (a string or a number on the wire; Withings: `userid`;
    /// Polar: `x_user_id`).
    #[serde(
        default,
        alias = "userid",
        alias = "x_user_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub user_id: Option<serde_json::Value>,
}

impl ExtraTokenFields for ProviderUser {}

pub(crate) type Client = oauth2::Client<
    BasicErrorResponse,
    StandardTokenResponse<ProviderUser, BasicTokenType>,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    oauth2::EndpointSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointSet,
>;

pub(crate) fn client(app: &OAuthApp, public_url: &str, provider: &str) -> Result<Client, AppError> {
    let bad = |what: &str| AppError::NotConfigured(format!("{provider} ({what} is not a URL)"));
    let auth_type = if token_wire::client_in_body(provider) {
        oauth2::AuthType::RequestBody
    } else {
        oauth2::AuthType::BasicAuth
    };
    Ok(oauth2::Client::new(ClientId::new(app.client_id.clone()))
        .set_client_secret(ClientSecret::new(app.client_secret.clone()))
        .set_auth_type(auth_type)
        .set_auth_uri(AuthUrl::new(app.authorize_url.clone()).map_err(|_| bad("authorize_url"))?)
        .set_token_uri(TokenUrl::new(app.token_url.clone()).map_err(|_| bad("token_url"))?)
        .set_redirect_uri(
            RedirectUrl::new(
                app.redirect_uri
                    .clone()
                    .unwrap_or_else(|| callback_url(public_url, provider)),
            )
            .map_err(|_| bad("the redirect URI"))?,
        ))
}

/// Where the provider sends the user back.
pub fn callback_url(public_url: &str, provider: &str) -> String {
    format!("{public_url}/v2/link/oauth/callback/{provider}")
}

/// What a token refresh came to.
#[derive(Debug)]
pub enum Refreshed {
    /// New credentials (a provider that sends no new refresh token keeps the old one valid).
    Tokens(Credentials),
    /// The provider refused the grant (revoked, expired, client no longer valid): only a new
    /// link fixes it. The message says what it answered.
    Refused(String),
    /// Anything else (unreachable, a 5xx, an unreadable answer): worth retrying later.
    Failed(String),
}

/// Exchanges a connection's refresh token for new tokens (RFC 6749 §6) at the provider's token
/// endpoint, with the OAuth application the team's links use (its own, else the
/// deployment's). The new credentials are not stored here.
pub async fn refresh(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    settings: &dyn AccessSettings,
    http: &reqwest::Client,
    team: uuid::Uuid,
    provider: &Provider,
    credentials: &Credentials,
) -> Result<Refreshed, AppError> {
    let Some(refresh_token) = &credentials.refresh_token else {
        return Ok(Refreshed::Refused(format!(
            "{} gave no refresh token and its access token was refused.",
            provider.name
        )));
    };
    let app = super::apps::resolve(meta, key, settings, team, provider.slug).await?;
    let answer = client(&app, settings.public_url(), provider.slug)?
        .exchange_refresh_token(&oauth2::RefreshToken::new(refresh_token.clone()))
        .add_scopes(
            token_wire::refresh_scopes(provider.slug)
                .iter()
                .map(|s| Scope::new((*s).to_owned())),
        )
        .request_async(&token_wire::TokenClient::new(http, provider.slug))
        .await;
    let token = match answer {
        Ok(token) => token,
        Err(e) => {
            return Ok(match refused(&e) {
                Some(code) => Refreshed::Refused(format!(
                    "{} refused to refresh the access ({code}).",
                    provider.name
                )),
                None => Refreshed::Failed(format!("token refresh failed: {e}")),
            });
        }
    };
    Ok(Refreshed::Tokens(Credentials {
        access_token: Some(token.access_token().secret().clone()),
        refresh_token: token
            .refresh_token()
            .map(|t| t.secret().clone())
            .or_else(|| credentials.refresh_token.clone()),
        expires_at: token
            .expires_in()
            .and_then(|d| chrono::Duration::from_std(d).ok())
            .map(|d| (Utc::now() + d).timestamp()),
        ..Credentials::default()
    }))
}

/// The provider's error code when a token request was refused for the grant itself
/// (`invalid_grant`, `invalid_client`, `unauthorized_client`): the user has to act, and no
/// retry helps. Any other failure (transport, another error code, an unreadable answer) is
/// `None`. Both the code exchange (`link::oauth`) and the refresh decide by it.
pub fn refused<E: std::error::Error + 'static>(
    error: &RequestTokenError<E, BasicErrorResponse>,
) -> Option<&str> {
    match error {
        RequestTokenError::ServerResponse(e)
            if matches!(
                e.error(),
                BasicErrorResponseType::InvalidGrant
                    | BasicErrorResponseType::InvalidClient
                    | BasicErrorResponseType::UnauthorizedClient
            ) =>
        {
            Some(e.error().as_ref())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_apps_file_names_oauth_providers_only_and_debug_hides_secrets() {
        let app = r#"{"client_id": "c", "client_secret": "s3cr3t-value",
            "authorize_url": "https://p.example/authorize", "token_url": "https://p.example/token"}"#;
        let apps = OAuthApps::from_json(&format!(r#"{{"oura": {app}}}"#)).unwrap();
        assert!(!format!("{apps:?}").contains("s3cr3t-value"));
        assert!(OAuthApps::from_json(&format!(r#"{{"peloton": {app}}}"#)).is_err());
        let follower = r#"{"freestyle_libre": {"client_id": "f@x.example", "client_secret": "s"}}"#;
        assert!(OAuthApps::from_json(follower).is_ok());
        assert!(
            OAuthApps::from_json(r#"{"oura": {"client_id": "c", "client_secret": "s"}}"#).is_err()
        );
        assert!(OAuthApps::from_json(&format!(r#"{{"myspace": {app}}}"#)).is_err());
        assert!(OAuthApps::from_json(r#"{"oura": {"client_id": "c"}}"#).is_err());
    }
}
