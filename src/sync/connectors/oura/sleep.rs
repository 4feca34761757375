//! One Oura sleep period (`/v2/usercollection/sleep`) to a `sleep` row and its HRV samples.
//!
//! Decisions where the documentation is silent:
//! - `duration` is `time_in_bed`; `hr_highest` is the highest of the period's 5-minute
//!   heart-rate samples (Oura gives no maximum); `hr_average` (a float at Oura) is rounded to
//!   the integer the column holds; `temperature_delta` is the period's
//!   `readiness.temperature_deviation`; the offset is that of `bedtime_end`.
//! - `sleep_phase_5_min` is the hypnogram (Oura's codes 1 deep, 2 light, 3 REM, 4 awake are
//!   ours), dropped with a warning when it has another code or runs past the period.
//! - Oura's sleep score belongs to `daily_sleep`, not the period: no `score`.
//! - The period's `hrv` series (5-minute RMSSD, ms) becomes `hrv` samples in the period's
//!   offset, null items left out. Its `heart_rate` series is not sampled again: the heart-rate
//!   collection has the same readings (source `sleep`).

use chrono::{DateTime, FixedOffset, TimeDelta};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::normalise::{num, offset, put, round, stamp};

/// The hypnogram interval Oura's `sleep_phase_5_min` uses, in seconds.
const PHASE_INTERVAL: i64 = 300;

#[derive(Debug, Deserialize)]
pub(super) struct Sample {
    interval: f64,
    items: Vec<Option<f64>>,
    timestamp: DateTime<FixedOffset>,
}

#[derive(Debug, Deserialize)]
struct Readiness {
    temperature_deviation: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Sleep {
    pub(super) id: String,
    pub(super) bedtime_start: DateTime<FixedOffset>,
    pub(super) bedtime_end: DateTime<FixedOffset>,
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    time_in_bed: Option<i64>,
    total_sleep_duration: Option<i64>,
    awake_time: Option<i64>,
    light_sleep_duration: Option<i64>,
    rem_sleep_duration: Option<i64>,
    deep_sleep_duration: Option<i64>,
    latency: Option<i64>,
    lowest_heart_rate: Option<i64>,
    average_heart_rate: Option<f64>,
    average_hrv: Option<f64>,
    average_breath: Option<f64>,
    efficiency: Option<f64>,
    heart_rate: Option<Sample>,
    pub(super) hrv: Option<Sample>,
    readiness: Option<Readiness>,
    sleep_phase_5_min: Option<String>,
}

/// The `sleep` row of a period, `kind` already mapped.
pub(super) fn row(s: &Sleep, kind: Option<&str>) -> Value {
    let mut row = Map::new();
    row.insert("id".into(), s.id.clone().into());
    row.insert("bedtime_start".into(), stamp(s.bedtime_start).into());
    row.insert("bedtime_stop".into(), stamp(s.bedtime_end).into());
    put(&mut row, "type", kind);
    put(&mut row, "duration", s.time_in_bed);
    put(&mut row, "total", s.total_sleep_duration);
    put(&mut row, "awake", s.awake_time);
    put(&mut row, "light", s.light_sleep_duration);
    put(&mut row, "rem", s.rem_sleep_duration);
    put(&mut row, "deep", s.deep_sleep_duration);
    put(&mut row, "latency", s.latency);
    put(&mut row, "hr_lowest", s.lowest_heart_rate);
    put(&mut row, "hr_average", s.average_heart_rate.and_then(round));
    let highest = s
        .heart_rate
        .as_ref()
        .and_then(|hr| hr.items.iter().flatten().copied().reduce(f64::max));
    put(&mut row, "hr_highest", highest.and_then(round));
    put(&mut row, "efficiency", s.efficiency.map(num));
    put(&mut row, "average_hrv", s.average_hrv.map(num));
    put(&mut row, "respiratory_rate", s.average_breath.map(num));
    put(
        &mut row,
        "temperature_delta",
        s.readiness
            .as_ref()
            .and_then(|r| r.temperature_deviation)
            .map(num),
    );
    row.insert("timezone_offset".into(), offset(s.bedtime_end).into());
    let span = (s.bedtime_end - s.bedtime_start).num_seconds();
    if let Some(stages) = s
        .sleep_phase_5_min
        .as_deref()
        .and_then(|p| hypnogram(&s.id, p, span))
    {
        row.insert(
            "sleep_stream".into(),
            json!({"hypnogram": stages, "interval": PHASE_INTERVAL}),
        );
    }
    Value::Object(row)
}

/// Oura's 5-minute phase string as stage codes, when every character is one and it fits the
/// session (ingest refuses a hypnogram running past `bedtime_stop`).
fn hypnogram(id: &str, phases: &str, span_seconds: i64) -> Option<Vec<i64>> {
    let stages: Option<Vec<i64>> = phases
        .chars()
        .map(|c| match c {
            '1'..='4' => c.to_digit(10).map(i64::from),
            _ => None,
        })
        .collect();
    let fits = |s: &Vec<i64>| (s.len() as i64 - 1) * PHASE_INTERVAL <= span_seconds;
    match stages {
        Some(s) if s.is_empty() => None,
        Some(s) if fits(&s) => Some(s),
        _ => {
            tracing::warn!(
                provider = "oura",
                id,
                "dropped a sleep_phase_5_min that is not 1–4 codes within the period"
            );
            None
        }
    }
}

/// Samples `{timestamp, timezone_offset, unit, value}` from an Oura sample series; null items
/// (no reading) are left out.
pub(super) fn samples(sample: &Sample, unit: &str) -> Vec<Value> {
    let Some(step) = (sample.interval.is_finite() && sample.interval > 0.0)
        .then(|| TimeDelta::milliseconds((sample.interval * 1000.0).round() as i64))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut at = sample.timestamp;
    for item in &sample.items {
        if let Some(value) = item.filter(|v| v.is_finite()) {
            out.push(json!({
                "timestamp": stamp(at),
                "timezone_offset": offset(at),
                "unit": unit,
                "value": num(value),
            }));
        }
        at += step;
    }
    out
}
