//! WHOOP sleeps (`/v2/activity/sleep`) to `sleep` rows, and recoveries (`/v2/recovery`) to the
//! sleep rows' recovery fields and to samples.
//!
//! A recovery is computed from one sleep (`sleep_id`) and carries no time of its own: it
//! belongs to that sleep, and a recovery whose sleep is not among the pull's sleeps is left out
//! (its sleep's window pulls it).
//!
//! Decisions where the documentation is silent:
//! - `duration` is `total_in_bed_time_milli`; `total` (asleep) is light + slow-wave + REM;
//!   `deep` is slow-wave sleep; `efficiency` is `sleep_efficiency_percentage`; `score` is
//!   `sleep_performance_percentage` (WHOOP's own sleep score, 0–100), rounded, and left out
//!   outside the data model's 1–100; time without data is not kept.
//! - `type`: a nap (`nap: true`) is an `acknowledged_nap`; a main sleep has no type, so ingest
//!   derives it from the duration. `state`: `tentative` while WHOOP is scoring the sleep
//!   (`PENDING_SCORE`), else `confirmed`.
//! - From the sleep's recovery: `hr_resting` (`resting_heart_rate`, rounded), `average_hrv`
//!   (`hrv_rmssd_milli`) and `skin_temperature` (`skin_temp_celsius`).
//! - Samples, each with the sleep's offset: `hrv`, resting `heartrate` (type `resting`) and
//!   `blood_oxygen` at the sleep's end, when the wearer wakes to the recovery they describe;
//!   `body_temperature` (sensor location `skin`) spans the sleep, over which it was measured,
//!   and comes with the sleep rows ([`Wanted::sleep`]). A recovery without a score (not
//!   scored yet, or not scorable) gives nothing.

use std::collections::HashMap;

use chrono::{DateTime, FixedOffset};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::Wanted;
use super::normalise::{Body, num, put, round, seconds, stamp};

#[derive(Debug, Deserialize)]
struct StageSummary {
    total_in_bed_time_milli: i64,
    total_awake_time_milli: i64,
    total_light_sleep_time_milli: i64,
    total_slow_wave_sleep_time_milli: i64,
    total_rem_sleep_time_milli: i64,
}

#[derive(Debug, Deserialize)]
struct SleepScore {
    stage_summary: Option<StageSummary>,
    respiratory_rate: Option<f64>,
    sleep_performance_percentage: Option<f64>,
    sleep_efficiency_percentage: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Sleep {
    id: String,
    start: DateTime<FixedOffset>,
    end: DateTime<FixedOffset>,
    timezone_offset: String,
    #[serde(default)]
    nap: bool,
    score_state: String,
    score: Option<SleepScore>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct RecoveryScore {
    resting_heart_rate: Option<f64>,
    hrv_rmssd_milli: Option<f64>,
    spo2_percentage: Option<f64>,
    skin_temp_celsius: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Recovery {
    sleep_id: String,
    score: Option<RecoveryScore>,
}

/// A sleep's times in the wearer's offset.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: DateTime<FixedOffset>,
    end: DateTime<FixedOffset>,
    zone: FixedOffset,
}

/// The scored recoveries by their sleep's id. Unreadable recoveries are left to
/// [`Body::recovery`], which counts them.
fn scored_by_sleep(recoveries: &[Value]) -> HashMap<String, RecoveryScore> {
    recoveries
        .iter()
        .filter_map(|r| Recovery::deserialize(r).ok())
        .filter_map(|r| Some((r.sleep_id, r.score?)))
        .collect()
}

impl Body {
    /// A sleep record read, or `None` (counted) when malformed.
    fn read_sleep(&mut self, record: &Value) -> Option<(Sleep, Span)> {
        let s = self.read::<Sleep>("sleep", record)?;
        if s.end < s.start {
            return self.malformed("sleep", record, "end is before start");
        }
        let zone = self.zone_of("sleep", record, &s.timezone_offset)?;
        let span = Span {
            start: s.start,
            end: s.end,
            zone,
        };
        Some((s, span))
    }

    /// Sleep rows, with the recovery fields of each sleep's scored recovery.
    pub(crate) fn sleep(&mut self, sleeps: &[Value], recoveries: &[Value]) {
        let by_sleep = scored_by_sleep(recoveries);
        for record in sleeps {
            let Some((s, span)) = self.read_sleep(record) else {
                continue;
            };
            let mut row = Map::new();
            row.insert("id".into(), s.id.clone().into());
            row.insert("bedtime_start".into(), stamp(span.start, span.zone).into());
            row.insert("bedtime_stop".into(), stamp(span.end, span.zone).into());
            if s.nap {
                row.insert("type".into(), "acknowledged_nap".into());
            }
            let state = if s.score_state == "PENDING_SCORE" {
                "tentative"
            } else {
                "confirmed"
            };
            row.insert("state".into(), state.into());
            if let Some(score) = &s.score {
                scored(&mut row, score);
            }
            if let Some(r) = by_sleep.get(&s.id) {
                put(&mut row, "hr_resting", r.resting_heart_rate.and_then(round));
                put(&mut row, "average_hrv", r.hrv_rmssd_milli.map(num));
                put(&mut row, "skin_temperature", r.skin_temp_celsius.map(num));
            }
            row.insert("timezone_offset".into(), span.zone.local_minus_utc().into());
            self.sleep
                .push(crate::sync::body::with_payload(Value::Object(row), record));
        }
    }

    /// Recovery samples of the kinds `wanted` names, at their sleeps.
    pub(crate) fn recovery(&mut self, recoveries: &[Value], sleeps: &[Value], wanted: Wanted) {
        if !(wanted.sleep || wanted.hrv || wanted.heartrate || wanted.blood_oxygen) {
            return;
        }
        // Sleeps were counted when read as rows; read quietly here.
        let spans: HashMap<String, Span> = sleeps
            .iter()
            .filter_map(|r| {
                let s = Sleep::deserialize(r).ok()?;
                let zone = super::normalise::zone(&s.timezone_offset)?;
                (s.end >= s.start).then_some((
                    s.id,
                    Span {
                        start: s.start,
                        end: s.end,
                        zone,
                    },
                ))
            })
            .collect();
        for record in recoveries {
            let Some(r) = self.read::<Recovery>("recovery", record) else {
                continue;
            };
            let (Some(score), Some(span)) = (r.score, spans.get(&r.sleep_id)) else {
                continue;
            };
            let at = stamp(span.end, span.zone);
            let offset = span.zone.local_minus_utc();
            let sample = |unit: &str, value: f64| json!({"timestamp": at, "timezone_offset": offset, "unit": unit, "value": num(value)});
            if wanted.heartrate
                && let Some(bpm) = score.resting_heart_rate
            {
                let mut s = sample("bpm", bpm);
                s["type"] = "resting".into();
                self.heartrate.push(s);
            }
            if wanted.hrv
                && let Some(ms) = score.hrv_rmssd_milli
            {
                self.hrv.push(sample("ms", ms));
            }
            if wanted.blood_oxygen
                && let Some(pct) = score.spo2_percentage
            {
                self.blood_oxygen.push(sample("%", pct));
            }
            if wanted.sleep
                && let Some(c) = score.skin_temp_celsius
            {
                self.body_temperature.push(json!({
                    "timestamp": stamp(span.start, span.zone),
                    "end": at,
                    "timezone_offset": offset,
                    "sensor_location": "skin",
                    "unit": "°C",
                    "value": num(c),
                }));
            }
        }
    }
}

/// A scored sleep's stages, efficiency, respiratory rate and score.
fn scored(row: &mut Map<String, Value>, score: &SleepScore) {
    if let Some(st) = &score.stage_summary {
        let (light, deep, rem) = (
            seconds(st.total_light_sleep_time_milli),
            seconds(st.total_slow_wave_sleep_time_milli),
            seconds(st.total_rem_sleep_time_milli),
        );
        row.insert(
            "duration".into(),
            seconds(st.total_in_bed_time_milli).into(),
        );
        row.insert("total".into(), (light + deep + rem).into());
        row.insert("awake".into(), seconds(st.total_awake_time_milli).into());
        row.insert("light".into(), light.into());
        row.insert("rem".into(), rem.into());
        row.insert("deep".into(), deep.into());
    }
    put(
        row,
        "efficiency",
        score.sleep_efficiency_percentage.map(num),
    );
    put(row, "respiratory_rate", score.respiratory_rate.map(num));
    let performance = score
        .sleep_performance_percentage
        .and_then(round)
        .filter(|p| (1..=100).contains(p));
    put(row, "score", performance);
}
