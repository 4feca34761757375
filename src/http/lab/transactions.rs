//! `/v3/order_transaction/{transaction_id}...`: an order transaction, its results and its
//! results report ([`crate::lab::orders::transactions`]).

use axum::Json;
use axum::extract::State;
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::AppState;
use super::super::error::ApiError;
use super::super::extract::{AuthTeam, PathId};
use super::documents::pdf_response;
use super::orders::PdfBytes;
use crate::lab::model::transaction::{TransactionResponse, TransactionResults};
use crate::lab::orders::{result_pdf, transactions};

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_transaction))
        .routes(routes!(transaction_result))
        .routes(routes!(transaction_result_pdf))
}

/// An order transaction: its status and its orders.
#[utoipa::path(get, path = "/v3/order_transaction/{transaction_id}", tag = "lab",
    params(("transaction_id" = uuid::Uuid, Path)),
    responses((status = 200, body = TransactionResponse),
              (status = 404, description = "No such transaction")),
    security(("api_key" = [])))]
async fn get_transaction(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<TransactionResponse>, ApiError> {
    Ok(Json(transactions::get(&state.meta, team.0.id, id).await?))
}

/// The results of the transaction's latest order that has any, with the transaction.
#[utoipa::path(get, path = "/v3/order_transaction/{transaction_id}/result", tag = "lab",
    params(("transaction_id" = uuid::Uuid, Path)),
    responses((status = 200, body = TransactionResults),
              (status = 400, description = "No order of the transaction has results yet", body = super::super::models::ErrorDetail),
              (status = 404, description = "No such transaction")),
    security(("api_key" = [])))]
async fn transaction_result(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<TransactionResults>, ApiError> {
    Ok(Json(
        transactions::result(&state.meta, team.0.id, id).await?,
    ))
}

/// The results report (PDF) of the transaction's latest order that has results.
#[utoipa::path(get, path = "/v3/order_transaction/{transaction_id}/result/pdf", tag = "lab",
    params(("transaction_id" = uuid::Uuid, Path)),
    responses((status = 200, content_type = "application/pdf", body = PdfBytes, description = "The results report"),
              (status = 400, description = "No order of the transaction has results yet", body = super::super::models::ErrorDetail),
              (status = 404, description = "No such transaction")),
    security(("api_key" = [])))]
async fn transaction_result_pdf(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let (order, found) = transactions::reported(&state.meta, team.0.id, id).await?;
    pdf_response(format!("results-{id}.pdf"), move || {
        result_pdf::render(&order, &found)
    })
    .await
}
