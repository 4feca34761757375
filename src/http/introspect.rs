//! Introspection of provider pulls (`GET /v2/introspect/resources`,
//! `GET /v2/introspect/historical_pull`): decode the reference's query parameters, call
//! `data::introspect`, encode. A `user_id` of another team answers 404; `user_limit` is 1 to
//! 500 (default 50, [`USER_LIMIT`]); `cursor` (deprecated) and `next_cursor` are the previous
//! page's `next_cursor`.

use axum::Json;
use axum::extract::State;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::data::provider_filter;
use super::error::ApiError;
use super::extract::{AuthTeam, IntParam, QueryParams, parse_uuid};
use super::models;
use super::users::team_user;
use crate::data::introspect::{self, UserPullsPage, UserResourcesPage};
use crate::loc;
use crate::store::metadata::sync_introspect::PullFilter;
use crate::validation::Violation;

/// Users per page: 1 to 500, default 50.
pub(crate) const USER_LIMIT: IntParam = IntParam::new("user_limit", 50, 1, 500);

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(resources))
        .routes(routes!(historical_pull))
}

/// The filter and page size a request names.
async fn page_request(
    state: &AppState,
    team: &AuthTeam,
    query: &QueryParams,
) -> Result<(PullFilter, i64), ApiError> {
    let user = match query.get("user_id") {
        Some(id) => {
            let id = parse_uuid(id, loc!["query", "user_id"])?;
            Some(team_user(state, team, id).await?.id)
        }
        None => None,
    };
    let provider = provider_filter(query)?.map(str::to_owned);
    let (param, cursor) = match (query.get("next_cursor"), query.get("cursor")) {
        (Some(c), _) => ("next_cursor", Some(c)),
        (None, Some(c)) => ("cursor", Some(c)),
        (None, None) => ("next_cursor", None),
    };
    let after = match cursor {
        Some(c) => Some(uuid::Uuid::parse_str(c).map_err(|_| {
            ApiError::invalid(
                Violation::value(
                    loc!["query", param],
                    "not a cursor of this listing: pass a previous answer's next_cursor",
                )
                .with_input(Value::from(c)),
            )
        })?),
        None => None,
    };
    let limit = query.read(&USER_LIMIT)?;
    Ok((
        PullFilter {
            user,
            provider,
            after,
        },
        limit,
    ))
}

/// Per user and provider, the resources its pulls stored and the latest pull's outcome.
#[utoipa::path(get, path = "/v2/introspect/resources", tag = "link",
    params(("user_id" = Option<uuid::Uuid>, Query, description = "only this user"),
           ("provider" = Option<String>, Query, description = "only this provider (a catalogue slug)"),
           ("user_limit" = Option<i64>, Query, description = "users per page, 1 to 500, default 50"),
           ("cursor" = Option<String>, Query, deprecated, description = "alias of next_cursor"),
           ("next_cursor" = Option<String>, Query, description = "the previous page's next_cursor")),
    responses((status = 200, description = "One page of users", body = UserResourcesPage),
              (status = 404, description = "user_id is not a user of the team", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn resources(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<UserResourcesPage>, ApiError> {
    let (filter, limit) = page_request(&state, &team, &query).await?;
    Ok(Json(
        introspect::resources(&state.meta, team.0.id, &filter, limit).await?,
    ))
}

/// Per user and provider, the historical pull: its window, status, timeline and resources.
#[utoipa::path(get, path = "/v2/introspect/historical_pull", tag = "link",
    params(("user_id" = Option<uuid::Uuid>, Query, description = "only this user"),
           ("provider" = Option<String>, Query, description = "only this provider (a catalogue slug)"),
           ("user_limit" = Option<i64>, Query, description = "users per page, 1 to 500, default 50"),
           ("cursor" = Option<String>, Query, deprecated, description = "alias of next_cursor"),
           ("next_cursor" = Option<String>, Query, description = "the previous page's next_cursor")),
    responses((status = 200, description = "One page of users", body = UserPullsPage),
              (status = 404, description = "user_id is not a user of the team", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn historical_pull(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<UserPullsPage>, ApiError> {
    let (filter, limit) = page_request(&state, &team, &query).await?;
    Ok(Json(
        introspect::historical_pulls(&state.meta, team.0.id, &filter, limit).await?,
    ))
}
