//! One slice of the window, folded: its buckets with their owning source and each aggregate's
//! accumulator, and the scan over runs of rows (see the parent's docs). A slice is whole
//! buckets, so slices of one query share no bucket and their outputs, each sorted by bucket,
//! are the query's answer laid end to end.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use chrono_tz::Tz;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int32Array, Int64Array, RecordBatch,
    TimestampMicrosecondArray,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{Float64Type, SchemaRef};
use datafusion::common::{Result, exec_err};
use datafusion::execution::memory_pool::MemoryReservation;

use super::BucketSpec;
use super::state::{Counters, Part};
use crate::engine::lang::request::{Func, Period, Unit};
use crate::engine::time;

/// One aggregate's state in one bucket.
#[derive(Debug, Clone, Copy)]
enum Acc {
    /// Mean and sum: the running sum in [`LANES`] lanes (see [`add_lanes`]) and the number of
    /// values.
    Sum([f64; LANES], u64),
    Min(Option<f64>),
    Max(Option<f64>),
    Count(u64),
    /// Oldest/newest: (index time, ingestion time) of the winner and its value.
    Pick(Option<(i64, i64)>, f64),
}

impl Acc {
    fn new(f: Func) -> Self {
        match f {
            Func::Mean | Func::Sum => Acc::Sum([0.0; LANES], 0),
            Func::Min => Acc::Min(None),
            Func::Max => Acc::Max(None),
            Func::Oldest | Func::Newest => Acc::Pick(None, 0.0),
            Func::Count | Func::Median | Func::Stddev => Acc::Count(0),
        }
    }
}

/// The lanes of a running sum.
const LANES: usize = 4;

/// Adds `values`, the next values of a bucket of which `count` were added before, to its
/// lanes: value `k` of the bucket (counted over all its parts, in row order) goes to lane
/// `k % LANES`, and the sum is `(l0 + l1) + (l2 + l3)` ([`lane_total`]). A sum in lanes runs
/// about four times as fast as one chain of dependent additions, and since the lane of a value
/// depends only on its place in the bucket, a bucket's sum does not depend on how its rows are
/// split into parts and runs (compacted or not, sliced or not). It is not the sequential sum
/// bit for bit; the general plan's DataFusion kernels sum in lanes too.
#[inline]
fn add_lanes(lanes: &mut [f64; LANES], count: u64, values: &[f64]) {
    let first = (count % LANES as u64) as usize;
    let head = ((LANES - first) % LANES).min(values.len());
    for (k, v) in values[..head].iter().enumerate() {
        lanes[first + k] += v;
    }
    let chunks = values[head..].chunks_exact(LANES);
    let tail = chunks.remainder();
    let mut l = *lanes;
    for c in chunks {
        for (lane, v) in l.iter_mut().zip(c) {
            *lane += v;
        }
    }
    for (lane, v) in l.iter_mut().zip(tail) {
        *lane += v;
    }
    *lanes = l;
}

/// The sum of a bucket's lanes.
#[inline]
fn lane_total(l: &[f64; LANES]) -> f64 {
    (l[0] + l[1]) + (l[2] + l[3])
}

/// Zone offsets lie within ±18 h (seconds).
const MAX_ZONE_OFFSET: i64 = 18 * 3600;

/// Marks a row without an index time in the floating-time scratch: below every window.
const NO_TIME: i64 = i64::MIN;

/// The floating index times of a part that are its instants, as they are: when no row has an
/// offset and the user no fallback zone, the way data pushed without offsets arrives, every
/// floating time is the UTC instant (§3.2), so the timestamp column is read in place.
fn instants_as_floating<'a>(
    timestamp: &'a TimestampMicrosecondArray,
    offset: &Int32Array,
    zone: Option<Tz>,
) -> Option<&'a [i64]> {
    let utc = timestamp.null_count() == 0 && offset.null_count() == offset.len() && zone.is_none();
    utc.then(|| &timestamp.values()[..])
}

/// Fills `out` with each row's floating index time (§3.2), [`NO_TIME`] for a null timestamp;
/// one vectorised pass without nulls. [`instants_as_floating`] answers first where it can.
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

/// Bounds of the floating times of a part: (smallest instant + smallest offset, largest
/// instant + largest offset), two branch-free passes and no writes; the instants' bounds are
/// the first and last rows' when they are `sorted`. Rows without an offset
/// use the zone's, within ±18 h (or 0 without a zone); slots under nulls only widen the bounds.
pub(super) fn bounds(
    timestamp: &TimestampMicrosecondArray,
    offset: &Int32Array,
    zone: Option<Tz>,
    sorted: bool,
) -> Option<(i64, i64)> {
    if timestamp.is_empty() || timestamp.null_count() > 0 {
        return None;
    }
    let span = |lo: i64, hi: i64, v: i64| (lo.min(v), hi.max(v));
    let t = timestamp.values();
    let (t0, t1) = match (sorted, t.first(), t.last()) {
        (true, Some(&first), Some(&last)) => (first, last),
        _ => t
            .iter()
            .fold((i64::MAX, i64::MIN), |(lo, hi), &t| span(lo, hi, t)),
    };
    // Without any offset (data pushed without zones) the column holds no value to read.
    let (o0, o1) = if offset.null_count() == offset.len() {
        (i64::MAX, i64::MIN)
    } else {
        offset
            .values()
            .iter()
            .fold((i64::MAX, i64::MIN), |(lo, hi), &o| {
                span(lo, hi, i64::from(o))
            })
    };
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

/// The first row from `from` whose time leaves `[lo, lo + width)` (or `times.len()`): whole
/// chunks of rows are tested without an early exit, which the compiler vectorises, and only the
/// chunk that leaves is searched row by row. A run of an hour of 1 Hz data is 3,600 rows.
#[inline]
fn run_end(times: &[i64], from: usize, lo: i64, width: u64) -> usize {
    const CHUNK: usize = 16;
    let leaves = |t: i64| (t.wrapping_sub(lo) as u64) >= width;
    let mut j = from;
    while let Some(chunk) = times.get(j..j + CHUNK) {
        if chunk.iter().fold(false, |any, &t| any | leaves(t)) {
            break;
        }
        j += CHUNK;
    }
    times[j..]
        .iter()
        .position(|&t| leaves(t))
        .map_or(times.len(), |p| j + p)
}

/// `oldest`/`newest` over the rows `range` of one run without null values: the extreme time is
/// found in one vectorised pass over the times alone, then only the rows at that time are
/// compared by ingestion (the larger wins, the first of equals), so a run reads its values and
/// ingestion times at a row or two. The answer is the row-by-row fold's ([`update`]).
#[inline]
fn pick_dense(
    acc: &mut Acc,
    newest: bool,
    times: &[i64],
    ingested: &TimestampMicrosecondArray,
    values: &[f64],
    range: std::ops::Range<usize>,
) {
    let Acc::Pick(best, value) = acc else {
        return;
    };
    let run = &times[range.clone()];
    let extreme = if newest {
        run.iter().copied().max()
    } else {
        run.iter().copied().min()
    };
    let Some(t) = extreme else {
        return;
    };
    let mut pick: Option<((i64, i64), f64)> = None;
    for (j, _) in run.iter().enumerate().filter(|&(_, &u)| u == t) {
        let i = range.start + j;
        let key = (t, ingested_at(ingested, i));
        if pick.is_none_or(|(k, _)| key.1 > k.1) {
            pick = Some((key, values[i]));
        }
    }
    if let Some((key, v)) = pick {
        let better = match *best {
            None => true,
            Some((bt, bi)) if key.0 == bt => key.1 > bi,
            Some((bt, _)) => (key.0 > bt) == newest,
        };
        if better {
            (*best, *value) = (Some(key), v);
        }
    }
}

/// Folds the non-null rows `(row, value)` of one run into one aggregate's state, in row order.
#[inline]
fn update(
    acc: &mut Acc,
    f: Func,
    rows: impl Iterator<Item = (usize, f64)>,
    times: &[i64],
    ingested: &TimestampMicrosecondArray,
) {
    match acc {
        Acc::Sum(lanes, count) => {
            for (_, v) in rows {
                lanes[(*count % LANES as u64) as usize] += v;
                *count += 1;
            }
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

/// One aggregate's argument in one part: its values (none for `count`) and its nulls, if any.
struct Arg<'a> {
    values: &'a [f64],
    nulls: Option<&'a NullBuffer>,
}

/// How a floating time finds its bucket: one division for periods of one width that tile time
/// from a fixed origin (minutes and hours that divide the day, days, weeks from a Monday),
/// the calendar (`time::trunc`) for the rest: months, years, and minutes or hours that restart
/// at midnight with a shorter last bucket.
#[derive(Debug, Clone, Copy)]
enum Step {
    Fixed { origin: i64, width: i64 },
    Calendar(Period),
}

impl Step {
    fn of(p: Period) -> Step {
        let n = i64::from(p.value.max(1));
        let within_day = |unit: i64| {
            let width = n * unit;
            if time::MICROS_PER_DAY % width == 0 {
                Step::Fixed { origin: 0, width }
            } else {
                Step::Calendar(p)
            }
        };
        match p.unit {
            Unit::Minute => within_day(60_000_000),
            Unit::Hour => within_day(3_600_000_000),
            Unit::Day => Step::Fixed {
                origin: 0,
                width: n * time::MICROS_PER_DAY,
            },
            // 1970-01-05 (day 4) is a Monday.
            Unit::Week => Step::Fixed {
                origin: 4 * time::MICROS_PER_DAY,
                width: 7 * n * time::MICROS_PER_DAY,
            },
            Unit::Month | Unit::Year => Step::Calendar(p),
        }
    }

    /// The bucket `[start, end)` holding floating time `t`: `time::trunc` and
    /// `time::bucket_end`.
    #[inline]
    fn bucket(self, t: i64) -> (i64, i64) {
        match self {
            Step::Fixed { origin, width } => {
                let b = t - t.wrapping_sub(origin).rem_euclid(width);
                (b, b.saturating_add(width))
            }
            Step::Calendar(p) => {
                let b = time::trunc(t, p);
                (b, time::bucket_end(b, p))
            }
        }
    }
}

/// The buckets of one slice of the window, with their owning source and aggregate states.
pub(super) struct Slice {
    spec: Arc<BucketSpec>,
    schema: SchemaRef,
    /// The slice `[start, end)`: whole buckets (its ends are bucket starts or the window's).
    window: (i64, i64),
    /// Source codes, best first (§3.5).
    ranked: Arc<[u32]>,
    reservation: MemoryReservation,
    groups: HashMap<i64, usize, BuildHasherDefault<BucketHasher>>,
    buckets: Vec<i64>,
    owners: Vec<u32>,
    accs: Vec<Acc>,
    /// A new group's accumulators, copied in whole.
    fresh: Vec<Acc>,
    step: Step,
    /// Scratch: the floating times of the part being scanned.
    times: Vec<i64>,
    counters: Counters,
}

/// What a slice is given: the query's spec and output schema, the sources best first, and a
/// reservation of the query's pool (empty) and the counters to report to.
pub(super) struct SliceOf {
    pub(super) spec: Arc<BucketSpec>,
    pub(super) schema: SchemaRef,
    pub(super) ranked: Arc<[u32]>,
    pub(super) reservation: MemoryReservation,
    pub(super) counters: Counters,
}

impl Slice {
    pub(super) fn new(of: SliceOf, window: (i64, i64)) -> Self {
        Slice {
            schema: of.schema,
            window,
            ranked: of.ranked,
            reservation: of.reservation,
            groups: HashMap::default(),
            buckets: Vec::new(),
            owners: Vec::new(),
            accs: Vec::new(),
            fresh: of.spec.aggs.iter().map(|(f, _)| Acc::new(*f)).collect(),
            step: Step::of(of.spec.period),
            times: Vec::new(),
            counters: of.counters,
            spec: of.spec,
        }
    }

    /// Folds the rows of `parts` that fall in this slice, best source first, and emits the
    /// slice's buckets in order. Yields after each part it scans, so an aborted query stops
    /// within one part's work.
    pub(super) async fn run(mut self, parts: &[Part]) -> Result<RecordBatch> {
        self.presize(parts)?;
        let ranked = self.ranked.clone();
        for &s in ranked.iter() {
            for part in parts.iter().filter(|p| p.source == s) {
                if self.scan(part)? {
                    tokio::task::yield_now().await;
                }
            }
        }
        self.emit()
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
        self.accs.extend_from_slice(&self.fresh);
        if g.is_power_of_two() {
            self.reserve(self.times.capacity() * 8)?;
        }
        Ok(Some(g))
    }

    /// Whether every bucket that floating times `lo..=hi` can fall in (within the slice) is
    /// owned by a source other than `s`: then rows in that range cannot change the answer.
    fn owned_elsewhere(&self, (lo, hi): (i64, i64), s: u32) -> bool {
        let (w0, w1) = self.window;
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

    /// Reserves the groups the scan will make, so that a query of many small buckets (minute
    /// buckets over months) does not grow and rehash its maps a score of times: at most one
    /// group per row, and no more than the slice holds buckets.
    fn presize(&mut self, parts: &[Part]) -> Result<()> {
        let rows: usize = parts.iter().map(|p| p.timestamp.len()).sum();
        let period = self.spec.period;
        let (w0, w1) = self.window;
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

    /// Accumulates the rows of one part that fall in this slice, run by run; whether it read
    /// the part's rows (false: the part lies outside the slice, or better sources own it).
    fn scan(&mut self, part: &Part) -> Result<bool> {
        let s = part.source;
        // Bounded by its instants and offsets before any floating time is computed, a part is
        // skipped whole when it lies outside the slice, or when better sources own its buckets.
        if let Some((lo, hi)) = part.bounds {
            if hi < self.window.0 || lo >= self.window.1 {
                return Ok(false);
            }
            if !self.groups.is_empty() && self.owned_elsewhere((lo, hi), s) {
                self.counters.parts_skipped.add(1);
                return Ok(false);
            }
        }
        self.counters.rows_scanned.add(part.timestamp.len());
        let mut scratch = std::mem::take(&mut self.times);
        let in_place = instants_as_floating(&part.timestamp, &part.offset, self.spec.zone);
        if in_place.is_none() {
            floating_times(&part.timestamp, &part.offset, self.spec.zone, &mut scratch);
        }
        let result = self
            .reserve(scratch.capacity() * 8)
            .and_then(|()| self.runs(in_place.unwrap_or(&scratch), part));
        self.times = scratch;
        result.map(|()| true)
    }

    /// Finds the runs of rows of one bucket inside the slice and accumulates those of
    /// buckets the part's source owns.
    fn runs(&mut self, times: &[i64], part: &Part) -> Result<()> {
        let args = self.arguments(part)?;
        let (w0, w1) = self.window;
        let n = times.len();
        let mut i = 0;
        while i < n {
            let t = times[i];
            if t < w0 || t >= w1 {
                i += 1;
                continue;
            }
            // A run: the following rows whose times stay in the bucket (clipped to the slice).
            let (b, e) = self.step.bucket(t);
            let (lo, hi) = (b.max(w0), e.min(w1));
            let width = (hi - lo) as u64;
            let end = run_end(times, i + 1, lo, width);
            if let Some(g) = self.group(b, part.source)? {
                self.accumulate(g, times, &part.ingested, &args, i..end);
            }
            i = end;
        }
        Ok(())
    }

    /// Each aggregate's argument in `part`, read once per part rather than once per run.
    fn arguments<'a>(&self, part: &'a Part) -> Result<Vec<Arg<'a>>> {
        self.spec
            .aggs
            .iter()
            .zip(&part.args)
            .map(|((f, _), arg)| {
                let nulls = arg.nulls().filter(|b| b.null_count() > 0);
                if *f == Func::Count {
                    return Ok(Arg { values: &[], nulls });
                }
                match arg.as_primitive_opt::<Float64Type>() {
                    Some(a) => Ok(Arg {
                        values: a.values(),
                        nulls,
                    }),
                    None => exec_err!("{f:?} over a non-float column"),
                }
            })
            .collect()
    }

    /// Adds rows `range` (one bucket, one source) to group `g`.
    fn accumulate(
        &mut self,
        g: usize,
        times: &[i64],
        ingested: &TimestampMicrosecondArray,
        args: &[Arg],
        range: std::ops::Range<usize>,
    ) {
        let n = self.spec.aggs.len();
        let accs = &mut self.accs[g * n..(g + 1) * n];
        for ((acc, (f, _)), arg) in accs.iter_mut().zip(&self.spec.aggs).zip(args) {
            if let Acc::Count(c) = acc {
                *c += match arg.nulls {
                    None => range.len(),
                    Some(b) => range.clone().filter(|&i| b.is_valid(i)).count(),
                } as u64;
                continue;
            }
            let values = arg.values;
            match (arg.nulls, &mut *acc) {
                (None, Acc::Pick(..)) => {
                    pick_dense(
                        acc,
                        *f == Func::Newest,
                        times,
                        ingested,
                        values,
                        range.clone(),
                    );
                    continue;
                }
                (None, Acc::Sum(lanes, count)) => {
                    add_lanes(lanes, *count, &values[range.clone()]);
                    *count += range.len() as u64;
                    continue;
                }
                _ => {}
            }
            match arg.nulls {
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
    }

    /// Sizes the pool reservation to the groups plus `scratch` bytes; the pool is only asked
    /// when the size changes (it is shared by the request's operators, behind a lock).
    fn reserve(&mut self, scratch: usize) -> Result<()> {
        let per_group = 48 + self.spec.aggs.len() * std::mem::size_of::<Acc>();
        let groups = self.buckets.capacity().max(1) * per_group;
        let wanted = groups + scratch;
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
                        Acc::Sum(l, c) if c > 0 => {
                            let s = lane_total(&l);
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
    fn a_step_finds_the_calendar_bucket() {
        use rand::{Rng, SeedableRng};
        let mut g = rand::rngs::SmallRng::seed_from_u64(7);
        let units = [
            Unit::Minute,
            Unit::Hour,
            Unit::Day,
            Unit::Week,
            Unit::Month,
            Unit::Year,
        ];
        for unit in units {
            for value in [1, 2, 5, 7, 15, 45, 90] {
                let p = Period { value, unit };
                for _ in 0..2000 {
                    // Between 1900 and 2100, before and after the epoch.
                    let t = g.gen_range(-2_208_988_800_000_000i64..4_102_444_800_000_000);
                    let b = time::trunc(t, p);
                    assert_eq!(
                        Step::of(p).bucket(t),
                        (b, time::bucket_end(b, p)),
                        "{p:?} {t}"
                    );
                }
            }
        }
    }

    #[test]
    fn instants_are_read_in_place_only_when_every_floating_time_is_the_instant() {
        let ts = TimestampMicrosecondArray::from(vec![0, 3_600_000_000, 7_200_000_000]);
        let no_offsets = Int32Array::new_null(3);
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let in_place = instants_as_floating(&ts, &no_offsets, None).unwrap();
        let mut filled = Vec::new();
        floating_times(&ts, &no_offsets, None, &mut filled);
        assert_eq!(in_place, &filled[..]);
        // A fallback zone, one offset, or a null timestamp moves floating times off instants.
        assert!(instants_as_floating(&ts, &no_offsets, Some(berlin)).is_none());
        let one_offset = Int32Array::from(vec![None, Some(3600), None]);
        assert!(instants_as_floating(&ts, &one_offset, None).is_none());
        floating_times(&ts, &one_offset, None, &mut filled);
        assert_eq!(filled, vec![0, 7_200_000_000, 7_200_000_000]);
        let null_time = TimestampMicrosecondArray::from(vec![Some(0), None, Some(1)]);
        assert!(instants_as_floating(&null_time, &no_offsets, None).is_none());
        floating_times(&null_time, &no_offsets, Some(berlin), &mut filled);
        assert_eq!(filled, vec![3_600_000_000, NO_TIME, 3_600_000_001]);
    }

    #[test]
    fn run_end_finds_the_first_row_leaving_the_bucket() {
        use rand::{Rng, SeedableRng};
        let mut g = rand::rngs::SmallRng::seed_from_u64(3);
        for _ in 0..500 {
            let n = g.gen_range(0..80);
            let times: Vec<i64> = (0..n).map(|_| g.gen_range(-5..40)).collect();
            let (lo, width) = (0, g.gen_range(1..40u64));
            let from = g.gen_range(0..=n);
            let naive = (from..n)
                .find(|&i| (times[i].wrapping_sub(lo) as u64) >= width)
                .unwrap_or(n);
            assert_eq!(
                run_end(&times, from, lo, width),
                naive,
                "{times:?} {from} {width}"
            );
        }
    }

    #[test]
    fn dense_picks_match_the_row_by_row_fold() {
        use rand::{Rng, SeedableRng};
        let mut g = rand::rngs::SmallRng::seed_from_u64(5);
        for _ in 0..2000 {
            let n = g.gen_range(1..40);
            // Few distinct times and ingestion times, so ties are common.
            let times: Vec<i64> = (0..n).map(|_| g.gen_range(0..6)).collect();
            let ingested: TimestampMicrosecondArray = (0..n)
                .map(|_| g.gen_bool(0.8).then(|| g.gen_range(0..3)))
                .collect();
            let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let start = g.gen_range(0..n);
            let end = g.gen_range(start..=n);
            for newest in [true, false] {
                let f = if newest { Func::Newest } else { Func::Oldest };
                let seed = g
                    .gen_bool(0.5)
                    .then(|| (g.gen_range(0..6), g.gen_range(-1..3)));
                let mut fast = Acc::Pick(seed, -1.0);
                let mut slow = fast;
                pick_dense(&mut fast, newest, &times, &ingested, &values, start..end);
                let rows = (start..end).map(|i| (i, values[i]));
                update(&mut slow, f, rows, &times, &ingested);
                assert_eq!(
                    format!("{fast:?}"),
                    format!("{slow:?}"),
                    "{times:?} {ingested:?}"
                );
            }
        }
    }

    #[test]
    fn a_sum_in_lanes_does_not_depend_on_how_its_values_are_split() {
        use rand::{Rng, SeedableRng};
        let mut g = rand::rngs::SmallRng::seed_from_u64(9);
        let values: Vec<f64> = (0..1000).map(|_| g.gen_range(-1e6..1e6)).collect();
        let mut whole = [0.0; LANES];
        add_lanes(&mut whole, 0, &values);
        let exact: f64 = values.iter().sum();
        assert!((lane_total(&whole) - exact).abs() <= 1e-9 * exact.abs().max(1.0));
        let no_times = TimestampMicrosecondArray::from(Vec::<i64>::new());
        for _ in 0..200 {
            // Random runs, some through the row-by-row path (as a nullable argument is).
            let mut lanes = Acc::Sum([0.0; LANES], 0);
            let mut i = 0;
            while i < values.len() {
                let end = (i + g.gen_range(0..30)).min(values.len());
                if g.gen_bool(0.5) {
                    let rows = (i..end).map(|k| (k, values[k]));
                    update(&mut lanes, Func::Sum, rows, &[], &no_times);
                } else if let Acc::Sum(l, count) = &mut lanes {
                    add_lanes(l, *count, &values[i..end]);
                    *count += (end - i) as u64;
                }
                i = end;
            }
            let Acc::Sum(l, count) = lanes else {
                unreachable!()
            };
            assert_eq!(count, 1000);
            assert_eq!(lane_total(&l).to_bits(), lane_total(&whole).to_bits());
        }
    }

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
