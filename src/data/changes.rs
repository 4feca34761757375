//! What a push changed, as `daily.data.<resource>.created` / `.updated` events: records whose
//! key the user had no record of are created, records replacing one with different content are
//! updated, and records equal to the stored ones (an identical re-push) emit nothing.
//!
//! Records are compared as the getters render them (`ingest::render_*`), so an event's `data`
//! is exactly what `GET /v2/summary/<kind>` or `/v2/timeseries/...` shows for those records;
//! summaries' `created_at`/`updated_at` (the ingestion time) are left out of the comparison.
//! Keys are the store's record keys (`Dataset::key_columns`): a push has one provider and
//! source type, so only stored records of those are read, in the push's time window.
//!
//! One event per (resource, source, created|updated), split under 1 MiB per body.

use std::collections::HashMap;
use std::ops::Range;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{
    Array, Date32Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::compute::kernels::cmp::eq;
use serde_json::Value;

use super::DataError;
use super::connections::resource_name;
use crate::events::{Event, EventType, EventUser};
use crate::ingest;
use crate::schema::{Dataset, Table};
use crate::store::health::HealthStore;
use crate::store::metadata::User;

/// The stored records a push's datasets may replace, rendered and keyed, read before the write.
#[derive(Debug, Default)]
pub struct Before(Vec<(Dataset, HashMap<String, Value>)>);

fn time_window(dataset: Dataset, batch: &RecordBatch) -> Option<Range<DateTime<Utc>>> {
    let column = batch.column_by_name(dataset.time_column())?;
    let micros: Vec<i64> =
        if let Some(a) = column.as_any().downcast_ref::<TimestampMicrosecondArray>() {
            a.iter().flatten().collect()
        } else if let Some(a) = column.as_any().downcast_ref::<Date32Array>() {
            a.iter()
                .flatten()
                .map(|d| i64::from(d) * 86_400_000_000)
                .collect()
        } else {
            return None;
        };
    let (min, max) = (micros.iter().min()?, micros.iter().max()?);
    let start = DateTime::from_timestamp_micros(*min)?;
    // A day column's last day is whole; one microsecond past the last instant otherwise.
    let end = DateTime::from_timestamp_micros(max.saturating_add(86_400_000_000))?;
    Some(start..end)
}

fn str_at(batch: &RecordBatch, column: &str) -> Option<String> {
    let a = batch
        .column_by_name(column)?
        .as_any()
        .downcast_ref::<StringArray>()?;
    (!a.is_empty() && a.is_valid(0)).then(|| a.value(0).to_owned())
}

fn keep_source(
    batches: Vec<RecordBatch>,
    source_type: &str,
) -> Result<Vec<RecordBatch>, DataError> {
    let wanted = StringArray::new_scalar(source_type);
    let mut kept = Vec::with_capacity(batches.len());
    for batch in batches {
        let Some(column) = batch.column_by_name("source_type") else {
            continue;
        };
        let filtered = filter_record_batch(&batch, &eq(column, &wanted)?)?;
        if filtered.num_rows() > 0 {
            kept.push(filtered);
        }
    }
    Ok(kept)
}

/// A record as compared: without the ingestion times.
fn comparable(dataset: Dataset, mut record: Value) -> Value {
    if matches!(dataset, Dataset::Table(t) if t != Table::Profile)
        && let Some(obj) = record.as_object_mut()
    {
        obj.remove("created_at");
        obj.remove("updated_at");
    }
    record
}

fn key(dataset: Dataset, record: &Value) -> String {
    match dataset {
        Dataset::Table(_) => record["id"].to_string(),
        Dataset::Timeseries(_) => record["timestamp"]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map_or_else(
                || record["timestamp"].to_string(),
                |t| t.timestamp_micros().to_string(),
            ),
    }
}

fn render(dataset: Dataset, batches: &[RecordBatch], user: &User) -> Vec<Value> {
    match dataset {
        Dataset::Table(t) => ingest::render_summaries(t, batches, user.id),
        Dataset::Timeseries(r) => ingest::render_samples(r, batches),
    }
}

/// Reads what the push's batches may replace: the user's records of the same provider and
/// source type in each batch's time window.
pub async fn before(
    store: &HealthStore,
    user: &User,
    provider: &str,
    batches: &[(Dataset, RecordBatch)],
) -> Result<Before, DataError> {
    let mut out = Vec::with_capacity(batches.len());
    for (dataset, batch) in batches {
        let (Some(window), Some(source_type)) =
            (time_window(*dataset, batch), str_at(batch, "source_type"))
        else {
            continue;
        };
        let stored = super::read(store, user, *dataset, Some(window), Some(provider)).await?;
        let stored = keep_source(stored, &source_type)?;
        let keyed = render(*dataset, &stored, user)
            .into_iter()
            .map(|r| (key(*dataset, &r), comparable(*dataset, r)))
            .collect();
        out.push((*dataset, keyed));
    }
    Ok(Before(out))
}

/// The events of a written push, compared with what was stored before it.
pub fn events(user: &User, batches: &[(Dataset, RecordBatch)], before: &Before) -> Vec<Event> {
    let who = EventUser {
        id: user.id,
        client_user_id: user.client_user_id.clone(),
    };
    let empty = HashMap::new();
    let mut out = Vec::new();
    for (dataset, batch) in batches {
        if batch.num_rows() == 0 {
            continue;
        }
        let stored = before
            .0
            .iter()
            .find(|(d, _)| d == dataset)
            .map_or(&empty, |(_, k)| k);
        let (mut created, mut updated) = (Vec::new(), Vec::new());
        for record in render(*dataset, std::slice::from_ref(batch), user) {
            match stored.get(&key(*dataset, &record)) {
                None => created.push(record),
                Some(old) if *old != comparable(*dataset, record.clone()) => updated.push(record),
                Some(_) => {}
            }
        }
        let name = resource_name(*dataset);
        let source = ingest::render_source(batch, 0);
        for (records, event_type) in [
            (created, EventType::DailyCreated(name)),
            (updated, EventType::DailyUpdated(name)),
        ] {
            if !records.is_empty() {
                out.extend(Event::records(
                    event_type,
                    who.clone(),
                    records,
                    source.clone(),
                ));
            }
        }
    }
    out
}
