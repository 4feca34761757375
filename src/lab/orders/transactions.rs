//! Order transactions: every order starts one (`order_transaction.id`), and its redraws would
//! join it. No redraw is made here yet, so a transaction holds its one initial order; the
//! operations still read every order of the transaction, oldest first, so redraws need no
//! change to them.
//!
//! - status: `completed` when the latest order completed, `cancelled` when it was cancelled,
//!   else `active`;
//! - results: those of the latest order that has any; before any, refused (400) naming the
//!   latest order's status, as `GET /v3/order/{id}/result/metadata` is;
//! - another team's transaction id answers 404, like an unknown one.

use uuid::Uuid;

use super::super::LabError;
use super::super::model::enums::Top;
use super::super::model::order::{Order, OrderResults};
use super::super::model::transaction::{OrderSummary, TransactionResponse, TransactionResults};
use super::{from_document, results};
use crate::store::metadata::MetadataStore;
use crate::store::metadata::lab::orders as store;

/// The team's orders of a transaction, oldest first; 404 when there are none.
async fn orders(meta: &MetadataStore, team: Uuid, id: Uuid) -> Result<Vec<Order>, LabError> {
    let docs = store::transaction_documents(&mut *meta.reader().await?, team, id).await?;
    if docs.is_empty() {
        return Err(LabError::NotFound("Order transaction"));
    }
    docs.iter().map(|d| from_document(d)).collect()
}

fn status(latest: &Order) -> &'static str {
    match latest.status {
        Top::Completed => "completed",
        Top::Cancelled => "cancelled",
        Top::Received | Top::CollectingSample | Top::SampleWithLab | Top::Failed => "active",
    }
}

/// `GET /v3/order_transaction/{transaction_id}`.
pub async fn get(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
) -> Result<TransactionResponse, LabError> {
    let orders = orders(meta, team, id).await?;
    let latest = orders
        .last()
        .ok_or(LabError::NotFound("Order transaction"))?;
    Ok(TransactionResponse {
        id,
        team_id: team,
        status: status(latest).to_owned(),
        orders: orders
            .iter()
            .map(|o| OrderSummary {
                id: o.id,
                origin: o.origin.clone(),
                parent_id: None,
                last_status: o.low_level_status,
                last_status_created_at: o.events.last().map_or(o.updated_at, |e| e.created_at),
                updated_at: o.updated_at,
                created_at: o.created_at,
            })
            .collect(),
    })
}

/// The latest order of the transaction with results, and those results.
pub async fn reported(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
) -> Result<(Order, OrderResults), LabError> {
    let orders = orders(meta, team, id).await?;
    let mut refusal = None;
    for order in orders.iter().rev() {
        match results::reported(meta, team, order.id).await {
            Ok(found) => return Ok(found),
            Err(e @ LabError::NotAllowed(_)) => {
                refusal.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(refusal.unwrap_or(LabError::NotFound("Order transaction")))
}

/// `GET /v3/order_transaction/{transaction_id}/result`.
pub async fn result(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
) -> Result<TransactionResults, LabError> {
    let summary = get(meta, team, id).await?;
    let (order, found) = reported(meta, team, id).await?;
    let mut transaction = order.order_transaction.clone();
    transaction.status = summary.status;
    Ok(TransactionResults {
        metadata: found
            .metadata
            .ok_or_else(|| LabError::Corrupt("reported results without metadata".into()))?,
        results: found.results,
        order_transaction: transaction,
    })
}
