//! The computation of `derived_readiness` rows from its collected inputs (see the formulas in
//! [`super`]): each input's best source per day, the night of each day, the rolling baseline,
//! and one output row per day of the window that has a night or a training load. A user's data
//! is a few hundred nights and days, so plain loops over maps are the right tool; the only
//! large input, heart-rate samples, is reduced to daily loads in one pass over its batches as
//! the scan hands them (`load.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Result;

use super::Spec;
use super::columns::{ByDay, Codes, best_rows, dates, floats, get, ints, strs, text, times};
use super::load::heart_rate_days;
use super::score::{
    BASELINE_DAYS, BASELINE_NIGHTS, baseline_chronotype, recovery, recovery_zone, strain,
    strain_zone, z_component,
};
use crate::engine::stored::StoredBatches;
use crate::engine::time::MICROS_PER_DAY;

/// The collected inputs, one batch each, in [`super::inputs::plans`] order.
pub struct Inputs {
    /// Sleep sessions.
    pub sleep: RecordBatch,
    /// Activity days.
    pub activity: RecordBatch,
    /// Workouts.
    pub workout: RecordBatch,
    /// Heart-rate samples: the scan's batches as they are ([`super::load::COLUMNS`]).
    pub heartrate: Vec<RecordBatch>,
    /// HRV samples.
    pub hrv: RecordBatch,
    /// Profiles.
    pub profile: RecordBatch,
}

/// One day's night: the row it is, its floating bounds and the inputs of the recovery.
#[derive(Debug, Clone, Copy)]
struct Night {
    row: usize,
    start: i64,
    end: i64,
    sleep_score: Option<i64>,
    hrv: Option<f64>,
    rhr: Option<f64>,
}

fn nights(s: &RecordBatch, order: &[String]) -> Result<BTreeMap<i64, Night>> {
    let codes = Codes::of(s)?;
    let (start, end) = (times(s, "start")?, times(s, "end")?);
    let kind = strs(s, "type")?;
    let (asleep, duration) = (ints(s, "stage_asleep_second")?, ints(s, "duration_second")?);
    let id = strs(s, "id")?;
    let mut by_day = ByDay::new();
    for i in 0..s.num_rows() {
        let nap = matches!(text(kind, i), Some("short_sleep" | "acknowledged_nap"));
        if let (Some(e), Some(_), false) = (get(end, i), get(start, i), nap) {
            by_day
                .entry(e.div_euclid(MICROS_PER_DAY))
                .or_default()
                .push(i);
        }
    }
    let (score, hrv, rhr) = (
        ints(s, "sleep_score")?,
        floats(s, "hrv_mean_rmssd")?,
        ints(s, "heart_rate_resting")?,
    );
    let mut out = BTreeMap::new();
    for (day, rows) in best_rows(&by_day, &codes, order) {
        let longest = rows.into_iter().max_by_key(|&i| {
            let total = get(asleep, i).or(get(duration, i)).unwrap_or(0);
            (total, get(end, i), text(id, i))
        });
        if let Some(i) = longest {
            let night = Night {
                row: i,
                start: start.value(i),
                end: end.value(i),
                sleep_score: get(score, i),
                hrv: get(hrv, i),
                rhr: get(rhr, i).map(|v| v as f64),
            };
            out.insert(day, night);
        }
    }
    Ok(out)
}

/// The mean HRV sample of the best source within each night that has no HRV of its own.
fn hrv_from_samples(
    nights: &mut BTreeMap<i64, Night>,
    h: &RecordBatch,
    order: &[String],
) -> Result<()> {
    if h.num_rows() == 0 || nights.values().all(|n| n.hrv.is_some()) {
        return Ok(());
    }
    let codes = Codes::of(h)?;
    let (time, value) = (times(h, "time")?, floats(h, "value")?);
    let mut samples: Vec<(i64, usize, f64)> = (0..h.num_rows())
        .filter_map(|i| Some((get(time, i)?, codes.rows[i], get(value, i)?)))
        .collect();
    samples.sort_by_key(|s| s.0);
    for night in nights.values_mut().filter(|n| n.hrv.is_none()) {
        let from = samples.partition_point(|s| s.0 < night.start);
        let to = samples.partition_point(|s| s.0 <= night.end);
        let inside = &samples[from..to];
        if let Some(best) = codes.best(inside.iter().map(|s| s.1), order) {
            let vals: Vec<f64> = inside.iter().filter(|s| s.1 == best).map(|s| s.2).collect();
            night.hrv = Some(vals.iter().sum::<f64>() / vals.len() as f64);
        }
    }
    Ok(())
}

/// One day's activity row of the best source (the latest ingested when it has several).
#[derive(Debug, Clone, Copy)]
struct ActivityDay {
    rhr: Option<f64>,
    trimp: Option<f64>,
    ingested: Option<i64>,
}

fn activity_days(a: &RecordBatch, order: &[String]) -> Result<BTreeMap<i64, ActivityDay>> {
    let codes = Codes::of(a)?;
    let date = dates(a, "date")?;
    let mut by_day = ByDay::new();
    for i in 0..a.num_rows() {
        if let Some(d) = get(date, i) {
            by_day.entry(i64::from(d)).or_default().push(i);
        }
    }
    let rhr = floats(a, "heart_rate_resting")?;
    let ingested = times(a, "ingested_at")?;
    let minutes = [
        (ints(a, "intensity_low_second")?, 1.0),
        (ints(a, "intensity_medium_second")?, 2.0),
        (ints(a, "intensity_high_second")?, 3.0),
    ];
    let mut out = BTreeMap::new();
    for (day, rows) in best_rows(&by_day, &codes, order) {
        let Some(i) = rows.into_iter().max_by_key(|&i| get(ingested, i)) else {
            continue;
        };
        let present = minutes.iter().any(|(m, _)| m.is_valid(i));
        let trimp = present.then(|| {
            minutes
                .iter()
                .map(|(m, w)| get(*m, i).unwrap_or(0) as f64 / 60.0 * w)
                .sum::<f64>()
        });
        let day_row = ActivityDay {
            rhr: get(rhr, i),
            trimp,
            ingested: get(ingested, i),
        };
        out.insert(day, day_row);
    }
    Ok(out)
}

/// Each day's training impulse from the workouts of the best source that started on it (the
/// minutes in zones 1–6 weighted 0–5), with their newest ingestion time.
fn workout_days(w: &RecordBatch, order: &[String]) -> Result<BTreeMap<i64, (f64, Option<i64>)>> {
    let codes = Codes::of(w)?;
    let start = times(w, "start")?;
    let zones = (1..=6)
        .map(|z| floats(w, &format!("heart_rate_zone_{z}")))
        .collect::<Result<Vec<_>>>()?;
    let ingested = times(w, "ingested_at")?;
    let mut by_day = ByDay::new();
    for i in 0..w.num_rows() {
        if let Some(s) = get(start, i)
            && zones.iter().any(|z| z.is_valid(i))
        {
            by_day
                .entry(s.div_euclid(MICROS_PER_DAY))
                .or_default()
                .push(i);
        }
    }
    let mut out = BTreeMap::new();
    for (day, rows) in best_rows(&by_day, &codes, order) {
        let trimp = rows
            .iter()
            .flat_map(|&i| {
                zones
                    .iter()
                    .enumerate()
                    .map(move |(w, z)| get(*z, i).unwrap_or(0.0) / 60.0 * w as f64)
            })
            .sum::<f64>();
        let newest = rows.iter().filter_map(|&i| get(ingested, i)).max();
        out.insert(day, (trimp, newest));
    }
    Ok(out)
}

/// The birth date (day number) of the best source's profile that has one.
fn birth_day(p: &RecordBatch, order: &[String]) -> Result<Option<i64>> {
    let codes = Codes::of(p)?;
    let birth = dates(p, "birth_date")?;
    let with: Vec<usize> = (0..p.num_rows()).filter(|&i| birth.is_valid(i)).collect();
    let best = codes.best(with.iter().map(|&i| codes.rows[i]), order);
    Ok(best.and_then(|b| {
        with.iter()
            .find(|&&i| codes.rows[i] == b)
            .map(|&i| i64::from(birth.value(i)))
    }))
}

/// The output rows (schema [`crate::schema::Derived::schema`]) of the days of `spec`;
/// `stored` is what the caller declared about the heart-rate batches (`engine::stored`).
pub fn compute(
    inputs: &Inputs,
    spec: &Spec,
    stored: Option<&StoredBatches>,
    schema: SchemaRef,
) -> Result<RecordBatch> {
    let o = &spec.orders;
    let mut nights = nights(&inputs.sleep, &o.sleep)?;
    let activity = activity_days(&inputs.activity, &o.activity)?;
    for (day, night) in nights.iter_mut() {
        if night.rhr.is_none() {
            night.rhr = activity.get(day).and_then(|a| a.rhr);
        }
    }
    hrv_from_samples(&mut nights, &inputs.hrv, &o.timeseries)?;
    let birth = birth_day(&inputs.profile, &o.profile)?;
    let workouts = workout_days(&inputs.workout, &o.workouts)?;
    let Some(b) = spec.bounds else {
        return Ok(RecordBatch::new_empty(schema));
    };
    let floating = (b.first_day * MICROS_PER_DAY, b.end_day * MICROS_PER_DAY);
    let heart = heart_rate_days(
        &inputs.heartrate,
        floating,
        spec.zone,
        stored,
        &o.timeseries,
        birth,
    )?;
    let window = b.first_day..b.end_day;
    let days: BTreeSet<i64> = nights
        .keys()
        .chain(activity.keys())
        .chain(workouts.keys())
        .chain(heart.keys())
        .copied()
        .filter(|d| window.contains(d))
        .collect();
    let s = &inputs.sleep;
    let (provider, source_type) = (strs(s, "source_provider")?, strs(s, "source_type")?);
    let (app, device) = (strs(s, "source_app_id")?, strs(s, "source_device_id")?);
    let night_ingested = times(s, "ingested_at")?;
    let mut rows = Rows::default();
    for &day in &days {
        let night = nights.get(&day);
        let baseline: Vec<&Night> = nights
            .range(day - BASELINE_DAYS..day)
            .map(|(_, n)| n)
            .collect();
        let scored = baseline.len() >= BASELINE_NIGHTS;
        let hrvs: Vec<f64> = baseline.iter().filter_map(|n| n.hrv).collect();
        let rhrs: Vec<f64> = baseline.iter().filter_map(|n| n.rhr).collect();
        let mids: Vec<i64> = baseline
            .iter()
            .map(|n| {
                let mid = n.start / 2 + n.end / 2 + (n.start % 2 + n.end % 2) / 2;
                mid.rem_euclid(MICROS_PER_DAY) / 1_000_000
            })
            .collect();
        let sleep_score = night.and_then(|n| n.sleep_score).filter(|_| scored);
        let recovery = night.filter(|_| scored).and_then(|n| {
            recovery(
                z_component(n.hrv, &hrvs, true),
                z_component(n.rhr, &rhrs, false),
                n.sleep_score,
            )
        });
        let loads = [
            heart.get(&day).copied(),
            workouts.get(&day).map(|w| w.0),
            activity.get(&day).and_then(|a| a.trimp),
        ];
        let trimp = loads.into_iter().flatten().reduce(f64::max);
        let strain = trimp.filter(|_| scored).map(strain);
        let ingested = [
            night.and_then(|n| get(night_ingested, n.row)),
            activity.get(&day).and_then(|a| a.ingested),
            workouts.get(&day).and_then(|w| w.1),
        ];
        let source = |a: &StringArray| night.and_then(|n| text(a, n.row)).map(str::to_owned);
        rows.date.push(i32::try_from(day).ok());
        rows.chronotype.push(
            baseline_chronotype(&mids)
                .filter(|_| scored)
                .map(str::to_owned),
        );
        rows.sleep_score.push(sleep_score);
        rows.recovery.push(recovery);
        rows.recovery_zone
            .push(recovery.map(|r| recovery_zone(r).to_owned()));
        rows.stress.push(recovery.map(|r| 100 - r));
        rows.strain.push(strain);
        rows.strain_zone
            .push(strain.map(|s| strain_zone(s).to_owned()));
        rows.sources[0].push(source(provider));
        rows.sources[1].push(source(source_type));
        rows.sources[2].push(source(app));
        rows.sources[3].push(source(device));
        rows.ingested.push(ingested.into_iter().flatten().max());
    }
    rows.batch(schema)
}

/// The output columns being built.
#[derive(Default)]
struct Rows {
    date: Vec<Option<i32>>,
    chronotype: Vec<Option<String>>,
    sleep_score: Vec<Option<i64>>,
    recovery: Vec<Option<i64>>,
    recovery_zone: Vec<Option<String>>,
    stress: Vec<Option<i64>>,
    strain: Vec<Option<f64>>,
    strain_zone: Vec<Option<String>>,
    sources: [Vec<Option<String>>; 4],
    ingested: Vec<Option<i64>>,
}

impl Rows {
    fn batch(self, schema: SchemaRef) -> Result<RecordBatch> {
        let [p, t, a, d] = self.sources;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Date32Array::from(self.date)),
            Arc::new(StringArray::from(self.chronotype)),
            Arc::new(Int64Array::from(self.sleep_score)),
            Arc::new(Int64Array::from(self.recovery)),
            Arc::new(StringArray::from(self.recovery_zone)),
            Arc::new(Int64Array::from(self.stress)),
            Arc::new(Float64Array::from(self.strain)),
            Arc::new(StringArray::from(self.strain_zone)),
            Arc::new(StringArray::from(p)),
            Arc::new(StringArray::from(t)),
            Arc::new(StringArray::from(a)),
            Arc::new(StringArray::from(d)),
            Arc::new(TimestampMicrosecondArray::from(self.ingested).with_timezone("UTC")),
        ];
        Ok(RecordBatch::try_new(schema, columns)?)
    }
}
