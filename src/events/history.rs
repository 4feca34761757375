//! What the team's endpoints were sent and what happened: deliveries, replay of a window, the
//! test event, and the stored event list (`GET /v2/team/events`).
//!
//! Decisions where the spec is silent:
//! - Replay sends the window's stored events that the endpoint subscribes to, as new deliveries
//!   after the stream's pending ones, with the events' own ids; a disabled endpoint must be
//!   re-enabled first.
//! - The test event is stored and delivered like any other, to every enabled endpoint that
//!   subscribes to its type, with a sample `data` and no user.
//! - Events are listed oldest first from `since` (default and earliest: the 30 days kept); the
//!   cursor is the last event's id. Deliveries are listed newest first, one row per (event,
//!   endpoint) with its last attempt (status code, time, duration, error) and next attempt.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use super::data::TestEvent;
use super::endpoints::EventsError;
use super::types::{EventType, matches};
use super::{Event, outbox};
use crate::loc;
use crate::store::health::HealthStore;
use crate::store::metadata::deliveries::{
    Delivery as StoredDelivery, DeliveryStatus, attempts_of, list_deliveries,
};
use crate::store::metadata::events::{EventFilter, EventPosition, StoredEvent, event, list_events};
use crate::store::metadata::webhooks;
use crate::store::metadata::{MetadataError, MetadataStore, now};
use crate::users::render_time;
use crate::validation::decode::member;
use crate::validation::{Invalid, Violation, decode, decode_strict};

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

/// A delivery as the API shows it: its latest outcome, and `history`, every attempt (status
/// code, time, duration, error).
pub fn render_delivery(d: &StoredDelivery) -> Delivery {
    Delivery {
        id: d.id,
        event_id: d.event_id,
        event_type: d.event_type.clone(),
        status: d.status.as_str().to_owned(),
        attempts: i64::from(d.attempts),
        last_attempt_at: d.last_attempt_at.map(render_time),
        status_code: d.last_status_code,
        duration_ms: d.last_duration_ms,
        error: d.last_error.clone(),
        next_attempt_at: d
            .next_attempt_at
            .filter(|_| d.status == DeliveryStatus::Pending)
            .map(render_time),
        created_at: render_time(d.created_at),
        history: Some(
            d.history
                .iter()
                .map(|a| DeliveryAttempt {
                    attempted_at: render_time(a.attempted_at),
                    status_code: a.status_code,
                    duration_ms: Some(a.duration_ms),
                    error: a.error.clone(),
                })
                .collect(),
        ),
    }
}

/// A page of an endpoint's deliveries, newest first, and the cursor of the next page.
pub async fn deliveries(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
    status: Option<DeliveryStatus>,
    cursor: Option<Uuid>,
    limit: i64,
) -> Result<(Vec<StoredDelivery>, Option<Uuid>), EventsError> {
    let mut conn = meta.reader().await?;
    webhooks::endpoint(&mut conn, team, id)
        .await?
        .ok_or(EventsError::EndpointNotFound)?;
    let after = match cursor {
        None => None,
        Some(c) => {
            let d = crate::store::metadata::deliveries::delivery(&mut conn, id, c)
                .await?
                .ok_or_else(|| bad_cursor("next_cursor"))?;
            Some((d.created_at, d.id))
        }
    };
    let page = list_deliveries(&mut conn, id, status, after, limit + 1).await?;
    let (mut page, next) = split_page(page, limit, |d| d.id);
    let ids: Vec<Uuid> = page.iter().map(|d| d.id).collect();
    let mut attempts = attempts_of(&mut conn, &ids).await?;
    for d in &mut page {
        d.history = attempts.remove(&d.id).unwrap_or_default();
    }
    Ok((page, next))
}

fn split_page<T>(mut page: Vec<T>, limit: i64, id: impl Fn(&T) -> Uuid) -> (Vec<T>, Option<Uuid>) {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if page.len() > limit {
        page.truncate(limit);
        let next = page.last().map(id);
        (page, next)
    } else {
        (page, None)
    }
}

fn bad_cursor(name: &str) -> EventsError {
    Invalid(vec![Violation::value(
        loc!["query", name],
        "unknown cursor; pass the next_cursor of a previous answer",
    )])
    .into()
}

/// `POST /v2/team/webhooks/{id}/replay`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ReplayRequest {
    /// From (ISO 8601 date-time with offset).
    #[serde(deserialize_with = "member::instant")]
    #[schema(value_type = String, format = DateTime)]
    pub since: DateTime<Utc>,
    /// Until, after `since` (default now).
    #[serde(default, deserialize_with = "member::optional_instant")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub until: Option<DateTime<Utc>>,
}

/// `POST /v2/team/events/test`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct TestEventRequest {
    /// The event type to send (a name of `events.md` such as `daily.data.sleep.created`).
    pub event_type: String,
}

/// Re-sends an endpoint's subscribed events created in `[since, until)`; answers how many.
pub async fn replay(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
    body: &Value,
) -> Result<usize, EventsError> {
    let (req, mut checks) = decode::<ReplayRequest>(body, loc!["body"])?;
    let (since, until) = (req.since, req.until);
    if let Some(u) = until
        && u <= since
    {
        checks.refuse(loc!["until"], render_time(u), "until must be after since");
    }
    checks.finish()?;
    let mut tx = meta.begin().await?;
    let endpoint = webhooks::endpoint(&mut tx, team, id)
        .await?
        .ok_or(EventsError::EndpointNotFound)?;
    if endpoint.disabled_at.is_some() {
        return Err(Invalid(vec![Violation::value(
            loc!["path", "id"],
            "the endpoint is disabled; re-enable it (PATCH disabled: false) before replaying",
        )])
        .into());
    }
    let filter = EventFilter {
        team,
        user: None,
        event_type: None,
        since,
        until,
    };
    let at = now();
    let mut after: Option<EventPosition> = None;
    let mut count = 0usize;
    loop {
        let page = list_events(&mut tx, &filter, after.as_ref(), 500).await?;
        let Some(last) = page.last() else { break };
        after = Some(position(last));
        for e in &page {
            if matches(endpoint.event_types.as_deref(), &e.event_type) {
                let mut r = outbox::EventRef::from(e);
                r.ordinal = i64::try_from(count).unwrap_or(i64::MAX);
                outbox::deliver(&mut tx, &endpoint, &r, at).await?;
                count += 1;
            }
        }
    }
    tx.commit().await.map_err(MetadataError::from)?;
    if count > 0 {
        meta.jobs_wake().notify_waiters();
    }
    Ok(count)
}

fn position(e: &StoredEvent) -> EventPosition {
    EventPosition {
        created_at: e.created_at,
        ordinal: e.ordinal,
        id: e.id,
    }
}

/// Stores and sends a sample event of the type a `POST /v2/team/events/test` body names;
/// answers its id and how many endpoints it goes to.
pub async fn test_event(
    meta: &MetadataStore,
    team: Uuid,
    body: &Value,
) -> Result<(Uuid, usize), EventsError> {
    let req = decode_strict::<TestEventRequest>(body, loc!["body"])?;
    let Some(event_type) = EventType::parse(&req.event_type) else {
        return Err(Invalid(vec![
            Violation::new(
                loc!["body", "event_type"],
                "enum",
                "unknown event type; expected a name of events.md such as daily.data.sleep.created",
            )
            .with_input(Value::from(req.event_type)),
        ])
        .into());
    };
    let event = Event::new(event_type, None, &TestEvent::SAMPLE);
    let out = outbox::publish(meta, team, &[event]).await?;
    let id = out.events.first().copied().unwrap_or_default();
    Ok((id, out.deliveries))
}

/// A stored event as the list shows it: its id and time, then the envelope's members.
pub fn render_event(e: &StoredEvent) -> Value {
    let mut v = serde_json::from_str::<Value>(&e.body).unwrap_or_else(|_| json!({}));
    if let Some(obj) = v.as_object_mut() {
        obj.insert("id".to_owned(), json!(e.id));
        obj.insert("created_at".to_owned(), json!(render_time(e.created_at)));
    }
    v
}

/// A page of the team's stored events, oldest first, and the cursor of the next page; events
/// stored by reference to their records are rendered from `store`.
#[allow(clippy::too_many_arguments)] // the two stores, then the query's own members
pub async fn events(
    meta: &MetadataStore,
    store: &HealthStore,
    team: Uuid,
    user: Option<Uuid>,
    event_type: Option<String>,
    since: Option<DateTime<Utc>>,
    cursor: Option<Uuid>,
    limit: i64,
) -> Result<(Vec<StoredEvent>, Option<Uuid>), EventsError> {
    let kept_from = now() - super::retention::KEEP;
    let filter = EventFilter {
        team,
        user,
        event_type,
        since: since.map_or(kept_from, |s| s.max(kept_from)),
        until: None,
    };
    let mut conn = meta.reader().await?;
    let after = match cursor {
        None => None,
        Some(c) => {
            let e = event(&mut conn, c)
                .await?
                .filter(|e| e.team_id == team)
                .ok_or_else(|| bad_cursor("next_cursor"))?;
            Some(position(&e))
        }
    };
    let mut page = list_events(&mut conn, &filter, after.as_ref(), limit + 1).await?;
    drop(conn);
    for e in &mut page {
        whole_body(store, e).await;
    }
    Ok(split_page(page, limit, |e| e.id))
}

/// Puts an event stored by reference to its records back together (`events::records`).
/// If its records cannot be read any more (the user's data was erased), it is listed with an
/// empty record list, and the reason logged.
pub async fn whole_body(store: &HealthStore, e: &mut StoredEvent) {
    let Some(pointer) = e.records.take() else {
        return;
    };
    let rendered =
        super::records::body(store, e.team_id, e.user_id, &e.body, Some(&pointer.json)).await;
    match rendered {
        Ok(body) => e.body = body,
        Err(error) => tracing::error!(%error, event = %e.id, "could not render an event's body"),
    }
}
