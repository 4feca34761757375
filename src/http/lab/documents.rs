//! Per-order reads of issue 42: result metadata and the results report as a PDF, collection
//! instructions (of an order, of a lab test) as PDFs, and the patient service centres near an
//! order's patient. Rules in [`crate::lab::orders::results`], [`crate::lab::orders::result_pdf`],
//! [`crate::lab::orders::instructions`] and [`crate::lab::area::order_pscs`].

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::AppState;
use super::super::error::ApiError;
use super::super::extract::{AuthTeam, PathId, QueryParams};
use super::orders::PdfBytes;
use crate::lab::area::{self, order_pscs};
use crate::lab::catalogue;
use crate::lab::model::area::PscInfo;
use crate::lab::model::order::ResultsMetadata;
use crate::lab::orders::{self, instructions, result_pdf, results};
use crate::loc;
use crate::validation::Loc;

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(result_metadata))
        .routes(routes!(result_report))
        .routes(routes!(order_instructions))
        .routes(routes!(lab_test_instructions))
        .routes(routes!(order_psc_info))
}

/// A PDF answer, rendered off the async threads, shown inline under `filename`.
pub(super) async fn pdf_response(
    filename: String,
    render: impl FnOnce() -> Vec<u8> + Send + 'static,
) -> Result<Response, ApiError> {
    let bytes = crate::telemetry::spawn_blocking(render)
        .await
        .map_err(ApiError::internal)?;
    let mut r = Response::new(Body::from(bytes));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/pdf"),
    );
    r.headers_mut().insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&format!("inline; filename=\"{filename}\""))
            .map_err(ApiError::internal)?,
    );
    Ok(r)
}

/// The metadata of the order's results (patient, lab, dates, status, interpretation).
#[utoipa::path(get, path = "/v3/order/{order_id}/result/metadata", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)),
    responses((status = 200, body = ResultsMetadata),
              (status = 400, description = "The order has no results yet", body = super::super::models::ErrorDetail),
              (status = 404, description = "No such order")),
    security(("api_key" = [])))]
async fn result_metadata(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<ResultsMetadata>, ApiError> {
    let (_, found) = results::reported(&state.meta, team.0.id, id).await?;
    found
        .metadata
        .map(Json)
        .ok_or_else(|| ApiError::internal("reported results without metadata"))
}

/// The results report as a PDF: the metadata and a table of every result.
#[utoipa::path(get, path = "/v3/order/{order_id}/result/pdf", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)),
    responses((status = 200, content_type = "application/pdf", body = PdfBytes, description = "The results report"),
              (status = 400, description = "The order has no results yet", body = super::super::models::ErrorDetail),
              (status = 404, description = "No such order")),
    security(("api_key" = [])))]
async fn result_report(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let (order, found) = results::reported(&state.meta, team.0.id, id).await?;
    pdf_response(format!("results-{id}.pdf"), move || {
        result_pdf::render(&order, &found)
    })
    .await
}

/// The order's collection instructions as a PDF.
#[utoipa::path(get, path = "/v3/order/{order_id}/collection_instruction_pdf", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)),
    responses((status = 200, content_type = "application/pdf", body = PdfBytes, description = "The instructions"),
              (status = 404, description = "No such order")),
    security(("api_key" = [])))]
async fn order_instructions(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let (order, tests) = orders::with_tests(&state.meta, team.0.id, id).await?;
    pdf_response(format!("collection-instructions-{id}.pdf"), move || {
        instructions::for_order(&order, &tests)
    })
    .await
}

/// A lab test's collection instructions as a PDF.
#[utoipa::path(get, path = "/v3/lab_test/{lab_test_id}/collection_instruction_pdf", tag = "lab",
    params(("lab_test_id" = uuid::Uuid, Path)),
    responses((status = 200, content_type = "application/pdf", body = PdfBytes, description = "The instructions"),
              (status = 404, description = "No such lab test")),
    security(("api_key" = [])))]
async fn lab_test_instructions(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let test = catalogue::get_row(&state.meta, team.0.id, id).await?;
    pdf_response(format!("collection-instructions-{id}.pdf"), move || {
        instructions::for_lab_test(&test)
    })
    .await
}

/// The patient service centres of the order's lab nearest the patient's address (at most 30).
#[utoipa::path(get, path = "/v3/order/{order_id}/psc/info", tag = "lab",
    params(("order_id" = uuid::Uuid, Path),
           ("radius" = Option<String>, Query, description = "10, 20, 25, 50 or 100 (miles); default 25"),
           ("capabilities" = Option<Vec<String>>, Query, description = "only centres offering every one")),
    responses((status = 200, body = PscInfo),
              (status = 404, description = "No such order"),
              (status = 422, description = "Radius not allowed, unknown capability")),
    security(("api_key" = [])))]
async fn order_psc_info(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    query: QueryParams,
) -> Result<Json<PscInfo>, ApiError> {
    let radius = area::parse_radius(query.get("radius"), loc!["query", "radius"])?;
    let at = [Loc::from("query"), Loc::from("capabilities")];
    let capabilities = order_pscs::parse_capabilities(&query.all("capabilities"), &at)?;
    let order = orders::get(&state.meta, team.0.id, id).await?;
    let index = state.lab.pscs();
    Ok(Json(order_pscs::order_psc_info(
        &index,
        &order,
        radius,
        &capabilities,
    )))
}
