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
use crate::store::metadata::deliveries::insert_delivery;
use crate::store::metadata::events::{RecordsPointer, StoredEvent, insert_event};
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
    let mut refs = Vec::with_capacity(events.len());
    for (ordinal, event) in events.iter().enumerate() {
        refs.push(insert(&mut *conn, team, event, now, ordinal).await?);
    }
    fan_out(conn, team, refs, now).await
}

/// Writes one event of `team` on `conn`, `ordinal`-th of those written at `now`, without
/// fanning it out: [`fan_out`] the returned references once every event of the change is
/// written.
pub async fn insert(
    conn: &mut AnyConnection,
    team: Uuid,
    event: &Event,
    now: DateTime<Utc>,
    ordinal: usize,
) -> Result<EventRef, MetadataError> {
    insert_row(conn, &row(team, event, now, ordinal)).await
}

/// Like [`insert`], for an event stored by reference to its records (`events::records`):
/// `shell` is its envelope with an empty record list, `pointer` where its records are.
pub async fn insert_referring(
    conn: &mut AnyConnection,
    team: Uuid,
    event: &Event,
    stored: (String, RecordsPointer),
    now: DateTime<Utc>,
    ordinal: usize,
) -> Result<EventRef, MetadataError> {
    insert_row(conn, &referring_row(team, event, stored, now, ordinal)).await
}

/// Writes a row [`row`] or [`referring_row`] made, as [`insert`] does. Making the rows is the
/// rendering (an envelope can hold thousands of records); a caller that holds the database's
/// one writer while it writes makes them first (`data::announce`).
pub async fn insert_row(
    conn: &mut AnyConnection,
    stored: &StoredEvent,
) -> Result<EventRef, MetadataError> {
    insert_event(&mut *conn, stored).await?;
    Ok(EventRef::from(stored))
}

/// The row of an event, with a fresh id and its whole body: `ordinal`-th of those written at
/// `now`.
pub fn row(team: Uuid, event: &Event, now: DateTime<Utc>, ordinal: usize) -> StoredEvent {
    StoredEvent {
        body: event.envelope(team),
        records: None,
        ..bare_row(team, event, now, ordinal)
    }
}

/// The row of an event stored by reference to its records: its `shell` (the envelope with an
/// empty record list) and the `pointer` to its records. The whole envelope is never rendered.
pub fn referring_row(
    team: Uuid,
    event: &Event,
    (shell, pointer): (String, RecordsPointer),
    now: DateTime<Utc>,
    ordinal: usize,
) -> StoredEvent {
    StoredEvent {
        body: shell,
        records: Some(pointer),
        ..bare_row(team, event, now, ordinal)
    }
}

/// A row with a fresh id and no body yet.
fn bare_row(team: Uuid, event: &Event, now: DateTime<Utc>, ordinal: usize) -> StoredEvent {
    StoredEvent {
        id: Uuid::new_v4(),
        team_id: team,
        user_id: event.user.as_ref().map(|u| u.id),
        event_type: event.event_type.name(),
        body: String::new(),
        created_at: now,
        ordinal: i64::try_from(ordinal).unwrap_or(i64::MAX),
        records: None,
    }
}

/// What fan-out needs of an event: not its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRef {
    /// The event's id.
    pub id: Uuid,
    /// The user it concerns.
    pub user_id: Option<Uuid>,
    /// Its type name.
    pub event_type: String,
    /// Its place among the events written with it.
    pub ordinal: i64,
}

impl From<&StoredEvent> for EventRef {
    fn from(e: &StoredEvent) -> Self {
        EventRef {
            id: e.id,
            user_id: e.user_id,
            event_type: e.event_type.clone(),
            ordinal: e.ordinal,
        }
    }
}

/// Adds the deliveries of stored events to the team's enabled, subscribed endpoints.
pub async fn fan_out(
    conn: &mut AnyConnection,
    team: Uuid,
    events: impl IntoIterator<Item = EventRef>,
    now: DateTime<Utc>,
) -> Result<Enqueued, MetadataError> {
    let mut out = Enqueued::default();
    let mut targets: Option<Vec<Endpoint>> = None;
    for event in events {
        if targets.is_none() {
            targets = Some(
                endpoints(&mut *conn, team)
                    .await?
                    .into_iter()
                    .filter(|e| e.disabled_at.is_none())
                    .collect(),
            );
        }
        for endpoint in targets.iter().flatten() {
            if matches(endpoint.event_types.as_deref(), &event.event_type) {
                deliver(&mut *conn, endpoint, &event, now).await?;
                out.deliveries += 1;
            }
        }
        out.events.push(event.id);
    }
    Ok(out)
}

/// Adds one delivery of a stored event to an endpoint and makes sure its stream's job exists.
pub(super) async fn deliver(
    conn: &mut AnyConnection,
    endpoint: &Endpoint,
    event: &EventRef,
    now: DateTime<Utc>,
) -> Result<(), MetadataError> {
    let user_key = event.user_id.map(|u| u.to_string()).unwrap_or_default();
    insert_delivery(
        &mut *conn,
        endpoint.id,
        event.id,
        &user_key,
        now,
        event.ordinal,
    )
    .await?;
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
