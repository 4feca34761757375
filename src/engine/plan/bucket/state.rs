//! The operator's state: the parts it keeps (one source each), the buckets with their owning
//! source, and each aggregate's accumulator; the scan over runs of rows (see the parent's
//! docs). Filled by `add` as input batches arrive, folded best source first by `finish`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use chrono_tz::Tz;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray, UInt32Array,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{Float64Type, Int32Type, SchemaRef, TimestampMicrosecondType};
use datafusion::common::{Result, exec_err};
use datafusion::execution::memory_pool::MemoryReservation;
use datafusion::physical_plan::metrics::Count;

use crate::schema::{ConstantProofs, rows_by_source};

use super::super::priority::{Interner, ranking};
use super::{BucketSpec, Columns};
use crate::engine::lang::request::Func;
use crate::engine::time;

/// The columns the operator reads of rows of one source.
struct Part {
    source: u32,
    timestamp: TimestampMicrosecondArray,
    offset: Int32Array,
    ingested: TimestampMicrosecondArray,
    args: Vec<ArrayRef>,
}

impl Part {
    /// The rows `rows` of this part (all of them when `None`) as a part of `source`.
    fn take(&self, source: u32, rows: Option<&UInt32Array>) -> Result<Part> {
        let Some(rows) = rows else {
            return Ok(Part {
                source,
                timestamp: self.timestamp.clone(),
                offset: self.offset.clone(),
                ingested: self.ingested.clone(),
                args: self.args.clone(),
            });
        };
        let pick = |a: &dyn Array| take(a, rows, None);
        Ok(Part {
            source,
            timestamp: pick(&self.timestamp)?.as_primitive().clone(),
            offset: pick(&self.offset)?.as_primitive().clone(),
            ingested: pick(&self.ingested)?.as_primitive().clone(),
            args: {
                // Several aggregates of one field share its column: gather it once.
                let mut args: Vec<ArrayRef> = Vec::with_capacity(self.args.len());
                for (k, a) in self.args.iter().enumerate() {
                    let seen = self.args[..k].iter().position(|b| Arc::ptr_eq(a, b));
                    args.push(match seen {
                        Some(j) => args[j].clone(),
                        None => pick(a.as_ref())?,
                    });
                }
                args
            },
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

/// One aggregate's state in one bucket.
#[derive(Debug, Clone, Copy)]
enum Acc {
    /// Mean and sum: running sum in row order and the number of values.
    Sum(f64, u64),
    Min(Option<f64>),
    Max(Option<f64>),
    Count(u64),
    /// Oldest/newest: (index time, ingestion time) of the winner and its value.
    Pick(Option<(i64, i64)>, f64),
}

impl Acc {
    fn new(f: Func) -> Self {
        match f {
            Func::Mean | Func::Sum => Acc::Sum(0.0, 0),
            Func::Min => Acc::Min(None),
            Func::Max => Acc::Max(None),
            Func::Oldest | Func::Newest => Acc::Pick(None, 0.0),
            Func::Count | Func::Median | Func::Stddev => Acc::Count(0),
        }
    }
}

/// Zone offsets lie within ±18 h (seconds).
const MAX_ZONE_OFFSET: i64 = 18 * 3600;

/// Marks a row without an index time in the floating-time scratch: below every window.
const NO_TIME: i64 = i64::MIN;

/// Fills `out` with each row's floating index time (§3.2), [`NO_TIME`] for a null timestamp.
/// Without nulls it is one vectorised pass.
fn floating_times(
    timestamp: &TimestampMicrosecondArray,
    offset: &Int32Array,
    zone: Option<Tz>,
    out: &mut Vec<i64>,
) {
    out.clear();
    if timestamp.null_count() == 0 && offset.null_count() == 0 {
        out.extend(
            timestamp
                .values()
                .iter()
                .zip(offset.values().iter())
                .map(|(&t, &o)| t.saturating_add(i64::from(o) * 1_000_000)),
        );
        return;
    }
    out.extend((0..timestamp.len()).map(|i| {
        if timestamp.is_null(i) {
            return NO_TIME;
        }
        let o = offset.is_valid(i).then(|| offset.value(i));
        time::to_floating(timestamp.value(i), o, zone)
    }));
}

/// Bounds of the floating times of a batch: (smallest instant + smallest offset, largest
/// instant + largest offset), two branch-free passes and no writes. Rows without an offset
/// use the zone's, within ±18 h (or 0 without a zone); slots under nulls only widen the bounds.
fn bounds(
    timestamp: &TimestampMicrosecondArray,
    offset: &Int32Array,
    zone: Option<Tz>,
) -> Option<(i64, i64)> {
    if timestamp.is_empty() || timestamp.null_count() > 0 {
        return None;
    }
    let span = |lo: i64, hi: i64, v: i64| (lo.min(v), hi.max(v));
    let (t0, t1) = timestamp
        .values()
        .iter()
        .fold((i64::MAX, i64::MIN), |(lo, hi), &t| span(lo, hi, t));
    let (o0, o1) = offset
        .values()
        .iter()
        .fold((i64::MAX, i64::MIN), |(lo, hi), &o| {
            span(lo, hi, i64::from(o))
        });
    let (o0, o1) = match (offset.null_count(), zone) {
        (0, _) => (o0, o1),
        (_, None) => (o0.min(0), o1.max(0)),
        (_, Some(_)) => (o0.min(-MAX_ZONE_OFFSET), o1.max(MAX_ZONE_OFFSET)),
    };
    Some((
        t0.saturating_add(o0 * 1_000_000),
        t1.saturating_add(o1 * 1_000_000),
    ))
}

/// The ingestion time of row `i`, ties in `oldest`/`newest` going to the larger; null lowest.
#[inline]
fn ingested_at(a: &TimestampMicrosecondArray, i: usize) -> i64 {
    if a.is_valid(i) { a.value(i) } else { i64::MIN }
}

/// Folds the non-null rows `(row, value)` of one run into one aggregate's state, in row order
/// (so sums match the general plan's bit for bit).
#[inline]
fn update(
    acc: &mut Acc,
    f: Func,
    rows: impl Iterator<Item = (usize, f64)>,
    times: &[i64],
    ingested: &TimestampMicrosecondArray,
) {
    match acc {
        Acc::Sum(sum, count) => {
            let (mut s, mut c) = (*sum, *count);
            for (_, v) in rows {
                s += v;
                c += 1;
            }
            (*sum, *count) = (s, c);
        }
        Acc::Min(m) => {
            let low = rows.map(|(_, v)| total_order(v)).min();
            *m = min_total(*m, low);
        }
        Acc::Max(m) => {
            let high = rows.map(|(_, v)| total_order(v)).max();
            *m = max_total(*m, high);
        }
        Acc::Pick(best, value) => {
            let newest = f == Func::Newest;
            let (mut b, mut val) = (*best, *value);
            let dense = ingested.null_count() == 0;
            let ing = ingested.values();
            for (i, v) in rows {
                let key = (
                    times[i],
                    if dense {
                        ing[i]
                    } else {
                        ingested_at(ingested, i)
                    },
                );
                let better = match b {
                    None => true,
                    Some((bt, bi)) if key.0 == bt => key.1 > bi,
                    Some((bt, _)) => (key.0 > bt) == newest,
                };
                if better {
                    b = Some(key);
                    val = v;
                }
            }
            (*best, *value) = (b, val);
        }
        Acc::Count(_) => {}
    }
}

/// `f64::total_cmp`'s order as an integer: min/max over it are branch-free, and the mapping is
/// its own inverse.
#[inline]
fn total_order(v: f64) -> i64 {
    let bits = v.to_bits() as i64;
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

fn from_total_order(k: i64) -> f64 {
    f64::from_bits((k ^ (((k >> 63) as u64) >> 1) as i64) as u64)
}

fn min_total(current: Option<f64>, run: Option<i64>) -> Option<f64> {
    match (current, run) {
        (Some(c), Some(r)) => Some(from_total_order(total_order(c).min(r))),
        (c, r) => c.or(r.map(from_total_order)),
    }
}

fn max_total(current: Option<f64>, run: Option<i64>) -> Option<f64> {
    match (current, run) {
        (Some(c), Some(r)) => Some(from_total_order(total_order(c).max(r))),
        (c, r) => c.or(r.map(from_total_order)),
    }
}

/// What the scan counts, shown by EXPLAIN ANALYZE.
pub(super) struct Counters {
    /// Rows whose floating time was computed and checked against the window and buckets.
    pub(super) rows_scanned: Count,
    /// Parts skipped whole: every bucket they could fall in belongs to a better source.
    pub(super) parts_skipped: Count,
}

/// Hashes a bucket's start: one multiply and a fold of the high bits into the low ones (bucket
/// starts are multiples of their period, so their low bits alone would collide). SipHash, the
/// map's default, cost more than the rest of a minute-bucket scan per group.
#[derive(Default)]
struct BucketHasher(u64);

impl Hasher for BucketHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }

    fn write_u64(&mut self, v: u64) {
        let h = (self.0 ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

/// The most groups reserved up front (at 5 aggregates, about 60 MB); more grow as needed.
const MAX_PRESIZED_GROUPS: usize = 1 << 20;

/// Buckets with their owning source and aggregate states.
pub(super) struct State {
    spec: Arc<BucketSpec>,
    columns: Columns,
    schema: SchemaRef,
    reservation: MemoryReservation,
    /// (provider, source type) pairs in first-seen order; codes index it.
    sources: Interner,
    parts: Vec<Part>,
    groups: HashMap<i64, usize, BuildHasherDefault<BucketHasher>>,
    buckets: Vec<i64>,
    owners: Vec<u32>,
    accs: Vec<Acc>,
    /// Scratch: the floating times of the batch being scanned.
    times: Vec<i64>,
    /// Memory held besides groups and scratch: parts split out of mixed batches, and the input
    /// batches when they are a filter's output (unfiltered ones are the caller's, resident).
    kept_bytes: usize,
    /// Source columns proven constant, so slices of shared columns are not read again.
    proofs: ConstantProofs,
    counters: Counters,
}

fn string_column(b: &RecordBatch, i: usize) -> Result<&StringArray> {
    match b.column(i).as_string_opt::<i32>() {
        Some(a) => Ok(a),
        None => exec_err!("source columns must be Utf8"),
    }
}

impl State {
    pub(super) fn new(
        spec: Arc<BucketSpec>,
        columns: Columns,
        schema: SchemaRef,
        reservation: MemoryReservation,
        counters: Counters,
    ) -> Self {
        State {
            spec,
            columns,
            schema,
            reservation,
            sources: Interner::default(),
            parts: Vec::new(),
            groups: HashMap::default(),
            buckets: Vec::new(),
            owners: Vec::new(),
            accs: Vec::new(),
            times: Vec::new(),
            kept_bytes: 0,
            proofs: ConstantProofs::default(),
            counters,
        }
    }

    fn intern(&mut self, provider: &str, source_type: &str) -> u32 {
        self.sources.code(provider, source_type) as u32
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
        let whole = Part {
            source: 0,
            timestamp: timestamp.clone(),
            offset: offset.clone(),
            ingested: ingested.clone(),
            args: c.args.iter().map(|&i| batch.column(i).clone()).collect(),
        };
        let p = string_column(&batch, c.provider)?;
        let t = string_column(&batch, c.source_type)?;
        for s in rows_by_source(p, t, &mut self.proofs) {
            let source = self.intern(s.provider, s.source_type);
            let part = whole.take(source, s.rows.as_ref())?;
            if s.rows.is_some() {
                // A split part is new memory; a whole batch is the caller's.
                self.kept_bytes += part.memory_size();
            }
            self.parts.push(part);
        }
        self.reserve(0)
    }

    /// Sources best first (§3.5).
    fn ranked(&self) -> Vec<u32> {
        ranking(&self.sources.pairs, &self.spec.providers)
            .into_iter()
            .map(|code| code as u32)
            .collect()
    }

    /// The group of `bucket` for source `s`; `None` when a better source owns it.
    fn group(&mut self, bucket: i64, s: u32) -> Result<Option<usize>> {
        if let Some(&g) = self.groups.get(&bucket) {
            return Ok((self.owners[g] == s).then_some(g));
        }
        let g = self.buckets.len();
        self.groups.insert(bucket, g);
        self.buckets.push(bucket);
        self.owners.push(s);
        self.accs
            .extend(self.spec.aggs.iter().map(|(f, _)| Acc::new(*f)));
        if g.is_power_of_two() {
            self.reserve(self.times.capacity() * 8)?;
        }
        Ok(Some(g))
    }

    /// Whether every bucket that floating times `lo..=hi` can fall in (within the window) is
    /// owned by a source other than `s`: then rows in that range cannot change the answer.
    fn owned_elsewhere(&self, (lo, hi): (i64, i64), s: u32) -> bool {
        let Some((w0, w1)) = self.spec.window else {
            return true;
        };
        let (lo, hi) = (lo.max(w0), hi.min(w1 - 1));
        if lo > hi {
            return true;
        }
        let mut b = time::trunc(lo, self.spec.period);
        for _ in 0..4096 {
            match self.groups.get(&b) {
                Some(&g) if self.owners[g] != s => {}
                _ => return false,
            }
            b = time::bucket_end(b, self.spec.period);
            if b > hi {
                return true;
            }
        }
        false
    }

    pub(super) fn finish(mut self) -> Result<RecordBatch> {
        let parts = std::mem::take(&mut self.parts);
        if let Some(window) = self.spec.window {
            self.presize(&parts, window)?;
            for s in self.ranked() {
                for part in parts.iter().filter(|p| p.source == s) {
                    self.scan(part, window)?;
                }
            }
        }
        drop(parts);
        self.emit()
    }

    /// Reserves the groups the scan will make, so that a query of many small buckets (minute
    /// buckets over months) does not grow and rehash its maps a score of times: at most one
    /// group per row, and no more than the window holds buckets.
    fn presize(&mut self, parts: &[Part], (w0, w1): (i64, i64)) -> Result<()> {
        let rows: usize = parts.iter().map(|p| p.timestamp.len()).sum();
        let period = self.spec.period;
        let (mut buckets, mut b) = (0usize, time::trunc(w0, period));
        while b < w1 && buckets < rows.min(MAX_PRESIZED_GROUPS) {
            buckets += 1;
            b = time::bucket_end(b, period);
        }
        self.groups.reserve(buckets);
        self.buckets.reserve(buckets);
        self.owners.reserve(buckets);
        self.accs.reserve(buckets * self.spec.aggs.len());
        self.reserve(0)
    }

    /// Accumulates the rows of one part, run by run.
    fn scan(&mut self, part: &Part, (w0, w1): (i64, i64)) -> Result<()> {
        let s = part.source;
        // A part whose buckets better sources own is skipped whole, bounded by its instants
        // and offsets before any floating time is computed.
        if !self.groups.is_empty()
            && bounds(&part.timestamp, &part.offset, self.spec.zone)
                .is_some_and(|r| self.owned_elsewhere(r, s))
        {
            self.counters.parts_skipped.add(1);
            return Ok(());
        }
        self.counters.rows_scanned.add(part.timestamp.len());
        let mut times = std::mem::take(&mut self.times);
        floating_times(&part.timestamp, &part.offset, self.spec.zone, &mut times);
        self.reserve(times.capacity() * 8)?;
        let result = self.runs(&times, part, (w0, w1));
        self.times = times;
        result
    }

    /// Finds the runs of rows of one bucket inside the window and accumulates those of
    /// buckets the part's source owns.
    fn runs(&mut self, times: &[i64], part: &Part, (w0, w1): (i64, i64)) -> Result<()> {
        let period = self.spec.period;
        let n = times.len();
        let mut i = 0;
        while i < n {
            let t = times[i];
            if t < w0 || t >= w1 {
                i += 1;
                continue;
            }
            // A run: the following rows whose times stay in the bucket (clipped to the window).
            let b = time::trunc(t, period);
            let (lo, hi) = (b.max(w0), time::bucket_end(b, period).min(w1));
            let width = (hi - lo) as u64;
            let end = times[i + 1..]
                .iter()
                .position(|&t| (t.wrapping_sub(lo) as u64) >= width)
                .map_or(n, |p| i + 1 + p);
            if let Some(g) = self.group(b, part.source)? {
                self.accumulate(g, times, &part.ingested, &part.args, i..end)?;
            }
            i = end;
        }
        Ok(())
    }

    /// Adds rows `range` (one bucket, one source) to group `g`.
    fn accumulate(
        &mut self,
        g: usize,
        times: &[i64],
        ingested: &TimestampMicrosecondArray,
        args: &[ArrayRef],
        range: std::ops::Range<usize>,
    ) -> Result<()> {
        let n = self.spec.aggs.len();
        for (k, ((f, _), arg)) in self.spec.aggs.iter().zip(args).enumerate() {
            let acc = &mut self.accs[g * n + k];
            let nulls: Option<&NullBuffer> = arg.nulls().filter(|b| b.null_count() > 0);
            if let Acc::Count(c) = acc {
                *c += match nulls {
                    None => range.len(),
                    Some(b) => range.clone().filter(|&i| b.is_valid(i)).count(),
                } as u64;
                continue;
            }
            let Some(values) = arg.as_primitive_opt::<Float64Type>() else {
                return exec_err!("{f:?} over a non-float column");
            };
            let values = values.values();
            match nulls {
                None => update(
                    acc,
                    *f,
                    values[range.clone()]
                        .iter()
                        .enumerate()
                        .map(|(j, &v)| (range.start + j, v)),
                    times,
                    ingested,
                ),
                Some(b) => update(
                    acc,
                    *f,
                    range
                        .clone()
                        .filter(|&i| b.is_valid(i))
                        .map(|i| (i, values[i])),
                    times,
                    ingested,
                ),
            }
        }
        Ok(())
    }

    /// Sizes the pool reservation to the groups plus `scratch` bytes; the pool is only asked
    /// when the size changes (it is shared by the request's operators, behind a lock).
    fn reserve(&mut self, scratch: usize) -> Result<()> {
        let per_group = 48 + self.spec.aggs.len() * std::mem::size_of::<Acc>();
        let groups = self.buckets.capacity().max(1) * per_group;
        let wanted = groups + scratch + self.kept_bytes;
        if wanted == self.reservation.size() {
            return Ok(());
        }
        self.reservation.try_resize(wanted)
    }

    /// One batch, sorted by bucket.
    fn emit(self) -> Result<RecordBatch> {
        let mut order: Vec<usize> = (0..self.buckets.len()).collect();
        order.sort_unstable_by_key(|&g| self.buckets[g]);
        let n = self.spec.aggs.len();
        let mut columns: Vec<ArrayRef> = vec![Arc::new(
            TimestampMicrosecondArray::from_iter_values(order.iter().map(|&g| self.buckets[g])),
        )];
        for (k, (f, _)) in self.spec.aggs.iter().enumerate() {
            let accs = order.iter().map(|&g| self.accs[g * n + k]);
            let column: ArrayRef = match f {
                Func::Count => Arc::new(Int64Array::from_iter_values(accs.map(|a| match a {
                    Acc::Count(c) => c as i64,
                    _ => 0,
                }))),
                _ => Arc::new(
                    accs.map(|a| match a {
                        Acc::Sum(s, c) if c > 0 => {
                            Some(if *f == Func::Mean { s / c as f64 } else { s })
                        }
                        Acc::Min(m) | Acc::Max(m) => m,
                        Acc::Pick(Some(_), v) => Some(v),
                        _ => None,
                    })
                    .collect::<Float64Array>(),
                ),
            };
            columns.push(column);
        }
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_order_matches_total_cmp_and_round_trips() {
        let values = [
            f64::NEG_INFINITY,
            -1.5,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            1e-300,
            2.0,
            f64::INFINITY,
        ];
        for a in values {
            assert_eq!(from_total_order(total_order(a)).to_bits(), a.to_bits());
            for b in values {
                assert_eq!(
                    total_order(a).cmp(&total_order(b)),
                    a.total_cmp(&b),
                    "{a} {b}"
                );
            }
        }
    }
}
