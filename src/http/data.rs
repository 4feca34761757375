//! The data plane's routes: the push API (`POST /v2/user/{user_id}/data`), the summary getters
//! (`/v2/summary/...`) and the timeseries getters (`/v2/timeseries/...`).

use axum::Json;
use axum::extract::{Path, State};
use chrono::Utc;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{AuthTeam, JsonBody, PathId, QueryParams, parse_uuid};
use super::users::team_user;
use crate::data;
use crate::ingest;
use crate::loc;
use crate::providers;
use crate::schema::{Dataset, Resource, Table, resource};
use crate::validation::Violation;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(push_data))
        .routes(routes!(summary))
        .routes(routes!(profile))
        .routes(routes!(timeseries))
        .routes(routes!(timeseries_grouped))
}

/// Push normalised data for a user; answers once it is durable.
#[utoipa::path(post, path = "/v2/user/{user_id}/data", tag = "data",
    params(("user_id" = uuid::Uuid, Path)),
    request_body(content = Object, description = "{provider, source, sleep, activity, workouts, body, meals, profile, timeseries}"),
    responses((status = 200, description = "{\"stored\": {counts per table}}", body = Object),
              (status = 422, description = "A record failed validation; nothing was stored")),
    security(("api_key" = [])))]
async fn push_data(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let user = team_user(&state, &team, id).await?;
    let counts = data::push(&state.meta, &state.health, &user, &body, Utc::now()).await?;
    Ok(Json(json!({ "user_id": user.id, "stored": counts })))
}

/// The summary kinds of `/v2/summary/{kind}`, with their table and response key.
const KINDS: [(&str, Table, &str); 5] = [
    ("sleep", Table::Sleep, "sleep"),
    ("activity", Table::Activity, "activity"),
    ("workouts", Table::Workout, "workouts"),
    ("body", Table::Body, "body"),
    ("meal", Table::Meal, "meals"),
];

fn provider_filter(query: &QueryParams) -> Result<Option<&str>, ApiError> {
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

/// Summaries of one kind in a date range.
#[utoipa::path(get, path = "/v2/summary/{kind}/{user_id}", tag = "data",
    params(("kind" = String, Path, description = "sleep, activity, workouts, body or meal"),
           ("user_id" = uuid::Uuid, Path),
           ("start_date" = String, Query, description = "date (00:00:00) or date-time"),
           ("end_date" = Option<String>, Query, description = "date (23:59:59) or date-time"),
           ("provider" = Option<String>, Query)),
    responses((status = 200, description = "{\"<kind>\": [...]}", body = Object)),
    security(("api_key" = [])))]
async fn summary(
    team: AuthTeam,
    State(state): State<AppState>,
    Path((kind, user_id)): Path<(String, String)>,
    query: QueryParams,
) -> Result<Json<Value>, ApiError> {
    let Some((_, table, key)) = KINDS.iter().find(|(k, _, _)| *k == kind) else {
        let allowed: Vec<&str> = KINDS.iter().map(|k| k.0).chain(["profile"]).collect();
        return Err(ApiError::invalid(
            Violation::value(
                loc!["path", "kind"],
                format!(
                    "unknown summary {kind:?}; expected one of: {}",
                    allowed.join(", ")
                ),
            )
            .with_input(Value::from(kind)),
        ));
    };
    let id = parse_uuid(&user_id, loc!["path", "user_id"])?;
    let user = team_user(&state, &team, id).await?;
    let window = ingest::parse_date_range(query.get("start_date"), query.get("end_date"))?;
    let provider = provider_filter(&query)?;
    let batches = data::read(
        &state.health,
        &user,
        Dataset::Table(*table),
        Some(window),
        provider,
    )
    .await?;
    let rendered = ingest::render_summaries(*table, &batches, user.id);
    Ok(Json(json!({ *key: rendered })))
}

/// The user's latest profile (newest across providers, or of `provider`).
#[utoipa::path(get, path = "/v2/summary/profile/{user_id}", tag = "data",
    params(("user_id" = uuid::Uuid, Path), ("provider" = Option<String>, Query)),
    responses((status = 200, description = "A profile object", body = Object),
              (status = 404, description = "No profile")),
    security(("api_key" = [])))]
async fn profile(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    query: QueryParams,
) -> Result<Json<Value>, ApiError> {
    let user = team_user(&state, &team, id).await?;
    let provider = provider_filter(&query)?;
    let batches = data::read(
        &state.health,
        &user,
        Dataset::Table(Table::Profile),
        None,
        provider,
    )
    .await?;
    ingest::render_profile(&batches, user.id)
        .map(Json)
        .ok_or(ApiError::NotFound("Profile"))
}

fn timeseries_resource(name: &str) -> Result<Resource, ApiError> {
    resource(name).ok_or_else(|| {
        ApiError::invalid(
            Violation::value(
                loc!["path", "resource"],
                format!(
                    "unknown timeseries resource {name:?}; expected one of: {}",
                    crate::schema::RESOURCES
                        .iter()
                        .map(|r| r.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_input(Value::from(name)),
        )
    })
}

async fn read_samples(
    state: &AppState,
    team: &AuthTeam,
    user_id: &str,
    name: &str,
    query: &QueryParams,
) -> Result<(Resource, Vec<datafusion::arrow::array::RecordBatch>), ApiError> {
    let id = parse_uuid(user_id, loc!["path", "user_id"])?;
    let user = team_user(state, team, id).await?;
    let resource = timeseries_resource(name)?;
    let window = ingest::parse_date_range(query.get("start_date"), query.get("end_date"))?;
    let provider = provider_filter(query)?;
    let batches = data::read(
        &state.health,
        &user,
        Dataset::Timeseries(resource),
        Some(window),
        provider,
    )
    .await?;
    Ok((resource, batches))
}

/// Samples of one timeseries resource in a date range.
#[utoipa::path(get, path = "/v2/timeseries/{user_id}/{resource}", tag = "data",
    params(("user_id" = uuid::Uuid, Path), ("resource" = String, Path),
           ("start_date" = String, Query), ("end_date" = Option<String>, Query),
           ("provider" = Option<String>, Query)),
    responses((status = 200, description = "Array of samples", body = Object)),
    security(("api_key" = [])))]
async fn timeseries(
    team: AuthTeam,
    State(state): State<AppState>,
    Path((user_id, name)): Path<(String, String)>,
    query: QueryParams,
) -> Result<Json<Value>, ApiError> {
    let (resource, batches) = read_samples(&state, &team, &user_id, &name, &query).await?;
    Ok(Json(Value::from(ingest::render_samples(
        resource, &batches,
    ))))
}

/// Samples grouped by provider and source, one page at a time (`cursor`, `limit` 1–10000).
#[utoipa::path(get, path = "/v2/timeseries/{user_id}/{resource}/grouped", tag = "data",
    params(("user_id" = uuid::Uuid, Path), ("resource" = String, Path),
           ("start_date" = String, Query), ("end_date" = Option<String>, Query),
           ("provider" = Option<String>, Query), ("cursor" = Option<String>, Query),
           ("limit" = Option<i64>, Query, description = "samples per page, default 1000")),
    responses((status = 200, description = "{groups, next_cursor}", body = Object)),
    security(("api_key" = [])))]
async fn timeseries_grouped(
    team: AuthTeam,
    State(state): State<AppState>,
    Path((user_id, name)): Path<(String, String)>,
    query: QueryParams,
) -> Result<Json<Value>, ApiError> {
    let limit = query.int("limit", 1000, 1, 10_000)?;
    let (resource, batches) = read_samples(&state, &team, &user_id, &name, &query).await?;
    let limit = usize::try_from(limit).unwrap_or(1000);
    Ok(Json(ingest::render_grouped(
        resource,
        &batches,
        query.get("cursor"),
        limit,
    )?))
}
