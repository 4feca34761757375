//! The operator's state: the parts it keeps (one source each), filled by `add` as input
//! batches arrive. `finish` cuts the window into slices of whole buckets holding about as many
//! rows each, folds every slice on a task of its own (`slice.rs`), so a big query uses the
//! engine's cores, and lays their outputs end to end.

use std::sync::Arc;

use chrono_tz::Tz;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int32Array, RecordBatch, StringArray, TimestampMicrosecondArray,
    UInt32Array,
};
use datafusion::arrow::compute::{concat_batches, take};
use datafusion::arrow::datatypes::{Int32Type, SchemaRef, TimestampMicrosecondType};
use datafusion::common::{DataFusionError, Result, exec_err};
use datafusion::execution::memory_pool::MemoryReservation;
use datafusion::physical_plan::metrics::Count;

use crate::schema::{ConstantProofs, SourceRows, rows_by_source};

use super::super::priority::{Interner, ranking};
use super::slice::{Slice, SliceOf, bounds};
use super::{BucketSpec, Columns, Slicing};
use crate::engine::lang::request::Period;
use crate::engine::stored::StoredBatches;
use crate::engine::task::AbortOnDrop;
use crate::engine::time;

/// The columns the operator reads of rows of one source.
pub(super) struct Part {
    pub(super) source: u32,
    pub(super) timestamp: TimestampMicrosecondArray,
    pub(super) offset: Int32Array,
    pub(super) ingested: TimestampMicrosecondArray,
    pub(super) args: Vec<ArrayRef>,
    /// Bounds of the rows' floating times (`slice::bounds`), found before the slices run: a
    /// slice skips a part outside it, or one whose buckets better sources own, without
    /// reading its rows.
    pub(super) bounds: Option<(i64, i64)>,
    /// Whether the timestamps are sorted ascending without nulls (declared by the request's
    /// caller, `engine::stored`): the bounds are then read off the first and last rows.
    pub(super) sorted: bool,
}

impl Part {
    /// The rows `rows` of `whole` (all of them when `None`) as a part of `source`.
    fn take(whole: &Whole, source: u32, rows: Option<&UInt32Array>) -> Result<Part> {
        let (timestamp, offset, ingested, args) = match rows {
            None => (
                whole.timestamp.clone(),
                whole.offset.clone(),
                whole.ingested.clone(),
                whole.args.clone(),
            ),
            Some(rows) => {
                let pick = |a: &dyn Array| take(a, rows, None);
                // Several aggregates of one field share its column: gather it once.
                let mut args: Vec<ArrayRef> = Vec::with_capacity(whole.args.len());
                for (k, a) in whole.args.iter().enumerate() {
                    let seen = whole.args[..k].iter().position(|b| Arc::ptr_eq(a, b));
                    args.push(match seen {
                        Some(j) => args[j].clone(),
                        None => pick(a.as_ref())?,
                    });
                }
                (
                    pick(&whole.timestamp)?.as_primitive().clone(),
                    pick(&whole.offset)?.as_primitive().clone(),
                    pick(&whole.ingested)?.as_primitive().clone(),
                    args,
                )
            }
        };
        Ok(Part {
            source,
            timestamp,
            offset,
            ingested,
            args,
            bounds: None,
            sorted: false,
        })
    }

    fn memory_size(&self) -> usize {
        self.timestamp.get_array_memory_size()
            + self.offset.get_array_memory_size()
            + self.ingested.get_array_memory_size()
            + self
                .args
                .iter()
                .map(|a| a.get_array_memory_size())
                .sum::<usize>()
    }
}

/// The columns of one input batch, before it is split by source.
struct Whole {
    timestamp: TimestampMicrosecondArray,
    offset: Int32Array,
    ingested: TimestampMicrosecondArray,
    args: Vec<ArrayRef>,
}

/// What the scan counts, shown by EXPLAIN ANALYZE.
#[derive(Clone)]
pub(super) struct Counters {
    /// Rows whose floating time was computed and checked against the window and buckets.
    pub(super) rows_scanned: Count,
    /// Parts skipped whole: every bucket they could fall in belongs to a better source.
    pub(super) parts_skipped: Count,
    /// Slices the window was cut into, each folded on its own task when several.
    pub(super) slices: Count,
}

/// Rows sampled to place the cuts between slices.
const CUT_SAMPLE_ROWS: usize = 4096;
/// Consecutive rows per block of that sample.
const CUT_SAMPLE_BLOCK: usize = 64;

/// The parts of one query, with the sources they came from.
pub(super) struct State {
    spec: Arc<BucketSpec>,
    columns: Columns,
    schema: SchemaRef,
    /// Holds what the parts cost (see `kept_bytes`); the slices reserve their own.
    reservation: MemoryReservation,
    /// (provider, source type) pairs in first-seen order; codes index it.
    sources: Interner,
    parts: Vec<Part>,
    /// Memory held: parts split out of mixed batches, and the input batches when they are a
    /// filter's output (unfiltered ones are the caller's, resident).
    kept_bytes: usize,
    /// Source columns proven constant, so slices of shared columns are not read again.
    proofs: ConstantProofs,
    counters: Counters,
    /// How the fold is cut into slices.
    slicing: Slicing,
    /// The input batches the request declared the store's (`engine::stored`).
    stored: Option<Arc<StoredBatches>>,
}

fn string_column(b: &RecordBatch, i: usize) -> Result<&StringArray> {
    match b.column(i).as_string_opt::<i32>() {
        Some(a) => Ok(a),
        None => exec_err!("source columns must be Utf8"),
    }
}

/// What a [`State`] starts from.
pub(super) struct StateOf {
    pub(super) spec: Arc<BucketSpec>,
    pub(super) columns: Columns,
    pub(super) schema: SchemaRef,
    pub(super) reservation: MemoryReservation,
    pub(super) counters: Counters,
    pub(super) slicing: Slicing,
    pub(super) stored: Option<Arc<StoredBatches>>,
}

impl State {
    pub(super) fn new(of: StateOf) -> Self {
        State {
            spec: of.spec,
            columns: of.columns,
            schema: of.schema,
            reservation: of.reservation,
            sources: Interner::default(),
            parts: Vec::new(),
            kept_bytes: 0,
            proofs: ConstantProofs::default(),
            counters: of.counters,
            slicing: of.slicing,
            stored: of.stored,
        }
    }

    /// Keeps a batch's columns as parts of one source each: the whole batch when its source
    /// columns are constant (the usual case: the store hands out one-source batches), else its
    /// rows split by source.
    pub(super) fn add(&mut self, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if self.spec.filtered {
            self.kept_bytes += batch.get_array_memory_size();
        }
        let c = &self.columns;
        let (Some(timestamp), Some(offset), Some(ingested)) = (
            batch
                .column(c.timestamp)
                .as_primitive_opt::<TimestampMicrosecondType>(),
            batch.column(c.offset).as_primitive_opt::<Int32Type>(),
            batch
                .column(c.ingested)
                .as_primitive_opt::<TimestampMicrosecondType>(),
        ) else {
            return exec_err!("unexpected timeseries storage types");
        };
        let whole = Whole {
            timestamp: timestamp.clone(),
            offset: offset.clone(),
            ingested: ingested.clone(),
            args: c.args.iter().map(|&i| batch.column(i).clone()).collect(),
        };
        let p = string_column(&batch, c.provider)?;
        let t = string_column(&batch, c.source_type)?;
        let declared = self.stored.as_deref();
        let sorted = declared.is_some_and(|d| d.sorted(whole.timestamp.values()));
        let sources = match declared.and_then(|d| d.one_source(p, t)) {
            Some((provider, source_type)) => vec![SourceRows {
                provider,
                source_type,
                rows: None,
            }],
            None => rows_by_source(p, t, &mut self.proofs),
        };
        for s in sources {
            let source = self.sources.code(s.provider, s.source_type) as u32;
            let mut part = Part::take(&whole, source, s.rows.as_ref())?;
            // Rows taken in order from a sorted column are sorted too.
            part.sorted = sorted;
            if s.rows.is_some() {
                // A split part is new memory; a whole batch is the caller's.
                self.kept_bytes += part.memory_size();
            }
            self.parts.push(part);
        }
        self.reservation.try_resize(self.kept_bytes)
    }

    /// Sources best first (§3.5).
    fn ranked(&self) -> Arc<[u32]> {
        ranking(&self.sources.pairs, &self.spec.providers)
            .into_iter()
            .map(|code| code as u32)
            .collect()
    }

    /// Folds every slice and returns the buckets in order. Several slices run on tasks of
    /// their own, spawned on the caller's runtime (the engine's) and aborted if this future is
    /// dropped; a single one runs here.
    pub(super) async fn finish(mut self) -> Result<RecordBatch> {
        let Some(window) = self.spec.window else {
            return Ok(RecordBatch::new_empty(self.schema.clone()));
        };
        let parts = std::mem::take(&mut self.parts);
        let cuts = slices(&parts, window, self.spec.period, self.slicing);
        let parts = Arc::new(bound(parts, self.spec.zone, cuts.len()).await?);
        self.counters.slices.add(cuts.len());
        let ranked = self.ranked();
        let of = || SliceOf {
            spec: self.spec.clone(),
            schema: self.schema.clone(),
            ranked: ranked.clone(),
            reservation: self.reservation.new_empty(),
            counters: self.counters.clone(),
        };
        let mut outputs = Vec::with_capacity(cuts.len());
        if let [whole] = cuts.as_slice() {
            outputs.push(Slice::new(of(), *whole).run(&parts).await?);
        } else {
            // Every slice on a task of its own, this one waiting: a task spawned last sits in
            // its worker's LIFO slot, which no other worker steals, so running one slice here
            // would leave the last spawned one to this worker after it.
            let tasks: Vec<AbortOnDrop<Result<RecordBatch>>> = cuts
                .iter()
                .map(|&w| {
                    let (slice, parts) = (Slice::new(of(), w), parts.clone());
                    let span = tracing::info_span!("query.slice", start = w.0, end = w.1);
                    let run = async move { slice.run(&parts).await };
                    AbortOnDrop(tokio::spawn(tracing::Instrument::instrument(run, span)))
                })
                .collect();
            for task in tasks {
                outputs.push(join(task).await?);
            }
        }
        match outputs.as_slice() {
            [one] => Ok(one.clone()),
            all => Ok(concat_batches(&self.schema, all)?),
        }
    }
}

/// Cuts the window `[w0, w1)` into at most `slicing.most` slices of whole buckets, each
/// holding about as many rows and no fewer than `slicing.min_rows`, from a sample of the rows'
/// floating times (offsets as stored, a missing one as 0: they only move the cuts, never the
/// answer).
fn slices(
    parts: &[Part],
    (w0, w1): (i64, i64),
    period: Period,
    slicing: Slicing,
) -> Vec<(i64, i64)> {
    let rows: usize = parts.iter().map(|p| p.timestamp.len()).sum();
    let n = slicing.most.min(rows / slicing.min_rows.max(1)).max(1);
    if n == 1 {
        return vec![(w0, w1)];
    }
    // Blocks of consecutive rows, evenly spaced over all parts: a row read alone costs a
    // cache miss (two, with its offset), a block's rows share theirs.
    let every = (rows / CUT_SAMPLE_ROWS).max(1) * CUT_SAMPLE_BLOCK;
    let mut sample: Vec<i64> = Vec::with_capacity(CUT_SAMPLE_ROWS + CUT_SAMPLE_BLOCK);
    let (mut next, mut seen) = (0, 0);
    for p in parts {
        let (t, o) = (p.timestamp.values(), p.offset.values());
        let no_offsets = p.offset.null_count() == p.offset.len();
        while next < seen + t.len() {
            let from = next - seen;
            for i in from..(from + CUT_SAMPLE_BLOCK).min(t.len()) {
                let f = match no_offsets {
                    true => t[i],
                    false => t[i].saturating_add(i64::from(o[i]) * 1_000_000),
                };
                if (w0..w1).contains(&f) {
                    sample.push(f);
                }
            }
            next += every;
        }
        seen += t.len();
    }
    sample.sort_unstable();
    let mut cuts = vec![w0];
    for k in 1..n {
        let Some(&t) = sample.get(sample.len() * k / n) else {
            break;
        };
        let b = time::trunc(t, period);
        if cuts.last().is_some_and(|&last| b > last) && b < w1 {
            cuts.push(b);
        }
    }
    cuts.push(w1);
    cuts.windows(2).map(|c| (c[0], c[1])).collect()
}

/// Finds every part's bounds: a pass over each part's instants and offsets, split into
/// `tasks` runs of parts with about as many rows each, on tasks of their own when several.
async fn bound(mut parts: Vec<Part>, zone: Option<Tz>, tasks: usize) -> Result<Vec<Part>> {
    let find = move |mut parts: Vec<Part>| {
        for p in &mut parts {
            p.bounds = bounds(&p.timestamp, &p.offset, zone, p.sorted);
        }
        Ok(parts)
    };
    if tasks <= 1 {
        return find(parts);
    }
    let share = parts.iter().map(|p| p.timestamp.len()).sum::<usize>() / tasks;
    let mut runs = Vec::with_capacity(tasks);
    while runs.len() + 1 < tasks {
        let (mut taken, mut at) = (0, 0);
        while at < parts.len() && taken < share {
            taken += parts[at].timestamp.len();
            at += 1;
        }
        let rest = parts.split_off(at);
        let run = std::mem::replace(&mut parts, rest);
        let task = tracing::Instrument::in_current_span(async move { find(run) });
        runs.push(AbortOnDrop(crate::telemetry::spawn(task)));
    }
    let task = tracing::Instrument::in_current_span(async move { find(parts) });
    runs.push(AbortOnDrop(crate::telemetry::spawn(task)));
    let mut out = Vec::new();
    for run in runs {
        out.extend(join(run).await?);
    }
    Ok(out)
}

/// The result of a task of the fold (aborted if this is dropped: the query was cancelled).
async fn join<T>(task: AbortOnDrop<Result<T>>) -> Result<T> {
    task.await
        .map_err(|e| DataFusionError::External(Box::new(e)))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::lang::request::Unit;

    fn part(times: &[i64]) -> Part {
        let timestamp = TimestampMicrosecondArray::from(times.to_vec());
        let offset = Int32Array::from(vec![0; times.len()]);
        Part {
            source: 0,
            bounds: None,
            sorted: false,
            ingested: timestamp.clone(),
            timestamp,
            offset,
            args: Vec::new(),
        }
    }

    #[test]
    fn slices_are_whole_buckets_of_about_equal_rows() {
        let minute = 60_000_000;
        let hour = Period {
            value: 1,
            unit: Unit::Hour,
        };
        // Four days of one row every 2 s, the window starting mid-hour.
        let times: Vec<i64> = (0..4 * 43_200).map(|k| k * 2_000_000).collect();
        let parts = [part(&times)];
        let (w0, w1) = (30 * minute, 4 * 1440 * minute);
        let slicing = |most| Slicing {
            most,
            min_rows: 1 << 15,
        };
        let cuts = slices(&parts, (w0, w1), hour, slicing(2));
        assert_eq!(cuts.len(), 2, "{cuts:?}");
        assert_eq!(cuts[0].0, w0);
        assert_eq!(cuts[1].1, w1);
        assert_eq!(cuts[0].1, cuts[1].0);
        let cut = cuts[0].1;
        assert_eq!(time::trunc(cut, hour), cut, "a cut is a bucket start");
        let day2 = 2 * 1440 * minute;
        assert!(
            (cut - day2).abs() <= 2 * 60 * minute,
            "{cut} is near the middle"
        );
        // Fewer rows than a slice's minimum stay whole.
        assert_eq!(slices(&parts, (w0, w1), hour, slicing(1)), vec![(w0, w1)]);
        let few = [part(&times[..100])];
        assert_eq!(slices(&few, (w0, w1), hour, slicing(8)), vec![(w0, w1)]);
    }
}
