//! The OpenAPI schemas of the team's webhook, event and job answers. Their renderers live in
//! [`crate::events`] and [`crate::jobs`] (another room's code, rendered as JSON values there);
//! these types describe those values, and the schema fuzzing suite checks every answer against
//! them.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// A webhook endpoint. `secret` is present only when it is created or its secret rotated.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookEndpoint {
    /// Its id.
    pub id: Uuid,
    /// Where events are delivered (https).
    pub url: String,
    /// The event types it receives (empty: all).
    pub event_types: Vec<String>,
    /// The team's note.
    pub description: Option<String>,
    /// Created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// Whether deliveries are stopped.
    pub disabled: bool,
    /// Since when.
    #[schema(format = DateTime)]
    pub disabled_at: Option<String>,
    /// Why.
    pub disabled_reason: Option<String>,
    /// Failing since, while deliveries fail.
    #[schema(format = DateTime)]
    pub failing_since: Option<String>,
    /// The signing secret (`whsec_...`), on creation and rotation only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// When the previous secret stops signing (rotation only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub previous_secret_expires_at: Option<String>,
}

/// `GET /v2/team/webhooks`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookEndpoints {
    /// The team's endpoints (rendered by [`crate::events::endpoints::render_endpoint`]).
    #[schema(value_type = Vec<WebhookEndpoint>)]
    pub endpoints: Vec<serde_json::Value>,
}

/// `POST /v2/team/webhooks` and `PATCH /v2/team/webhooks/{id}` (in a PATCH every member is
/// optional).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookEndpointRequest {
    /// https URL (private and link-local addresses are refused).
    pub url: Option<String>,
    /// Event types to receive (empty or absent: all).
    pub event_types: Option<Vec<String>>,
    /// A note.
    pub description: Option<String>,
    /// PATCH only: stop or resume deliveries.
    pub disabled: Option<bool>,
}

/// One delivery of one event to one endpoint.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Delivery {
    /// Its id.
    pub id: Uuid,
    /// The event.
    pub event_id: Uuid,
    /// The event's type.
    pub event_type: String,
    /// pending, succeeded or failed.
    pub status: String,
    /// Attempts made.
    pub attempts: i64,
    /// The last attempt.
    #[schema(format = DateTime)]
    pub last_attempt_at: Option<String>,
    /// The receiver's last status code.
    pub status_code: Option<i64>,
    /// The last attempt's duration.
    pub duration_ms: Option<i64>,
    /// The last attempt's error.
    pub error: Option<String>,
    /// The next attempt, while pending.
    #[schema(format = DateTime)]
    pub next_attempt_at: Option<String>,
    /// Created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Every attempt, oldest first (on servers that keep the attempt history).
    pub history: Option<Vec<DeliveryAttempt>>,
}

/// One attempt of a delivery.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeliveryAttempt {
    /// When.
    #[schema(format = DateTime)]
    pub attempted_at: String,
    /// The receiver's status code.
    pub status_code: Option<i64>,
    /// How long it took.
    pub duration_ms: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
}

/// A page of deliveries.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Deliveries {
    /// Newest first (rendered by [`crate::events::history::render_delivery`]).
    #[schema(value_type = Vec<Delivery>)]
    pub deliveries: Vec<serde_json::Value>,
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

/// `POST /v2/team/webhooks/{id}/replay`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReplayRequest {
    /// From (ISO 8601 date-time).
    #[schema(format = DateTime)]
    pub since: String,
    /// Until (default now).
    #[schema(format = DateTime)]
    pub until: Option<String>,
}

/// The replay's answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Replayed {
    /// Deliveries queued again.
    pub replayed: usize,
}

/// `POST /v2/team/events/test`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TestEventRequest {
    /// The event type to send.
    pub event_type: String,
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

/// One background job of the team.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Job {
    /// Its id.
    pub id: Uuid,
    /// Its kind (`demo_backfill`, `webhook_delivery`, ...).
    pub kind: String,
    /// pending, running, succeeded or failed.
    pub state: String,
    /// What the job was given: its shape depends on `kind`, so it is free-form here.
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
    /// Attempts made.
    pub attempts: i64,
    /// Attempts allowed.
    pub max_attempts: i64,
    /// Next run.
    #[schema(format = DateTime)]
    pub run_at: String,
    /// The last failure.
    pub last_error: Option<String>,
    /// Created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// Finished.
    #[schema(format = DateTime)]
    pub finished_at: Option<String>,
}

/// A page of jobs.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Jobs {
    /// Newest first (rendered by [`crate::jobs::view::render`]).
    #[schema(value_type = Vec<Job>)]
    pub jobs: Vec<serde_json::Value>,
    /// All matching jobs.
    pub total: i64,
    /// This page (from 1).
    pub page: i64,
    /// Page size.
    pub size: i64,
    /// Pages in all.
    pub pages: i64,
}
