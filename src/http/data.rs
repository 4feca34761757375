//! The data plane's routes: the push API (`POST /v2/user/{user_id}/data`), the summary getters
//! (`/v2/summary/...`) and the timeseries getters (`/v2/timeseries/...`).
//!
//! Every getter runs within the aggregate queries' time limit (`--query-timeout-secs`) and
//! answers 504 past it, its work cancelled (`data::within`); a client that goes away cancels
//! it too. Its dates are years 0000 to 9999 (`ingest::parse_date_range`).

use axum::Json;
use axum::extract::State;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{ApiPath, AuthTeam, PushBody, PushUser, QueryParams, TeamUser, parse_uuid};
use super::models;
use super::stream::json_stream;
use super::users::team_user;
use crate::data;
use crate::ingest::{self, ColumnarTarget};
use crate::loc;
use crate::providers;
use crate::schema::{Dataset, Resource, Table, resource};
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
        .routes(routes!(profile))
        .routes(routes!(timeseries))
        .routes(routes!(timeseries_grouped))
        .routes(routes!(cholesterol_kind))
}

/// Push normalised data for a user; answers once it is durable.
#[utoipa::path(post, path = "/v2/user/{user_id}/data", tag = "data",
    params(("user_id" = uuid::Uuid, Path),
           ("resource" = Option<String>, Query, description = "Columnar bodies: the timeseries the rows belong to (required)"),
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
            };
            let now = Utc::now();
            let parsed = data::parse_columnar(body, format, target, now).await?;
            if sdk_only {
                sdk_pushable(Some(&parsed.provider))?;
            }
            data::store_push(&state.meta, &state.health, &user, parsed, now).await?
        }
    };
    Ok(Json(models::Pushed {
        user_id: user.id,
        stored,
    }))
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

/// The deadline of a getter starting now: the aggregate queries' time limit.
fn deadline(state: &AppState) -> data::Deadline {
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
    let rendered = ingest::render_summaries(table, &batches, user.id);
    let mut answer = serde_json::Map::new();
    answer.insert(ingest::push_key(table).to_owned(), Value::from(rendered));
    Ok(Json(Value::Object(answer)))
}

/// One summary getter per table: the reference SDK calls each by its own path.
macro_rules! summary_getter {
    ($fn:ident, $path:literal, $table:expr, $body:ty, $what:literal) => {
        #[doc = concat!("The user's ", $what, " summaries in a date range.")]
        #[utoipa::path(get, path = $path, tag = "data",
            params(("user_id" = uuid::Uuid, Path),
                   ("start_date" = String, Query, description = "date (00:00:00) or date-time"),
                   ("end_date" = Option<String>, Query, description = "date (23:59:59) or date-time"),
                   ("provider" = Option<String>, Query, description = "a catalogue provider slug")),
            responses((status = 200, description = "The summaries, oldest first", body = $body),
                      (status = 404, description = "User not found", body = models::ErrorDetail),
                      (status = 422, description = "Validation error (a date outside 0000-01-01..9999-12-31 too)", body = models::ValidationError),
                      (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
            security(("api_key" = [])))]
        async fn $fn(
            State(state): State<AppState>,
            TeamUser(user): TeamUser,
            query: QueryParams,
        ) -> Result<Json<Value>, ApiError> {
            data::within(deadline(&state), summaries(&state, &user, $table, &query)).await
        }
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
    ingest::render_profile(&batches, user.id)
        .map(Json)
        .ok_or(ApiError::NotFound("Profile"))
}

/// What a timeseries path names: a stored resource (possibly one `type` of it), or the
/// hypnogram, a view of the sleep table.
#[derive(Debug, Clone, Copy)]
enum Series {
    Stored(Resource, Option<&'static str>),
    Hypnogram,
}

/// The reference's names for stored resources (`data-model.md` §Wire names).
const ALIASES: [(&str, &str); 2] = [("body_weight", "weight"), ("body_fat", "fat")];

/// The cholesterol kinds served as `cholesterol/<kind>`.
const CHOLESTEROL_KINDS: [&str; 4] = ["ldl", "hdl", "total", "triglycerides"];

fn series(name: &str) -> Result<Series, ApiError> {
    if name == "hypnogram" {
        return Ok(Series::Hypnogram);
    }
    let stored = ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, target)| target);
    resource(stored)
        .map(|r| Series::Stored(r, None))
        .ok_or_else(|| {
            let known: Vec<&str> = crate::schema::RESOURCES
                .iter()
                .map(|r| r.name)
                .chain(ALIASES.iter().map(|(alias, _)| *alias))
                .chain(["hypnogram"])
                .collect();
            ApiError::invalid(
                Violation::value(
                    loc!["path", "resource"],
                    format!(
                        "unknown timeseries resource {name:?}; expected one of: {}",
                        known.join(", ")
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

/// A validated getter request: the user, the series, the window and the provider filter.
struct SeriesRequest {
    user: crate::store::metadata::User,
    series: Series,
    window: std::ops::Range<chrono::DateTime<Utc>>,
    provider: Option<String>,
}

async fn series_request(
    state: &AppState,
    team: &AuthTeam,
    user_id: &str,
    series: Result<Series, ApiError>,
    query: &QueryParams,
) -> Result<SeriesRequest, ApiError> {
    let id = parse_uuid(user_id, loc!["path", "user_id"])?;
    let user = team_user(state, team, id).await?;
    let series = series?;
    let window = ingest::parse_date_range(query.get("start_date"), query.get("end_date"))?;
    let provider = provider_filter(query)?.map(str::to_owned);
    Ok(SeriesRequest {
        user,
        series,
        window,
        provider,
    })
}

/// One page of samples of a stored resource: reads the store a slice at a time until the page
/// is full (see `data::sample_page`).
async fn read_page(
    state: &AppState,
    request: &SeriesRequest,
    (resource, kind): (Resource, Option<&str>),
    query: &QueryParams,
    (default_limit, max_limit): (usize, usize),
) -> Result<ingest::SamplePage, ApiError> {
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
    let filter = data::SampleFilter {
        provider: request.provider.as_deref(),
        kind,
    };
    let page = data::sample_page(
        &state.health,
        &request.user,
        resource,
        request.window.clone(),
        filter,
        from,
        limits,
    )
    .await?;
    Ok(page)
}

/// The sleep rows behind the hypnogram view.
async fn sleep_rows(
    state: &AppState,
    request: &SeriesRequest,
) -> Result<Vec<datafusion::arrow::record_batch::RecordBatch>, ApiError> {
    Ok(data::read(
        &state.health,
        &request.user,
        Dataset::Table(Table::Sleep),
        Some(request.window.clone()),
        request.provider.as_deref(),
    )
    .await?)
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
    responses((status = 200, description = "Array of samples", body = Vec<models::Sample>,
               headers(("x-next-cursor" = String, description = "present when more samples remain: pass it as cursor for the next page"))),
              (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn timeseries(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath((user_id, name)): ApiPath<(String, String)>,
    query: QueryParams,
) -> Result<Response, ApiError> {
    data::within(deadline(&state), async {
        let request = series_request(&state, &team, &user_id, series(&name), &query).await?;
        plain_answer(&state, &request, &query).await
    })
    .await
}

async fn plain_answer(
    state: &AppState,
    request: &SeriesRequest,
    query: &QueryParams,
) -> Result<Response, ApiError> {
    let (resource, kind) = match request.series {
        Series::Hypnogram => {
            let rows = sleep_rows(state, request).await?;
            return Ok(Json(ingest::hypnogram_plain(&rows)).into_response());
        }
        Series::Stored(resource, kind) => (resource, kind),
    };
    let page = read_page(
        state,
        request,
        (resource, kind),
        query,
        (usize::MAX, usize::MAX),
    )
    .await?;
    let next = page.next_cursor();
    let mut response = json_stream(move |mut w| page.write_plain(&mut w));
    if let Some(value) = next.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(NEXT_CURSOR_HEADER, value);
    }
    Ok(response)
}

async fn grouped_answer(
    state: &AppState,
    request: &SeriesRequest,
    query: &QueryParams,
) -> Result<Response, ApiError> {
    let (resource, kind) = match request.series {
        Series::Hypnogram => {
            let rows = sleep_rows(state, request).await?;
            return Ok(Json(ingest::hypnogram_grouped(&rows)).into_response());
        }
        Series::Stored(resource, kind) => (resource, kind),
    };
    let page = read_page(state, request, (resource, kind), query, (1000, 10_000)).await?;
    Ok(json_stream(move |mut w| page.write_grouped(&mut w)))
}

/// One kind of cholesterol samples (`ldl`, `hdl`, `total`, `triglycerides`: the samples whose
/// `type` it is), as the plain getter answers them; `cholesterol/grouped` is the grouped
/// getter of all cholesterol samples.
#[utoipa::path(get, path = "/v2/timeseries/{user_id}/cholesterol/{kind}", tag = "data",
    params(("user_id" = uuid::Uuid, Path),
           ("kind" = String, Path, description = "ldl, hdl, total or triglycerides"),
           ("start_date" = String, Query), ("end_date" = Option<String>, Query),
           ("provider" = Option<String>, Query),
           ("cursor" = Option<String>, Query), ("next_cursor" = Option<String>, Query),
           ("limit" = Option<i64>, Query)),
    responses((status = 200, description = "Array of samples", body = Vec<models::Sample>,
               headers(("x-next-cursor" = String, description = "present when more samples remain"))),
              (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn cholesterol_kind(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath((user_id, kind)): ApiPath<(String, String)>,
    query: QueryParams,
) -> Result<Response, ApiError> {
    data::within(
        deadline(&state),
        cholesterol_answer(&state, &team, &user_id, &kind, &query),
    )
    .await
}

async fn cholesterol_answer(
    state: &AppState,
    team: &AuthTeam,
    user_id: &str,
    kind: &str,
    query: &QueryParams,
) -> Result<Response, ApiError> {
    let cholesterol = series("cholesterol");
    if kind == "grouped" {
        let request = series_request(state, team, user_id, cholesterol, query).await?;
        return grouped_answer(state, &request, query).await;
    }
    let chosen = match CHOLESTEROL_KINDS.iter().find(|k| **k == kind) {
        Some(k) => cholesterol.map(|s| match s {
            Series::Stored(r, _) => Series::Stored(r, Some(*k)),
            other => other,
        }),
        None => Err(ApiError::invalid(
            Violation::value(
                loc!["path", "kind"],
                format!(
                    "unknown cholesterol kind {kind:?}; expected one of: {}",
                    CHOLESTEROL_KINDS.join(", ")
                ),
            )
            .with_input(Value::from(kind)),
        )),
    };
    let request = series_request(state, team, user_id, chosen, query).await?;
    plain_answer(state, &request, query).await
}

/// Samples grouped by provider and source, one page at a time (`cursor` or `next_cursor`,
/// `limit` 1–10000 and at most `--getter-max-rows`, at most `--getter-max-bytes` of samples).
#[utoipa::path(get, path = "/v2/timeseries/{user_id}/{resource}/grouped", tag = "data",
    params(("user_id" = uuid::Uuid, Path), ("resource" = String, Path),
           ("start_date" = String, Query), ("end_date" = Option<String>, Query),
           ("provider" = Option<String>, Query), ("cursor" = Option<String>, Query),
           ("next_cursor" = Option<String>, Query, description = "alias of cursor"),
           ("limit" = Option<i64>, Query, description = "samples per page, default 1000")),
    responses((status = 200, description = "One page of samples by provider and source", body = models::GroupedSamples),
              (status = 504, description = "Not answered within the time limit; cancelled", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn timeseries_grouped(
    team: AuthTeam,
    State(state): State<AppState>,
    ApiPath((user_id, name)): ApiPath<(String, String)>,
    query: QueryParams,
) -> Result<Response, ApiError> {
    data::within(deadline(&state), async {
        let request = series_request(&state, &team, &user_id, series(&name), &query).await?;
        grouped_answer(&state, &request, &query).await
    })
    .await
}
