//! `PUT/GET/DELETE /v2/team/provider/{provider}/credentials`: the team's own OAuth application.

use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::path_provider;
use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::{ApiPath, AuthTeam, JsonBody};
use crate::http::models;
use crate::link::team_apps;
use crate::loc;
use crate::providers::{Provider, scopes};
use crate::store::metadata::team_apps::TeamApp;
use crate::users::wire::{Success, instant};
use crate::validation::{Invalid, Violation, decode};

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(
        put_credentials,
        get_credentials,
        delete_credentials
    ))
}

/// `PUT` body.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
pub struct ProviderCredentialsRequest {
    /// The application's client id.
    pub client_id: String,
    /// Its client secret (kept sealed, never shown again).
    pub client_secret: String,
    /// The redirect URI registered with the provider, when not this service's callback.
    #[serde(default)]
    pub redirect_uri: Option<String>,
    /// The verification token the team chose for its own change-notification subscription
    /// (Oura's webhooks, whose callback is `GET/POST /v2/provider/oura/notify`): the
    /// subscription handshake is answered for it. Kept as a hash only, never shown again.
    #[serde(default)]
    pub verification_token: Option<String>,
}

/// The team's application, without its secret.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProviderCredentials {
    /// The provider slug.
    pub provider: String,
    /// The client id.
    pub client_id: String,
    /// The redirect URI, when set.
    pub redirect_uri: Option<String>,
    /// Whether a change-notification verification token is set (the token is never shown).
    pub verification_token_set: bool,
    /// When it was first set.
    #[serde(serialize_with = "instant")]
    pub created_at: DateTime<Utc>,
    /// When it was last set.
    #[serde(serialize_with = "instant")]
    pub updated_at: DateTime<Utc>,
}

impl From<TeamApp> for ProviderCredentials {
    fn from(app: TeamApp) -> Self {
        ProviderCredentials {
            provider: app.provider,
            client_id: app.client_id,
            redirect_uri: app.redirect_uri,
            verification_token_set: app.has_verification_token,
            created_at: app.created_at,
            updated_at: app.updated_at,
        }
    }
}

fn oauth_provider(slug: &str) -> Result<&'static Provider, ApiError> {
    let provider = path_provider(slug)?;
    if scopes::is_oauth(provider) || crate::link::email::uses_account(provider.slug) {
        return Ok(provider);
    }
    Err(ApiError::invalid(
        Violation::new(
            loc!["path", "provider"],
            "enum",
            format!("{slug:?} does not connect through OAuth, so it takes no OAuth application"),
        )
        .with_input(serde_json::Value::from(slug)),
    ))
}

/// Set the team's own OAuth application for a provider; the team's OAuth links use it.
#[utoipa::path(put, path = "/v2/team/provider/{provider}/credentials", tag = "link",
    params(("provider" = String, Path, description = "Provider slug")),
    request_body(content = ProviderCredentialsRequest),
    responses((status = 200, description = "Stored (the secret is not shown)", body = ProviderCredentials),
              (status = 400, description = "The deployment has no secret key to seal the secret with", body = models::ErrorDetail),
              (status = 422, description = "Validation error", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn put_credentials(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath(slug): ApiPath<String>,
    JsonBody(body): JsonBody,
) -> Result<Json<ProviderCredentials>, ApiError> {
    let provider = oauth_provider(&slug)?;
    // Nothing of this body is echoed: a misnamed member may hold the secret.
    let (body, mut checks) = decode::<ProviderCredentialsRequest>(&body, loc!["body"])
        .map_err(Invalid::without_inputs)?;
    for (key, value) in [
        ("client_id", &body.client_id),
        ("client_secret", &body.client_secret),
    ] {
        if value.trim().is_empty() {
            checks.fail(
                loc![key],
                "string_too_short",
                format!("{key} must not be empty"),
            );
        }
    }
    if let Some(uri) = &body.redirect_uri
        && !url::Url::parse(uri).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
    {
        checks.fail(
            loc!["redirect_uri"],
            "url_parsing",
            "redirect_uri must be an absolute http or https URL",
        );
    }
    if let Some(token) = &body.verification_token {
        if !crate::sync::notify::takes_verification_token(provider.slug) {
            checks.fail(
                loc!["verification_token"],
                "value_error",
                format!(
                    "{} subscriptions carry no verification token; leave verification_token out",
                    provider.slug
                ),
            );
        } else if token.trim().is_empty() || token.chars().count() > 256 {
            checks.fail(
                loc!["verification_token"],
                "value_error",
                "verification_token must be 1-256 characters",
            );
        }
    }
    checks.finish().map_err(Invalid::without_inputs)?;
    let app = team_apps::NewTeamApp {
        client_id: &body.client_id,
        client_secret: &body.client_secret,
        redirect_uri: body.redirect_uri.as_deref(),
        verification_token: body.verification_token.as_deref(),
    };
    let app = team_apps::set(
        &state.meta,
        state.secret.as_ref(),
        team.0.id,
        provider.slug,
        app,
    )
    .await?;
    Ok(Json(app.into()))
}

/// The team's own OAuth application for a provider, without its secret.
#[utoipa::path(get, path = "/v2/team/provider/{provider}/credentials", tag = "link",
    params(("provider" = String, Path, description = "Provider slug")),
    responses((status = 200, description = "The application", body = ProviderCredentials),
              (status = 404, description = "The team has none for this provider", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn get_credentials(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath(slug): ApiPath<String>,
) -> Result<Json<ProviderCredentials>, ApiError> {
    let provider = oauth_provider(&slug)?;
    Ok(Json(
        team_apps::get(&state.meta, team.0.id, provider.slug)
            .await?
            .into(),
    ))
}

/// Remove the team's own OAuth application for a provider (links use the deployment's again).
#[utoipa::path(delete, path = "/v2/team/provider/{provider}/credentials", tag = "link",
    params(("provider" = String, Path, description = "Provider slug")),
    responses((status = 200, description = "Removed", body = Success),
              (status = 404, description = "The team has none for this provider", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn delete_credentials(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath(slug): ApiPath<String>,
) -> Result<Json<Success>, ApiError> {
    let provider = oauth_provider(&slug)?;
    team_apps::delete(&state.meta, team.0.id, provider.slug).await?;
    Ok(Json(Success { success: true }))
}
