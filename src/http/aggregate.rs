//! `POST /aggregate/v1/user/{user_id}/query`: the aggregate query endpoint, and
//! `POST /aggregate/v1/team/query`, the same over many of a team's users (`analytics.md` §5).
//! Negotiates the answer format from `Accept`, enforces the request-size limit of
//! `aggregate-dsl.md` §5 (and a team's concurrency limit) and hands the work to
//! [`crate::query`] or [`crate::team`].

use axum::body::Body;
use axum::extract::{FromRequest, Request, State};
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{AuthTeam, TeamUser, read_json};
use crate::engine::{OutputFormat, PARQUET_TAR_MEDIA_TYPE};
use crate::query;

/// The routes of this module.
/// Their requests spend the team's aggregate-query budget besides the key's and the team's.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(aggregate_query))
        .routes(routes!(team_query))
        .route_layer(axum::Extension(super::rate_limit::QueryBudget))
}

/// A query body, limited to the engine's `max_body_bytes` (1 MiB by default).
struct QueryBody(Value);

impl FromRequest<AppState> for QueryBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        read_json(req, state.config.query_limits.max_body_bytes)
            .await
            .map(QueryBody)
    }
}

/// Picks the answer format from `Accept`: absent, `*/*`, `application/*` or
/// `application/json` give JSON; the Parquet media type gives the tarball; the first
/// supported entry of a list wins (q-values are not weighed); anything else is a 406.
pub fn negotiate(headers: &HeaderMap) -> Result<OutputFormat, ApiError> {
    Ok(match accepted(headers, &[PARQUET_TAR_MEDIA_TYPE])? {
        Some(_) => OutputFormat::ParquetTar,
        None => OutputFormat::Json,
    })
}

/// The first entry of `Accept` this route can answer: `None` for JSON (absent, `*/*`,
/// `application/*`, `application/json`), or the one of `others` it names. Q-values are not
/// weighed; nothing supported is a 406 listing what is.
pub(super) fn accepted(
    headers: &HeaderMap,
    others: &[&'static str],
) -> Result<Option<&'static str>, ApiError> {
    let Some(accept) = headers.get(ACCEPT) else {
        return Ok(None);
    };
    let accept = accept.to_str().unwrap_or("");
    if accept.trim().is_empty() {
        return Ok(None);
    }
    for entry in accept.split(',') {
        let media = entry
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if matches!(media.as_str(), "*/*" | "application/*" | "application/json") {
            return Ok(None);
        }
        if let Some(other) = others.iter().find(|o| **o == media) {
            return Ok(Some(other));
        }
    }
    Err(ApiError::NotAcceptable(format!(
        "cannot produce {accept:?}; supported: application/json, {}",
        others.join(", ")
    )))
}

/// Run aggregate queries over a user's data (`aggregate-dsl.md`).
#[utoipa::path(post, path = "/aggregate/v1/user/{user_id}/query", tag = "aggregate",
    params(("user_id" = uuid::Uuid, Path),
           ("accept" = Option<String>, Header, description = "*/*, application/json or application/vnd.service.tar+gzip+parquet")),
    request_body(content = super::models::AggregateRequest),
    responses((status = 200, description = "One result per query: JSON tables, or a gzipped tar of 0.parquet, 1.parquet, ...",
               content((super::models::AggregateAnswer = "application/json"),
                       (Vec<u8> = "application/vnd.service.tar+gzip+parquet"))),
              (status = 406, description = "Unsupported Accept", body = super::models::ErrorDetail),
              (status = 422, description = "Validation error", body = super::models::ValidationError),
              (status = 504, description = "The query hit its time limit", body = super::models::ErrorDetail)),
    security(("api_key" = [])))]
async fn aggregate_query(
    State(state): State<AppState>,
    TeamUser(user): TeamUser,
    headers: HeaderMap,
    QueryBody(body): QueryBody,
) -> Result<Response, ApiError> {
    let format = negotiate(&headers)?;
    let started = std::time::Instant::now();
    let answered = query::run_measured(
        &state.meta,
        &state.health,
        &user,
        &body,
        format,
        &state.engine,
    )
    .await;
    answer(&state, format, started, answered)
}

/// Run aggregate queries over many of a team's users at once (`analytics.md` §5): the
/// per-user body plus `users` (default every live user) and `{"user": "user_id"}` or
/// `{"user": "client_user_id"}` group keys. Provider priority, floating time and ingestion
/// bounds are each user's own; a query without a user key aggregates across users, exactly
/// (a median of every user's chosen rows, not a median of medians).
#[utoipa::path(post, path = "/aggregate/v1/team/query", tag = "aggregate",
    params(("accept" = Option<String>, Header, description = "*/*, application/json or application/vnd.service.tar+gzip+parquet")),
    request_body(content = super::models::TeamAggregateRequest),
    responses((status = 200, description = "One result per query: JSON tables, or a gzipped tar of 0.parquet, 1.parquet, ...",
               content((super::models::AggregateAnswer = "application/json"),
                       (Vec<u8> = "application/vnd.service.tar+gzip+parquet"))),
              (status = 406, description = "Unsupported Accept", body = super::models::ErrorDetail),
              (status = 422, description = "Validation error (also an unknown user in `users`)", body = super::models::ValidationError),
              (status = 429, description = "The team runs as many team queries as it may at once; retry after `Retry-After` seconds", body = super::models::ErrorDetail),
              (status = 504, description = "The query hit its time limit", body = super::models::ErrorDetail)),
    security(("api_key" = [])))]
async fn team_query(
    State(state): State<AppState>,
    AuthTeam(team): AuthTeam,
    headers: HeaderMap,
    QueryBody(body): QueryBody,
) -> Result<Response, ApiError> {
    let format = negotiate(&headers)?;
    let Some(_slot) = state
        .team_queries
        .enter(team.id, state.config.team_query_concurrency)
    else {
        return Err(ApiError::TooManyRequests {
            message: format!(
                "this team already runs {} team queries, its limit; retry when one ends",
                state.config.team_query_concurrency
            ),
            retry_after: 1,
        });
    };
    let started = std::time::Instant::now();
    let answered = crate::team::run_measured(
        &state.meta,
        &state.health,
        team.id,
        &body,
        format,
        &state.engine,
    )
    .await;
    answer(&state, format, started, answered)
}

/// An answered (or failed) query request as a response, counted in the metrics.
fn answer(
    state: &AppState,
    format: OutputFormat,
    started: std::time::Instant,
    answered: Result<query::Answered, query::QueryError>,
) -> Result<Response, ApiError> {
    let took = started.elapsed();
    let answered = match answered {
        Ok(answered) => {
            let sizes = [answered.input_bytes, answered.output.len()].map(|n| n as u64);
            state
                .metrics
                .query("ok", took, Some(sizes[0]), Some(sizes[1]));
            answered
        }
        Err(e) => {
            state.metrics.query(query_outcome(&e), took, None, None);
            return Err(e.into());
        }
    };
    let mut response = Response::new(Body::from(answered.output));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(format.media_type()));
    Ok(response)
}

/// A failed query's outcome label: the client's mistake, the time limit, or the service's.
fn query_outcome(e: &query::QueryError) -> &'static str {
    use crate::engine::EngineError;
    use query::QueryError;
    match e {
        QueryError::Engine(
            EngineError::Invalid(_)
            | EngineError::ResultTooLarge { .. }
            | EngineError::ResourcesExhausted { .. },
        ) => "invalid",
        QueryError::Engine(EngineError::Timeout { .. }) => "timeout",
        QueryError::Engine(
            EngineError::Planning { .. } | EngineError::Execution { .. } | EngineError::Internal(_),
        )
        | QueryError::Store(_)
        | QueryError::Metadata(_) => "error",
    }
}
