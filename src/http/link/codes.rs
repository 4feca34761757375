//! `POST /v2/link/code/create` (team key) and `POST /v2/link/code/exchange` (no key).

use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::{AuthTeam, QueryParams, Typed, parse_uuid};
use crate::http::models;
use crate::http::users::team_user;
use crate::link::codes;
use crate::loc;
use crate::users::wire::instant;
use crate::validation::Violation;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_code))
        .routes(routes!(exchange_code))
}

/// A link code.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkCode {
    /// `sk` + `us`/`eu` + 8 lowercase hexadecimal digits.
    pub code: String,
    /// `<app scheme>://<app host>?code=<code>`.
    pub exchange_url: String,
    /// When it expires.
    #[serde(serialize_with = "instant")]
    pub expires_at: DateTime<Utc>,
}

/// `POST /v2/link/code/exchange` body.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CodeExchangeRequest {
    /// The code, or a sign-in token.
    pub code: String,
}

/// The push credential a code is exchanged for.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CodeExchanged {
    /// The one user it pushes for.
    pub user_id: uuid::Uuid,
    /// Send as `x-link-code-token` with `POST /v2/user/{user_id}/data` (on-device providers
    /// only).
    pub link_code_token: String,
    /// When it stops working (24 hours after the exchange).
    #[serde(serialize_with = "instant")]
    pub expires_at: DateTime<Utc>,
}

/// Create a link code for a user's mobile app. `expires_at` defaults to one hour from now and
/// must be in the future and at most 7 days ahead.
#[utoipa::path(post, path = "/v2/link/code/create", tag = "link",
    params(("user_id" = uuid::Uuid, Query), ("expires_at" = Option<DateTime<Utc>>, Query)),
    responses((status = 200, description = "The code", body = LinkCode),
              (status = 404, description = "User not found", body = models::ErrorDetail),
              (status = 422, description = "Validation error", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn create_code(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<LinkCode>, ApiError> {
    let now = Utc::now();
    let mut violations = Vec::new();
    let user_id = match query.get("user_id") {
        Some(v) => Some(v),
        None => {
            violations.push(Violation::new(
                loc!["query", "user_id"],
                "missing",
                "Field required",
            ));
            None
        }
    };
    let expires_at = match query.get("expires_at") {
        None => Some(now + codes::DEFAULT_LIFETIME),
        Some(text) => match DateTime::parse_from_rfc3339(text) {
            Ok(t) if t.with_timezone(&Utc) <= now => {
                violations.push(
                    Violation::value(
                        loc!["query", "expires_at"],
                        "expires_at must be in the future",
                    )
                    .with_input(Value::from(text)),
                );
                None
            }
            Ok(t) if t.with_timezone(&Utc) > now + codes::MAX_LIFETIME => {
                violations.push(
                    Violation::value(
                        loc!["query", "expires_at"],
                        "expires_at must be at most 7 days ahead",
                    )
                    .with_input(Value::from(text)),
                );
                None
            }
            Ok(t) => Some(t.with_timezone(&Utc)),
            Err(_) => {
                violations.push(
                    Violation::new(
                        loc!["query", "expires_at"],
                        "datetime_parsing",
                        "Input should be a valid date-time with offset (RFC 3339)",
                    )
                    .with_input(Value::from(text)),
                );
                None
            }
        },
    };
    if !violations.is_empty() {
        return Err(crate::validation::Invalid(violations).into());
    }
    let (Some(user_id), Some(expires_at)) = (user_id, expires_at) else {
        return Err(ApiError::internal("validated link code query missing"));
    };
    let id = parse_uuid(user_id, loc!["query", "user_id"])?;
    let user = team_user(&state, &team, id).await?;
    let issued = codes::create(
        &state.meta,
        &state.link,
        team.0.id,
        user.id,
        expires_at,
        now,
    )
    .await?;
    Ok(Json(LinkCode {
        code: issued.code,
        exchange_url: issued.exchange_url,
        expires_at: issued.expires_at,
    }))
}

/// Exchange a link code, or a sign-in token of `POST /v2/user/{user_id}/sign_in_token`, once,
/// for a credential that pushes on-device data of its user.
#[utoipa::path(post, path = "/v2/link/code/exchange", tag = "link",
    request_body(content = CodeExchangeRequest),
    responses((status = 200, description = "The push credential", body = CodeExchanged),
              (status = 400, description = "Unknown, expired or used code", body = models::ErrorDetail),
              (status = 422, description = "Validation error", body = models::ValidationError)))]
async fn exchange_code(
    State(state): State<AppState>,
    Typed(body): Typed<CodeExchangeRequest>,
) -> Result<Json<CodeExchanged>, ApiError> {
    let credential = codes::exchange(&state.meta, &body.code, Utc::now()).await?;
    Ok(Json(CodeExchanged {
        user_id: credential.user_id,
        link_code_token: credential.token,
        expires_at: credential.expires_at,
    }))
}
