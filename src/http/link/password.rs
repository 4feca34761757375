//! `POST /v2/link/provider/password/{provider}` and `.../complete_mfa` (link token): a custom
//! widget links a password provider with the user's username and password, and its second
//! factor when the provider asks for one.

use axum::Json;
use axum::extract::State;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::path_provider;
use super::tokens::LinkTokenError;
use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::Typed;
use crate::http::extract::{ApiPath, LinkToken};
use crate::http::models;
use crate::link::password::{self, Outcome};
use crate::link::tokens::LinkSession;
use crate::loc;
use crate::providers::{AuthType, Provider};
use crate::validation::Violation;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(password_link))
        .routes(routes!(complete_mfa))
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

/// The code the provider sent for the second factor of a pending password sign-in.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteMfaRequest {
    /// The code, as the user received it (surrounding spaces are ignored).
    pub mfa_code: String,
}

/// How the link state of a link answer reads.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    /// Connected.
    Success,
    /// Not connected: `error_type` and `error` say why.
    Error,
    /// The provider sent a code: post it to `.../complete_mfa` with the same link token.
    PendingProviderMfa,
}

/// How the provider sent the code of a second factor.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MfaMethod {
    /// A text message.
    Sms,
    /// An e-mail.
    Email,
}

/// Where the code of a second factor went.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProviderMfa {
    /// `sms` or `email`.
    pub method: MfaMethod,
    /// The provider's masked phone number or e-mail address (`j***@e***.com`).
    pub hint: String,
}

/// The outcome of a password or e-mail link (`linking.md` §The link API).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PasswordLinkOutcome {
    /// `success`, `error`, or `pending_provider_mfa` when the provider sent a code.
    pub state: LinkState,
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
    /// Where the provider sent its code, while it waits for it (also beside
    /// `incorrect_mfa_code` while tries are left).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_mfa: Option<ProviderMfa>,
}

impl From<Outcome> for PasswordLinkOutcome {
    fn from(outcome: Outcome) -> Self {
        let state = match outcome.state() {
            "success" => LinkState::Success,
            "pending_provider_mfa" => LinkState::PendingProviderMfa,
            _ => LinkState::Error,
        };
        PasswordLinkOutcome {
            state,
            provider: outcome.landing.provider.clone(),
            connected: outcome.connected(),
            provider_id: outcome.provider_id.clone(),
            redirect_url: outcome
                .mfa
                .is_none()
                .then(|| outcome.landing.url())
                .flatten(),
            error_type: outcome.landing.error.as_ref().map(|(t, _)| t.as_str()),
            error: outcome.landing.error.map(|(_, message)| message),
            provider_mfa: outcome.mfa.map(|m| ProviderMfa {
                method: match m.method {
                    password::MfaMethod::Sms => MfaMethod::Sms,
                    password::MfaMethod::Email => MfaMethod::Email,
                },
                hint: m.hint,
            }),
        }
    }
}

/// The password provider `slug` names, if this token may link it; else a 422 at the path.
pub(crate) fn password_provider(
    session: &LinkSession,
    slug: &str,
) -> Result<&'static Provider, ApiError> {
    linkable_provider(session, slug, AuthType::Password, "a password")
}

/// The provider `slug` names, if this token may link it and it links by `auth`; else a 422 at
/// the path saying it is not `kind` provider this token may link.
pub(crate) fn linkable_provider(
    session: &LinkSession,
    slug: &str,
    auth: AuthType,
    kind: &str,
) -> Result<&'static Provider, ApiError> {
    let catalogued = path_provider(slug)?;
    session
        .provider(catalogued.slug)
        .filter(|p| p.auth_type == auth)
        .ok_or_else(|| {
            ApiError::invalid(
                Violation::new(
                    loc!["path", "provider"],
                    "enum",
                    format!("{slug:?} is not {kind} provider this link token may link"),
                )
                .with_input(serde_json::Value::from(slug)),
            )
        })
}

/// Link a password provider: wearhouse signs in at the provider with the user's username and
/// password; a sign-in the provider accepts becomes the connection (the link token is consumed,
/// `provider.connection.created` is emitted and the credentials are sealed). A provider that
/// asks for a second factor (Abbott LibreView) answers `state: pending_provider_mfa` with
/// `provider_mfa` saying where the code went: post it to `.../complete_mfa` with the same link
/// token within 10 minutes. A refusal is a 200 with `state: error` and the link error
/// (`provider_credential_error`, `provider_password_expired`, `provider_api_error`,
/// `unsupported_region`, `duplicate_connection`, `token_consumed`).
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
    let outcome = password::connect(
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
    Ok(Json(outcome.into()))
}

/// Finish a password link that answered `pending_provider_mfa`, with the code the provider
/// sent, and the same link token. A right code connects (as the password call would have); a
/// wrong one answers `state: error`, `error_type: incorrect_mfa_code` and `provider_mfa` again
/// while tries are left (5 per sign-in); a code after the sign-in's 10 minutes, after the last
/// try, or without a sign-in waiting answers `provider_credential_error` (sign in again).
#[utoipa::path(post, path = "/v2/link/provider/password/{provider}/complete_mfa", tag = "link",
    params(("provider" = String, Path, description = "The password provider's slug the sign-in was made with")),
    request_body(content = CompleteMfaRequest),
    responses((status = 200, description = "The outcome", body = PasswordLinkOutcome),
              (status = 400, description = "The deployment has no secret key to open the pending sign-in with", body = models::ErrorDetail),
              (status = 401, description = "Missing, unknown, expired or consumed link token", body = LinkTokenError),
              (status = 422, description = "Not a password provider this token may link, or a malformed body", body = models::ValidationError)),
    security(("link_token" = [])))]
async fn complete_mfa(
    State(state): State<AppState>,
    ApiPath(slug): ApiPath<String>,
    LinkToken(session): LinkToken,
    Typed(body): Typed<CompleteMfaRequest>,
) -> Result<Json<PasswordLinkOutcome>, ApiError> {
    let provider = password_provider(&session, &slug)?;
    let outcome = password::mfa::complete(
        &state.meta,
        state.secret.as_ref(),
        &state.link.password,
        &session,
        provider,
        &body.mfa_code,
        Utc::now(),
    )
    .await?;
    Ok(Json(outcome.into()))
}
