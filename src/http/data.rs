//! The data plane's routes: the push API (`POST /v2/user/{user_id}/data`), the summary getters
//! (`/v2/summary/...`) and the timeseries getters (`/v2/timeseries/...`).

use axum::Json;
use axum::extract::State;
use axum::http::HeaderValue;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{ApiPath, AuthTeam, JsonBytes, QueryParams, TeamUser, parse_uuid};
use super::stream::json_stream;
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
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    JsonBytes(body): JsonBytes,
) -> Result<Json<Value>, ApiError> {
    let counts = data::push_json(&state.meta, &state.health, &user, body, Utc::now()).await?;
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
    ApiPath((kind, user_id)): ApiPath<(String, String)>,
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
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    query: QueryParams,
) -> Result<Json<Value>, ApiError> {
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

/// The page start a client sent: `cursor`, or its alias `next_cursor` (the name the answers
/// use); both at once must agree.
fn cursor(query: &QueryParams) -> Result<Option<ingest::Cursor>, ApiError> {
    let (param, text) = match (query.get("cursor"), query.get("next_cursor")) {
        (Some(a), Some(b)) if a != b => {
            return Err(ApiError::invalid(
                Violation::value(
                    loc!["query", "next_cursor"],
                    "cursor and next_cursor differ; send one of them",
                )
                .with_input(Value::from(b)),
            ));
        }
        (Some(a), _) => ("cursor", a),
        (None, Some(b)) => ("next_cursor", b),
        (None, None) => return Ok(None),
    };
    ingest::Cursor::parse(text, param)
        .map(Some)
        .map_err(ApiError::invalid)
}

/// One page of samples: validates the path and query, then reads the store a slice at a time
/// until the page is full (see `data::sample_page`).
async fn read_page(
    state: &AppState,
    team: &AuthTeam,
    (user_id, name): (&str, &str),
    query: &QueryParams,
    default_limit: usize,
    max_limit: usize,
) -> Result<ingest::SamplePage, ApiError> {
    let id = parse_uuid(user_id, loc!["path", "user_id"])?;
    let user = team_user(state, team, id).await?;
    let resource = timeseries_resource(name)?;
    let window = ingest::parse_date_range(query.get("start_date"), query.get("end_date"))?;
    let provider = provider_filter(query)?;
    let from = cursor(query)?;
    let caps = state.config.getter_limits;
    let max_limit = max_limit.min(caps.rows).max(1);
    let limit = query.int(
        "limit",
        i64::try_from(default_limit.min(max_limit)).unwrap_or(i64::MAX),
        1,
        i64::try_from(max_limit).unwrap_or(i64::MAX),
    )?;
    let limits = ingest::PageLimits {
        rows: usize::try_from(limit).unwrap_or(max_limit),
        bytes: caps.bytes,
    };
    let page = data::sample_page(
        &state.health,
        &user,
        resource,
        window,
        provider,
        from,
        limits,
    )
    .await?;
    Ok(page)
}

/// The header that carries the plain getter's next-page cursor.
const NEXT_CURSOR_HEADER: &str = "x-next-cursor";

/// Samples of one timeseries resource in a date range, in pages: at most `limit` samples
/// (default and maximum `--getter-max-rows`) and `--getter-max-bytes` of JSON per answer. When
/// more remain, the `x-next-cursor` header carries the cursor to pass as `cursor` (or
/// `next_cursor`) for the next page; it is absent on the last page.
#[utoipa::path(get, path = "/v2/timeseries/{user_id}/{resource}", tag = "data",
    params(("user_id" = uuid::Uuid, Path), ("resource" = String, Path),
           ("start_date" = String, Query), ("end_date" = Option<String>, Query),
           ("provider" = Option<String>, Query),
           ("cursor" = Option<String>, Query, description = "the previous answer's x-next-cursor"),
           ("next_cursor" = Option<String>, Query, description = "alias of cursor"),
           ("limit" = Option<i64>, Query, description = "samples per page, default and maximum --getter-max-rows")),
    responses((status = 200, description = "Array of samples", body = Object,
               headers(("x-next-cursor" = String, description = "present when more samples remain: pass it as cursor for the next page")))),
    security(("api_key" = [])))]
async fn timeseries(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath((user_id, name)): ApiPath<(String, String)>,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let page = read_page(
        &state,
        &team,
        (&user_id, &name),
        &query,
        usize::MAX,
        usize::MAX,
    )
    .await?;
    let next = page.next_cursor();
    let mut response = json_stream(move |mut w| page.write_plain(&mut w));
    if let Some(value) = next.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(NEXT_CURSOR_HEADER, value);
    }
    Ok(response)
}

/// Samples grouped by provider and source, one page at a time (`cursor` or `next_cursor`,
/// `limit` 1–10000 and at most `--getter-max-rows`, at most `--getter-max-bytes` of samples).
#[utoipa::path(get, path = "/v2/timeseries/{user_id}/{resource}/grouped", tag = "data",
    params(("user_id" = uuid::Uuid, Path), ("resource" = String, Path),
           ("start_date" = String, Query), ("end_date" = Option<String>, Query),
           ("provider" = Option<String>, Query), ("cursor" = Option<String>, Query),
           ("next_cursor" = Option<String>, Query, description = "alias of cursor"),
           ("limit" = Option<i64>, Query, description = "samples per page, default 1000")),
    responses((status = 200, description = "{groups, next_cursor}", body = Object)),
    security(("api_key" = [])))]
async fn timeseries_grouped(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath((user_id, name)): ApiPath<(String, String)>,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let page = read_page(&state, &team, (&user_id, &name), &query, 1000, 10_000).await?;
    Ok(json_stream(move |mut w| page.write_grouped(&mut w)))
}
