//! `/v2/team/webhooks` (the team's webhook endpoints, their deliveries, replay) and
//! `/v2/team/events` (stored events, the test event). Rules live in [`crate::events`]; these
//! handlers decode, call, encode. Another team's endpoint answers 404 like a missing one.

use axum::Json;
use axum::extract::State;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{AuthTeam, IntParam, JsonBody, PathId, QueryParams, parse_uuid};
use super::models_events as events_models;
use crate::events::endpoints::{self as api, EventsError, WebhookEndpoint};
use crate::events::history;
use crate::loc;
use crate::store::metadata::deliveries::DeliveryStatus;
use crate::validation::Violation;

/// The page size of the event and delivery lists.
pub(crate) const LIMIT: IntParam = IntParam::new("limit", 50, 1, 100);

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_endpoint, list_endpoints))
        .routes(routes!(get_endpoint, patch_endpoint, delete_endpoint))
        .routes(routes!(rotate_secret))
        .routes(routes!(list_deliveries))
        .routes(routes!(replay))
        .routes(routes!(test_event))
        .routes(routes!(list_events))
}

impl From<EventsError> for ApiError {
    fn from(err: EventsError) -> Self {
        match err {
            EventsError::Invalid(invalid) => ApiError::Invalid(invalid),
            EventsError::EndpointNotFound => ApiError::NotFound("Webhook endpoint"),
            EventsError::Metadata(e) => e.into(),
        }
    }
}

/// Registers a webhook endpoint; the answer carries its secret (shown only here and on rotation).
#[utoipa::path(post, path = "/v2/team/webhooks", tag = "events",
    request_body(content = super::models_events::NewEndpointRequest),
    responses((status = 200, description = "The endpoint with its secret", body = super::models_events::WebhookEndpoint),
              (status = 422, description = "Bad URL (not https, private or link-local address) or unknown event type")),
    security(("api_key" = [])))]
async fn create_endpoint(
    team: AuthTeam,
    State(state): State<AppState>,
    JsonBody(body): JsonBody,
) -> Result<Json<WebhookEndpoint>, ApiError> {
    let e = api::create(&state.meta, &state.webhooks, team.0.id, &body).await?;
    Ok(Json(api::render_endpoint(&e, true)))
}

/// The team's webhook endpoints.
#[utoipa::path(get, path = "/v2/team/webhooks", tag = "events",
    responses((status = 200, description = "The team's endpoints", body = super::models_events::WebhookEndpoints)),
    security(("api_key" = [])))]
async fn list_endpoints(
    team: AuthTeam,
    State(state): State<AppState>,
) -> Result<Json<events_models::WebhookEndpoints>, ApiError> {
    let list = api::list(&state.meta, team.0.id).await?;
    let endpoints = list
        .iter()
        .map(|e| api::render_endpoint(e, false))
        .collect();
    Ok(Json(events_models::WebhookEndpoints { endpoints }))
}

/// One webhook endpoint (without its secret).
#[utoipa::path(get, path = "/v2/team/webhooks/{id}", tag = "events",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The endpoint", body = super::models_events::WebhookEndpoint), (status = 404, description = "No such endpoint", body = super::models::ErrorDetail)),
    security(("api_key" = [])))]
async fn get_endpoint(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<WebhookEndpoint>, ApiError> {
    let e = api::get(&state.meta, team.0.id, id).await?;
    Ok(Json(api::render_endpoint(&e, false)))
}

/// Changes a webhook endpoint: `url`, `event_types`, `description`, `disabled`.
#[utoipa::path(patch, path = "/v2/team/webhooks/{id}", tag = "events",
    params(("id" = uuid::Uuid, Path)),
    request_body(content = super::models_events::EndpointPatchRequest),
    responses((status = 200, description = "The endpoint", body = super::models_events::WebhookEndpoint), (status = 404, description = "No such endpoint", body = super::models::ErrorDetail)),
    security(("api_key" = [])))]
async fn patch_endpoint(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    JsonBody(body): JsonBody,
) -> Result<Json<WebhookEndpoint>, ApiError> {
    let e = api::patch(&state.meta, &state.webhooks, team.0.id, id, &body).await?;
    Ok(Json(api::render_endpoint(&e, false)))
}

/// Removes a webhook endpoint and its deliveries.
#[utoipa::path(delete, path = "/v2/team/webhooks/{id}", tag = "events",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, description = "Deleted", body = super::models_events::Deleted), (status = 404, description = "No such endpoint", body = super::models::ErrorDetail)),
    security(("api_key" = [])))]
async fn delete_endpoint(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<events_models::Deleted>, ApiError> {
    api::delete(&state.meta, team.0.id, id).await?;
    Ok(Json(events_models::Deleted { success: true }))
}

/// Gives the endpoint a new secret (returned); the old one keeps signing for 24 hours.
#[utoipa::path(post, path = "/v2/team/webhooks/{id}/rotate_secret", tag = "events",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, description = "The endpoint with its new secret and previous_secret_expires_at", body = super::models_events::WebhookEndpoint)),
    security(("api_key" = [])))]
async fn rotate_secret(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<WebhookEndpoint>, ApiError> {
    let e = api::rotate(&state.meta, team.0.id, id).await?;
    Ok(Json(WebhookEndpoint {
        previous_secret_expires_at: e.previous_expires_at.map(crate::users::render_time),
        ..api::render_endpoint(&e, true)
    }))
}

fn cursor_param(query: &QueryParams) -> Result<Option<uuid::Uuid>, ApiError> {
    query
        .get("next_cursor")
        .map(|c| parse_uuid(c, loc!["query", "next_cursor"]))
        .transpose()
}

/// The endpoint's deliveries, newest first: status, attempts, last status code, time and
/// duration, next attempt.
#[utoipa::path(get, path = "/v2/team/webhooks/{id}/deliveries", tag = "events",
    params(("id" = uuid::Uuid, Path),
           ("status" = Option<String>, Query, description = "pending, succeeded or failed"),
           ("next_cursor" = Option<String>, Query), ("limit" = Option<i64>, Query, description = "1 to 100, default 50")),
    responses((status = 200, description = "A page of deliveries", body = super::models_events::Deliveries)),
    security(("api_key" = [])))]
async fn list_deliveries(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    query: QueryParams,
) -> Result<Json<events_models::Deliveries>, ApiError> {
    let status = match query.get("status") {
        None => None,
        Some(raw) => Some(raw.parse::<DeliveryStatus>().map_err(|()| {
            ApiError::invalid(
                Violation::value(
                    loc!["query", "status"],
                    format!("unknown status {raw:?}; expected one of: pending, succeeded, failed"),
                )
                .with_input(Value::from(raw)),
            )
        })?),
    };
    let limit = query.read(&LIMIT)?;
    let cursor = cursor_param(&query)?;
    let (page, next) =
        history::deliveries(&state.meta, team.0.id, id, status, cursor, limit).await?;
    Ok(Json(events_models::Deliveries {
        deliveries: page.iter().map(history::render_delivery).collect(),
        next_cursor: next,
    }))
}

/// Re-sends the endpoint's events of a window.
#[utoipa::path(post, path = "/v2/team/webhooks/{id}/replay", tag = "events",
    params(("id" = uuid::Uuid, Path)),
    request_body(content = super::models_events::ReplayRequest),
    responses((status = 200, description = "Deliveries queued again", body = super::models_events::Replayed)),
    security(("api_key" = [])))]
async fn replay(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    JsonBody(body): JsonBody,
) -> Result<Json<events_models::Replayed>, ApiError> {
    let n = history::replay(&state.meta, team.0.id, id, &body).await?;
    Ok(Json(events_models::Replayed { replayed: n }))
}

/// Sends a sample event of a type to the team's subscribed endpoints.
#[utoipa::path(post, path = "/v2/team/events/test", tag = "events",
    request_body(content = super::models_events::TestEventRequest),
    responses((status = 200, description = "The event and its deliveries", body = super::models_events::TestEventSent)),
    security(("api_key" = [])))]
async fn test_event(
    team: AuthTeam,
    State(state): State<AppState>,
    JsonBody(body): JsonBody,
) -> Result<Json<events_models::TestEventSent>, ApiError> {
    let (id, deliveries) = history::test_event(&state.meta, team.0.id, &body).await?;
    Ok(Json(events_models::TestEventSent {
        event_id: id,
        deliveries,
    }))
}

/// The team's stored events (kept 30 days), oldest first, by cursor.
#[utoipa::path(get, path = "/v2/team/events", tag = "events",
    params(("user_id" = Option<uuid::Uuid>, Query), ("event_type" = Option<String>, Query),
           ("since" = Option<String>, Query, description = "ISO 8601 date-time"),
           ("next_cursor" = Option<String>, Query), ("limit" = Option<i64>, Query, description = "1 to 100, default 50")),
    responses((status = 200, description = "A page of stored events", body = super::models_events::Events)),
    security(("api_key" = [])))]
async fn list_events(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<events_models::Events>, ApiError> {
    let user = query
        .get("user_id")
        .map(|u| parse_uuid(u, loc!["query", "user_id"]))
        .transpose()?;
    let event_type = query.get("event_type").map(str::to_owned);
    let since = match query.get("since") {
        None => None,
        Some(raw) => Some(
            chrono::DateTime::parse_from_rfc3339(raw)
                .map_err(|_| {
                    ApiError::invalid(
                        Violation::new(
                            loc!["query", "since"],
                            "datetime_parsing",
                            format!(
                                "Input should be an ISO 8601 date-time with offset, got {raw:?}"
                            ),
                        )
                        .with_input(Value::from(raw)),
                    )
                })?
                .with_timezone(&chrono::Utc),
        ),
    };
    let limit = query.read(&LIMIT)?;
    let cursor = cursor_param(&query)?;
    let (page, next) = history::events(
        &state.meta,
        &state.health,
        team.0.id,
        user,
        event_type,
        since,
        cursor,
        limit,
    )
    .await?;
    let rendered: Vec<Value> = page.iter().map(history::render_event).collect();
    Ok(Json(events_models::Events {
        events: rendered,
        next_cursor: next,
    }))
}
