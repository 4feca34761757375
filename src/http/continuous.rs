//! Continuous queries (`analytics.md` §4): the team's registrations under
//! `/aggregate/v1/continuous_query` and each user's result table and task history under
//! `/aggregate/v1/user/{user_id}/continuous_query/{query_id_or_slug}/...`. Rules live in
//! [`crate::continuous`]; these handlers decode, call, encode. Another team's query (or user)
//! answers 404 like a missing one.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{ApiPath, AuthTeam, IntParam, JsonBody, QueryParams, TeamUser};
use crate::continuous::{ContinuousError, ContinuousQuery, ValidateAnswer, manage, table};
use crate::engine::JSON_MEDIA_TYPE;

/// The media type of a result table as one Parquet file.
pub const PARQUET_MEDIA_TYPE: &str = "application/vnd.apache.parquet";

/// The page size of the task history.
const LIMIT: IntParam = IntParam::new("limit", 50, 1, 100);

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_query, list_queries))
        .routes(routes!(validate_query))
        .routes(routes!(get_query, patch_query, archive_query))
        .routes(routes!(result_table))
        .routes(routes!(task_history))
}

impl From<ContinuousError> for ApiError {
    fn from(err: ContinuousError) -> Self {
        match err {
            ContinuousError::Invalid(invalid) => ApiError::Invalid(invalid),
            ContinuousError::NotFound => ApiError::NotFound("Continuous query"),
            ContinuousError::NoTable => ApiError::NotFound("Result table"),
            ContinuousError::SlugTaken(slug) => ApiError::Conflict(format!(
                "the team has an active continuous query with slug {slug:?}; archive it or pick another slug"
            )),
            ContinuousError::Query(e) => e.into(),
            ContinuousError::Metadata(e) => e.into(),
            ContinuousError::Store(_) | ContinuousError::Table(_) => ApiError::internal(err),
        }
    }
}

/// The team's continuous queries.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContinuousQueries {
    /// Oldest first, archived ones included.
    pub data: Vec<ContinuousQuery>,
}

/// Registers a continuous query; every existing user's table is evaluated in the background.
#[utoipa::path(post, path = "/aggregate/v1/continuous_query", tag = "aggregate",
    request_body(content = crate::continuous::NewContinuousQuery),
    responses((status = 200, description = "The registered query", body = ContinuousQuery),
              (status = 409, description = "An active query has this slug", body = super::models::ErrorDetail),
              (status = 422, description = "Validation error", body = super::models::ValidationError)),
    security(("api_key" = [])))]
async fn create_query(
    team: AuthTeam,
    State(state): State<AppState>,
    JsonBody(body): JsonBody,
) -> Result<Json<ContinuousQuery>, ApiError> {
    Ok(Json(
        manage::create(&state.meta, &state.engine, team.0.id, &body).await?,
    ))
}

/// The team's continuous queries.
#[utoipa::path(get, path = "/aggregate/v1/continuous_query", tag = "aggregate",
    responses((status = 200, description = "The team's queries", body = ContinuousQueries)),
    security(("api_key" = [])))]
async fn list_queries(
    team: AuthTeam,
    State(state): State<AppState>,
) -> Result<Json<ContinuousQueries>, ApiError> {
    let data = manage::list(&state.meta, team.0.id).await?;
    Ok(Json(ContinuousQueries { data }))
}

/// A dry run of a registration: the result table's schema and the resources it reads, or the
/// 422s a registration would get (slug and title are optional here).
#[utoipa::path(post, path = "/aggregate/v1/continuous_query/validate", tag = "aggregate",
    request_body(content = crate::continuous::NewContinuousQuery),
    responses((status = 200, description = "What the query would produce", body = ValidateAnswer),
              (status = 422, description = "Validation error", body = super::models::ValidationError)),
    security(("api_key" = [])))]
async fn validate_query(
    _team: AuthTeam,
    State(state): State<AppState>,
    JsonBody(body): JsonBody,
) -> Result<Json<ValidateAnswer>, ApiError> {
    Ok(Json(manage::validate(&state.engine, &body).await?))
}

/// One continuous query, by id or slug.
#[utoipa::path(get, path = "/aggregate/v1/continuous_query/{query_id_or_slug}", tag = "aggregate",
    params(("query_id_or_slug" = String, Path)),
    responses((status = 200, description = "The query", body = ContinuousQuery),
              (status = 404, description = "No such query", body = super::models::ErrorDetail)),
    security(("api_key" = [])))]
async fn get_query(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath(key): ApiPath<String>,
) -> Result<Json<ContinuousQuery>, ApiError> {
    Ok(Json(manage::get(&state.meta, team.0.id, &key).await?))
}

/// Changes a query's `title` or `scheduling_preferences` (nothing else can change).
#[utoipa::path(patch, path = "/aggregate/v1/continuous_query/{query_id_or_slug}", tag = "aggregate",
    params(("query_id_or_slug" = String, Path)),
    request_body(content = crate::continuous::PatchContinuousQuery),
    responses((status = 200, description = "The query", body = ContinuousQuery),
              (status = 404, description = "No such query", body = super::models::ErrorDetail),
              (status = 422, description = "Validation error", body = super::models::ValidationError)),
    security(("api_key" = [])))]
async fn patch_query(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath(key): ApiPath<String>,
    JsonBody(body): JsonBody,
) -> Result<Json<ContinuousQuery>, ApiError> {
    Ok(Json(
        manage::patch(&state.meta, team.0.id, &key, &body).await?,
    ))
}

/// Archives a query: it is no longer evaluated; its tables stay readable.
#[utoipa::path(delete, path = "/aggregate/v1/continuous_query/{query_id_or_slug}", tag = "aggregate",
    params(("query_id_or_slug" = String, Path)),
    responses((status = 200, description = "The archived query", body = ContinuousQuery),
              (status = 404, description = "No such query", body = super::models::ErrorDetail)),
    security(("api_key" = [])))]
async fn archive_query(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath(key): ApiPath<String>,
) -> Result<Json<ContinuousQuery>, ApiError> {
    Ok(Json(manage::archive(&state.meta, team.0.id, &key).await?))
}

/// Whether `Accept` asks for Parquet (JSON otherwise; anything else is a 406).
fn wants_parquet(headers: &HeaderMap) -> Result<bool, ApiError> {
    Ok(super::aggregate::accepted(headers, &[PARQUET_MEDIA_TYPE])?.is_some())
}

/// A user's result table, as `{"table": {<column>: [...]}}` or one Parquet file
/// (`Accept: application/vnd.apache.parquet`). 404 before the user's first evaluation.
#[utoipa::path(get, path = "/aggregate/v1/user/{user_id}/continuous_query/{query_id_or_slug}/result_table", tag = "aggregate",
    params(("user_id" = uuid::Uuid, Path), ("query_id_or_slug" = String, Path),
           ("accept" = Option<String>, Header, description = "*/*, application/json or application/vnd.apache.parquet")),
    responses((status = 200, description = "The table: JSON columns, or one Parquet file",
               content((super::models::AggregateResult = "application/json"),
                       (Vec<u8> = "application/vnd.apache.parquet"))),
              (status = 404, description = "No such user, query or table yet", body = super::models::ErrorDetail),
              (status = 406, description = "Unsupported Accept", body = super::models::ErrorDetail)),
    security(("api_key" = [])))]
async fn result_table(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    ApiPath(path): ApiPath<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let key = path.1;
    let parquet = wants_parquet(&headers)?;
    let batch =
        manage::result_table(&state.meta, &state.health, user.team_id, user.id, &key).await?;
    let (bytes, media) = if parquet {
        (table::to_parquet(&batch)?, PARQUET_MEDIA_TYPE)
    } else {
        let table = table::to_json(&batch, state.engine.limits())?;
        (
            serde_json::to_vec(&serde_json::json!({ "table": table }))
                .map_err(ApiError::internal)?,
            JSON_MEDIA_TYPE,
        )
    };
    let mut response = Response::new(Body::from(bytes));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(media));
    Ok(response)
}

/// One evaluation in a user's task history.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskEntry {
    /// The query.
    pub query_id: uuid::Uuid,
    /// The user.
    pub user_id: uuid::Uuid,
    /// `scheduled`, `started`, `completed`, `error` or `skipped`.
    pub status: String,
    /// When it was asked for.
    #[schema(format = DateTime)]
    pub scheduled_at: String,
    /// When it started.
    #[schema(format = DateTime)]
    pub started_at: Option<String>,
    /// When it ended.
    #[schema(format = DateTime)]
    pub ended_at: Option<String>,
    /// Why it failed, or why it was skipped.
    pub error_details: Option<String>,
}

/// A page of the task history.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskHistory {
    /// Newest first.
    pub data: Vec<TaskEntry>,
    /// The next page's cursor; null on the last page.
    pub next_cursor: Option<String>,
}

/// A user's evaluations of a query, newest first, paged by cursor.
#[utoipa::path(get, path = "/aggregate/v1/user/{user_id}/continuous_query/{query_id_or_slug}/task_history", tag = "aggregate",
    params(("user_id" = uuid::Uuid, Path), ("query_id_or_slug" = String, Path),
           ("next_cursor" = Option<String>, Query), ("limit" = Option<i64>, Query, description = "1 to 100, default 50")),
    responses((status = 200, description = "A page of tasks", body = TaskHistory),
              (status = 404, description = "No such user or query", body = super::models::ErrorDetail),
              (status = 422, description = "Bad cursor or limit", body = super::models::ValidationError)),
    security(("api_key" = [])))]
async fn task_history(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    ApiPath(path): ApiPath<(String, String)>,
    params: QueryParams,
) -> Result<Json<TaskHistory>, ApiError> {
    let key = path.1;
    let limit = params.read(&LIMIT)?;
    let cursor = params.get("next_cursor");
    let (tasks, next_cursor) =
        manage::task_history(&state.meta, user.team_id, user.id, &key, (cursor, limit)).await?;
    let render = crate::users::render_time;
    let data = tasks
        .into_iter()
        .map(|t| TaskEntry {
            query_id: t.query_id,
            user_id: t.user_id,
            status: t.status,
            scheduled_at: render(t.scheduled_at),
            started_at: t.started_at.map(render),
            ended_at: t.ended_at.map(render),
            error_details: t.error_details,
        })
        .collect();
    Ok(Json(TaskHistory { data, next_cursor }))
}
