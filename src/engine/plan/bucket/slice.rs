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
/// Without nulls it is one vectorised pass; so it is when no row has an offset and the user no
/// fallback zone (times are then UTC: a copy), the way data pushed without offsets arrives.
fn floating_times(
    timestamp: &TimestampMicrosecondArray,
    offset: &Int32Array,
    zone: Option<Tz>,
    out: &mut Vec<i64>,
) {
    out.clear();
    if timestamp.null_count() == 0 && offset.null_count() == offset.len() && zone.is_none() {
        out.extend_from_slice(timestamp.values());
        return;
    }
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
/// instant + largest offset), two branch-free passes and no writes. Rows without an offset
/// use the zone's, within ±18 h (or 0 without a zone); slots under nulls only widen the bounds.
pub(super) fn bounds(
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
        let mut times = std::mem::take(&mut self.times);
        floating_times(&part.timestamp, &part.offset, self.spec.zone, &mut times);
        self.reserve(times.capacity() * 8)?;
        let result = self.runs(&times, part);
        self.times = times;
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
            let end = times[i + 1..]
                .iter()
                .position(|&t| (t.wrapping_sub(lo) as u64) >= width)
                .map_or(n, |p| i + 1 + p);
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
