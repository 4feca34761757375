//! The daily training load of heart-rate samples (load (a) of `strain_score`, see [`super`]),
//! reduced in one pass over the heart-rate input's batches as the scan hands them: no filter,
//! no floating-time projection, no concatenation, no sort of input already in order.
//!
//! - Each batch's rows get their floating time the way the language's `FloatingTime` kernel
//!   gives it ([`time::to_floating`]: the row's offset, else the fallback zone, else UTC), and
//!   only rows inside the window's floating days, with a time and a value, are kept.
//! - Kept samples go to their source's list in input order; a batch the caller declared the
//!   store's (`engine::stored`: sorted by time, one source) is read as one slice of its time
//!   and value buffers between two binary searches when its floating time is its UTC time.
//! - Each source's list is sorted by time (stably, so equal times keep their input order)
//!   only when it is not in order already, then folded day by day.
//!
//! That is exactly the load of the formulas: the same samples in the same order per source as
//! a stable sort of the window's rows by (source, time), and the same sums in the same order.

use std::collections::BTreeMap;

use chrono_tz::Tz;
use datafusion::arrow::array::{Array, AsArray, Int32Array, RecordBatch};
use datafusion::arrow::datatypes::Int32Type;
use datafusion::common::{Result, internal_err};

use super::columns::{Codes, col, floats, strs, text, times};
use super::score::{SAMPLE_CAP_SECONDS, hr_max, zone_weight};
use crate::engine::stored::StoredBatches;
use crate::engine::time::{self, MICROS_PER_DAY};
use crate::schema::TIMEZONE_OFFSET;

/// The columns of the heart-rate input the load reads (the stored batches hold more).
#[cfg(test)]
pub const COLUMNS: [&str; 5] = [
    "timestamp",
    TIMEZONE_OFFSET,
    "value",
    "source_provider",
    "source_type",
];

/// How one batch's UTC times become floating times.
enum Shift<'a> {
    /// Floating time is UTC (no offsets, no fallback zone).
    None,
    /// Every row has its offset.
    Offsets(&'a [i32]),
    /// Row by row: the offset, else the zone.
    Rows(&'a Int32Array, Option<Tz>),
}

impl Shift<'_> {
    fn at(&self, utc: i64, i: usize) -> i64 {
        match self {
            Shift::None => utc,
            Shift::Offsets(o) => time::to_floating(utc, Some(o[i]), None),
            Shift::Rows(o, zone) => {
                time::to_floating(utc, o.is_valid(i).then(|| o.value(i)), *zone)
            }
        }
    }
}

/// Each source's samples inside the window: (floating time, value), in input order.
struct Gathered {
    codes: Codes,
    samples: Vec<Vec<(i64, f64)>>,
}

impl Gathered {
    fn code(&mut self, provider: &str, source_type: &str) -> usize {
        let pairs = &mut self.codes.pairs;
        match pairs
            .iter()
            .position(|(p, t)| p == provider && t == source_type)
        {
            Some(c) => c,
            None => {
                pairs.push((provider.to_owned(), source_type.to_owned()));
                self.samples.push(Vec::new());
                pairs.len() - 1
            }
        }
    }

    fn add(
        &mut self,
        b: &RecordBatch,
        (from, to): (i64, i64),
        zone: Option<Tz>,
        stored: Option<&StoredBatches>,
    ) -> Result<()> {
        if b.num_rows() == 0 {
            return Ok(());
        }
        let (utc, value) = (times(b, "timestamp")?, floats(b, "value")?);
        let Some(offset) = col(b, TIMEZONE_OFFSET)?.as_primitive_opt::<Int32Type>() else {
            return internal_err!("readiness input {TIMEZONE_OFFSET} is not an Int32");
        };
        let (p, t) = (strs(b, "source_provider")?, strs(b, "source_type")?);
        let shift = if offset.null_count() == offset.len() && zone.is_none() {
            Shift::None
        } else if offset.null_count() == 0 {
            Shift::Offsets(offset.values())
        } else {
            Shift::Rows(offset, zone)
        };
        let one = stored.and_then(|s| s.one_source(p, t));
        let sorted = stored.is_some_and(|s| s.sorted(utc.values()));
        if let (Some((pv, tv)), true, Shift::None) = (one, sorted, &shift) {
            // The store's batch of one source, floating time UTC: the window is one slice.
            let c = self.code(pv, tv);
            let ts = utc.values();
            let lo = ts.partition_point(|&x| x < from);
            let hi = lo + ts[lo..].partition_point(|&x| x < to);
            let out = &mut self.samples[c];
            if value.null_count() == 0 {
                let vs = &value.values()[lo..hi];
                out.extend(ts[lo..hi].iter().copied().zip(vs.iter().copied()));
            } else {
                out.extend(
                    (lo..hi)
                        .filter(|&i| value.is_valid(i))
                        .map(|i| (ts[i], value.value(i))),
                );
            }
            return Ok(());
        }
        // Any other batch, row by row; runs of one source look their code up once.
        let mut last: Option<(&str, &str, usize)> = None;
        for i in 0..b.num_rows() {
            if utc.is_null(i) || value.is_null(i) {
                continue;
            }
            let at = shift.at(utc.value(i), i);
            if at < from || at >= to {
                continue;
            }
            let (pv, tv) = match one {
                Some(pair) => pair,
                None => (text(p, i).unwrap_or(""), text(t, i).unwrap_or("")),
            };
            let c = match last {
                Some((lp, lt, c)) if lp == pv && lt == tv => c,
                _ => {
                    let c = self.code(pv, tv);
                    last = Some((pv, tv, c));
                    c
                }
            };
            self.samples[c].push((at, value.value(i)));
        }
        Ok(())
    }
}

/// Each day's training impulse from the heart-rate samples of its best source inside the
/// floating window `[from, to)`: a sample stands for the time to the next sample of its source
/// on the same day, at most 5 minutes (the day's last sample for none), weighted by its zone.
pub fn heart_rate_days(
    batches: &[RecordBatch],
    window: (i64, i64),
    zone: Option<Tz>,
    stored: Option<&StoredBatches>,
    order: &[String],
    birth_day: Option<i64>,
) -> Result<BTreeMap<i64, f64>> {
    let mut g = Gathered {
        codes: Codes {
            pairs: Vec::new(),
            rows: Vec::new(),
        },
        samples: Vec::new(),
    };
    for b in batches {
        g.add(b, window, zone, stored)?;
    }
    let mut per_day: BTreeMap<i64, Vec<(usize, f64)>> = BTreeMap::new();
    for (code, samples) in g.samples.iter_mut().enumerate() {
        if !samples.is_sorted_by_key(|s| s.0) {
            samples.sort_by_key(|s| s.0);
        }
        let mut k = 0;
        while k < samples.len() {
            let day = samples[k].0.div_euclid(MICROS_PER_DAY);
            let day_end = (day + 1).saturating_mul(MICROS_PER_DAY);
            let n = samples[k..].partition_point(|s| s.0 < day_end);
            let hr_max = hr_max(birth_day, day);
            let mut trimp = 0.0;
            for pair in samples[k..k + n].windows(2) {
                let [(t, v), (next, _)] = [pair[0], pair[1]];
                let seconds = ((next - t) as f64 / 1e6).min(SAMPLE_CAP_SECONDS);
                trimp += seconds / 60.0 * zone_weight(v, hr_max);
            }
            per_day.entry(day).or_default().push((code, trimp));
            k += n;
        }
    }
    Ok(per_day
        .into_iter()
        .filter_map(|(day, loads)| {
            let best = g.codes.best(loads.iter().map(|l| l.0), order)?;
            loads.into_iter().find(|l| l.0 == best).map(|l| (day, l.1))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{
        ArrayRef, Float64Array, Int32Array, StringArray, TimestampMicrosecondArray,
    };
    use datafusion::arrow::compute::concat_batches;
    use rand::{Rng, SeedableRng, rngs::SmallRng};

    use super::super::columns::get;
    use super::*;
    use crate::schema::{Dataset, resource};

    /// The load as the general plan gave it: the window's rows (floating time, value, source),
    /// one stable sort by (source, time), one fold.
    fn reference(
        batches: &[RecordBatch],
        (from, to): (i64, i64),
        zone: Option<Tz>,
        order: &[String],
        birth_day: Option<i64>,
    ) -> BTreeMap<i64, f64> {
        let whole = concat_batches(&batches[0].schema(), batches).unwrap();
        let utc = times(&whole, "timestamp").unwrap();
        let offset = col(&whole, TIMEZONE_OFFSET)
            .unwrap()
            .as_primitive::<Int32Type>();
        let value = floats(&whole, "value").unwrap();
        let (p, t) = (
            strs(&whole, "source_provider").unwrap(),
            strs(&whole, "source_type").unwrap(),
        );
        let mut codes = Codes {
            pairs: Vec::new(),
            rows: Vec::new(),
        };
        let mut samples = Vec::new();
        for i in 0..whole.num_rows() {
            let Some(u) = get(utc, i) else { continue };
            let at = time::to_floating(u, get(offset, i), zone);
            if at < from || at >= to {
                continue;
            }
            let pair = (
                text(p, i).unwrap_or("").to_owned(),
                text(t, i).unwrap_or("").to_owned(),
            );
            let code = match codes.pairs.iter().position(|c| *c == pair) {
                Some(c) => c,
                None => {
                    codes.pairs.push(pair);
                    codes.pairs.len() - 1
                }
            };
            if let Some(v) = get(value, i) {
                samples.push((code, at, v));
            }
        }
        samples.sort_by_key(|s| (s.0, s.1));
        let mut per_day: BTreeMap<i64, Vec<(usize, f64)>> = BTreeMap::new();
        let mut k = 0;
        while k < samples.len() {
            let (code, t0, _) = samples[k];
            let day = t0.div_euclid(MICROS_PER_DAY);
            let hr_max = hr_max(birth_day, day);
            let mut trimp = 0.0;
            while k < samples.len()
                && samples[k].0 == code
                && samples[k].1.div_euclid(MICROS_PER_DAY) == day
            {
                let (_, t, v) = samples[k];
                if let Some(&(c, next, _)) = samples.get(k + 1)
                    && c == code
                    && next.div_euclid(MICROS_PER_DAY) == day
                {
                    let seconds = ((next - t) as f64 / 1e6).min(SAMPLE_CAP_SECONDS);
                    trimp += seconds / 60.0 * zone_weight(v, hr_max);
                }
                k += 1;
            }
            per_day.entry(day).or_default().push((code, trimp));
        }
        per_day
            .into_iter()
            .filter_map(|(day, loads)| {
                let best = codes.best(loads.iter().map(|l| l.0), order)?;
                loads.into_iter().find(|l| l.0 == best).map(|l| (day, l.1))
            })
            .collect()
    }

    const SOURCES: [(&str, &str); 3] = [("oura", "ring"), ("apple", "watch"), ("garmin", "")];

    /// A batch of `n` samples from `start`: one source or mixed, sorted or shuffled, with
    /// repeated instants, null values and offsets as `offsets` says (0 none, 1 all, 2 some).
    fn batch(
        g: &mut SmallRng,
        start: i64,
        n: usize,
        mixed: bool,
        sorted: bool,
        offsets: u8,
    ) -> RecordBatch {
        let mut ts: Vec<i64> = Vec::with_capacity(n);
        let mut at = start;
        for _ in 0..n {
            ts.push(at);
            at += [0, 1, 30, 60, 400][g.gen_range(0..5)] * 1_000_000;
        }
        if !sorted {
            for i in (1..n).rev() {
                ts.swap(i, g.gen_range(0..=i));
            }
        }
        let one = g.gen_range(0..SOURCES.len());
        let src: Vec<(&str, &str)> = (0..n)
            .map(|_| {
                SOURCES[if mixed {
                    g.gen_range(0..SOURCES.len())
                } else {
                    one
                }]
            })
            .collect();
        let off: Vec<Option<i32>> = (0..n)
            .map(|_| match offsets {
                0 => None,
                1 => Some(g.gen_range(-5..5) * 3600),
                _ => g.gen_bool(0.5).then(|| g.gen_range(-5..5) * 3600),
            })
            .collect();
        let vals: Vec<Option<f64>> = (0..n)
            .map(|_| g.gen_bool(0.95).then(|| g.gen_range(40.0..200.0)))
            .collect();
        let provider: Vec<Option<&str>> = src.iter().map(|s| Some(s.0)).collect();
        let kind: Vec<Option<&str>> = src
            .iter()
            .map(|s| (!s.1.is_empty()).then_some(s.1))
            .collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(TimestampMicrosecondArray::from(ts).with_timezone("UTC")),
            Arc::new(Int32Array::from(off)),
            Arc::new(Float64Array::from(vals)),
            Arc::new(StringArray::from(provider)),
            Arc::new(StringArray::from(kind)),
        ];
        RecordBatch::try_from_iter_with_nullable(
            COLUMNS.iter().zip(columns).map(|(n, c)| (n, c, true)),
        )
        .unwrap()
    }

    #[test]
    fn the_one_pass_load_is_the_sorted_plans_load() {
        let day = MICROS_PER_DAY;
        let order = vec!["apple".to_owned(), "oura".to_owned()];
        let zones = [None, Some(chrono_tz::Europe::Berlin)];
        for seed in 0..200u64 {
            let mut g = SmallRng::seed_from_u64(seed);
            // Around the 2025 spring DST change in Berlin (30 March).
            let start = 20_175 * day + g.gen_range(0..day);
            let mut batches = Vec::new();
            let mut declared = Vec::new();
            for _ in 0..g.gen_range(1..5) {
                let (mixed, sorted) = (g.gen_bool(0.3), g.gen_bool(0.7));
                let offsets = g.gen_range(0..3);
                let from = start + g.gen_range(0..3 * day);
                let n = g.gen_range(0..3000);
                let b = batch(&mut g, from, n, mixed, sorted, offsets);
                if !mixed && sorted {
                    declared.push(b.clone());
                }
                batches.push(b);
            }
            let dataset = Dataset::Timeseries(resource("heartrate").unwrap());
            let inputs = [(dataset, declared)];
            let stored = StoredBatches::of(inputs.iter().map(|(d, b)| (d, b)));
            let window = (start + day / 2, start + 3 * day);
            let birth = g.gen_bool(0.5).then_some(5_000);
            for zone in zones {
                let want = reference(&batches, window, zone, &order, birth);
                for declared in [None, Some(&stored)] {
                    let got =
                        heart_rate_days(&batches, window, zone, declared, &order, birth).unwrap();
                    assert_eq!(got, want, "seed {seed}, zone {zone:?}");
                }
            }
        }
    }
}
