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
use crate::store::metadata::events::{
    StoredEvent, drop_hold, event, insert_event, insert_held_event, release_hold,
};
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
        let stored = stored_event(team, event, now, i64::try_from(ordinal).unwrap_or(i64::MAX));
        insert_event(&mut *conn, &stored).await?;
        refs.push(EventRef::from(&stored));
    }
    fan_out(conn, team, refs, now).await
}

/// The row of an event, with a fresh id.
fn stored_event(team: Uuid, event: &Event, now: DateTime<Utc>, ordinal: i64) -> StoredEvent {
    StoredEvent {
        id: Uuid::new_v4(),
        team_id: team,
        user_id: event.user.as_ref().map(|u| u.id),
        event_type: event.event_type.name(),
        body: event.envelope(team),
        created_at: now,
        ordinal,
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

/// How long a hold lasts before recovery resolves it: far longer than any push's write.
pub const HOLD_LEASE: chrono::Duration = chrono::Duration::minutes(5);

/// Events written before the change they announce is durable (health data, which lives outside
/// the database): held, invisible and undelivered, until [`release`]d after the write, or
/// resolved by recovery if the writer dies in between (`data::held`). Only the events' ids and
/// types are kept in memory; their bodies are written as they are made ([`Holder::add`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Held {
    /// The hold.
    pub token: Uuid,
    /// The held events, in order.
    pub events: Vec<EventRef>,
}

/// Writes held events as they are made, so a push of a million samples never has all its
/// event bodies in memory at once: in one transaction per [`HOLD_BATCH_BYTES`] of bodies (one
/// commit for an ordinary push), the first also enqueuing the recovery job. A hold needs no
/// atomicity beyond that: until it is released nothing of it is visible, and recovery resolves
/// whatever part of it a crash left.
pub struct Holder {
    meta: MetadataStore,
    team: Uuid,
    now: DateTime<Utc>,
    held: Held,
    recovery: Option<crate::jobs::NewJob>,
    tx: Option<sqlx::Transaction<'static, sqlx::Any>>,
    batch_bytes: usize,
}

impl std::fmt::Debug for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holder")
            .field("token", &self.held.token)
            .field("events", &self.held.events.len())
            .finish_non_exhaustive()
    }
}

/// Bodies written per transaction of a hold: bounds how long a hold keeps the writer.
pub const HOLD_BATCH_BYTES: usize = 4 * 1024 * 1024;

impl Holder {
    /// Starts a hold for `team`; `recovery` is the job that resolves the hold if it is still
    /// there when it expires, enqueued with its first events, so a hold never outlives every
    /// process that could resolve it.
    pub fn begin(
        meta: &MetadataStore,
        team: Uuid,
        recovery: impl FnOnce(DateTime<Utc>) -> crate::jobs::NewJob,
    ) -> Holder {
        let now = crate::store::metadata::now();
        Holder {
            meta: meta.clone(),
            team,
            now,
            held: Held {
                token: Uuid::new_v4(),
                events: Vec::new(),
            },
            recovery: Some(recovery(now + HOLD_LEASE)),
            tx: None,
            batch_bytes: 0,
        }
    }

    /// Writes one more held event.
    pub async fn add(&mut self, event: &Event) -> Result<(), MetadataError> {
        let ordinal = i64::try_from(self.held.events.len()).unwrap_or(i64::MAX);
        let stored = stored_event(self.team, event, self.now, ordinal);
        let expires = self.now + HOLD_LEASE;
        let tx = match &mut self.tx {
            Some(tx) => tx,
            slot => slot.insert(self.meta.begin().await?),
        };
        if let Some(job) = self.recovery.take() {
            crate::jobs::enqueue(&mut *tx, &job).await?;
        }
        insert_held_event(&mut *tx, &stored, self.held.token, expires).await?;
        self.batch_bytes += stored.body.len();
        self.held.events.push(EventRef::from(&stored));
        if self.batch_bytes >= HOLD_BATCH_BYTES {
            self.commit().await?;
        }
        Ok(())
    }

    async fn commit(&mut self) -> Result<(), MetadataError> {
        if let Some(tx) = self.tx.take() {
            tx.commit().await?;
        }
        self.batch_bytes = 0;
        Ok(())
    }

    /// Commits what is written: the hold, to [`release`] once the change is durable.
    pub async fn finish(mut self) -> Result<Held, MetadataError> {
        self.commit().await?;
        Ok(self.held)
    }
}

/// Writes `events` held (see [`Held`]); for callers with few events at hand.
pub async fn hold(
    meta: &MetadataStore,
    team: Uuid,
    events: &[Event],
    recovery: impl FnOnce(DateTime<Utc>) -> crate::jobs::NewJob,
) -> Result<Held, MetadataError> {
    if events.is_empty() {
        return Ok(Held::default());
    }
    let mut holder = Holder::begin(meta, team, recovery);
    for event in events {
        holder.add(event).await?;
    }
    holder.finish().await
}

/// Releases held events on `conn` (the caller's transaction) and fans them out. If recovery
/// got there first (the writer outlived its hold), it either released them already (nothing to
/// do) or dropped them, not finding the data yet: then they are lost, which is logged (a write
/// never takes [`HOLD_LEASE`] in practice).
pub async fn release(
    conn: &mut AnyConnection,
    team: Uuid,
    held: &Held,
    now: DateTime<Utc>,
) -> Result<Enqueued, MetadataError> {
    let Some(first) = held.events.first() else {
        return Ok(Enqueued::default());
    };
    if release_hold(&mut *conn, held.token).await? > 0 {
        return fan_out(conn, team, held.events.iter().cloned(), now).await;
    }
    if event(&mut *conn, first.id).await?.is_none() {
        tracing::error!(token = %held.token, events = held.events.len(),
            "a write outlived its events' hold and recovery dropped them");
    }
    Ok(Enqueued::default())
}

/// Drops held events whose change failed (best effort: recovery drops them otherwise).
pub async fn abandon(meta: &MetadataStore, held: &Held) {
    if held.events.is_empty() {
        return;
    }
    let result = match meta.writer().await {
        Ok(mut conn) => drop_hold(&mut conn, held.token).await.map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(error) = result {
        tracing::warn!(%error, "could not drop held events; recovery will");
    }
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
