//! The data plane's routes: the push API (`POST /v2/user/{user_id}/data`), the summary getters
//! (`/v2/summary/...`) and, from `timeseries.rs`, the timeseries getters (`/v2/timeseries/...`).
//!
//! Every getter runs within the aggregate queries' time limit (`--query-timeout-secs`) and
//! answers 504 past it, its work cancelled (`data::within`); a client that goes away cancels
//! it too. Its dates are years 0000 to 9999 (`ingest::parse_date_range`).

use axum::Json;
use axum::extract::State;
use chrono::Utc;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{PushBody, PushUser, QueryParams, TeamUser};
use super::models;
use crate::data;
use crate::ingest::{self, ColumnarTarget};
use crate::loc;
use crate::providers;
use crate::render;
use crate::schema::{Dataset, Table};
use crate::validation::Violation;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(push_data))
        .routes(routes!(sleep_summaries))
        .routes(routes!(activity_summaries))
        .routes(routes!(workout_summaries))
        .routes(routes!(body_summaries))
        .routes(routes!(meal_summaries))
        .routes(routes!(menstrual_cycle_summaries))
        .routes(routes!(profile))
        .merge(super::timeseries::routes())
}

/// Push normalised data for a user; answers once it is durable.
#[utoipa::path(post, path = "/v2/user/{user_id}/data", tag = "data",
    params(("user_id" = uuid::Uuid, Path),
           ("resource" = Option<String>, Query, description = "Columnar bodies: the timeseries the rows belong to, or `menstrual_cycle` for rows of that table (required)"),
           ("provider" = Option<String>, Query, description = "Columnar bodies: the provider slug, unless a source_provider column gives it"),
           ("source_type" = Option<String>, Query, description = "Columnar bodies: the source type (default: the provider's)"),
           ("source_app_id" = Option<String>, Query, description = "Columnar bodies: the source app"),
           ("source_device_id" = Option<String>, Query, description = "Columnar bodies: the source device")),
    request_body(description = "A JSON push body, or the rows of one timeseries (its columns as in a Parquet export: timestamp, value, ...) as an Arrow IPC stream or a Parquet file",
        content((models::PushBody = "application/json"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"))),
    responses((status = 200, description = "Stored; rows per part", body = models::Pushed),
              (status = 404, description = "User not found", body = models::ErrorDetail),
              (status = 413, description = "Body over the size limit", body = models::ErrorDetail),
              (status = 422, description = "A record failed validation; nothing was stored", body = models::ValidationError)),
    security(("api_key" = []), ("link_code_token" = [])))]
async fn push_data(
    State(state): State<AppState>,
    PushUser { user, sdk_only }: PushUser,
    query: QueryParams,
    body: PushBody,
) -> Result<Json<models::Pushed>, ApiError> {
    let (kind, body_bytes) = match &body {
        PushBody::Json(b) => ("json", b.len()),
        PushBody::Columnar(crate::ingest::Columnar::ArrowStream, b) => ("arrow", b.len()),
        PushBody::Columnar(crate::ingest::Columnar::Parquet, b) => ("parquet", b.len()),
    };
    let stored = match body {
        PushBody::Json(body) => {
            if sdk_only {
                let provider = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v.get("provider").and_then(Value::as_str).map(str::to_owned));
                sdk_pushable(provider.as_deref())?;
            }
            data::push_json(&state.meta, &state.health, &user, body, Utc::now()).await?
        }
        PushBody::Columnar(format, body) => {
            let param = |name: &str| query.get(name).map(str::to_owned);
            let target = ColumnarTarget {
                resource: param("resource"),
                provider: param("provider"),
                source_type: param("source_type"),
                app_id: param("source_app_id"),
                device_id: param("source_device_id"),
                user_id: user.id,
            };
            let now = Utc::now();
            let parsed = data::parse_columnar(body, format, target, now).await?;
            if sdk_only {
                sdk_pushable(Some(&parsed.provider))?;
            }
            data::store_push(&state.meta, &state.health, &user, parsed, now).await?
        }
    };
    let (samples, records) = stored_rows(&stored);
    state
        .metrics
        .push(kind, samples, records, body_bytes as u64);
    Ok(Json(models::Pushed {
        user_id: user.id,
        stored,
    }))
}

/// The timeseries samples and the summary records of a push's `stored` counts
/// (`{"sleep": 2, "timeseries": {"heartrate": 100}}`).
fn stored_rows(stored: &Value) -> (u64, u64) {
    let Some(parts) = stored.as_object() else {
        return (0, 0);
    };
    let sum = |v: &Value| {
        v.as_object()
            .map_or(0, |m| m.values().filter_map(Value::as_u64).sum())
    };
    let samples = parts.get("timeseries").map_or(0, sum);
    let records = parts
        .iter()
        .filter(|(k, _)| k.as_str() != "timeseries")
        .filter_map(|(_, v)| v.as_u64())
        .sum();
    (samples, records)
}

/// A link code's push credential pushes only on-device providers' data.
fn sdk_pushable(provider: Option<&str>) -> Result<(), ApiError> {
    match provider {
        Some(p) if !crate::link::codes::pushable(p) => Err(ApiError::BadRequest(format!(
            "a link code credential pushes only on-device providers' data (apple_health_kit, \
             health_connect, samsung_health, the *_ble providers, manual), not {p:?}"
        ))),
        _ => Ok(()),
    }
}

/// The `provider` filter of a getter: a catalogue slug, or none.
pub(super) fn provider_filter(query: &QueryParams) -> Result<Option<&str>, ApiError> {
    match query.get("provider") {
        Some(slug) if providers::provider(slug).is_none() => Err(ApiError::invalid(
            Violation::value(
                loc!["query", "provider"],
                format!("unknown provider {slug:?}"),
            )
            .with_input(Value::from(slug)),
        )),
        other => Ok(other),
    }
}

/// The deadline of a getter starting now: the aggregate queries' time limit.
pub(super) fn deadline(state: &AppState) -> data::Deadline {
    data::Deadline::after(state.engine.limits().timeout)
}

/// Summaries of one table in a date range, under the getter's key (`sleep`, `meals`, ...).
async fn summaries(
    state: &AppState,
    user: &crate::store::metadata::User,
    table: Table,
    query: &QueryParams,
) -> Result<Json<Value>, ApiError> {
    let window = ingest::parse_date_range(query.get("start_date"), query.get("end_date"))?;
    let provider = provider_filter(query)?;
    let batches = data::read(
        &state.health,
        user,
        Dataset::Table(table),
        Some(window),
        provider,
    )
    .await?;
    let rendered = render::render_summaries(table, &batches, user.id);
    let mut answer = serde_json::Map::new();
    answer.insert(ingest::push_key(table).to_owned(), Value::from(rendered));
    Ok(Json(Value::Object(answer)))
}

/// One summary getter per table: the reference SDK calls each by its own path.
macro_rules! summary_getter {
    ($fn:ident, $path:literal, $table:expr, $body:ty, $what:literal) => {
        date_range_getter!(
            $fn,
            $path,
            concat!("The user's ", $what, " summaries in a date range."),
            "The summaries, oldest first",
            $body,
            summaries($table)
        );
    };
}

summary_getter!(
    sleep_summaries,
    "/v2/summary/sleep/{user_id}",
    Table::Sleep,
    models::SleepSummaries,
    "sleep"
);
summary_getter!(
    activity_summaries,
    "/v2/summary/activity/{user_id}",
    Table::Activity,
    models::ActivitySummaries,
    "activity"
);
summary_getter!(
    workout_summaries,
    "/v2/summary/workouts/{user_id}",
    Table::Workout,
    models::WorkoutSummaries,
    "workout"
);
summary_getter!(
    body_summaries,
    "/v2/summary/body/{user_id}",
    Table::Body,
    models::BodySummaries,
    "body"
);
summary_getter!(
    meal_summaries,
    "/v2/summary/meal/{user_id}",
    Table::Meal,
    models::MealSummaries,
    "meal"
);

summary_getter!(
    menstrual_cycle_summaries,
    "/v2/summary/menstrual_cycle/{user_id}",
    Table::MenstrualCycle,
    models::MenstrualCycleSummaries,
    "menstrual cycle"
);

/// The user's latest profile (newest across providers, or of `provider`).
#[utoipa::path(get, path = "/v2/summary/profile/{user_id}", tag = "data",
    params(("user_id" = uuid::Uuid, Path), ("provider" = Option<String>, Query)),
    responses((status = 200, description = "The latest profile", body = models::ProfileSummary),
              (status = 404, description = "User or profile not found", body = models::ErrorDetail),
              (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn profile(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    query: QueryParams,
) -> Result<Json<Value>, ApiError> {
    let provider = provider_filter(&query)?;
    let read = data::read(
        &state.health,
        &user,
        Dataset::Table(Table::Profile),
        None,
        provider,
    );
    let batches = data::within(deadline(&state), read).await?;
    render::render_profile(&batches, user.id)
        .map(Json)
        .ok_or(ApiError::NotFound("Profile"))
}
