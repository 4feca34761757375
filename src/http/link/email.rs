//! `POST /v2/link/provider/email/{provider}` (link token): a custom widget links an e-mail
//! provider (FreeStyle Libre) by the address the patient shared their data from.

use axum::Json;
use axum::extract::State;
use chrono::Utc;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::password::PasswordLinkOutcome;
use super::tokens::LinkTokenError;
use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::{ApiPath, LinkToken, Typed};
use crate::http::models;
use crate::link::email;
use crate::link::tokens::LinkSession;
use crate::providers::{AuthType, Provider};

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(email_link))
}

/// The patient's e-mail address at an e-mail provider.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailLinkRequest {
    /// The e-mail address of the patient's account, the one they shared their data from.
    pub email: String,
    /// The region of the patient's account (FreeStyle Libre's LibreLinkUp: `us`, `eu`, `de`,
    /// ...). Optional; a region the provider lacks answers `unsupported_region`.
    #[serde(default)]
    pub region: Option<String>,
}

/// The e-mail provider `slug` names, if this token may link it; else a 422 at the path.
pub(crate) fn email_provider(
    session: &LinkSession,
    slug: &str,
) -> Result<&'static Provider, ApiError> {
    super::password::linkable_provider(session, slug, AuthType::Email, "an e-mail")
}

/// Link an e-mail provider: the patient has shared their data with an account this deployment
/// reads (for `freestyle_libre`, the deployment's or team's LibreLinkUp follower account);
/// wearhouse finds the share from `email` (accepting a pending invitation), connects the user
/// to that patient and starts the pulls. A patient who has not shared yet answers `state:
/// error`, `error_type: provider_credential_error` and a sentence saying whom to share with;
/// a region the provider lacks `unsupported_region`; a deployment without a follower account
/// `provider_api_error`; the same patient linked to another user `duplicate_connection`.
#[utoipa::path(post, path = "/v2/link/provider/email/{provider}", tag = "link",
    params(("provider" = String, Path, description = "An e-mail provider's slug")),
    request_body(content = EmailLinkRequest),
    responses((status = 200, description = "The outcome", body = PasswordLinkOutcome),
              (status = 400, description = "The deployment has no secret key to seal the credentials with", body = models::ErrorDetail),
              (status = 401, description = "Missing, unknown, expired or consumed link token", body = LinkTokenError),
              (status = 422, description = "Not an e-mail provider this token may link, or a malformed body", body = models::ValidationError)),
    security(("link_token" = [])))]
async fn email_link(
    State(state): State<AppState>,
    ApiPath(slug): ApiPath<String>,
    LinkToken(session): LinkToken,
    Typed(body): Typed<EmailLinkRequest>,
) -> Result<Json<PasswordLinkOutcome>, ApiError> {
    let provider = email_provider(&session, &slug)?;
    let deps = email::Deps {
        meta: &state.meta,
        key: state.secret.as_ref(),
        config: &state.link,
    };
    let outcome = email::connect(
        deps,
        &session,
        provider,
        &body.email,
        body.region.as_deref(),
        Utc::now(),
    )
    .await?;
    Ok(Json(outcome.into()))
}
