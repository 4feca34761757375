//! `GET /v2/link/provider/oauth/{provider}` (link token) and the OAuth redirect target
//! `GET /v2/link/oauth/callback/{provider}`.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use chrono::Utc;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::path_provider;
use super::tokens::{LinkProvider, LinkTokenError};
use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::{ApiPath, LinkToken, QueryParams};
use crate::http::models;
use crate::link::Landing;
use crate::link::oauth::{self, CallbackParams};
use crate::loc;
use crate::providers::scopes;
use crate::validation::Violation;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(oauth_provider))
        .routes(routes!(oauth_callback))
}

/// A provider with its authorisation URL.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OAuthProvider {
    /// The provider.
    #[serde(flatten)]
    pub provider: LinkProvider,
    /// Open this in the browser: the provider's authorisation page, with a signed `state`
    /// bound to the link token and a PKCE challenge.
    pub oauth_url: String,
}

/// The outcome of a callback when the link token has no `redirect_url`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkOutcome {
    /// `success` or `error`.
    pub state: &'static str,
    /// The provider slug.
    pub provider: String,
    /// The link error type, on error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_type: Option<&'static str>,
    /// What happened, on error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A callback's 400: the link's outcome, or (on a deployment without `--secret-key`, where the
/// `state` cannot be verified) the configuration error.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
#[allow(
    dead_code,
    reason = "the OpenAPI document's schema of the 400; the handler answers each shape through its own type"
)]
pub enum CallbackFailure {
    /// The link failed and the token has no `redirect_url`.
    Outcome(LinkOutcome),
    /// The deployment cannot verify or store a link (`{"detail": ...}`).
    Configuration(models::ErrorDetail),
}

/// The authorisation URL of an OAuth provider this link token may link.
#[utoipa::path(get, path = "/v2/link/provider/oauth/{provider}", tag = "link",
    params(("provider" = String, Path, description = "Provider slug")),
    responses((status = 200, description = "The provider and its authorisation URL", body = OAuthProvider),
              (status = 400, description = "No OAuth application is configured for the provider, or the deployment has no secret key", body = models::ErrorDetail),
              (status = 401, description = "Missing, unknown, expired or consumed link token", body = LinkTokenError),
              (status = 422, description = "Not an OAuth provider this token may link", body = models::ValidationError)),
    security(("link_token" = [])))]
async fn oauth_provider(
    State(state): State<AppState>,
    // The path before the token: a malformed segment is a 422 whoever asks.
    ApiPath(slug): ApiPath<String>,
    LinkToken(session): LinkToken,
) -> Result<Json<OAuthProvider>, ApiError> {
    let catalogued = path_provider(&slug)?;
    let provider = session
        .provider(catalogued.slug)
        .filter(|p| scopes::is_oauth(p))
        .ok_or_else(|| {
            ApiError::invalid(
                Violation::new(
                    loc!["path", "provider"],
                    "enum",
                    format!("{slug:?} is not an OAuth provider this link token may link"),
                )
                .with_input(serde_json::Value::from(slug.as_str())),
            )
        })?;
    let oauth_url = oauth::authorize_url(
        &state.meta,
        state.secret.as_ref(),
        &state.link,
        &session,
        provider,
        Utc::now(),
    )
    .await?;
    Ok(Json(OAuthProvider {
        provider: LinkProvider::from(provider),
        oauth_url,
    }))
}

/// Where a landing goes: the token's `redirect_url` with the outcome in its query; without one,
/// the outcome as JSON, or as the hosted page's outcome screen for a browser (`accept:
/// text/html`), since the hosted page's OAuth links come back here.
fn land(landing: Landing, browser: bool) -> Response {
    if let Some(url) = landing.url() {
        return Redirect::to(&url).into_response();
    }
    if browser {
        return super::page::outcome(&landing);
    }
    let status = if landing.error.is_some() {
        axum::http::StatusCode::BAD_REQUEST
    } else {
        axum::http::StatusCode::OK
    };
    let (error_type, error) = match landing.error {
        Some((t, message)) => (Some(t.as_str()), Some(message)),
        None => (None, None),
    };
    let state = if error_type.is_some() {
        "error"
    } else {
        "success"
    };
    (
        status,
        Json(LinkOutcome {
            state,
            provider: landing.provider,
            error_type,
            error,
        }),
    )
        .into_response()
}

/// The OAuth redirect target: verifies `state`, exchanges `code` (PKCE), records the
/// connection, consumes the link token, emits `provider.connection.created`, and redirects to
/// the token's `redirect_url` with `state=success|error` (JSON when it has none).
#[utoipa::path(get, path = "/v2/link/oauth/callback/{provider}", tag = "link",
    params(("provider" = String, Path, description = "Provider slug"),
           ("code" = Option<String>, Query), ("state" = Option<String>, Query),
           ("error" = Option<String>, Query), ("error_description" = Option<String>, Query)),
    responses((status = 200, description = "Connected (no redirect_url on the token)", body = LinkOutcome),
              (status = 303, description = "To the token's redirect_url with the outcome"),
              (status = 400, description = "Link failed (no redirect_url on the token), or the deployment has no secret key", body = CallbackFailure)))]
async fn oauth_callback(
    State(state): State<AppState>,
    ApiPath(slug): ApiPath<String>,
    headers: axum::http::HeaderMap,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let provider = path_provider(&slug)?;
    let params = CallbackParams {
        code: query.get("code").map(str::to_owned),
        state: query.get("state").map(str::to_owned),
        error: query.get("error").map(str::to_owned),
        error_description: query.get("error_description").map(str::to_owned),
    };
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(20))
        .build()
        .map_err(ApiError::internal)?;
    let landing = oauth::callback(
        &state.meta,
        state.secret.as_ref(),
        &state.link,
        &http,
        provider,
        &params,
        Utc::now(),
    )
    .await?;
    Ok(land(landing, super::page::wants_html(&headers)))
}
