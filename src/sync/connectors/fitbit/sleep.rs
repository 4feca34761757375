//! One Fitbit sleep log (v1.2, `/1.2/user/-/sleep/date/{start}/{end}.json`) to a `sleep` row.
//!
//! Decisions where the documentation is silent:
//! - `duration` is Fitbit's `duration` (ms, time in bed) in seconds; `total` is
//!   `minutesAsleep`; `latency` is `minutesToFallAsleep`; the offset is that of `endTime`.
//! - Logs of type `stages`: `deep`, `light`, `rem` and `awake` are the `levels.summary` minutes
//!   (`wake` includes the short wakes). Logs of type `classic` (asleep/restless/awake, kept for
//!   short or manual logs) have no stages: `awake` is `minutesAwake` and there is no
//!   hypnogram.
//! - The hypnogram has one code per 30 s (Fitbit's stage resolution) from `startTime`:
//!   `levels.data` gives the stages (deep 1, light 2, rem 3, wake 4), then the `shortData`
//!   wakes (≤ 3 min) are laid over them; a slot no entry covers is −1 (missing). It is dropped
//!   with a warning when an entry has another level. Entries are placed by their instant in the
//!   user's zone (a night across a change of clocks keeps its length); an entry in an hour the
//!   clocks skip is left out, one in an hour they repeat reads as its first pass.
//! - No `type`: ingest derives it from the duration (`isMainSleep` does not say nap).

use std::collections::HashMap;

use chrono::{DateTime, FixedOffset, NaiveDateTime};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::normalise::{num, put};
use super::zone::{UserZone, offset, stamp};

/// The hypnogram interval, in seconds: Fitbit's stages come in multiples of 30 s.
pub(super) const STAGE_INTERVAL: i64 = 30;

/// The most hypnogram slots one log may have (two days at 30 s), against absurd spans.
const MAX_SLOTS: i64 = 2 * 86_400 / STAGE_INTERVAL;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Level {
    date_time: NaiveDateTime,
    level: String,
    seconds: i64,
}

#[derive(Debug, Deserialize)]
struct Minutes {
    minutes: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Levels {
    #[serde(default)]
    summary: HashMap<String, Minutes>,
    #[serde(default)]
    data: Vec<Level>,
    #[serde(default)]
    short_data: Vec<Level>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SleepLog {
    log_id: u64,
    pub(super) start_time: NaiveDateTime,
    pub(super) end_time: NaiveDateTime,
    duration: Option<i64>,
    efficiency: Option<f64>,
    minutes_asleep: Option<i64>,
    minutes_awake: Option<i64>,
    minutes_to_fall_asleep: Option<i64>,
    #[serde(rename = "type")]
    kind: Option<String>,
    levels: Option<Levels>,
}

/// The `sleep` row of a log whose local times are the instants `start` and `end`.
pub(super) fn row(
    log: &SleepLog,
    zone: &UserZone,
    start: DateTime<FixedOffset>,
    end: DateTime<FixedOffset>,
) -> Value {
    let mut row = Map::new();
    row.insert("id".into(), log.log_id.to_string().into());
    row.insert("bedtime_start".into(), stamp(start).into());
    row.insert("bedtime_stop".into(), stamp(end).into());
    put(&mut row, "duration", log.duration.map(|ms| ms / 1000));
    put(&mut row, "total", log.minutes_asleep.map(|m| m * 60));
    let stages = log.kind.as_deref() == Some("stages");
    let summary = |level: &str| {
        log.levels
            .as_ref()
            .and_then(|l| l.summary.get(level))
            .map(|m| m.minutes * 60)
    };
    if stages {
        put(&mut row, "awake", summary("wake"));
        put(&mut row, "light", summary("light"));
        put(&mut row, "rem", summary("rem"));
        put(&mut row, "deep", summary("deep"));
    } else {
        put(&mut row, "awake", log.minutes_awake.map(|m| m * 60));
    }
    put(
        &mut row,
        "latency",
        log.minutes_to_fall_asleep.map(|m| m * 60),
    );
    put(&mut row, "efficiency", log.efficiency.map(num));
    row.insert("timezone_offset".into(), offset(end).into());
    let span = (end - start).num_seconds();
    if stages
        && let Some(levels) = &log.levels
        && let Some(codes) = hypnogram(log.log_id, levels, zone, start, span)
    {
        row.insert(
            "sleep_stream".into(),
            json!({"hypnogram": codes, "interval": STAGE_INTERVAL}),
        );
    }
    Value::Object(row)
}

fn code(level: &str) -> Option<i64> {
    match level {
        "deep" => Some(1),
        "light" => Some(2),
        "rem" => Some(3),
        "wake" => Some(4),
        _ => None,
    }
}

/// The 30-second stage codes of a log spanning `span` seconds from `start`, or `None`. Entries
/// are placed by their instant in `zone`, so a night across a change of clocks keeps its slots.
fn hypnogram(
    id: u64,
    levels: &Levels,
    zone: &UserZone,
    start: DateTime<FixedOffset>,
    span: i64,
) -> Option<Vec<i64>> {
    let slots = span / STAGE_INTERVAL;
    if levels.data.is_empty() || slots <= 0 || slots > MAX_SLOTS {
        return None;
    }
    let mut codes = vec![-1; slots as usize];
    let mut paint = |entry: &Level, code: i64| {
        let Some(at) = zone.resolve(entry.date_time) else {
            return;
        };
        let from = (at - start).num_seconds().div_euclid(STAGE_INTERVAL);
        let to = from + entry.seconds.max(0) / STAGE_INTERVAL;
        for slot in from.max(0)..to.min(slots) {
            codes[slot as usize] = code;
        }
    };
    for entry in &levels.data {
        let Some(c) = code(&entry.level) else {
            tracing::warn!(
                provider = "fitbit",
                id,
                level = entry.level,
                "dropped a sleep hypnogram with an unknown level"
            );
            return None;
        };
        paint(entry, c);
    }
    for entry in &levels.short_data {
        paint(entry, 4);
    }
    Some(codes)
}
