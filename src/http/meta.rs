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
use serde::Serialize;
use utoipa::ToSchema;

use crate::link::offer::Offer;
use crate::providers::Provider;
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

/// One catalogue entry with whether this deployment can connect it for the calling team: the
/// reference's provider fields unchanged, and `connectable` added.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CatalogueProvider {
    /// The provider.
    #[serde(flatten)]
    pub provider: Provider,
    /// Whether this deployment can connect the provider for the calling team now: an `sdk` or
    /// `app` provider always (through the mobile SDK or the push API); a demo provider in demo
    /// mode; otherwise only with a connector and, for OAuth, an application (the deployment's
    /// `--oauth-apps` or the team's own credentials), for a password provider a sign-in, for an
    /// e-mail provider its follower account. The link page and `GET /v2/link/providers` offer
    /// the connectable ones that connect by a link (not `sdk` or `app`).
    pub connectable: bool,
}

/// The provider catalogue, optionally only providers whose data has the given source type; each
/// says whether this deployment can connect it for the calling team (`connectable`).
#[utoipa::path(get, path = "/v2/providers", tag = "providers",
    params(("source_type" = Option<String>, Query, description = "e.g. ring, watch, app")),
    responses((status = 200, description = "Array of providers", body = [CatalogueProvider])),
    security(("api_key" = [])))]
async fn list_providers(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<Vec<CatalogueProvider>>, ApiError> {
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
    let offer = Offer::for_team(&state.meta, &state.link, team.0.id).await?;
    Ok(Json(
        offer
            .catalogue()
            .into_iter()
            .filter(|(p, _)| filter.is_none_or(|t| p.default_source_type == t))
            .map(|(p, c)| CatalogueProvider {
                provider: p.clone(),
                connectable: c.is_connectable(),
            })
            .collect(),
    ))
}
