//! Garmin sleep summaries (`sleeps`) to `sleep` rows, with their hypnogram from
//! `sleepLevelsMap` and their SpO2 as `blood_oxygen` samples.
//!
//! Decisions where the documentation is silent or contradicts itself:
//! - The session runs from `startTimeInSeconds` for `durationInSeconds`: the field's
//!   description says it leaves awake time out, but every example's duration is deep + light +
//!   REM + awake, the whole night, so it is read as the examples show it.
//! - `total` is deep + light + REM; `awake`, `light`, `deep`, `rem` as given (seconds).
//! - `state`: `tentative` for the `*_TENTATIVE` validations (Garmin will send the night again),
//!   else `confirmed`. `score` is `overallSleepScore.value`; `respiratory_rate` the mean of
//!   `timeOffsetSleepRespiration`, rounded to 0.01; `timezone_offset` the start's offset.
//! - The hypnogram is one stage a minute from the start ([`HYPNOGRAM_INTERVAL`]): the level
//!   whose range holds that instant (Garmin's ranges are `[start, end]` in unix seconds, the
//!   next beginning a second after), else −1 (missing).
//! - SpO2 samples (`timeOffsetSleepSpo2`, %) are placed at start + offset.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::normalise::{Body, Wanted, hundredths, samples, stamp, zone};
use crate::sync::body::{num, put, with_payload};

/// The hypnogram's step, in seconds.
pub const HYPNOGRAM_INTERVAL: i64 = 60;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Range {
    start_time_in_seconds: i64,
    end_time_in_seconds: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Score {
    value: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sleep {
    summary_id: String,
    start_time_in_seconds: i64,
    start_time_offset_in_seconds: i32,
    duration_in_seconds: i64,
    deep_sleep_duration_in_seconds: Option<i64>,
    light_sleep_duration_in_seconds: Option<i64>,
    rem_sleep_in_seconds: Option<i64>,
    awake_duration_in_seconds: Option<i64>,
    #[serde(default)]
    sleep_levels_map: Option<std::collections::BTreeMap<String, Vec<Range>>>,
    validation: Option<String>,
    #[serde(default, deserialize_with = "samples")]
    time_offset_sleep_respiration: Vec<(i64, f64)>,
    #[serde(default, deserialize_with = "samples")]
    time_offset_sleep_spo2: Vec<(i64, f64)>,
    overall_sleep_score: Option<Score>,
}

/// The data model's stage code of a Garmin sleep level.
fn stage(level: &str) -> Option<i64> {
    match level {
        "deep" => Some(1),
        "light" => Some(2),
        "rem" => Some(3),
        "awake" => Some(4),
        _ => None,
    }
}

/// One stage a minute over `[start, start + duration)` from Garmin's level ranges.
fn hypnogram(
    levels: &std::collections::BTreeMap<String, Vec<Range>>,
    start: i64,
    duration: i64,
) -> Vec<i64> {
    let ranges: Vec<(i64, &Range)> = levels
        .iter()
        .filter_map(|(level, ranges)| Some((stage(level)?, ranges)))
        .flat_map(|(code, ranges)| ranges.iter().map(move |r| (code, r)))
        .collect();
    (0..duration.div_euclid(HYPNOGRAM_INTERVAL) + i64::from(duration % HYPNOGRAM_INTERVAL != 0))
        .map(|i| {
            let at = start + i * HYPNOGRAM_INTERVAL;
            ranges
                .iter()
                .find(|(_, r)| r.start_time_in_seconds <= at && at <= r.end_time_in_seconds)
                .map_or(-1, |(code, _)| *code)
        })
        .collect()
}

impl Body {
    /// Sleep summaries: sleep rows and their SpO2 samples, as `wanted` says.
    pub(super) fn sleeps(&mut self, records: &[Value], wanted: Wanted) {
        for record in records {
            let Some(s) = self.read::<Sleep>("sleeps", record) else {
                continue;
            };
            let tz = zone(s.start_time_offset_in_seconds);
            let end = s.start_time_in_seconds.checked_add(s.duration_in_seconds);
            let times =
                tz.and_then(|tz| Some((stamp(s.start_time_in_seconds, tz)?, stamp(end?, tz)?, tz)));
            let Some((start, stop, tz)) = times.filter(|_| s.duration_in_seconds > 0) else {
                self.malformed::<()>("sleeps", record, "unreadable start, offset or duration");
                continue;
            };
            if wanted.blood_oxygen {
                let from = (s.start_time_in_seconds, tz);
                Body::series(
                    &mut self.blood_oxygen,
                    from,
                    &s.time_offset_sleep_spo2,
                    |v| (0.0..=100.0).contains(&v) && v > 0.0,
                );
            }
            if !wanted.sleep {
                continue;
            }
            let mut row = Map::new();
            row.insert("id".into(), s.summary_id.clone().into());
            row.insert("bedtime_start".into(), start.into());
            row.insert("bedtime_stop".into(), stop.into());
            let tentative = s
                .validation
                .as_deref()
                .is_some_and(|v| v.ends_with("TENTATIVE"));
            let state = if tentative { "tentative" } else { "confirmed" };
            row.insert("state".into(), state.into());
            row.insert("duration".into(), s.duration_in_seconds.into());
            let (deep, light, rem) = (
                s.deep_sleep_duration_in_seconds,
                s.light_sleep_duration_in_seconds,
                s.rem_sleep_in_seconds,
            );
            if let (Some(d), Some(l), Some(r)) = (deep, light, rem) {
                row.insert("total".into(), (d + l + r).into());
            }
            put(&mut row, "awake", s.awake_duration_in_seconds);
            put(&mut row, "light", light);
            put(&mut row, "deep", deep);
            put(&mut row, "rem", rem);
            let score = s.overall_sleep_score.and_then(|sc| sc.value);
            put(&mut row, "score", score.filter(|v| (1..=100).contains(v)));
            let breaths: Vec<f64> = s
                .time_offset_sleep_respiration
                .iter()
                .map(|(_, v)| *v)
                .filter(|v| *v > 0.0)
                .collect();
            if !breaths.is_empty() {
                let mean = breaths.iter().sum::<f64>() / breaths.len() as f64;
                row.insert("respiratory_rate".into(), num(hundredths(mean)));
            }
            if let Some(levels) = s.sleep_levels_map.as_ref().filter(|l| !l.is_empty()) {
                let stages = hypnogram(levels, s.start_time_in_seconds, s.duration_in_seconds);
                row.insert(
                    "sleep_stream".into(),
                    serde_json::json!({"hypnogram": stages, "interval": HYPNOGRAM_INTERVAL}),
                );
            }
            row.insert("timezone_offset".into(), tz.local_minus_utc().into());
            self.sleep.push(with_payload(Value::Object(row), record));
        }
    }
}
