//! Service-level routes: `/health`, the provider catalogue, and the API's own description
//! (`/openapi.json`, `/docs`).

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::response::Html;
use axum::routing::get;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{AuthTeam, QueryParams};
use crate::providers::{CATALOGUE, Provider};
use crate::validation::Violation;

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(health))
        .routes(routes!(list_providers))
}

/// `/openapi.json` and `/docs`, which serve the finished document and so sit outside it.
pub fn doc_routes(doc: Arc<utoipa::openapi::OpenApi>) -> Router<AppState> {
    let json_doc = doc.clone();
    Router::new()
        .route(
            "/openapi.json",
            get(move || async move { Json(json_doc.as_ref().clone()) }),
        )
        .route("/docs", get(move || async move { Html(docs_page(&doc)) }))
}

/// A self-contained page listing every endpoint (no external scripts: it works offline).
fn docs_page(doc: &utoipa::openapi::OpenApi) -> String {
    let mut rows = String::new();
    for (path, item) in &doc.paths.paths {
        let ops = [
            ("GET", &item.get),
            ("POST", &item.post),
            ("PUT", &item.put),
            ("PATCH", &item.patch),
            ("DELETE", &item.delete),
        ];
        for (method, op) in ops {
            if let Some(op) = op {
                let summary = op
                    .summary
                    .clone()
                    .or(op.description.clone())
                    .unwrap_or_default();
                rows.push_str(&format!(
                    "<tr><td><code>{method}</code></td><td><code>{}</code></td><td>{}</td></tr>\n",
                    escape(path),
                    escape(&summary)
                ));
            }
        }
    }
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>wearhouse API</title></head>\
         <body><h1>wearhouse API</h1><p>Machine-readable: <a href=\"/openapi.json\">/openapi.json</a>. \
         Authenticate with the <code>x-service-api-key</code> header.</p>\
         <table>{rows}</table></body></html>"
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Liveness and readiness: 200 when the metadata database answers, else 503.
#[utoipa::path(get, path = "/health", tag = "service",
    responses((status = 200, description = "The store answers", body = super::models::Health),
              (status = 503, description = "The database does not answer", body = super::models::ErrorDetail)))]
async fn health(State(state): State<AppState>) -> axum::response::Response {
    use axum::response::IntoResponse;
    match state.meta.ping().await {
        Ok(()) => Json(super::models::Health {
            status: "ok".into(),
        })
        .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "health check failed");
            (
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                Json(super::models::ErrorDetail {
                    detail: "database unavailable".into(),
                }),
            )
                .into_response()
        }
    }
}

/// The provider catalogue, optionally only providers whose data has the given source type.
#[utoipa::path(get, path = "/v2/providers", tag = "providers",
    params(("source_type" = Option<String>, Query, description = "e.g. ring, watch, app")),
    responses((status = 200, description = "Array of providers", body = [Provider])),
    security(("api_key" = [])))]
async fn list_providers(
    _team: AuthTeam,
    query: QueryParams,
) -> Result<Json<Vec<Provider>>, ApiError> {
    let filter = query.get("source_type");
    if let Some(wanted) = filter
        && !crate::providers::SOURCE_TYPES.contains(&wanted)
    {
        return Err(ApiError::invalid(Violation::value(
            crate::loc!["query", "source_type"],
            format!(
                "unknown source_type {wanted:?}; expected one of: {}",
                crate::providers::SOURCE_TYPES.join(", ")
            ),
        )));
    }
    Ok(Json(
        CATALOGUE
            .iter()
            .filter(|p| filter.is_none_or(|t| p.default_source_type == t))
            .cloned()
            .collect(),
    ))
}
