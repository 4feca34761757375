//! `POST /v2/link/provider/password/{provider}` (link token): a custom widget links a password
//! provider with the user's username and password.

use axum::Json;
use axum::extract::State;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::connections::path_provider;
use super::tokens::LinkTokenError;
use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::Typed;
use crate::http::extract::{ApiPath, LinkToken};
use crate::http::models;
use crate::link::password;
use crate::link::tokens::LinkSession;
use crate::loc;
use crate::providers::{AuthType, Provider};
use crate::validation::Violation;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(password_link))
}

/// The user's credentials at a password provider.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordLinkRequest {
    /// The username (or e-mail address) at the provider.
    pub username: String,
    /// The password at the provider (never stored in clear, logged or returned).
    pub password: String,
    /// The account's region, for providers with regional accounts (FreeStyle Libre's
    /// LibreLinkUp: `us`, `eu`, `de`, ...): where to sign in first. Optional; the provider
    /// sends the sign-in on to the account's own region.
    #[serde(default)]
    pub region: Option<String>,
}

/// The outcome of a password link (`linking.md` §The link API).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PasswordLinkOutcome {
    /// `success` or `error` (`pending_provider_mfa` is reserved for providers with a second
    /// factor; none implemented asks for one).
    pub state: &'static str,
    /// The provider slug.
    pub provider: String,
    /// Whether the user is now connected to the provider.
    pub connected: bool,
    /// The user's id at the provider, once connected.
    pub provider_id: Option<String>,
    /// The link token's `redirect_url`, with the outcome in its query, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_url: Option<String>,
    /// The link error type, on error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_type: Option<&'static str>,
    /// What happened, on error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The password provider `slug` names, if this token may link it; else a 422 at the path.
pub(crate) fn password_provider(
    session: &LinkSession,
    slug: &str,
) -> Result<&'static Provider, ApiError> {
    let catalogued = path_provider(slug)?;
    session
        .provider(catalogued.slug)
        .filter(|p| p.auth_type == AuthType::Password)
        .ok_or_else(|| {
            ApiError::invalid(
                Violation::new(
                    loc!["path", "provider"],
                    "enum",
                    format!("{slug:?} is not a password provider this link token may link"),
                )
                .with_input(serde_json::Value::from(slug)),
            )
        })
}

/// Link a password provider: wearhouse signs in at the provider with the user's username and
/// password; a sign-in the provider accepts becomes the connection (the link token is consumed,
/// `provider.connection.created` is emitted and the credentials are sealed). A refusal is a 200
/// with `state: error` and the link error (`provider_credential_error`, `provider_api_error`,
/// `duplicate_connection`, `token_consumed`).
#[utoipa::path(post, path = "/v2/link/provider/password/{provider}", tag = "link",
    params(("provider" = String, Path, description = "A password provider's slug")),
    request_body(content = PasswordLinkRequest),
    responses((status = 200, description = "The outcome", body = PasswordLinkOutcome),
              (status = 400, description = "The deployment has no secret key to seal the credentials with", body = models::ErrorDetail),
              (status = 401, description = "Missing, unknown, expired or consumed link token", body = LinkTokenError),
              (status = 422, description = "Not a password provider this token may link, or a malformed body", body = models::ValidationError)),
    security(("link_token" = [])))]
async fn password_link(
    State(state): State<AppState>,
    ApiPath(slug): ApiPath<String>,
    LinkToken(session): LinkToken,
    Typed(body): Typed<PasswordLinkRequest>,
) -> Result<Json<PasswordLinkOutcome>, ApiError> {
    let provider = password_provider(&session, &slug)?;
    let (landing, provider_id) = password::connect(
        &state.meta,
        state.secret.as_ref(),
        &state.link.password,
        &session,
        provider,
        password::Login {
            username: &body.username,
            password: &body.password,
            region: body.region.as_deref(),
        },
        Utc::now(),
    )
    .await?;
    let connected = landing.error.is_none();
    Ok(Json(PasswordLinkOutcome {
        state: if connected { "success" } else { "error" },
        provider: provider.slug.to_owned(),
        connected,
        provider_id,
        redirect_url: landing.url(),
        error_type: landing.error.as_ref().map(|(t, _)| t.as_str()),
        error: landing.error.map(|(_, message)| message),
    }))
}
