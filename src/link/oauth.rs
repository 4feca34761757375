//! OAuth 2.0 links (`linking.md` §The link API): the authorisation URL with PKCE and a signed
//! `state`, and the callback that exchanges the code and records the connection.
//!
//! `state` is `<id>.<HMAC(id | link token hash | provider)>`; the id names a server-side row
//! holding the PKCE verifier (sealed), taken once, so a state is bound to its token and
//! provider, cannot be forged, and cannot be replayed. Each provider's endpoints and client
//! come from the deployment's OAuth application list (`--oauth-apps`), so tests point them at
//! a local fake authorisation server; a team's own client (`team_apps`) replaces the
//! deployment's client for that team's links, on the provider's own endpoints when the
//! deployment has no application for it (`team_apps::Endpoints`).

use chrono::{DateTime, Utc};
use oauth2::{
    AuthorizationCode, CsrfToken, PkceCodeChallenge, PkceCodeVerifier, Scope, TokenResponse,
};
use rand::RngCore;

use super::lifecycle::{Linked, finish_link};
use super::tokens::{self, LinkSession};
use super::{Landing, LinkConfig, LinkError, LinkErrorType, token_wire};
use crate::providers::{Provider, scopes};
use crate::secret::{SecretError, SecretKey};
use crate::store::metadata::MetadataStore;
use crate::store::metadata::link::{self, OAuthState};
use crate::sync::credentials::Credentials;
use crate::sync::oauth::client;
pub use crate::sync::oauth::{OAuthApp, OAuthApps, ProviderUser, Refreshed, callback_url, refresh};

/// The authorisation URL for the session's user and `provider` (an OAuth provider the token
/// may link).
pub async fn authorize_url(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    config: &LinkConfig,
    session: &LinkSession,
    provider: &Provider,
    now: DateTime<Utc>,
) -> Result<String, LinkError> {
    let key = key.ok_or(SecretError::Missing)?;
    let app =
        super::team_apps::resolve(meta, Some(key), config, session.team_id, provider.slug).await?;
    let client = client(&app, &config.public_url, provider.slug)?;
    let mut id = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut id);
    let id = hex::encode(id);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let row = OAuthState {
        token_hash: session.token_hash.clone(),
        provider: provider.slug.to_owned(),
        pkce_verifier: key.seal(verifier.secret().as_bytes(), &format!("oauth:{id}"))?,
    };
    link::insert_oauth_state(&mut *meta.writer().await?, &id, &row, now).await?;
    let state = format!("{id}.{}", key.sign(&signed(&id, &row)));
    let mut request = client
        .authorize_url(|| CsrfToken::new(state))
        .add_scopes(
            scopes::authorisation_scopes(provider)
                .into_iter()
                .filter(|_| super::token_wire::asks_scopes(provider.slug))
                .map(Scope::new),
        )
        .set_pkce_challenge(challenge);
    for (name, value) in super::token_wire::authorize_params(provider.slug) {
        request = request.add_extra_param(*name, *value);
    }
    let (url, _) = request.url();
    Ok(url.to_string())
}

fn signed(id: &str, row: &OAuthState) -> String {
    format!("{id}|{}|{}", row.token_hash, row.provider)
}

/// What the provider sent to the callback.
#[derive(Debug, Clone, Default)]
pub struct CallbackParams {
    /// The authorisation code.
    pub code: Option<String>,
    /// The state sent with the authorisation URL.
    pub state: Option<String>,
    /// The provider's error (`access_denied` when the user declined).
    pub error: Option<String>,
    /// The provider's description of it.
    pub error_description: Option<String>,
}

fn fail(error_type: LinkErrorType, message: impl Into<String>) -> Option<(LinkErrorType, String)> {
    Some((error_type, message.into()))
}

/// Handles the provider's redirect: verifies the state, exchanges the code (with the PKCE
/// verifier), checks scopes and duplicates, then records the connection, consumes the token
/// and emits `provider.connection.created` in one transaction. Link failures are answered as
/// a [`Landing`] with the error; only store failures are errors.
#[allow(clippy::too_many_arguments)]
pub async fn callback(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    config: &LinkConfig,
    http: &reqwest::Client,
    provider: &Provider,
    params: &CallbackParams,
    now: DateTime<Utc>,
) -> Result<Landing, LinkError> {
    let key = key.ok_or(SecretError::Missing)?;
    let mut landing = Landing {
        redirect_url: None,
        provider: provider.slug.to_owned(),
        error: fail(
            LinkErrorType::InvalidToken,
            "The link state is not valid; start the link again.",
        ),
    };
    let Some((id, signature)) = params.state.as_deref().and_then(|s| s.split_once('.')) else {
        return Ok(landing);
    };
    let Some(row) = link::take_oauth_state(&mut *meta.writer().await?, id, now).await? else {
        return Ok(landing);
    };
    if row.provider != provider.slug || !key.verify(&signed(id, &row), signature) {
        return Ok(landing);
    }
    let stored = link::token_by_hash(&mut *meta.reader().await?, &row.token_hash).await?;
    landing.redirect_url = stored.and_then(|t| {
        serde_json::from_str::<tokens::LinkOptions>(&t.options)
            .ok()
            .and_then(|o| o.redirect_url)
    });
    let session = match tokens::check_hash(meta, row.token_hash.clone(), now).await {
        Ok(session) => session,
        Err(LinkError::Link {
            error_type,
            message,
        }) => {
            landing.error = Some((error_type, message));
            return Ok(landing);
        }
        Err(e) => return Err(e),
    };
    landing.error = exchange_and_link(
        meta, key, config, http, provider, params, &row, id, &session, now,
    )
    .await?;
    Ok(landing)
}

#[allow(clippy::too_many_arguments)]
async fn exchange_and_link(
    meta: &MetadataStore,
    key: &SecretKey,
    config: &LinkConfig,
    http: &reqwest::Client,
    provider: &Provider,
    params: &CallbackParams,
    row: &OAuthState,
    id: &str,
    session: &LinkSession,
    now: DateTime<Utc>,
) -> Result<Option<(LinkErrorType, String)>, LinkError> {
    if let Some(error) = &params.error {
        return Ok(if error == "access_denied" {
            fail(
                LinkErrorType::UserCancelled,
                format!("Access to {} was declined.", provider.name),
            )
        } else {
            let detail = params.error_description.as_deref().unwrap_or(error);
            fail(
                LinkErrorType::ProviderApiError,
                format!("{} answered: {detail}", provider.name),
            )
        });
    }
    let Some(code) = &params.code else {
        return Ok(fail(
            LinkErrorType::ProviderApiError,
            format!("{} sent no authorisation code.", provider.name),
        ));
    };
    let app =
        super::team_apps::resolve(meta, Some(key), config, session.team_id, provider.slug).await?;
    let verifier = String::from_utf8(key.open(&row.pkce_verifier, &format!("oauth:{id}"))?)
        .map_err(|_| SecretError::Unsealable)?;
    let answer = client(&app, &config.public_url, provider.slug)?
        .exchange_code(AuthorizationCode::new(code.clone()))
        .set_pkce_verifier(PkceCodeVerifier::new(verifier))
        .request_async(&token_wire::TokenClient::new(http, provider.slug))
        .await;
    let token = match answer {
        Ok(token) => token,
        Err(e) => {
            if let Some(code) = crate::sync::oauth::refused(&e) {
                return Ok(fail(
                    LinkErrorType::ProviderCredentialError,
                    format!("{} refused the authorisation ({code}).", provider.name),
                ));
            }
            tracing::warn!(provider = provider.slug, error = %e, "OAuth code exchange failed");
            return Ok(fail(
                LinkErrorType::ProviderApiError,
                format!(
                    "{} could not be reached or answered unexpectedly.",
                    provider.name
                ),
            ));
        }
    };
    let asked = scopes::all_scopes(provider);
    // The provider's own scope names, read back as wearhouse's; no `scope` in the answer means
    // everything asked was granted (RFC 6749 §5.1).
    let granted: Vec<String> = match token.scopes() {
        Some(list) => {
            let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
            scopes::granted(provider, &list)
        }
        None => asked.iter().map(|s| (*s).to_owned()).collect(),
    };
    let denied: Vec<String> = asked
        .iter()
        .filter(|s| !granted.iter().any(|g| g == *s))
        .map(|s| (*s).to_owned())
        .collect();
    let missing: Vec<&str> = scopes::scopes(provider)
        .required
        .into_iter()
        .filter(|r| !granted.iter().any(|g| g == r))
        .collect();
    if !missing.is_empty() {
        return Ok(fail(
            LinkErrorType::RequiredScopesNotGranted,
            format!(
                "{} needs access to: {}.",
                provider.name,
                missing
                    .iter()
                    .map(|m| scopes::native_name(provider, m))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let provider_user_id = token.extra_fields().user_id.as_ref().map(|v| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let linked = Linked {
        provider_user_id,
        scopes_granted: granted,
        scopes_denied: denied,
        credentials: Credentials {
            access_token: Some(token.access_token().secret().clone()),
            refresh_token: token.refresh_token().map(|t| t.secret().clone()),
            expires_at: token
                .expires_in()
                .and_then(|d| chrono::Duration::from_std(d).ok())
                .map(|d| (now + d).timestamp()),
            ..Default::default()
        },
    };
    finish_link(meta, Some(key), session, provider, &linked, now).await
}
