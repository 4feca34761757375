//! The read path: cache, list, prune, fetch, decode off the async threads, resolve
//! replacements, cut to the window.
//!
//! Timeseries results are regrouped by source before they are cached (see [`HealthStore::read`]).
//!
//! Replacement resolution is skipped when it cannot change anything: a single segment (each is
//! key-unique), or timeseries segments whose time ranges are pairwise disjoint (the key contains
//! the timestamp, so no key can repeat across them); the result is then the segments' batches
//! concatenated in time order, with no copy.

use std::ops::Range;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use datafusion::arrow::array::RecordBatch;
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStoreExt;
use uuid::Uuid;

use super::constant::ConstantPool;
use super::layout::SegmentName;
use super::metrics::Metrics;
use super::rows::{group_by_source, newest_per_key, slice_window};
use super::segment_read::decode;
use super::{HealthStore, Key, Listed, StoreError};
use crate::schema::Dataset;

/// How many times a read re-lists when a listed segment vanished (removed by a compaction).
const READ_ATTEMPTS: usize = 3;
/// Segment fetches in flight per read.
const FETCH_CONCURRENCY: usize = 8;

impl HealthStore {
    /// The dataset's current records: the newest version per record key
    /// (`Dataset::key_columns`; newest `ingested_at`, ties to the later segment), sorted by the
    /// time column (nulls first). A timeseries comes back as batches of one source each
    /// (provider and source type), each sorted by time, sources in first-seen order: the
    /// aggregate engine reads runs of one source, and this way the split happens once per cold
    /// read instead of once per query. With a window, exactly the rows whose time (a `Date32`
    /// day as midnight UTC) is in `[start, end)`.
    pub async fn read(
        &self,
        team: Uuid,
        user: Uuid,
        dataset: Dataset,
        window: Option<Range<DateTime<Utc>>>,
    ) -> Result<Vec<RecordBatch>, StoreError> {
        let key = (team, user, dataset);
        let window = window.map(|w| (w.start.timestamp_micros(), w.end.timestamp_micros()));
        if window.is_some_and(|(s, e)| s >= e) {
            return Ok(Vec::new());
        }
        let m = &self.inner.metrics;
        if let Some(batches) = self.inner.cache.get(&key, window) {
            Metrics::add(&m.cache_hits, 1);
            return cut(batches, dataset, window);
        }
        Metrics::add(&m.cache_misses, 1);
        let version = self.inner.cache.version(&key);
        // Summary records are keyed by id, not time: decode them all (see the module docs).
        let prune = match dataset {
            Dataset::Timeseries(_) => window,
            Dataset::Table(_) => None,
        };
        let fetched = self.fetch(key, prune).await?;
        let batch_size = self.inner.options.row_group_rows;
        let assembled = tokio::task::spawn_blocking(move || {
            let mut assembled = assemble(fetched, dataset, prune, batch_size)?;
            if let Dataset::Timeseries(_) = dataset {
                assembled.batches = group_by_source(assembled.batches, batch_size)?;
            }
            Ok::<_, StoreError>(assembled)
        })
        .await??;
        Metrics::add(&m.segments_read, assembled.segments as u64);
        Metrics::add(&m.row_groups_read, assembled.row_groups_read as u64);
        Metrics::add(&m.row_groups_pruned, assembled.row_groups_pruned as u64);
        Metrics::add(&m.rows_read, assembled.rows as u64);
        Metrics::add(&m.rows_replaced, assembled.replaced as u64);
        Metrics::add(&m.bytes_read, assembled.bytes as u64);
        let evicted = self
            .inner
            .cache
            .insert(key, version, prune, assembled.batches.clone());
        Metrics::add(&m.cache_evictions, evicted as u64);
        cut(assembled.batches, dataset, window)
    }

    /// Lists and fetches the segments a read needs, holding the dataset's swap lock shared so a
    /// compaction cannot remove what was listed before it is fetched. Re-lists if a segment
    /// vanished anyway (another process).
    pub(super) async fn fetch(
        &self,
        key: Key,
        window: Option<(i64, i64)>,
    ) -> Result<Vec<(SegmentName, Bytes)>, StoreError> {
        let locks = self.locks(key);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let shared = locks.swap.read().await;
            let listing = self.list(key).await?;
            let considered = listing.segments.len();
            let selected: Vec<Listed> = listing
                .segments
                .into_iter()
                .filter(|s| window.is_none_or(|(a, b)| s.name.overlaps(a, b)))
                .collect();
            let pruned = considered - selected.len();
            let result: Result<Vec<_>, StoreError> = futures::stream::iter(selected)
                .map(|s| async move {
                    let bytes = self.inner.objects.get(&s.location).await?.bytes().await?;
                    Ok::<_, StoreError>((s.name, bytes))
                })
                .buffered(FETCH_CONCURRENCY)
                .try_collect()
                .await;
            drop(shared);
            match result {
                Err(e) if e.is_not_found() && attempt < READ_ATTEMPTS => continue,
                Err(e) => return Err(e),
                Ok(fetched) => {
                    let m = &self.inner.metrics;
                    Metrics::add(&m.segments_considered, considered as u64);
                    Metrics::add(&m.segments_pruned, pruned as u64);
                    return Ok(fetched);
                }
            }
        }
    }
}

/// Cuts a time-sorted result to the window.
fn cut(
    batches: Vec<RecordBatch>,
    dataset: Dataset,
    window: Option<(i64, i64)>,
) -> Result<Vec<RecordBatch>, StoreError> {
    match window {
        None => Ok(batches),
        Some((start, end)) => Ok(slice_window(&batches, dataset.time_column(), start, end)?),
    }
}

/// A decoded, replacement-free, time-sorted set of segments.
#[derive(Debug, Default)]
pub(super) struct Assembled {
    pub(super) batches: Vec<RecordBatch>,
    pub(super) segments: usize,
    pub(super) rows: usize,
    pub(super) replaced: usize,
    pub(super) bytes: usize,
    pub(super) row_groups_read: usize,
    pub(super) row_groups_pruned: usize,
}

/// Decodes fetched segments (in creation order) and resolves replacements unless provably
/// unnecessary (see the module docs).
pub(super) fn assemble(
    fetched: Vec<(SegmentName, Bytes)>,
    dataset: Dataset,
    window: Option<(i64, i64)>,
    batch_size: usize,
) -> Result<Assembled, StoreError> {
    let mut out = Assembled {
        segments: fetched.len(),
        ..Assembled::default()
    };
    let mut decoded = Vec::with_capacity(fetched.len());
    let mut pool = ConstantPool::default();
    for (name, bytes) in fetched {
        out.bytes += bytes.len();
        let d = decode(bytes, dataset, window, batch_size, &mut pool)?;
        out.rows += d.rows;
        out.row_groups_read += d.row_groups_read;
        out.row_groups_pruned += d.row_groups_pruned;
        if d.rows > 0 {
            decoded.push((name, d.batches));
        }
    }
    if decoded.len() <= 1 {
        out.batches = decoded.pop().map(|(_, b)| b).unwrap_or_default();
        return Ok(out);
    }
    if matches!(dataset, Dataset::Timeseries(_)) {
        let mut by_time: Vec<_> = decoded.iter().collect();
        by_time.sort_by_key(|(name, _)| name.range.map(|r| r.0));
        let disjoint = by_time
            .windows(2)
            .all(|w| match (w[0].0.range, w[1].0.range) {
                (Some((_, max)), Some((min, _))) => max < min,
                _ => false,
            });
        if disjoint {
            out.batches = by_time.into_iter().flat_map(|(_, b)| b.clone()).collect();
            return Ok(out);
        }
    }
    let all: Vec<RecordBatch> = decoded.into_iter().flat_map(|(_, b)| b).collect();
    let (batch, replaced) = newest_per_key(&all, dataset)?;
    out.replaced = replaced;
    out.batches = vec![batch];
    Ok(out)
}
