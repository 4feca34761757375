//! `/v2/user`: create, list, read, resolve, update and delete users, their patient details and
//! their providers. Handlers decode, call the store, encode; the rules live in [`crate::users`].

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use chrono::Utc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{ApiPath, AuthTeam, IntParam, JsonBody, PathId, QueryParams, TeamUser};
use super::models;
use crate::store::metadata::{MetadataError, User};
use crate::users::wire::{DuplicateUser, Success, TeamMetrics, UserInfo, UserPage, UserResource};
use crate::users::{self, info};
use crate::validation::Violation;

/// `GET /v2/user`'s offset.
pub(crate) const OFFSET: IntParam = IntParam::new("offset", 0, 0, i64::MAX);
/// `GET /v2/user`'s page size.
pub(crate) const LIMIT: IntParam = IntParam::new("limit", 100, 1, 500);

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_user, list_users))
        .routes(routes!(get_user, patch_user, delete_user))
        .routes(routes!(resolve_user))
        .routes(routes!(patch_user_info))
        .routes(routes!(latest_user_info))
        .routes(routes!(user_providers))
        .routes(routes!(refresh_user))
        .routes(routes!(team_metrics))
        .routes(routes!(undo_delete))
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

/// The user as the API answers it, with its connections.
pub(super) async fn render(state: &AppState, user: &User) -> Result<UserResource, ApiError> {
    let connections = state.meta.connections(user.id).await?;
    Ok(UserResource::new(user, &connections))
}

/// Create a user.
#[utoipa::path(post, path = "/v2/user", tag = "users",
    request_body(content = models::NewUserRequest),
    responses((status = 200, description = "The created user", body = UserResource),
              (status = 400, description = "client_user_id already in use; the body names the existing user", body = models::DuplicateUserError),
              (status = 401, description = "Missing or invalid API key", body = models::ErrorDetail),
              (status = 422, description = "Validation error", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn create_user(
    team: AuthTeam,
    State(state): State<AppState>,
    JsonBody(body): JsonBody,
) -> Result<Json<UserResource>, ApiError> {
    let new = users::parse_new_user(&body, Utc::now().date_naive())?;
    match state.meta.create_user(team.0.id, new).await {
        Ok(user) => Ok(Json(render(&state, &user).await?)),
        Err(MetadataError::ClientUserIdTaken { existing }) => {
            let detail = DuplicateUser {
                error_type: "INVALID_REQUEST".into(),
                error_message: "Client user id already exists.".into(),
                user_id: existing.id,
                created_on: existing.created_at,
            };
            Err(ApiError::DuplicateUser(detail))
        }
        Err(e) => Err(e.into()),
    }
}

/// List the team's users, oldest first (`offset` ≥ 0, `limit` 1–500).
#[utoipa::path(get, path = "/v2/user", tag = "users",
    params(("offset" = Option<i64>, Query, description = "default 0"),
           ("limit" = Option<i64>, Query, description = "1 to 500, default 100")),
    responses((status = 200, description = "One page of users", body = UserPage),
              (status = 422, description = "Validation error", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn list_users(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<UserPage>, ApiError> {
    let offset = query.read(&OFFSET)?;
    let limit = query.read(&LIMIT)?;
    let (page, total) = state.meta.list_users(team.0.id, offset, limit).await?;
    let mut users = Vec::with_capacity(page.len());
    for user in &page {
        users.push(render(&state, user).await?);
    }
    Ok(Json(UserPage {
        users,
        total,
        offset,
        limit,
    }))
}

/// Read a user.
#[utoipa::path(get, path = "/v2/user/{user_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The user", body = UserResource),
              (status = 404, description = "User not found", body = models::ErrorDetail),
              (status = 422, description = "Malformed user id", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn get_user(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
) -> Result<Json<UserResource>, ApiError> {
    Ok(Json(render(&state, &user).await?))
}

/// Find a user by the team's own id.
#[utoipa::path(get, path = "/v2/user/resolve/{client_user_id}", tag = "users",
    params(("client_user_id" = String, Path)),
    responses((status = 200, description = "The user", body = UserResource),
              (status = 404, description = "User not found", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn resolve_user(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath(client_user_id): ApiPath<String>,
) -> Result<Json<UserResource>, ApiError> {
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
    request_body(content = models::UserPatchRequest),
    responses((status = 204, description = "Updated"),
              (status = 404, description = "User not found", body = models::ErrorDetail),
              (status = 409, description = "client_user_id taken", body = models::ErrorDetail),
              (status = 422, description = "Validation error", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn patch_user(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    JsonBody(body): JsonBody,
) -> Result<StatusCode, ApiError> {
    let now = Utc::now();
    let patch = users::parse_user_patch(&body, &user, now.date_naive())?;
    crate::data::update_user(&state.meta, &user, patch, now)
        .await?
        .ok_or(ApiError::NotFound("User"))?;
    Ok(StatusCode::NO_CONTENT)
}

/// Delete a user with its data and connections. The user is gone at once (every getter, query,
/// list and resolve answers as if it never existed; pulls and events stop), and can be restored
/// with `POST /v2/user/undo_delete` within the undo window (`serve --user-undo-window-secs`,
/// default 7 days); then its data is removed and its `client_user_id` is free again.
#[utoipa::path(delete, path = "/v2/user/{user_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "Deleted (restorable within the undo window)", body = Success),
              (status = 404, description = "User not found", body = models::ErrorDetail),
              (status = 422, description = "Malformed user id", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn delete_user(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<Success>, ApiError> {
    if !state.delete_user(team.0.id, id).await? {
        return Err(ApiError::NotFound("User"));
    }
    Ok(Json(Success { success: true }))
}

/// Set the user's patient details; answers the stored details.
#[utoipa::path(patch, path = "/v2/user/{user_id}/info", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    request_body(content = info::UserInfoRequest, description = "The address takes `zip_code` or `zip`; `country` defaults to US"),
    responses((status = 200, description = "The stored details", body = UserInfo),
              (status = 404, description = "User not found", body = models::ErrorDetail),
              (status = 422, description = "Validation error", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn patch_user_info(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    JsonBody(body): JsonBody,
) -> Result<Json<UserInfo>, ApiError> {
    let details = info::parse_user_info(&body, Utc::now().date_naive())?;
    let stored = serde_json::to_value(&details).map_err(ApiError::internal)?;
    state.meta.set_user_info(user.id, &stored).await?;
    Ok(Json(details))
}

/// The user's latest patient details.
#[utoipa::path(get, path = "/v2/user/{user_id}/info/latest", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The stored details", body = UserInfo),
              (status = 404, description = "User or user info not found", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn latest_user_info(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
) -> Result<Json<UserInfo>, ApiError> {
    let details = state
        .meta
        .user_info(user.id)
        .await?
        .ok_or(ApiError::NotFound("User info"))?;
    Ok(Json(info::typed(details).map_err(ApiError::internal)?))
}

/// The user's connected providers with per-resource availability.
#[utoipa::path(get, path = "/v2/user/providers/{user_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The user's providers", body = models::UserProviders),
              (status = 404, description = "User not found", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn user_providers(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
) -> Result<impl IntoResponse, ApiError> {
    let providers = crate::data::provider_list::provider_entries(&state.meta, &user).await?;
    Ok(Json(models::UserProviders { providers }))
}

/// Refresh the user's provider data: an incremental pull of every connected provider with a
/// connector, waited for up to `timeout` seconds (`sync::refresh`).
#[utoipa::path(post, path = "/v2/user/refresh/{user_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path),
           ("timeout" = Option<f64>, Query, description = "Seconds to wait, 5 to 60 (default 10)")),
    responses((status = 200, description = "What was refreshed, is still running, or failed",
               body = crate::sync::refresh::RefreshResult),
              (status = 404, description = "User not found", body = models::ErrorDetail),
              (status = 429, description = "The user's 8 refreshes of the hour are used: `Retry-After` says when the next is allowed", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn refresh_user(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    query: QueryParams,
) -> Result<impl IntoResponse, ApiError> {
    let timeout = match query.get("timeout") {
        None => 10.0,
        Some(raw) => {
            let invalid = |msg: &str| {
                ApiError::invalid(
                    Violation::value(crate::loc!["query", "timeout"], msg)
                        .with_input(serde_json::Value::from(raw)),
                )
            };
            let seconds: f64 = raw
                .parse()
                .map_err(|_| invalid("Input should be a valid number"))?;
            if !(5.0..=60.0).contains(&seconds) {
                return Err(invalid("Input should be between 5 and 60"));
            }
            seconds
        }
    };
    let wait = std::time::Duration::from_secs_f64(timeout);
    use crate::sync::refresh::{RefreshError, refresh};
    match refresh(&state.meta, &state.health, &user, wait).await {
        Ok(result) => Ok(Json(result)),
        Err(RefreshError::Limited { retry_after }) => Err(ApiError::TooManyRequests {
            message: format!(
                "At most {} refreshes per user per hour; retry in {retry_after} seconds.",
                crate::sync::refresh::LIMIT
            ),
            retry_after,
        }),
        Err(RefreshError::Data(e)) => Err(e.into()),
    }
}

/// The team's counts of users and connections.
#[utoipa::path(get, path = "/v2/user/metrics", tag = "users",
    responses((status = 200, description = "The team's counts", body = TeamMetrics)),
    security(("api_key" = [])))]
async fn team_metrics(
    team: AuthTeam,
    State(state): State<AppState>,
) -> Result<Json<TeamMetrics>, ApiError> {
    let (users, connected, errored) = state.meta.team_counts(team.0.id).await?;
    Ok(Json(TeamMetrics {
        team_id: team.0.id,
        number_of_users: users,
        number_of_connected_sources: connected,
        number_of_errored_connected_sources: errored,
    }))
}

/// Restore a user deleted within the undo window, named by `user_id` or `client_user_id` (one
/// of them): the user and all its data come back as they were. A deletion is undoable for
/// the deployment's undo window (`serve --user-undo-window-secs`, default 7 days); after it the
/// user's data is removed and its `client_user_id` is free again. A live user answers 400, an
/// unknown one or one whose window is over 404.
#[utoipa::path(post, path = "/v2/user/undo_delete", tag = "users",
    params(("user_id" = Option<uuid::Uuid>, Query), ("client_user_id" = Option<String>, Query)),
    responses((status = 200, description = "Restored with all its data", body = Success),
              (status = 400, description = "The user is not deleted", body = models::ErrorDetail),
              (status = 404, description = "No deleted user to restore (unknown, or its undo window is over)", body = models::ErrorDetail),
              (status = 422, description = "Neither or both of user_id and client_user_id", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn undo_delete(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<Success>, ApiError> {
    use crate::store::metadata::deleted_users::UserRef;
    let who = match (query.get("user_id"), query.get("client_user_id")) {
        (Some(id), None) => UserRef::Id(super::extract::parse_uuid(
            id,
            crate::loc!["query", "user_id"],
        )?),
        (None, Some(client)) => UserRef::Client(client.to_owned()),
        _ => {
            return Err(ApiError::invalid(Violation::value(
                crate::loc!["query", "user_id"],
                "send exactly one of user_id and client_user_id",
            )));
        }
    };
    match state.undo_delete(team.0.id, &who).await? {
        crate::data::Undo::Restored => Ok(Json(Success { success: true })),
        crate::data::Undo::NotDeleted => Err(ApiError::BadRequest("User is not deleted".into())),
        crate::data::Undo::NotFound => Err(ApiError::NotFound("Deleted user")),
    }
}
