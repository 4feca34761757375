//! The data plane's operations, between the HTTP layer and the parts that do the work: a push
//! is validated by [`crate::ingest`] and written durably to the [`HealthStore`]; getter reads
//! come back from the store, filtered by provider, and are rendered by [`crate::ingest`].
//!
//! Decisions where the specs are silent:
//! - a push is validated whole before anything is written, then written one dataset at a time;
//!   it is acknowledged only once every dataset is durable. A crash in between may leave some
//!   datasets of an unacknowledged push stored: the client retries, and replacement by record
//!   key makes the retry idempotent;
//! - a push connects its provider to the user (status `connected`), so pushed data shows under
//!   `GET /v2/user/providers/{user_id}`;
//! - `ingestion_start`/`ingestion_end` do not reject pushed records; they bound the window the
//!   aggregate engine reads.

pub mod connections;
pub mod demo;

use std::ops::Range;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::compute::kernels::cmp::eq;
use serde_json::Value;
use uuid::Uuid;

use crate::ingest::{self, PushUser};
use crate::schema::Dataset;
use crate::store::health::{HealthStore, StoreError};
use crate::store::metadata::{MetadataError, MetadataStore, User};
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
    let push_user = PushUser {
        fallback_time_zone: fallback_zone(user),
    };
    let parsed = ingest::parse_push(body, &push_user, now)?;
    for (dataset, batch) in &parsed.batches {
        store
            .write(user.team_id, user.id, *dataset, batch.clone())
            .await?;
    }
    if let Some(provider) = body.get("provider").and_then(Value::as_str) {
        meta.upsert_connection(user.id, provider, "connected")
            .await?;
    }
    Ok(parsed.counts())
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
