//! The OpenAPI schemas of the team's webhook, event and job answers. Their renderers live in
//! [`crate::events`] and [`crate::jobs`] (another room's code, rendered as JSON values there);
//! these types describe those values, and the schema fuzzing suite checks every answer against
//! them.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

pub use crate::events::endpoints::WebhookEndpoint;

/// `GET /v2/team/webhooks`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookEndpoints {
    /// The team's endpoints (rendered by [`crate::events::endpoints::render_endpoint`]).
    pub endpoints: Vec<WebhookEndpoint>,
}

pub use crate::events::endpoints::{EndpointPatchRequest, NewEndpointRequest};

pub use crate::events::history::{Delivery, DeliveryAttempt};

/// A page of deliveries.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Deliveries {
    /// Newest first (rendered by [`crate::events::history::render_delivery`]).
    pub deliveries: Vec<Delivery>,
    /// Pass as `next_cursor` for the next page; null on the last.
    pub next_cursor: Option<Uuid>,
}

/// A stored event: its envelope as delivered, plus its id and time.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StoredEvent {
    /// Its id.
    pub id: Uuid,
    /// Stored at.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// `daily.data.sleep.created`, `provider.connection.created`, ...
    pub event_type: String,
    /// The user it is about.
    pub user_id: Option<Uuid>,
    /// The payload: its shape depends on `event_type` (`events.md`), so it is free-form here.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

/// A page of stored events.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Events {
    /// Oldest first (rendered by [`crate::events::history::render_event`]).
    #[schema(value_type = Vec<StoredEvent>)]
    pub events: Vec<serde_json::Value>,
    /// Pass as `next_cursor` for the next page; null on the last.
    pub next_cursor: Option<Uuid>,
}

pub use crate::events::history::{ReplayRequest, TestEventRequest};

/// The replay's answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Replayed {
    /// Deliveries queued again.
    pub replayed: usize,
}

/// The test event's answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TestEventSent {
    /// The stored event.
    pub event_id: Uuid,
    /// Deliveries queued.
    pub deliveries: usize,
}

/// `{"success": true}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Deleted {
    /// Always true on a 2xx answer.
    pub success: bool,
}

pub use crate::jobs::view::JobView as Job;

/// A page of jobs.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Jobs {
    /// Newest first (rendered by [`crate::jobs::view::render`]).
    pub jobs: Vec<Job>,
    /// All matching jobs.
    pub total: i64,
    /// This page (from 1).
    pub page: i64,
    /// Page size.
    pub size: i64,
    /// Pages in all.
    pub pages: i64,
}
