//! The outbox: an event is written in the transaction of the change that causes it, together
//! with one delivery per subscribed endpoint and the job that sends each (endpoint, user)
//! stream. Nothing is kept in memory: a crash after the commit loses nothing, a crash before it
//! loses the change too.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::Event;
use super::delivery;
use super::types::matches;
use crate::store::metadata::events::{StoredEvent, insert_delivery, insert_event};
use crate::store::metadata::webhooks::{Endpoint, endpoints};
use crate::store::metadata::{MetadataError, MetadataStore};

/// What an enqueue wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Enqueued {
    /// The events' ids, in order.
    pub events: Vec<Uuid>,
    /// Deliveries created (wake the runners after the commit when non-zero).
    pub deliveries: usize,
}

/// Writes `events` of `team` on `conn` (the caller's transaction), fanned out to the team's
/// enabled endpoints that subscribe to them. Wake this process's job runners after the commit
/// ([`publish`] does all of it for callers without a transaction).
pub async fn enqueue(
    conn: &mut AnyConnection,
    team: Uuid,
    events: &[Event],
    now: DateTime<Utc>,
) -> Result<Enqueued, MetadataError> {
    let mut out = Enqueued::default();
    if events.is_empty() {
        return Ok(out);
    }
    let targets: Vec<Endpoint> = endpoints(&mut *conn, team)
        .await?
        .into_iter()
        .filter(|e| e.disabled_at.is_none())
        .collect();
    for (ordinal, event) in events.iter().enumerate() {
        let ordinal = i64::try_from(ordinal).unwrap_or(i64::MAX);
        let stored = StoredEvent {
            id: Uuid::new_v4(),
            team_id: team,
            user_id: event.user.as_ref().map(|u| u.id),
            event_type: event.event_type.name(),
            body: event.envelope(team),
            created_at: now,
            ordinal,
        };
        insert_event(&mut *conn, &stored).await?;
        for endpoint in &targets {
            if !matches(endpoint.event_types.as_deref(), &stored.event_type) {
                continue;
            }
            deliver(&mut *conn, endpoint, &stored, now, ordinal).await?;
            out.deliveries += 1;
        }
        out.events.push(stored.id);
    }
    Ok(out)
}

/// Adds one delivery of a stored event to an endpoint and makes sure its stream's job exists.
pub(super) async fn deliver(
    conn: &mut AnyConnection,
    endpoint: &Endpoint,
    event: &StoredEvent,
    now: DateTime<Utc>,
    ordinal: i64,
) -> Result<(), MetadataError> {
    let user_key = event.user_id.map(|u| u.to_string()).unwrap_or_default();
    insert_delivery(&mut *conn, endpoint.id, event.id, &user_key, now, ordinal).await?;
    crate::jobs::enqueue(&mut *conn, &delivery::job(endpoint, &user_key, now)).await?;
    Ok(())
}

/// Writes `events` in a transaction of their own and wakes the job runners: for changes that
/// are not themselves in the metadata database.
pub async fn publish(
    meta: &MetadataStore,
    team: Uuid,
    events: &[Event],
) -> Result<Enqueued, MetadataError> {
    if events.is_empty() {
        return Ok(Enqueued::default());
    }
    let mut tx = meta.begin().await?;
    let out = enqueue(&mut tx, team, events, crate::store::metadata::now()).await?;
    tx.commit().await?;
    if out.deliveries > 0 {
        meta.jobs_wake().notify_waiters();
    }
    Ok(out)
}
