//! The data plane's operations, between the HTTP layer and the parts that do the work: a push
//! is validated by [`crate::ingest`] and written durably to the [`HealthStore`]; getter reads
//! come back from the store, filtered by provider, and are rendered by [`crate::ingest`];
//! timeseries getters read one page at a time ([`sample_page`]), skipping where the series has
//! no data; every getter runs within a time limit ([`within`]). A push given as JSON text
//! ([`push_json`]) is parsed in one pass on a blocking thread, never as one JSON tree.
//!
//! Decisions where the specs are silent:
//! - a push is validated whole before anything is written, then written all-or-nothing
//!   ([`HealthStore::write_push`]): one segment per dataset, committed by one record written
//!   last, so a crash leaves every dataset of the push stored or none; it is acknowledged once
//!   committed. A client retrying an unacknowledged push that did commit is harmless:
//!   replacement by record key makes the retry idempotent;
//! - a push connects its provider to the user (status `connected`), so pushed data shows under
//!   `GET /v2/user/providers/{user_id}`;
//! - a push emits `daily.data.<resource>.created` / `.updated` for what it changed
//!   ([`changes`]) and `provider.connection.created` for a first push of a provider; what
//!   changed is taken before the write, the events are made after it by a durable job
//!   ([`announce`], which also resolves a crash in between); a demo connection emits `provider.connection.created` and one
//!   `historical.data.<resource>.created` per resource, not daily events;
//! - each summary record's payload as received (the record as pushed, a pulled record's
//!   provider document) is kept after the push commits, for the raw getters ([`raw`]);
//! - `ingestion_start`/`ingestion_end` do not reject pushed records; they bound the window the
//!   aggregate engine reads.

pub mod announce;
pub mod changes;
pub mod devices;
pub mod introspect;
mod limit;
mod pages;
pub mod provider_list;
pub mod raw;
pub mod sessions;

pub use limit::{Deadline, within};
pub use pages::{SampleFilter, sample_page};

use std::ops::Range;

use chrono::{DateTime, SubsecRound, Utc};
use datafusion::arrow::array::RecordBatch;
use serde_json::Value;
use uuid::Uuid;

use crate::events::data::{ConnectionCreated, HistoricalCreated};
use crate::events::{Event, EventType, EventUser, ProviderRef};
use crate::store::metadata::{self, push_events, push_events::PendingPush};

use crate::ingest::{self, PushBatches, PushUser};
use crate::providers::AuthType;
use crate::schema::Dataset;
use crate::store::health::{HealthStore, StoreError};
use crate::store::metadata::{ConnectionStatus, MetadataError, MetadataStore, User};
use crate::validation::Invalid;

/// Failures of data-plane operations.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The input was rejected.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The health-data store failed.
    #[error("health store: {0}")]
    Store(#[from] StoreError),
    /// The metadata store failed.
    #[error("metadata store: {0}")]
    Metadata(#[from] MetadataError),
    /// An Arrow kernel failed while filtering.
    #[error("arrow: {0}")]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    /// A blocking task (parsing, rendering) panicked or was cancelled.
    #[error("blocking task: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// A getter did not answer within its time limit (the limit); its work was cancelled.
    #[error("did not finish within {0:?}")]
    Timeout(std::time::Duration),
    /// An event stored by reference to its records could not be rendered back to its body
    /// (`events::records`); the reason.
    #[error("event records: {0}")]
    EventRecords(String),
}

impl From<crate::events::records::RecordsError> for DataError {
    fn from(e: crate::events::records::RecordsError) -> Self {
        use crate::events::records::RecordsError;
        match e {
            RecordsError::Broken(why) => DataError::EventRecords(why),
            RecordsError::Store(e) => DataError::Store(e),
            RecordsError::Metadata(e) => DataError::Metadata(e),
            RecordsError::Arrow(e) => DataError::Arrow(e),
            RecordsError::Task(e) => DataError::Task(e),
        }
    }
}

/// The user's fallback zone, parsed (stored zones were validated on the way in).
pub fn fallback_zone(user: &User) -> Option<chrono_tz::Tz> {
    user.fallback_zone()
}

/// Validates a push body and stores it durably; answers the counts per table.
pub async fn push(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    body: &Value,
    now: DateTime<Utc>,
) -> Result<Value, DataError> {
    let parsed = ingest::parse_push(body, &push_user(user), now)?;
    store_push(meta, store, user, parsed, now).await
}

/// Validates a columnar push (one timeseries as an Arrow IPC stream or a Parquet file, see
/// `ingest::parse_push_columnar`) on a blocking thread; [`store_push`] then stores it exactly
/// as a JSON push is stored.
pub async fn parse_columnar(
    body: bytes::Bytes,
    format: ingest::Columnar,
    target: ingest::ColumnarTarget,
    now: DateTime<Utc>,
) -> Result<PushBatches, DataError> {
    Ok(crate::telemetry::spawn_blocking(move || {
        ingest::parse_push_columnar(body, format, &target, now)
    })
    .await??)
}

/// Validates a push body given as JSON text and stores it durably; answers the counts per
/// table. The text is parsed in one pass on a blocking thread and dropped before the writes,
/// so a push costs about its body plus its Arrow batches (see `ingest::parse_push_json`).
pub async fn push_json(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    body: bytes::Bytes,
    now: DateTime<Utc>,
) -> Result<Value, DataError> {
    let push_user = push_user(user);
    let parsed =
        crate::telemetry::spawn_blocking(move || ingest::parse_push_json(&body, &push_user, now))
            .await??;
    store_push(meta, store, user, parsed, now).await
}

/// Whether a push of `provider` reconnects the user's deregistered connection to it: only for
/// providers whose data arrives by push alone (SDK and app providers), whose app sending data
/// again is how they reconnect; a deregistered pull provider waits for a new link
/// ([`metadata::connections::connect_by_push`]).
pub fn push_revives(provider: &str) -> bool {
    crate::providers::provider(provider)
        .is_some_and(|p| matches!(p.auth_type, AuthType::Sdk | AuthType::App))
}

fn push_user(user: &User) -> PushUser {
    PushUser {
        fallback_time_zone: fallback_zone(user),
        user_id: user.id,
    }
}

/// Commits a parsed push all-or-nothing, asks for compaction of what it wrote, connects its
/// provider and has what changed announced (`changes.rs`, `announce.rs`): the push's plan is
/// taken and made durable ([`begin_push`]) while the store encodes and fsyncs the data, which
/// becomes visible only once the plan is (the store's gate), so a crash never leaves data whose
/// events nobody will announce. Its events are made after it by the `events.push` job, so the
/// push pays for a read of what it may replace and one small row, overlapped with its write.
#[tracing::instrument(name = "data.push", skip_all, fields(user_id = %user.id))]
pub async fn store_push(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    mut parsed: PushBatches,
    now: DateTime<Utc>,
) -> Result<Value, DataError> {
    let counts = parsed.counts();
    let payloads = std::mem::take(&mut parsed.raw);
    let provider = parsed.provider.clone();
    let written: Vec<Dataset> = parsed.batches.iter().map(|(dataset, _)| *dataset).collect();
    let (opener, gate) = crate::store::health::gate();
    let planned = async {
        let pending = begin_push(meta, store, user, &parsed, now).await?;
        // An identical re-push (nothing to announce) is not written: its rows would only
        // replace equal rows with a newer `ingested_at`, and an earlier push whose events are
        // not yet announced finds its rows by that stamp. Dropping the opener abandons it.
        if pending.is_some() {
            opener.open();
        }
        Ok::<_, DataError>(pending)
    };
    // Batches are shared, not copied: the plan reads them while the store writes them.
    let write = store.write_push_gated(user.team_id, user.id, parsed.batches.clone(), Some(gate));
    // A failed plan drops the opener, which abandons the write before it is visible.
    let (pending, wrote) = tokio::join!(planned, write);
    let pending = pending?;
    if pending.is_none() && matches!(wrote, Err(StoreError::Abandoned)) {
        return Ok(counts); // every record is stored already, as it is
    }
    if let Err(e) = wrote {
        if let Some(pending) = &pending {
            forget(meta, pending.id).await;
        }
        return Err(e.into());
    }
    raw::keep(store, user, payloads).await;
    // One transaction for everything after the write: a push costs two commits, as it did
    // before it had events (the compaction's and the connection's).
    let mut tx = meta.begin().await?;
    metadata::connections::connect_by_push(&mut tx, user.id, &provider, push_revives(&provider))
        .await?;
    let delay = store.compaction_delay();
    crate::jobs::compaction::schedule_on(&mut tx, user.team_id, user.id, &written, delay).await?;
    if let Some(pending) = &pending {
        let released_at = metadata::now();
        if push_events::release_pending(&mut tx, pending.id, released_at).await? {
            crate::jobs::enqueue(&mut tx, &announce::job(user.team_id, user.id, released_at))
                .await?;
        } else {
            tracing::error!(id = %pending.id, user = %user.id,
                "a push's write outlived its lease; its events were resolved without it");
        }
    }
    tx.commit().await.map_err(MetadataError::from)?;
    if pending.is_some() {
        meta.jobs_wake().notify_waiters();
    }
    Ok(counts)
}

/// The first step of a push, before its data is visible: classifies its records against the
/// store and writes the plan (`announce.rs`), unless it would announce nothing (an identical
/// re-push of a connected provider). Answers the row to release once the data is durable.
pub async fn begin_push(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    parsed: &PushBatches,
    now: DateTime<Utc>,
) -> Result<Option<PendingPush>, DataError> {
    let now = now.trunc_subsecs(6); // as the database keeps instants
    // Two concurrent first pushes of a provider may both announce the connection.
    let existing = meta.connection(user.id, &parsed.provider).await?;
    let first_connection = match existing.map(|c| c.status) {
        None => true,
        Some(ConnectionStatus::Deregistered) => push_revives(&parsed.provider),
        Some(_) => false,
    };
    let plan = changes::plan(
        store,
        user,
        &parsed.provider,
        &parsed.batches,
        now.timestamp_micros(),
        first_connection,
    )
    .await?;
    if plan.is_empty() {
        return Ok(None);
    }
    let pending = PendingPush {
        id: Uuid::new_v4(),
        team_id: user.team_id,
        user_id: user.id,
        plan: serde_json::to_string(&plan).unwrap_or_default(),
        created_at: now,
        expires_at: now + announce::LEASE,
        released_at: None,
    };
    let mut tx = meta.begin().await?;
    push_events::insert_pending(&mut tx, &pending).await?;
    crate::jobs::enqueue(
        &mut tx,
        &announce::job(user.team_id, user.id, pending.expires_at),
    )
    .await?;
    tx.commit().await.map_err(MetadataError::from)?;
    Ok(Some(pending))
}

/// Removes the plan of a push whose write failed (best effort: the announcing job drops it at
/// its expiry otherwise).
async fn forget(meta: &MetadataStore, id: Uuid) {
    let result = match meta.writer().await {
        Ok(mut conn) => push_events::delete_pending(&mut conn, id).await,
        Err(e) => Err(e),
    };
    if let Err(error) = result {
        tracing::warn!(%error, "could not remove a failed push's plan; its expiry will");
    }
}

/// Writes a parsed push all-or-nothing, asks for compaction of what it wrote and for the
/// re-evaluation of the continuous queries reading it; emits no event (pulls emit their own
/// when the pull completes). Answers the datasets written.
pub async fn write_parsed(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    parsed: PushBatches,
) -> Result<Vec<Dataset>, DataError> {
    let written: Vec<Dataset> = parsed.batches.iter().map(|(dataset, _)| *dataset).collect();
    let changes: Vec<_> = parsed
        .batches
        .iter()
        .filter_map(|(d, b)| Some((*d, crate::continuous::span_of(*d, b)?)))
        .collect();
    store
        .write_push(user.team_id, user.id, parsed.batches)
        .await?;
    raw::keep(store, user, parsed.raw).await;
    // Continuous queries must hear of it: a failure fails the pull's step, which is retried.
    let mut tx = meta.begin().await?;
    let marked =
        crate::continuous::record_changes(&mut tx, user, &changes, metadata::now()).await?;
    tx.commit().await.map_err(MetadataError::from)?;
    if marked > 0 {
        meta.jobs_wake().notify_waiters();
    }
    // Compaction only tidies what is already durable: failing to ask for it loses nothing.
    let delay = store.compaction_delay();
    if let Err(error) =
        crate::jobs::compaction::schedule(meta, user.team_id, user.id, &written, delay).await
    {
        tracing::warn!(%error, user = %user.id, "could not schedule compaction");
    }
    Ok(written)
}

/// The `provider.connection.created` event of a user's new connection, with the resource
/// availability `GET /v2/user/providers` shows once `writing` (datasets about to be written)
/// is stored too.
pub(crate) async fn connection_created(
    store: &HealthStore,
    user: &User,
    provider: &str,
    writing: &[Dataset],
) -> Result<Event, DataError> {
    let stored: Vec<&str> = store
        .datasets(user.team_id, user.id)
        .await?
        .into_iter()
        .chain(writing.iter().copied())
        .map(provider_list::resource_name)
        .collect();
    let entry = crate::providers::provider(provider);
    let availability = entry
        .map(|p| p.supported_resources)
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let status = if stored.contains(r) {
                "available"
            } else {
                "unavailable"
            };
            (*r, ResourceStatus { status })
        })
        .collect();
    let provider_obj = ProviderRef::of(provider);
    let data = ConnectionCreated {
        user_id: user.id,
        provider: provider_obj.clone(),
        source: provider_obj,
        resource_availability: InOrder(availability),
    };
    Ok(Event::new(
        EventType::ConnectionCreated,
        Some(EventUser::of(user)),
        &data,
    ))
}

/// One resource's availability in a pushed connection's `provider.connection.created`.
#[derive(Debug, Clone, Copy, serde::Serialize)]
struct ResourceStatus {
    /// `available` or `unavailable`.
    status: &'static str,
}

/// Resources with their statuses, as a JSON object in the catalogue's order (not sorted).
#[derive(Debug, Clone)]
struct InOrder(Vec<(&'static str, ResourceStatus)>);

impl serde::Serialize for InOrder {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(r, status)| (r, status)))
    }
}

/// The `historical.data.<resource>.created` events of a completed historical pull (a demo
/// connection's or a provider's) of `resources` over the days `start..=end`.
pub(crate) fn historical_created(
    user: &User,
    provider: &str,
    resources: &[&'static str],
    (start, end): (chrono::NaiveDate, chrono::NaiveDate),
) -> Vec<Event> {
    let source = ProviderRef::of(provider);
    resources
        .iter()
        .map(|name| {
            let data = HistoricalCreated {
                user_id: user.id,
                start_date: start.to_string(),
                end_date: end.to_string(),
                provider: source.clone(),
            };
            Event::new(
                EventType::HistoricalCreated(name),
                Some(EventUser::of(user)),
                &data,
            )
        })
        .collect()
}

/// Reads a dataset in a window, keeping only rows of `provider` when given.
pub async fn read(
    store: &HealthStore,
    user: &User,
    dataset: Dataset,
    window: Option<Range<DateTime<Utc>>>,
    provider: Option<&str>,
) -> Result<Vec<RecordBatch>, DataError> {
    let batches = store.read(user.team_id, user.id, dataset, window).await?;
    match provider {
        Some(provider) => keep_provider(batches, provider),
        None => Ok(batches),
    }
}

/// The rows of `provider`.
pub(crate) fn keep_provider(
    batches: Vec<RecordBatch>,
    provider: &str,
) -> Result<Vec<RecordBatch>, DataError> {
    Ok(crate::render::keep_equal(
        batches,
        "source_provider",
        provider,
    )?)
}

/// Applies a patch to `user`; `Ok(None)` when it is gone meanwhile. A setting the query
/// language reads (`UserPatch::touches_query_inputs`) marks the user's continuous queries for
/// a whole evaluation in the same transaction. Any mention of such a setting counts, changed or
/// not, so a client retrying a PATCH whose answer it lost records it again.
pub async fn update_user(
    meta: &MetadataStore,
    user: &User,
    patch: metadata::UserPatch,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Option<User>, DataError> {
    let inputs = patch.touches_query_inputs();
    let updated = meta
        .update_user_and(user.team_id, user.id, patch, move |tx, updated| {
            Box::pin(async move {
                if inputs {
                    crate::continuous::record_settings_change(tx, updated, now).await?;
                }
                Ok(())
            })
        })
        .await?;
    if inputs {
        // Evaluations may be due (a wake with none due costs the runners one look).
        meta.jobs_wake().notify_waiters();
    }
    Ok(updated)
}

/// Deletes a user, softly: from now on the user is invisible everywhere (getters, queries,
/// lists, resolve; pulls and events stop), its `client_user_id` stays taken, and a
/// `store.delete_user` job, enqueued in the same transaction and due once `window` has passed,
/// removes its metadata and health data then (see `jobs::erasure`). [`undo_delete`] restores it
/// before that. Answers whether a live user was deleted.
pub async fn delete_user(
    meta: &MetadataStore,
    team: Uuid,
    user: Uuid,
    window: std::time::Duration,
) -> Result<bool, DataError> {
    let now = metadata::now();
    let mut tx = meta.begin().await?;
    let Some(stamp) = metadata::deleted_users::soft_delete(&mut tx, team, user, now).await? else {
        return Ok(false);
    };
    let window = chrono::Duration::from_std(window).unwrap_or(chrono::Duration::MAX);
    let due = now.checked_add_signed(window).unwrap_or(now);
    let purge = crate::jobs::erasure::purge_job(team, user, &stamp, due);
    crate::jobs::enqueue(&mut tx, &purge).await?;
    tx.commit().await.map_err(MetadataError::from)?;
    meta.jobs_wake().notify_waiters();
    Ok(true)
}

/// What [`undo_delete`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undo {
    /// The user is back, with all its data.
    Restored,
    /// The user is not deleted.
    NotDeleted,
    /// No such user, or its window is over.
    NotFound,
}

/// Restores a user deleted less than `window` ago, with everything it had (nothing was removed
/// yet: the purge of that deletion then finds the user live and does nothing).
pub async fn undo_delete(
    meta: &MetadataStore,
    team: Uuid,
    who: &metadata::deleted_users::UserRef,
    window: std::time::Duration,
) -> Result<Undo, DataError> {
    let mut tx = meta.begin().await?;
    let stamp = match metadata::deleted_users::any_user(&mut tx, team, who).await? {
        None => return Ok(Undo::NotFound),
        Some((_, None)) => return Ok(Undo::NotDeleted),
        Some((user, Some(stamp))) => (user.id, stamp),
    };
    let (id, stamp) = stamp;
    let deleted_at: chrono::DateTime<chrono::Utc> =
        metadata::parse("users.deleted_at", stamp.clone())?;
    let window = chrono::Duration::from_std(window).unwrap_or(chrono::Duration::MAX);
    if metadata::now() >= deleted_at.checked_add_signed(window).unwrap_or(deleted_at) {
        return Ok(Undo::NotFound);
    }
    let restored = metadata::deleted_users::restore(&mut tx, team, id, &stamp).await?;
    tx.commit().await.map_err(MetadataError::from)?;
    Ok(if restored {
        Undo::Restored
    } else {
        Undo::NotFound
    })
}
