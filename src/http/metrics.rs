//! `GET /metrics`: the service's Prometheus metrics ([`crate::metrics`]) in the OpenMetrics text
//! format.
//!
//! It takes no API key, like `/health`: scrapers are configured per deployment, not per
//! tenant, and nothing in it belongs to a tenant (no team, user or key labels; route
//! templates, never paths). Keep it off the public network as the operator's other ports are
//! (a proxy rule, or a network policy). It is in the OpenAPI document because the document
//! lists every endpoint the service answers (`rest-conventions.md`).

use axum::extract::State;
use axum::http::HeaderValue;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use crate::store::metadata::jobs;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(metrics))
}

/// Prometheus metrics: requests by route template, queries, pushes, the job queue, webhook
/// deliveries, provider pulls, the store and rate limits. No API key; no tenant data.
#[utoipa::path(get, path = "/metrics", tag = "service",
    responses((status = 200, description = "The metrics in the OpenMetrics text format",
               content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8", body = String)))]
async fn metrics(State(state): State<AppState>) -> Result<Response, ApiError> {
    let queue = {
        let mut conn = state.meta.reader().await?;
        jobs::queue_stats(&mut conn, crate::store::metadata::now()).await?
    };
    let text = state.metrics.encode(queue).map_err(ApiError::internal)?;
    let mut response = text.into_response();
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
    );
    Ok(response)
}
