//! Order transactions (`/v3/order_transaction/{transaction_id}...`): an order and its redraws,
//! in the reference's shapes (`GetOrderTransactionResponse`, `LabResultsRaw` with its
//! `order_transaction`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::enums::Low;
use super::order::{BiomarkerResult, OrderTransaction, ResultsMetadata};

/// One order of a transaction, in brief (the reference's `OrderSummary`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderSummary {
    /// The order.
    pub id: Uuid,
    /// `initial` (no order here is a redraw or a recreation yet).
    pub origin: String,
    /// The order it redraws: always `null` here.
    pub parent_id: Option<Uuid>,
    /// Its low-level status.
    pub last_status: Low,
    /// When it got that status.
    pub last_status_created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
}

/// `GET /v3/order_transaction/{transaction_id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TransactionResponse {
    /// The transaction.
    pub id: Uuid,
    /// The team.
    pub team_id: Uuid,
    /// `active`, `completed` (its latest order completed) or `cancelled` (its latest order was
    /// cancelled).
    pub status: String,
    /// Its orders, oldest first.
    pub orders: Vec<OrderSummary>,
}

/// `GET /v3/order_transaction/{transaction_id}/result`: the results of the transaction's
/// latest order that has any, with the transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TransactionResults {
    /// Metadata of the results.
    pub metadata: ResultsMetadata,
    /// The results.
    pub results: Vec<BiomarkerResult>,
    /// The transaction.
    pub order_transaction: OrderTransaction,
}
