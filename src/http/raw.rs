//! `GET /v2/summary/{sleep|activity|workouts|body|profile|devices}/{user_id}/raw`: the payloads
//! behind a user's summaries as received (a provider's documents for pulled data, the records
//! as pushed for pushed data), in the reference's raw shapes. What each member holds and where
//! the payloads are kept: `crate::data::raw`.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::data::{deadline, provider_filter};
use super::error::ApiError;
use super::extract::{QueryParams, TeamUser};
use super::{models, models_raw};
use crate::data;
use crate::ingest;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(sleep_raw))
        .routes(routes!(activity_raw))
        .routes(routes!(workouts_raw))
        .routes(routes!(body_raw))
        .routes(routes!(profile_raw))
        .routes(routes!(devices_raw))
}

/// The payloads of one part in a date range, under the part's key.
async fn raw_summaries(
    state: &AppState,
    user: &crate::store::metadata::User,
    part: &'static str,
    query: &QueryParams,
) -> Result<Json<Value>, ApiError> {
    let window = ingest::parse_date_range(query.get("start_date"), query.get("end_date"))?;
    let provider = provider_filter(query)?;
    let found = data::raw::summaries(&state.health, user, part, window, provider).await?;
    let mut answer = serde_json::Map::new();
    answer.insert(part.to_owned(), Value::from(found));
    Ok(Json(Value::Object(answer)))
}

/// One raw getter per part: the reference SDK calls each by its own path.
macro_rules! raw_getter {
    ($fn:ident, $path:literal, $part:literal, $body:ty) => {
        date_range_getter!(
            $fn,
            $path,
            concat!("The user's ", $part, " payloads as received (the provider's documents of pulled data, the records as pushed) in a date range."),
            "The payloads, oldest first; a record received more than once answers its newest",
            $body,
            raw_summaries($part)
        );
    };
}

raw_getter!(
    sleep_raw,
    "/v2/summary/sleep/{user_id}/raw",
    "sleep",
    models_raw::RawSleepResponse
);
raw_getter!(
    activity_raw,
    "/v2/summary/activity/{user_id}/raw",
    "activity",
    models_raw::RawActivityResponse
);
raw_getter!(
    workouts_raw,
    "/v2/summary/workouts/{user_id}/raw",
    "workouts",
    models_raw::RawWorkoutResponse
);
raw_getter!(
    body_raw,
    "/v2/summary/body/{user_id}/raw",
    "body",
    models_raw::RawBodyResponse
);

/// The user's newest profile payload as received (of `provider` when given).
#[utoipa::path(get, path = "/v2/summary/profile/{user_id}/raw", tag = "data",
    params(("user_id" = uuid::Uuid, Path),
           ("provider" = Option<String>, Query, description = "a catalogue provider slug")),
    responses((status = 200, description = "The newest profile payload", body = models_raw::RawProfile),
              (status = 404, description = "User or profile not found", body = models::ErrorDetail),
              (status = 422, description = "Unknown provider", body = models::ValidationError),
              (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn profile_raw(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    query: QueryParams,
) -> Result<Json<Value>, ApiError> {
    let provider = provider_filter(&query)?;
    let read = data::raw::profile(&state.health, &user, provider);
    let found = data::within(deadline(&state), read).await?;
    found
        .map(|profile| Json(json!({ "profile": profile })))
        .ok_or(ApiError::NotFound("Profile"))
}

/// The user's devices, each with its source as pushed or pulled (of `provider` when given).
#[utoipa::path(get, path = "/v2/summary/devices/{user_id}/raw", tag = "data",
    params(("user_id" = uuid::Uuid, Path),
           ("provider" = Option<String>, Query, description = "a catalogue provider slug")),
    responses((status = 200, description = "The devices", body = models_raw::RawDevicesResponse),
              (status = 404, description = "User not found", body = models::ErrorDetail),
              (status = 422, description = "Unknown provider", body = models::ValidationError),
              (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn devices_raw(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    query: QueryParams,
) -> Result<Json<Value>, ApiError> {
    let provider = provider_filter(&query)?;
    let read = data::raw::devices(&state.meta, &state.health, &user, provider);
    let devices = data::within(deadline(&state), read).await?;
    Ok(Json(json!({ "devices": devices })))
}
