//! `/v2/team/keys`: the team's API keys, managed with a key of the same team: list, get,
//! create, revoke, rotate. Rules live in [`crate::keys`]; these handlers decode, call, encode.
//! Another team's key id answers 404 like a missing one.

use axum::Json;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{AuthTeam, Decoded, PathId};
use crate::keys::{self, NewKeyRequest, NewTeamKey, RotateKeyRequest, RotatedTeamKey, TeamKey};
use crate::loc;
use crate::validation::Checks;

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_keys, create_key))
        .routes(routes!(get_key))
        .routes(routes!(revoke_key))
        .routes(routes!(rotate_key))
}

/// The team's API keys, oldest first, revoked and expired ones too; never a secret.
#[utoipa::path(get, path = "/v2/team/keys", tag = "team",
    responses((status = 200, description = "Every key of the team", body = keys::TeamKeys)),
    security(("api_key" = [])))]
async fn list_keys(
    team: AuthTeam,
    State(state): State<AppState>,
) -> Result<Json<keys::TeamKeys>, ApiError> {
    Ok(Json(keys::list(&state.meta, team.0.id).await?))
}

/// Creates an API key for the team; the answer holds its secret, shown only here.
#[utoipa::path(post, path = "/v2/team/keys", tag = "team",
    request_body(content = NewKeyRequest),
    responses((status = 200, description = "The key with its secret", body = NewTeamKey),
              (status = 422, description = "Missing, empty or overlong name", body = super::models::ValidationError)),
    security(("api_key" = [])))]
async fn create_key(
    team: AuthTeam,
    State(state): State<AppState>,
    Decoded(body, checks): Decoded<NewKeyRequest>,
) -> Result<Json<NewTeamKey>, ApiError> {
    Ok(Json(
        keys::create(&state.meta, team.0.id, body, checks).await?,
    ))
}

/// One API key of the team (without its secret).
#[utoipa::path(get, path = "/v2/team/keys/{key_id}", tag = "team",
    params(("key_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The key", body = TeamKey),
              (status = 404, description = "No such key", body = super::models::ErrorDetail)),
    security(("api_key" = [])))]
async fn get_key(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<TeamKey>, ApiError> {
    Ok(Json(keys::get(&state.meta, team.0.id, id).await?))
}

/// Revokes an API key of the team (the calling key too): from the next request on, on every
/// server, it answers 401. Revoking a revoked key answers it unchanged.
#[utoipa::path(post, path = "/v2/team/keys/{key_id}/revoke", tag = "team",
    params(("key_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The key with its revoked_at", body = TeamKey),
              (status = 404, description = "No such key", body = super::models::ErrorDetail)),
    security(("api_key" = [])))]
async fn revoke_key(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<TeamKey>, ApiError> {
    Ok(Json(keys::revoke(&state.meta, team.0.id, id).await?))
}

/// Replaces an API key with a new one of the same name; the old key keeps authenticating for
/// `overlap_seconds` (default 24 hours; the body may be left out or `null`), then answers 401.
#[utoipa::path(post, path = "/v2/team/keys/{key_id}/rotate", tag = "team",
    params(("key_id" = uuid::Uuid, Path)),
    request_body(content = Option<RotateKeyRequest>, description = "Optional: an empty body (or `null`) takes the default overlap"),
    responses((status = 200, description = "The new key with its secret, and the old one as `previous` with its expires_at", body = RotatedTeamKey),
              (status = 400, description = "The key is revoked, expired or already rotated", body = super::models::ErrorDetail),
              (status = 404, description = "No such key", body = super::models::ErrorDetail),
              (status = 422, description = "overlap_seconds outside 0 to 2592000", body = super::models::ValidationError)),
    security(("api_key" = [])))]
async fn rotate_key(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    body: Option<Decoded<RotateKeyRequest>>,
) -> Result<Json<RotatedTeamKey>, ApiError> {
    let (body, checks) = match body {
        Some(Decoded(body, checks)) => (body, checks),
        None => (RotateKeyRequest::default(), Checks::new(loc!["body"])),
    };
    Ok(Json(
        keys::rotate(&state.meta, team.0.id, id, body, checks).await?,
    ))
}
