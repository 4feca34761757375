//! `POST /v2/user/{user_id}/sign_in_token` (team key): a sign-in token for the team's mobile
//! app, scoped to one user ([`crate::link::sign_in`] says what it is exchanged for).

use axum::Json;
use axum::extract::State;
use chrono::Utc;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::{AuthTeam, PathId};
use crate::http::models;
use crate::http::users::team_user;
use crate::link::sign_in;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(sign_in_token))
}

/// A sign-in token (the reference's `UserSignInTokenResponse`).
#[derive(Serialize, ToSchema)]
pub struct SignInTokenResponse {
    /// The user it signs in as.
    pub user_id: uuid::Uuid,
    /// Exchange it once, within an hour, at `POST /v2/link/code/exchange` (`{"code": ...}`)
    /// for the user's push credential.
    pub sign_in_token: String,
}

/// Create a sign-in token for the team's mobile app, scoped to one user: single use, valid for
/// one hour, exchanged at `POST /v2/link/code/exchange` for a credential that pushes that
/// user's on-device data only.
#[utoipa::path(post, path = "/v2/user/{user_id}/sign_in_token", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The token", body = SignInTokenResponse),
              (status = 404, description = "User not found", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn sign_in_token(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<SignInTokenResponse>, ApiError> {
    let user = team_user(&state, &team, id).await?;
    let issued = sign_in::issue(&state.meta, team.0.id, user.id, Utc::now()).await?;
    Ok(Json(SignInTokenResponse {
        user_id: user.id,
        sign_in_token: issued.token,
    }))
}
