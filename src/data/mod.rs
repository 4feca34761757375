//! The data plane's operations, between the HTTP layer and the parts that do the work: a push
//! is validated by [`crate::ingest`] and written durably to the [`HealthStore`]; getter reads
//! come back from the store, filtered by provider, and are rendered by [`crate::ingest`];
//! timeseries getters read one page at a time ([`sample_page`]). A push given as JSON text
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
//!   ([`changes`]) and `provider.connection.created` for a first push of a provider; the
//!   events are held before the write and released after it ([`held`] recovers a crash in
//!   between); a demo connection emits `provider.connection.created` and one
//!   `historical.data.<resource>.created` per resource, not daily events;
//! - `ingestion_start`/`ingestion_end` do not reject pushed records; they bound the window the
//!   aggregate engine reads.

pub mod changes;
pub mod connections;
pub mod demo;
pub mod held;
mod pages;

pub use pages::{SampleFilter, sample_page};

use std::ops::Range;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::compute::kernels::cmp::eq;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::events::outbox::Holder;
use crate::events::{Event, EventType, EventUser};
use crate::store::metadata;

use crate::ingest::{self, PushBatches, PushUser};
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
}

/// The user's fallback zone, parsed (stored zones were validated on the way in).
pub fn fallback_zone(user: &User) -> Option<chrono_tz::Tz> {
    user.fallback_time_zone
        .as_ref()
        .and_then(|z| z.value.parse().ok())
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
    store_push(meta, store, user, parsed).await
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
        tokio::task::spawn_blocking(move || ingest::parse_push_json(&body, &push_user, now))
            .await??;
    store_push(meta, store, user, parsed).await
}

fn push_user(user: &User) -> PushUser {
    PushUser {
        fallback_time_zone: fallback_zone(user),
    }
}

/// Commits a parsed push all-or-nothing, asks for compaction of what it wrote, connects its
/// provider and emits what changed (`changes.rs`; `provider.connection.created` for a first
/// push of the provider).
///
/// The data's events are computed before the write and written held (`events::outbox::hold`),
/// then released in the connection's transaction once the data is durable; a crash between
/// the two leaves them held, and recovery (`held.rs`) releases them when the data is in the
/// store, so a committed push announces itself even if it was never acknowledged (its retry,
/// being identical, would emit nothing).
async fn store_push(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    parsed: PushBatches,
) -> Result<Value, DataError> {
    let counts = parsed.counts();
    let provider = parsed.provider.clone();
    let before = changes::before(store, user, &provider, &parsed.batches).await?;
    // Known before the write, so the connection's event comes first; two concurrent first
    // pushes of a provider may both announce it.
    let had = meta
        .connections(user.id)
        .await?
        .iter()
        .any(|c| c.provider == provider);
    let mut holder: Option<Holder> = None;
    if !had {
        let pushed: Vec<Dataset> = parsed.batches.iter().map(|(d, _)| *d).collect();
        let created = connection_created(store, user, &provider, &pushed).await?;
        hold_one(meta, user, &mut holder, &created).await?;
    }
    let mut stream = changes::EventStream::new(user, parsed.batches.clone(), before);
    loop {
        let (back, event) = tokio::task::spawn_blocking(move || {
            let event = stream.next_event();
            (stream, event)
        })
        .await?;
        stream = back;
        match event {
            Some(event) => hold_one(meta, user, &mut holder, &event).await?,
            None => break,
        }
    }
    drop(stream);
    let held = match holder {
        Some(h) => h.finish().await?,
        None => Default::default(),
    };
    if let Err(e) = write_parsed(meta, store, user, parsed).await {
        crate::events::outbox::abandon(meta, &held).await;
        return Err(e);
    }
    let mut tx = meta.begin().await?;
    metadata::connections::upsert_connection(
        &mut tx,
        user.id,
        &provider,
        ConnectionStatus::Connected,
    )
    .await?;
    let released =
        crate::events::outbox::release(&mut tx, user.team_id, &held, metadata::now()).await?;
    tx.commit().await.map_err(MetadataError::from)?;
    if released.deliveries > 0 {
        meta.jobs_wake().notify_waiters();
    }
    Ok(counts)
}

/// Adds an event to the push's hold, starting the hold at its first event.
async fn hold_one(
    meta: &MetadataStore,
    user: &User,
    holder: &mut Option<Holder>,
    event: &Event,
) -> Result<(), DataError> {
    if holder.is_none() {
        *holder = Some(Holder::begin(meta, user.team_id, held::job));
    }
    if let Some(h) = holder.as_mut() {
        h.add(event).await?;
    }
    Ok(())
}

/// Writes a parsed push all-or-nothing and asks for compaction of what it wrote; emits
/// nothing (pulls emit their own events when the pull completes). Answers the datasets written.
pub async fn write_parsed(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    parsed: PushBatches,
) -> Result<Vec<Dataset>, DataError> {
    let written: Vec<Dataset> = parsed.batches.iter().map(|(dataset, _)| *dataset).collect();
    store
        .write_push(user.team_id, user.id, parsed.batches)
        .await?;
    // Compaction only tidies what is already durable: failing to ask for it loses nothing.
    let delay = crate::jobs::compaction::DEFAULT_DELAY;
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
        .map(connections::resource_name)
        .collect();
    let entry = crate::providers::provider(provider);
    let availability: serde_json::Map<String, Value> = entry
        .map(|p| p.supported_resources)
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let status = if stored.contains(r) {
                "available"
            } else {
                "unavailable"
            };
            ((*r).to_owned(), json!({ "status": status }))
        })
        .collect();
    let provider_obj = json!({
        "name": entry.map_or(provider, |p| p.name),
        "slug": provider,
        "logo": entry.map(|p| p.logo.clone()),
    });
    Ok(Event {
        event_type: EventType::ConnectionCreated,
        user: Some(EventUser {
            id: user.id,
            client_user_id: user.client_user_id.clone(),
        }),
        data: json!({
            "user_id": user.id,
            "provider": provider_obj,
            "source": provider_obj,
            "resource_availability": availability,
        }),
    })
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
    let Some(provider) = provider else {
        return Ok(batches);
    };
    let wanted = StringArray::new_scalar(provider);
    let mut kept = Vec::with_capacity(batches.len());
    for batch in batches {
        let Some(column) = batch.column_by_name("source_provider") else {
            continue;
        };
        let mask = eq(column, &wanted)?;
        let filtered = filter_record_batch(&batch, &mask)?;
        if filtered.num_rows() > 0 {
            kept.push(filtered);
        }
    }
    Ok(kept)
}

/// Removes every dataset of a user.
pub async fn delete_user_data(
    store: &HealthStore,
    team: Uuid,
    user: Uuid,
) -> Result<(), DataError> {
    store.delete_user(team, user).await?;
    Ok(())
}
