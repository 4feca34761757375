//! `DELETE /v2/user/{user_id}/{provider}`: deregistering a connection.

use axum::Json;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::path_provider;
use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::{ApiPath, AuthTeam, parse_uuid};
use crate::http::models;
use crate::http::users::team_user;
use crate::loc;
use crate::users::wire::Success;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(deregister))
}

/// Deregister the user's connection to a provider: it becomes `deregistered`, its credentials
/// are forgotten and syncing stops; the data already stored stays.
#[utoipa::path(delete, path = "/v2/user/{user_id}/{provider}", tag = "link",
    params(("user_id" = uuid::Uuid, Path), ("provider" = String, Path, description = "Provider slug")),
    responses((status = 200, description = "Deregistered", body = Success),
              (status = 404, description = "User or connection not found", body = models::ErrorDetail),
              (status = 422, description = "Malformed user id or unknown provider slug", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn deregister(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath((user_id, provider)): ApiPath<(String, String)>,
) -> Result<Json<Success>, ApiError> {
    let id = parse_uuid(&user_id, loc!["path", "user_id"])?;
    let provider = path_provider(&provider)?;
    let user = team_user(&state, &team, id).await?;
    crate::link::lifecycle::deregister(&state.meta, user.id, provider.slug).await?;
    Ok(Json(Success { success: true }))
}
