//! The timeseries getters (`/v2/timeseries/{user_id}/{resource}`, `.../grouped`,
//! `.../cholesterol/{kind}`, the hypnogram view): they decode the request, read one page
//! through `data::sample_page` within the getters' time limit, and stream it as JSON.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::data::{deadline, provider_filter};
use super::error::ApiError;
use super::extract::{ApiPath, AuthTeam, QueryParams, parse_uuid};
use super::models;
use super::stream::json_stream;
use super::users::team_user;
use crate::data;
use crate::ingest;
use crate::loc;
use crate::render;
use crate::schema::{Dataset, Resource, Table, resource};
use crate::validation::Violation;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(timeseries))
        .routes(routes!(timeseries_grouped))
        .routes(routes!(cholesterol_kind))
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
pub(crate) const CHOLESTEROL_KINDS: [&str; 4] = ["ldl", "hdl", "total", "triglycerides"];

/// Every name `/v2/timeseries/{user_id}/{resource}` serves: the stored resources, the
/// reference's aliases and the hypnogram.
pub(crate) fn series_names() -> Vec<&'static str> {
    crate::schema::RESOURCES
        .iter()
        .map(|r| r.name)
        .chain(ALIASES.iter().map(|(alias, _)| *alias))
        .chain(["hypnogram"])
        .collect()
}

/// The default and largest `limit` of a plain timeseries page (both further capped by
/// `--getter-max-rows`).
pub(crate) const PLAIN_PAGE: (usize, usize) = (usize::MAX, usize::MAX);
/// The default and largest `limit` of a grouped timeseries page (samples; both further capped
/// by `--getter-max-rows`).
pub(crate) const GROUPED_PAGE: (usize, usize) = (1000, 10_000);

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
            let known = series_names();
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
fn cursor(query: &QueryParams) -> Result<Option<render::Cursor>, ApiError> {
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
    render::Cursor::parse(text, param)
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
) -> Result<render::SamplePage, ApiError> {
    let from = cursor(query)?;
    let caps = state.config.getter_limits;
    let max_limit = max_limit.min(caps.rows).max(1);
    let limit = query.int(
        "limit",
        i64::try_from(default_limit.min(max_limit)).unwrap_or(i64::MAX),
        1,
        i64::try_from(max_limit).unwrap_or(i64::MAX),
    )?;
    let limits = render::PageLimits {
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
           ("start_date" = String, Query, description = "date (00:00:00) or date-time, UTC years 0000 to 9999"),
           ("end_date" = Option<String>, Query, description = "date (23:59:59) or date-time, UTC years 0000 to 9999; none: no end"),
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
            return Ok(Json(render::hypnogram_plain(&rows)).into_response());
        }
        Series::Stored(resource, kind) => (resource, kind),
    };
    let page = read_page(state, request, (resource, kind), query, PLAIN_PAGE).await?;
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
            return Ok(Json(render::hypnogram_grouped(&rows)).into_response());
        }
        Series::Stored(resource, kind) => (resource, kind),
    };
    let page = read_page(state, request, (resource, kind), query, GROUPED_PAGE).await?;
    Ok(json_stream(move |mut w| page.write_grouped(&mut w)))
}

/// One kind of cholesterol samples (`ldl`, `hdl`, `total`, `triglycerides`: the samples whose
/// `type` it is), as the plain getter answers them; `cholesterol/grouped` is the grouped
/// getter of all cholesterol samples.
#[utoipa::path(get, path = "/v2/timeseries/{user_id}/cholesterol/{kind}", tag = "data",
    params(("user_id" = uuid::Uuid, Path),
           ("kind" = String, Path, description = "ldl, hdl, total or triglycerides"),
           ("start_date" = String, Query, description = "date (00:00:00) or date-time, UTC years 0000 to 9999"),
           ("end_date" = Option<String>, Query, description = "date (23:59:59) or date-time, UTC years 0000 to 9999; none: no end"),
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
           ("start_date" = String, Query, description = "date (00:00:00) or date-time, UTC years 0000 to 9999"),
           ("end_date" = Option<String>, Query, description = "date (23:59:59) or date-time, UTC years 0000 to 9999; none: no end"),
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
