//! Announcing pushes: the `events.push` job turns a push's [`Plan`] into its events, after the
//! push's data is durable and off the push's path.
//!
//! A push (`data::store_push`) writes, in order:
//! 1. its plan, as a `push_events` row due to expire [`LEASE`] later, with this job due then;
//! 2. its data (`HealthStore::write_push_gated`), encoded and fsynced while 1 commits but made
//!    visible only after it;
//! 3. in one transaction: its connection, the compaction of what it wrote, the row's release
//!    and this job due now.
//!
//! The job works one user at a time (one job per user, `unique_key`), oldest row first, so a
//! user's pushes are announced in the order they were made; each row's events and their
//! deliveries are written in one transaction with the row's removal, so a crash repeats a whole
//! announcement or none. The push's records are read back and its events rendered before that
//! transaction opens: the metadata database has one writer, and a push waits for it (with the
//! rendering inside, a push of 50,000 samples following another took 210–430 ms instead of
//! ~100 ms, issue 43). A row left unreleased by a process that died between 1 and 3 waits
//! for its expiry (the rows behind it wait too), then is resolved by looking at the store: if
//! records with the push's stamp are there, the push committed (merely unacknowledged) and is
//! announced, with its connection; otherwise it never committed and the row is dropped (the
//! client's retry announces afresh). A write that outlives [`LEASE`] (none does in practice)
//! loses its events; its release logs it.

use uuid::Uuid;

use super::DataError;
use super::changes::{EventStream, Plan, changed_records};
use crate::events::outbox;
use crate::events::records::materialize_overlapping;
use crate::jobs::{JobContext, JobError, JobHandler, NewJob, Outcome};
use crate::schema::Dataset;
use crate::store::health::HealthStore;
use crate::store::metadata::events::StoredEvent;
use crate::store::metadata::push_events::{delete_pending, oldest_pending};
use crate::store::metadata::{self, MetadataError, MetadataStore, User};

/// The kind's name.
pub const KIND: &str = "events.push";

/// How long a push's write may take before recovery resolves its row without it: far longer
/// than any write.
pub const LEASE: chrono::Duration = chrono::Duration::minutes(5);

/// The user's announcing job, due at `at` (one pending per user: its due time only moves
/// earlier).
pub fn job(team: Uuid, user: Uuid, at: chrono::DateTime<chrono::Utc>) -> NewJob {
    NewJob::typed(KIND, &Payload { user })
        .for_team(team)
        .at(at)
        .unique(format!("{KIND}:{user}"))
}

/// The job's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Payload {
    /// The user whose pushes it announces.
    pub user: Uuid,
}

/// What a pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Announced {
    /// Pushes announced.
    pub pushes: usize,
    /// Unreleased rows dropped (their push never committed).
    pub dropped: usize,
    /// Events written.
    pub events: usize,
    /// Deliveries written.
    pub deliveries: usize,
    /// Continuous-query evaluations asked for.
    pub evaluations: usize,
    /// When the oldest row left (unreleased, unexpired) expires.
    pub next: Option<chrono::DateTime<chrono::Utc>>,
}

/// Announces the user's pushes, oldest first, up to the first one still being written.
pub async fn announce(
    meta: &MetadataStore,
    store: &HealthStore,
    user_id: Uuid,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Announced, DataError> {
    let mut out = Announced::default();
    loop {
        let pending = oldest_pending(&mut *meta.reader().await?, user_id).await?;
        let Some(pending) = pending else { break };
        let recovered = pending.released_at.is_none();
        let dropped = out.dropped;
        if recovered && pending.expires_at > now {
            out.next = Some(pending.expires_at);
            break;
        }
        let plan: Option<Plan> = serde_json::from_str(&pending.plan)
            .inspect_err(|error| tracing::error!(%error, id = %pending.id, "unreadable push plan"))
            .ok();
        let user = meta.user(pending.team_id, pending.user_id).await?;
        // Read back and rendered before the transaction: the metadata database has one writer,
        // and every push (of any user) waits for it while this holds it.
        let prepared = match (plan, user) {
            (Some(plan), Some(user)) => {
                let rows = prepare(store, &user, &plan, now, out.events).await?;
                Some((plan, user, rows))
            }
            _ => None,
        };
        let mut tx = meta.begin().await?;
        if let Some((plan, user, prepared)) = prepared {
            // Compaction waits for this row: the rows this push replaces are still there to
            // write back the events that refer to them.
            for entry in &plan.entries {
                if let Some(window) = entry.overlap {
                    materialize_overlapping(
                        &mut tx,
                        store,
                        user.team_id,
                        user.id,
                        &entry.dataset,
                        window,
                    )
                    .await?;
                }
            }
            // A push that never committed left no record with its stamp.
            if recovered && !prepared.found {
                out.dropped += 1;
            } else {
                let mut refs = Vec::with_capacity(prepared.rows.len());
                for row in &prepared.rows {
                    refs.push(outbox::insert_row(&mut tx, row).await?);
                }
                if recovered {
                    metadata::connections::connect_by_push(
                        &mut tx,
                        user.id,
                        &plan.provider,
                        super::push_revives(&plan.provider),
                    )
                    .await?;
                }
                // Continuous queries reading what the push changed re-evaluate it.
                let changes: Vec<_> = plan
                    .entries
                    .iter()
                    .filter_map(|e| Some((Dataset::from_path(&e.dataset)?, e.span?)))
                    .collect();
                out.evaluations +=
                    crate::continuous::record_changes(&mut tx, &user, &changes, now).await?;
                out.events += refs.len();
                out.deliveries += outbox::fan_out(&mut tx, user.team_id, refs, now)
                    .await?
                    .deliveries;
                out.pushes += 1;
            }
        }
        delete_pending(&mut tx, pending.id).await?;
        tx.commit().await.map_err(MetadataError::from)?;
        if recovered {
            tracing::info!(id = %pending.id, user = %user_id, announced = out.dropped == dropped,
                "resolved a push whose writer did not finish");
        }
    }
    if out.deliveries + out.evaluations > 0 {
        meta.jobs_wake().notify_waiters();
    }
    Ok(out)
}

/// A push's event rows, made before the transaction that writes them.
struct Prepared {
    /// Whether the store holds records with the push's stamp (a push that never committed
    /// left none).
    found: bool,
    /// The rows, in order: the connection's event first, then the records' events.
    rows: Vec<StoredEvent>,
}

/// Reads back what `plan`'s push wrote and renders its events as rows, numbered from `first`
/// (events are delivered in (created_at, ordinal) order, and a pass's pushes share `now`).
async fn prepare(
    store: &HealthStore,
    user: &User,
    plan: &Plan,
    now: chrono::DateTime<chrono::Utc>,
    first: usize,
) -> Result<Prepared, DataError> {
    let groups = changed_records(store, user, plan).await?;
    let found = !groups.is_empty();
    let team = user.team_id;
    let mut rows = Vec::new();
    if plan.first_connection {
        let event = super::connection_created(store, user, &plan.provider, &[]).await?;
        rows.push(outbox::row(team, &event, now, first));
    }
    let mut stream = EventStream::new(user, groups);
    loop {
        let ordinal = first + rows.len();
        // Rendering is CPU work: on the blocking pool, an event at a time.
        let (back, row) = crate::telemetry::spawn_blocking(move || {
            let row = stream
                .next_stored()
                .map(|(event, referred)| match referred {
                    Some(r) => {
                        outbox::referring_row(team, &event, (r.shell, r.pointer), now, ordinal)
                    }
                    None => outbox::row(team, &event, now, ordinal),
                });
            (stream, row)
        })
        .await?;
        stream = back;
        match row {
            Some(row) => rows.push(row),
            None => break,
        }
    }
    Ok(Prepared { found, rows })
}

/// The `events.push` handler.
#[derive(Debug, Clone)]
pub struct Announcer {
    health: HealthStore,
}

impl Announcer {
    /// A handler reading pushes back from `health`.
    pub fn new(health: HealthStore) -> Self {
        Announcer { health }
    }
}

#[async_trait::async_trait]
impl JobHandler for Announcer {
    fn kind(&self) -> &'static str {
        KIND
    }

    type Payload = Payload;

    async fn run(&self, ctx: &JobContext, payload: Payload) -> Result<Outcome, JobError> {
        let user = payload.user;
        let out = announce(&ctx.meta, &self.health, user, ctx.now())
            .await
            .map_err(|e| JobError::Retry(format!("announcing pushes: {e}")))?;
        Ok(match out.next {
            Some(at) => Outcome::RetryAt(at),
            None => Outcome::Done,
        })
    }
}
