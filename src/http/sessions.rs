//! Per-session and per-source views of a user's data (issue 42): the sleep cycle and
//! electrocardiogram summaries (`GET /v2/summary/{sleep_cycle|electrocardiogram}/{user_id}`),
//! the session streams
//! (`GET /v2/timeseries/sleep/{sleep_id}/stream`, `.../workouts/{workout_id}/stream`) and the
//! user's devices (`GET /v2/user/{user_id}/device`, `.../device/{device_id}`). Each decodes,
//! calls `data::sessions` or `data::devices` within the getters' time limit, and encodes; the
//! decisions are documented there and in `render::sessions`.

use axum::Json;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::data::{deadline, provider_filter};
use super::error::ApiError;
use super::extract::{ApiPath, AuthTeam, QueryParams, TeamUser, parse_uuid};
use super::models;
use super::users::team_user;
use crate::data::{self, devices::Device};
use crate::ingest;
use crate::loc;
use crate::render::{ecg::Electrocardiograms, sessions::SleepCycles, streams};
use crate::store::metadata::User;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(sleep_cycles))
        .routes(routes!(electrocardiograms))
        .routes(routes!(sleep_stream))
        .routes(routes!(workout_stream))
        .routes(routes!(devices))
        .routes(routes!(device))
}

/// The user's sleep cycles (one per sleep session with a hypnogram: its stage changes) in a
/// date range, by session end.
#[utoipa::path(get, path = "/v2/summary/sleep_cycle/{user_id}", tag = "data",
    params(("user_id" = uuid::Uuid, Path),
           ("start_date" = String, Query, description = "date (00:00:00) or date-time, UTC years 0000 to 9999"),
           ("end_date" = Option<String>, Query, description = "date (23:59:59) or date-time, UTC years 0000 to 9999"),
           ("provider" = Option<String>, Query, description = "a catalogue provider slug")),
    responses((status = 200, description = "The sleep cycles, oldest first", body = SleepCycles),
              (status = 404, description = "User not found", body = models::ErrorDetail),
              (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn sleep_cycles(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    query: QueryParams,
) -> Result<Json<SleepCycles>, ApiError> {
    data::within(deadline(&state), async {
        let window = ingest::parse_date_range(query.get("start_date"), query.get("end_date"))?;
        let provider = provider_filter(&query)?;
        let sleep_cycle =
            data::sessions::sleep_cycles(&state.health, &user, window, provider).await?;
        Ok(Json(SleepCycles { sleep_cycle }))
    })
    .await
}

/// The user's electrocardiogram recordings (derived from its `electrocardiogram_voltage`
/// samples: one per run of a source's samples) starting in a date range.
#[utoipa::path(get, path = "/v2/summary/electrocardiogram/{user_id}", tag = "data",
    params(("user_id" = uuid::Uuid, Path),
           ("start_date" = String, Query, description = "date (00:00:00) or date-time, UTC years 0000 to 9999"),
           ("end_date" = Option<String>, Query, description = "date (23:59:59) or date-time, UTC years 0000 to 9999"),
           ("provider" = Option<String>, Query, description = "a catalogue provider slug")),
    responses((status = 200, description = "The recordings, oldest first", body = Electrocardiograms),
              (status = 404, description = "User not found", body = models::ErrorDetail),
              (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn electrocardiograms(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    query: QueryParams,
) -> Result<Json<Electrocardiograms>, ApiError> {
    data::within(deadline(&state), async {
        let window = ingest::parse_date_range(query.get("start_date"), query.get("end_date"))?;
        let provider = provider_filter(&query)?;
        let electrocardiogram =
            data::sessions::electrocardiograms(&state.health, &user, window, provider).await?;
        Ok(Json(Electrocardiograms { electrocardiogram }))
    })
    .await
}

/// The user a stream search is narrowed to (`user_id`), when given.
async fn narrowed(
    state: &AppState,
    team: &AuthTeam,
    query: &QueryParams,
) -> Result<Option<User>, ApiError> {
    match query.get("user_id") {
        None => Ok(None),
        Some(id) => {
            let id = parse_uuid(id, loc!["query", "user_id"])?;
            Ok(Some(team_user(state, team, id).await?))
        }
    }
}

/// The samples inside one sleep session's window, of its provider: heart rate, HRV,
/// respiratory rate and its hypnogram. The session is found among the team's users by its id
/// alone (`user_id` narrows the search).
#[utoipa::path(get, path = "/v2/timeseries/sleep/{sleep_id}/stream", tag = "data",
    params(("sleep_id" = String, Path, description = "a sleep session's id (`GET /v2/summary/sleep/{user_id}`)"),
           ("user_id" = Option<uuid::Uuid>, Query, description = "the session's user: narrows the search (an extension of the reference)")),
    responses((status = 200, description = "The session's samples", body = streams::SleepStream),
              (status = 404, description = "No such session (or another team's)", body = models::ErrorDetail),
              (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn sleep_stream(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    query: QueryParams,
) -> Result<Json<streams::SleepStream>, ApiError> {
    data::within(deadline(&state), async {
        let only = narrowed(&state, &team, &query).await?;
        data::sessions::sleep_stream(&state.meta, &state.health, team.0.id, &id, only)
            .await?
            .map(Json)
            .ok_or(ApiError::NotFound("Sleep"))
    })
    .await
}

/// The samples inside one workout's window, of its provider, as column arrays: `time` (Unix
/// seconds), `heartrate`, `distance` (metres since the start). The workout is found among the
/// team's users by its id alone (`user_id` narrows the search).
#[utoipa::path(get, path = "/v2/timeseries/workouts/{workout_id}/stream", tag = "data",
    params(("workout_id" = String, Path, description = "a workout's id (`GET /v2/summary/workouts/{user_id}`)"),
           ("user_id" = Option<uuid::Uuid>, Query, description = "the workout's user: narrows the search (an extension of the reference)")),
    responses((status = 200, description = "The workout's samples", body = streams::WorkoutStream),
              (status = 404, description = "No such workout (or another team's)", body = models::ErrorDetail),
              (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn workout_stream(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    query: QueryParams,
) -> Result<Json<streams::WorkoutStream>, ApiError> {
    data::within(deadline(&state), async {
        let only = narrowed(&state, &team, &query).await?;
        data::sessions::workout_stream(&state.meta, &state.health, team.0.id, &id, only)
            .await?
            .map(Json)
            .ok_or(ApiError::NotFound("Workout"))
    })
    .await
}

/// The user's devices: the distinct sources its data names, and its connected providers
/// without data yet.
#[utoipa::path(get, path = "/v2/user/{user_id}/device", tag = "users",
    params(("user_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The devices", body = Vec<Device>),
              (status = 404, description = "User not found", body = models::ErrorDetail),
              (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn devices(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
) -> Result<Json<Vec<Device>>, ApiError> {
    let found = data::devices::devices(&state.meta, &state.health, &user);
    Ok(Json(data::within(deadline(&state), found).await?))
}

/// One of the user's devices by its id.
#[utoipa::path(get, path = "/v2/user/{user_id}/device/{device_id}", tag = "users",
    params(("user_id" = uuid::Uuid, Path), ("device_id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The device", body = Device),
              (status = 404, description = "User or device not found", body = models::ErrorDetail),
              (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn device(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath((user_id, device_id)): ApiPath<(String, String)>,
) -> Result<Json<Device>, ApiError> {
    let user_id = parse_uuid(&user_id, loc!["path", "user_id"])?;
    let device_id = parse_uuid(&device_id, loc!["path", "device_id"])?;
    data::within(deadline(&state), async {
        let user = team_user(&state, &team, user_id).await?;
        data::devices::device_by_id(&state.meta, &state.health, &user, device_id)
            .await?
            .map(Json)
            .ok_or(ApiError::NotFound("Device"))
    })
    .await
}
