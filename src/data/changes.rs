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
//! Memory stays bounded on big pushes: stored records are kept as a hash of their rendering per
//! key, and the push's records are rendered [`CHUNK`] rows at a time into events that the
//! caller writes one by one ([`EventStream`]). One event per (resource, source, created or
//! updated) unless its body would pass 1 MiB, when it is split.

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
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

/// Rows rendered at once.
pub const CHUNK: usize = 4096;

/// Stored records by key: the hash of their comparable rendering.
pub type Stored = HashMap<String, u64>;

/// The stored records a push's datasets may replace, read before the write.
#[derive(Debug, Default)]
pub struct Before(Vec<(Dataset, Stored)>);

fn time_window(dataset: Dataset, batch: &RecordBatch) -> Option<Range<DateTime<Utc>>> {
    let column = batch.column_by_name(dataset.time_column())?;
    let (min, max) = if let Some(a) = column.as_any().downcast_ref::<TimestampMicrosecondArray>() {
        (
            datafusion::arrow::compute::min(a)?,
            datafusion::arrow::compute::max(a)?,
        )
    } else if let Some(a) = column.as_any().downcast_ref::<Date32Array>() {
        let day = 86_400_000_000;
        (
            i64::from(datafusion::arrow::compute::min(a)?) * day,
            i64::from(datafusion::arrow::compute::max(a)?) * day,
        )
    } else {
        return None;
    };
    let start = DateTime::from_timestamp_micros(min)?;
    // A day column's last day is whole; past the last instant otherwise.
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
pub(super) fn comparable(dataset: Dataset, mut record: Value) -> Value {
    if matches!(dataset, Dataset::Table(t) if t != Table::Profile)
        && let Some(obj) = record.as_object_mut()
    {
        obj.remove("created_at");
        obj.remove("updated_at");
    }
    record
}

/// The hash a record is compared by.
pub(super) fn fingerprint(dataset: Dataset, record: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    comparable(dataset, record.clone()).to_string().hash(&mut h);
    h.finish()
}

/// A record's key (`Dataset::key_columns` within one provider and source type).
pub(super) fn key(dataset: Dataset, record: &Value) -> String {
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

/// The user's stored records of a dataset from one (provider, source type), in `window`,
/// keyed and fingerprinted, rendered a chunk at a time.
pub(super) async fn stored(
    store: &HealthStore,
    user: &User,
    dataset: Dataset,
    (provider, source_type): (&str, &str),
    window: Option<Range<DateTime<Utc>>>,
) -> Result<Stored, DataError> {
    let batches = super::read(store, user, dataset, window, Some(provider)).await?;
    let batches = keep_source(batches, source_type)?;
    let user = user.clone();
    let keyed = tokio::task::spawn_blocking(move || {
        let mut keyed = Stored::new();
        for batch in &batches {
            for offset in (0..batch.num_rows()).step_by(CHUNK) {
                let slice = batch.slice(offset, CHUNK.min(batch.num_rows() - offset));
                for r in render(dataset, &[slice], &user) {
                    keyed.insert(key(dataset, &r), fingerprint(dataset, &r));
                }
            }
        }
        keyed
    })
    .await?;
    Ok(keyed)
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
        let keyed = stored(
            store,
            user,
            *dataset,
            (provider, &source_type),
            Some(window),
        )
        .await?;
        out.push((*dataset, keyed));
    }
    Ok(Before(out))
}

/// Records of one type accumulating into an event.
#[derive(Debug, Default)]
struct Pile {
    records: Vec<Value>,
    bytes: usize,
}

/// The events of a written push, made a chunk of rows at a time ([`EventStream::next_event`]).
#[derive(Debug)]
pub struct EventStream {
    user: User,
    who: EventUser,
    batches: VecDeque<(Dataset, RecordBatch)>,
    before: Before,
    offset: usize,
    piles: [Pile; 2],
    ready: VecDeque<Event>,
}

impl EventStream {
    /// The events of `batches` (the push), compared with `before`.
    pub fn new(user: &User, batches: Vec<(Dataset, RecordBatch)>, before: Before) -> Self {
        EventStream {
            user: user.clone(),
            who: EventUser {
                id: user.id,
                client_user_id: user.client_user_id.clone(),
            },
            batches: batches
                .into_iter()
                .filter(|(_, b)| b.num_rows() > 0)
                .collect(),
            before,
            offset: 0,
            piles: [Pile::default(), Pile::default()],
            ready: VecDeque::new(),
        }
    }

    /// The next event, or `None` when every record is accounted for. CPU work: call it off the
    /// async threads for big pushes.
    pub fn next_event(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            let (dataset, batch) = self.batches.front()?.clone();
            let source = ingest::render_source(&batch, 0);
            let budget = Event::records_budget(&source);
            let name = resource_name(dataset);
            let types = [EventType::DailyCreated(name), EventType::DailyUpdated(name)];
            let rows = CHUNK.min(batch.num_rows() - self.offset);
            let slice = batch.slice(self.offset, rows);
            self.offset += rows;
            let empty = Stored::new();
            let stored = self
                .before
                .0
                .iter()
                .find(|(d, _)| *d == dataset)
                .map_or(&empty, |(_, k)| k);
            for record in render(dataset, &[slice], &self.user) {
                let which = match stored.get(&key(dataset, &record)) {
                    None => 0,
                    Some(old) if *old != fingerprint(dataset, &record) => 1,
                    Some(_) => continue,
                };
                let len = record.to_string().len() + 1;
                let pile = &mut self.piles[which];
                if !pile.records.is_empty() && pile.bytes + len > budget {
                    let records = std::mem::take(&mut pile.records);
                    let who = self.who.clone();
                    self.ready.push_back(Event::record_chunk(
                        types[which],
                        who,
                        records,
                        source.clone(),
                    ));
                    pile.bytes = 0;
                }
                pile.bytes += len;
                pile.records.push(record);
            }
            if self.offset >= batch.num_rows() {
                for (which, pile) in self.piles.iter_mut().enumerate() {
                    if !pile.records.is_empty() {
                        let records = std::mem::take(&mut pile.records);
                        let who = self.who.clone();
                        self.ready.push_back(Event::record_chunk(
                            types[which],
                            who,
                            records,
                            source.clone(),
                        ));
                        pile.bytes = 0;
                    }
                }
                self.batches.pop_front();
                self.offset = 0;
            }
        }
    }

    /// Every remaining event (for small pushes and tests).
    pub fn collect_all(mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(e) = self.next_event() {
            out.push(e);
        }
        out
    }
}

/// The events of a written push, compared with what was stored before it, all at once.
pub fn events(user: &User, batches: &[(Dataset, RecordBatch)], before: Before) -> Vec<Event> {
    EventStream::new(user, batches.to_vec(), before).collect_all()
}
