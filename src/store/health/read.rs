//! The read path: cache, list, prune, fetch, decode off the async threads, resolve
//! replacements, cut to the window.
//!
//! Timeseries results are regrouped by source before they are cached (see [`HealthStore::read`]).
//!
//! Replacement resolution is skipped when it cannot change anything: a single segment (each is
//! key-unique), or timeseries segments whose time ranges are pairwise disjoint (the key contains
//! the timestamp, so no key can repeat across them); the result is then the segments' batches
//! concatenated in time order, with no copy.
//!
//! Otherwise a timeseries is resolved source by source: its key starts with the source, so a
//! record of one source never replaces another's, and two devices covering the same days
//! (segments overlapping in time, but each source's own segments disjoint) need no resolution
//! at all. Only a source whose own segments overlap is sorted, and only its rows. The result
//! is then one time-sorted run per source ([`Assembled::runs`]), not one sorted run overall.

use std::ops::Range;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use datafusion::arrow::array::{RecordBatch, Scalar, TimestampMicrosecondArray};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::compute::kernels::cmp::eq;
use datafusion::arrow::error::ArrowError;
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStoreExt;
use uuid::Uuid;

use super::constant::ConstantPool;
use super::layout::SegmentName;
use super::metrics::Metrics;
use super::rows::{TimeColumn, group_by_source, newest_per_key, slice_window};
use super::segment_read::decode;
use super::{HealthStore, Key, Listed, StoreError};
use crate::schema::{ConstantProofs, Dataset, INGESTED_AT, source_columns};

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
    /// read instead of once per query. The engine relies on the order: the service runs these
    /// batches through `engine::Inputs::stored`, which bounds each by its first and last rows
    /// and reads its source off its first row. With a window, exactly the rows whose time (a `Date32`
    /// day as midnight UTC) is in `[start, end)`.
    #[tracing::instrument(name = "store.read", skip_all, fields(dataset = %dataset.path()))]
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
        // Taken before anything is listed (see `shared.rs`).
        let shared = self.shared_version(key).await?;
        if let Some(batches) = self.inner.cache.get(&key, window, shared) {
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
        let assembled = crate::telemetry::spawn_blocking(move || {
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
        Metrics::add(&m.rows_resolved, assembled.resolved as u64);
        Metrics::add(&m.rows_replaced, assembled.replaced as u64);
        Metrics::add(&m.bytes_read, assembled.bytes as u64);
        let evicted =
            self.inner
                .cache
                .insert(key, (version, shared), prune, assembled.batches.clone());
        Metrics::add(&m.cache_evictions, evicted as u64);
        cut(assembled.batches, dataset, window)
    }

    /// The rows one write put in the dataset, as it wrote them: every stored row whose
    /// `ingested_at` is `stamp` (the write's stamp) and, with a window, whose time is in it,
    /// read from the segments as they are, before replacement. So the rows are found even where
    /// a later write has replaced them since (the version a read answers is then the later
    /// one); only a compaction, which drops replaced rows, removes them. Not cached. This is how
    /// a push's events are made after it (`data::announce`).
    pub async fn read_written(
        &self,
        team: Uuid,
        user: Uuid,
        dataset: Dataset,
        window: Option<Range<DateTime<Utc>>>,
        stamp: DateTime<Utc>,
    ) -> Result<Vec<RecordBatch>, StoreError> {
        let window = window.map(|w| (w.start.timestamp_micros(), w.end.timestamp_micros()));
        let prune = match dataset {
            Dataset::Timeseries(_) => window,
            Dataset::Table(_) => None,
        };
        let fetched = self.fetch((team, user, dataset), prune).await?;
        let batch_size = self.inner.options.row_group_rows;
        let stamp = stamp.timestamp_micros();
        crate::telemetry::spawn_blocking(move || {
            let mut pool = ConstantPool::default();
            let mut out = Vec::new();
            for (_, bytes) in fetched {
                for batch in decode(bytes, dataset, prune, batch_size, &mut pool)?.batches {
                    let written = stamped(&batch, stamp)?;
                    if written.num_rows() > 0 {
                        out.push(written);
                    }
                }
            }
            match window {
                None => Ok(out),
                Some((start, end)) => Ok(slice_window(&out, dataset.time_column(), start, end)?),
            }
        })
        .await?
    }

    /// Lists and fetches the segments a read needs, holding the dataset's swap lock shared so a
    /// compaction cannot remove what was listed before it is fetched (on object storage, other
    /// processes' compactions keep their inputs for a grace period: `retire.rs`). Re-lists if
    /// a segment vanished anyway (a reader stalled past that period).
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

/// The rows of `batch` whose `ingested_at` is `stamp` (µs).
fn stamped(batch: &RecordBatch, stamp: i64) -> Result<RecordBatch, ArrowError> {
    let Some(ingested) = batch.column_by_name(INGESTED_AT) else {
        return Ok(batch.slice(0, 0));
    };
    // The stamp in the column's own type (with its time zone).
    let stamp = Scalar::new(
        TimestampMicrosecondArray::from(vec![stamp]).with_data_type(ingested.data_type().clone()),
    );
    filter_record_batch(batch, &eq(ingested, &stamp)?)
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

/// A decoded, replacement-free set of segments: `batches` is one or more runs, each sorted by
/// time.
#[derive(Debug, Default)]
pub(super) struct Assembled {
    pub(super) batches: Vec<RecordBatch>,
    /// How many batches each time-sorted run has, in order; empty when `batches` is one run.
    pub(super) runs: Vec<usize>,
    pub(super) segments: usize,
    pub(super) rows: usize,
    pub(super) replaced: usize,
    /// Rows that went through replacement resolution.
    pub(super) resolved: usize,
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
        if disjoint(by_time.iter().map(|(name, _)| name.range)) {
            out.batches = by_time.into_iter().flat_map(|(_, b)| b.clone()).collect();
            return Ok(out);
        }
        for run in by_source(decoded, dataset, batch_size)? {
            let batches = match run {
                Resolved::Disjoint(batches) => batches,
                Resolved::Overlapping(batches) => {
                    let (batch, replaced) = newest_per_key(&batches, dataset)?;
                    out.resolved += batch.num_rows() + replaced;
                    out.replaced += replaced;
                    vec![batch]
                }
            };
            out.runs.push(batches.len());
            out.batches.extend(batches);
        }
        return Ok(out);
    }
    let all: Vec<RecordBatch> = decoded.into_iter().flat_map(|(_, b)| b).collect();
    let (batch, replaced) = newest_per_key(&all, dataset)?;
    out.resolved = batch.num_rows() + replaced;
    out.replaced = replaced;
    out.batches = vec![batch];
    Ok(out)
}

/// One source's rows, as [`by_source`] found them.
enum Resolved {
    /// Its segments' rows are disjoint in time: these batches, in time order, need nothing.
    Disjoint(Vec<RecordBatch>),
    /// Its segments overlap in time: these batches, in creation order, need resolving.
    Overlapping(Vec<RecordBatch>),
}

/// The rows of one source from one segment: its batches (in file order, so sorted by time)
/// and their time range.
struct Piece {
    segment: usize,
    batches: Vec<RecordBatch>,
    range: Option<(i64, i64)>,
}

/// Splits decoded timeseries segments (in creation order) by source, sources in first-seen
/// order, and tells for each whether its pieces overlap in time (see the module docs).
fn by_source(
    decoded: Vec<(SegmentName, Vec<RecordBatch>)>,
    dataset: Dataset,
    batch_size: usize,
) -> Result<Vec<Resolved>, StoreError> {
    let time = dataset.time_column();
    let mut proofs = ConstantProofs::default();
    let mut sources: Vec<((String, String), Vec<Piece>)> = Vec::new();
    for (segment, (_, batches)) in decoded.into_iter().enumerate() {
        for batch in group_by_source(batches, batch_size)? {
            let (provider, source_type) = source_columns(&batch)?;
            let (Some(provider), Some(source_type)) =
                (proofs.constant(provider), proofs.constant(source_type))
            else {
                return Err(ArrowError::ComputeError(
                    "a batch regrouped by source holds several sources".to_owned(),
                )
                .into());
            };
            let range = TimeColumn::of(&batch, time)?.sorted_range();
            let at = match sources
                .iter()
                .position(|((p, t), _)| p == provider && t == source_type)
            {
                Some(at) => at,
                None => {
                    let source = (provider.to_owned(), source_type.to_owned());
                    sources.push((source, Vec::new()));
                    sources.len() - 1
                }
            };
            let pieces = &mut sources[at].1;
            match pieces.last_mut().filter(|p| p.segment == segment) {
                Some(piece) => {
                    piece.range = match (piece.range, range) {
                        (Some((a, _)), Some((_, b))) => Some((a, b)),
                        (r, None) | (None, r) => r,
                    };
                    piece.batches.push(batch);
                }
                None => pieces.push(Piece {
                    segment,
                    batches: vec![batch],
                    range,
                }),
            }
        }
    }
    Ok(sources
        .into_iter()
        .map(|(_, pieces)| {
            let mut by_time: Vec<&Piece> = pieces.iter().collect();
            by_time.sort_by_key(|p| p.range.map(|r| r.0));
            if disjoint(by_time.iter().map(|p| p.range)) {
                let batches = by_time.iter().flat_map(|p| p.batches.iter().cloned());
                Resolved::Disjoint(batches.collect())
            } else {
                Resolved::Overlapping(pieces.into_iter().flat_map(|p| p.batches).collect())
            }
        })
        .collect())
}

/// Whether time ranges, sorted by their start, are pairwise disjoint (an unknown range,
/// all-null times, counts as overlapping).
fn disjoint(ranges: impl Iterator<Item = Option<(i64, i64)>>) -> bool {
    let mut last_end = None;
    for range in ranges {
        let Some((start, end)) = range else {
            return false;
        };
        if last_end.is_some_and(|e| e >= start) {
            return false;
        }
        last_end = Some(end);
    }
    true
}
