//! `/v2/user`: create, list, read, resolve, update and delete users, their patient details and
//! their providers. Handlers decode, call the store, encode; the rules live in [`crate::users`].

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use chrono::Utc;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{ApiPath, AuthTeam, JsonBody, PathId, QueryParams, TeamUser};
use crate::store::metadata::{MetadataError, User};
use crate::users::{self, info, render_time};

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_user, list_users))
        .routes(routes!(get_user, patch_user, delete_user))
        .routes(routes!(resolve_user))
        .routes(routes!(patch_user_info))
        .routes(routes!(latest_user_info))
        .routes(routes!(user_providers))
}

/// Loads a user of the team, or answers 404.
pub async fn team_user(
    state: &AppState,
    team: &AuthTeam,
    id: uuid::Uuid,
) -> Result<User, ApiError> {
    state
        .meta
        .user(team.0.id, id)
        .await?
        .ok_or(ApiError::NotFound("User"))
}

async fn render(state: &AppState, user: &User) -> Result<Value, ApiError> {
    let connections = state.meta.connections(user.id).await?;
    Ok(users::render_user(user, &connections))
}

/// Create a user.
#[utoipa::path(post, path = "/v2/user", tag = "users",
    request_body(content = Object, description = "client_user_id, fallback_time_zone, fallback_birth_date, ingestion_start, ingestion_end"),
    responses((status = 200, description = "The created user", body = Object),
              (status = 400, description = "client_user_id already in use; the body names the existing user"),
              (status = 422, description = "Validation error")),
    security(("api_key" = [])))]
async fn create_user(
    team: AuthTeam,
    State(state): State<AppState>,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let new = users::parse_new_user(&body, Utc::now().date_naive())?;
    match state.meta.create_user(team.0.id, new).await {
        Ok(user) => Ok(Json(render(&state, &user).await?)),
        Err(MetadataError::ClientUserIdTaken { existing }) => {
            Err(ApiError::BadRequestBody(json!({
                "error_type": "INVALID_REQUEST",
                "error_message": "Client user id already exists.",
                "user_id": existing.id,
                "created_on": render_time(existing.created_at),
            })))
        }
        Err(e) => Err(e.into()),
    }
}

/// List the team's users, oldest first (`offset` ≥ 0, `limit` 1–500).
#[utoipa::path(get, path = "/v2/user", tag = "users",
    params(("offset" = Option<i64>, Query, description = "default 0"),
           ("limit" = Option<i64>, Query, description = "1 to 500, default 100")),
    responses((status = 200, description = "{users, total, offset, limit}", body = Object)),
    security(("api_key" = [])))]
async fn list_users(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<Value>, ApiError> {
    let offset = query.int("offset", 0, 0, i64::MAX)?;
    let limit = query.int("limit", 100, 1, 500)?;
    let (page, total) = state.meta.list_users(team.0.id, offset, limit).await?;
    let mut users = Vec::with_capacity(page.len());
    for user in &page {
        users.push(render(&state, user).await?);
    }
    Ok(Json(
        json!({ "users": users, "total": total, "offset": offset, "limit": limit }),
    ))
}

/// Read a user.
#[utoipa::path(get, path = "/v2/user/{user_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The user", body = Object), (status = 404, description = "User not found")),
    security(("api_key" = [])))]
async fn get_user(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(render(&state, &user).await?))
}

/// Find a user by the team's own id.
#[utoipa::path(get, path = "/v2/user/resolve/{client_user_id}", tag = "users",
    params(("client_user_id" = String, Path)),
    responses((status = 200, description = "The user", body = Object), (status = 404, description = "User not found")),
    security(("api_key" = [])))]
async fn resolve_user(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath(client_user_id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let user = state
        .meta
        .user_by_client_id(team.0.id, &client_user_id)
        .await?
        .ok_or(ApiError::NotFound("User"))?;
    Ok(Json(render(&state, &user).await?))
}

/// Update a user: any of client_user_id, fallback_time_zone, fallback_birth_date,
/// ingestion_start, ingestion_end (null clears). 409 when client_user_id is taken.
#[utoipa::path(patch, path = "/v2/user/{user_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    request_body(content = Object),
    responses((status = 204, description = "Updated"), (status = 409, description = "client_user_id taken")),
    security(("api_key" = [])))]
async fn patch_user(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    JsonBody(body): JsonBody,
) -> Result<StatusCode, ApiError> {
    let patch = users::parse_user_patch(&body, &user, Utc::now().date_naive())?;
    state
        .meta
        .update_user(user.team_id, user.id, patch)
        .await?
        .ok_or(ApiError::NotFound("User"))?;
    Ok(StatusCode::NO_CONTENT)
}

/// Delete a user with its data and connections.
#[utoipa::path(delete, path = "/v2/user/{user_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "{\"success\": true}", body = Object), (status = 404, description = "User not found")),
    security(("api_key" = [])))]
async fn delete_user(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<Value>, ApiError> {
    if !state.meta.delete_user(team.0.id, id).await? {
        return Err(ApiError::NotFound("User"));
    }
    state.delete_user_data(team.0.id, id).await?;
    Ok(Json(json!({ "success": true })))
}

/// Set the user's patient details; answers the stored details.
#[utoipa::path(patch, path = "/v2/user/{user_id}/info", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    request_body(content = Object, description = "User info: first_name, last_name, email, phone_number, gender, dob, address, medical_proxy, race, ethnicity, sexual_orientation, gender_identity"),
    responses((status = 200, description = "The stored details", body = Object)),
    security(("api_key" = [])))]
async fn patch_user_info(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let details = info::parse_user_info(&body, Utc::now().date_naive())?;
    state.meta.set_user_info(user.id, &details).await?;
    Ok(Json(details))
}

/// The user's latest patient details.
#[utoipa::path(get, path = "/v2/user/{user_id}/info/latest", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The stored details", body = Object), (status = 404, description = "User or user info not found")),
    security(("api_key" = [])))]
async fn latest_user_info(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
) -> Result<Json<Value>, ApiError> {
    let details = state
        .meta
        .user_info(user.id)
        .await?
        .ok_or(ApiError::NotFound("User info"))?;
    Ok(Json(details))
}

/// The user's connected providers with per-resource availability.
#[utoipa::path(get, path = "/v2/user/providers/{user_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "{providers: [...]}", body = Object)),
    security(("api_key" = [])))]
async fn user_providers(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
) -> Result<impl IntoResponse, ApiError> {
    let providers =
        crate::data::connections::provider_entries(&state.meta, &state.health, &user).await?;
    Ok(Json(json!({ "providers": providers })))
}
