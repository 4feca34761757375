//! Sessions (sleep and workouts) in the reference's per-session views: the sleep cycle summary
//! (`GET /v2/summary/sleep_cycle/{user_id}`, the hypnogram's successor) and the session
//! streams (`GET /v2/timeseries/{sleep|workouts}/{id}/stream`), rendered from stored rows.
//!
//! Decisions where the reference is silent or our data differs:
//! - **Sleep cycles are derived**, not stored: one per sleep session that has a hypnogram, from
//!   its stored stages. Consecutive equal stages are one stage (`stage_start_offset_second`,
//!   `stage_end_offset_second` and `stage_type` list the stage changes, offsets in seconds from
//!   `session_start`); missing stages (`-1`) are kept as the reference's `VitalSleepStage` has
//!   them. The cycle's `id` is derived from the sleep's (stable across reads), `created_at` and
//!   `updated_at` are the sleep row's.
//! - **Streams** hold the samples of the session's own provider inside its window (start
//!   inclusive, end inclusive). A sleep stream is sample lists (`heartrate`, `hrv`,
//!   `respiratory_rate`, each sample numbered from 0 in `id`) plus the session's `hypnogram`;
//!   a workout stream is the reference's column arrays: `time` (Unix seconds, the union of the
//!   samples' instants), `heartrate` (rounded to whole bpm) and `distance` (metres since the
//!   workout's start, the running sum of its `distance` samples), each `null` at an instant
//!   without a sample of it; the columns we store nothing for (`lat`, `lng`, `altitude`,
//!   `velocity_smooth`, `cadence`, `power`, `resistance`, `temperature`) are empty.

use datafusion::arrow::record_batch::RecordBatch;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::summaries::{offset, source};
use crate::ingest::columns::{Cell, cell_by_name};
use crate::ingest::summary::{DEFAULT_HYPNOGRAM_INTERVAL, derive_id};
use crate::ingest::zone::format_instant;
use crate::providers::SOURCE_TYPES;

/// A stored sleep or workout session: what the stream getters need of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// Its id.
    pub id: String,
    /// Its start, in microseconds since the epoch.
    pub start: i64,
    /// Its end, in microseconds since the epoch.
    pub end: i64,
    /// Its provider.
    pub provider: String,
    /// Its offset from UTC, in seconds, when known.
    pub tz: Option<i32>,
    /// Its hypnogram and the stages' interval in seconds (sleep only).
    pub stages: Option<(Vec<i8>, i64)>,
}

fn micros(batch: &RecordBatch, column: &str, row: usize) -> Option<i64> {
    match cell_by_name(batch, column, row) {
        Cell::Micros(m) => Some(m),
        _ => None,
    }
}

fn string(batch: &RecordBatch, column: &str, row: usize) -> Option<String> {
    match cell_by_name(batch, column, row) {
        Cell::Str(s) => Some(s),
        _ => None,
    }
}

fn stages(batch: &RecordBatch, row: usize) -> Option<(Vec<i8>, i64)> {
    let Cell::Stages(stages) = cell_by_name(batch, "hypnogram", row) else {
        return None;
    };
    let interval = match cell_by_name(batch, "hypnogram_interval_second", row) {
        Cell::Int(i) if i > 0 => i,
        _ => DEFAULT_HYPNOGRAM_INTERVAL,
    };
    Some((stages, interval))
}

fn session_at(batch: &RecordBatch, row: usize) -> Option<Session> {
    let start = micros(batch, "session_start", row)?;
    Some(Session {
        id: string(batch, "id", row)?,
        start,
        end: micros(batch, "session_end", row).unwrap_or(start),
        provider: string(batch, "source_provider", row).unwrap_or_default(),
        tz: offset(batch, row),
        stages: stages(batch, row),
    })
}

/// The session with id `id` among stored sleep or workout rows (the first found, in the
/// store's order).
pub fn find_session(batches: &[RecordBatch], id: &str) -> Option<Session> {
    batches.iter().find_map(|batch| {
        (0..batch.num_rows())
            .filter(|row| string(batch, "id", *row).as_deref() == Some(id))
            .find_map(|row| session_at(batch, row))
    })
}

/// The reference's `source_type`, which admits only its own list: ours, or `unknown`.
fn reference_source_type(kind: Option<String>) -> String {
    kind.filter(|k| SOURCE_TYPES.contains(&k.as_str()))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A row's `source` object without its null members (the reference's `ClientFacingSource`
/// types its members as strings, never null).
fn source_object(batch: &RecordBatch, row: usize) -> Value {
    let mut value = source(batch, row);
    if let Value::Object(map) = &mut value {
        map.retain(|_, v| !v.is_null());
    }
    value
}

/// The reference's `ClientFacingSleepCycle`: one night's stage changes.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SleepCycle {
    /// The cycle's id, derived from the sleep's.
    pub id: String,
    /// The sleep session's id (`GET /v2/summary/sleep/{user_id}`).
    pub sleep_id: String,
    /// The session's start, in its own offset.
    pub session_start: String,
    /// The session's end, in its own offset.
    pub session_end: String,
    /// Where each stage starts, seconds after `session_start`.
    pub stage_start_offset_second: Vec<i64>,
    /// Where each stage ends, seconds after `session_start`.
    pub stage_end_offset_second: Vec<i64>,
    /// Each stage: 1 deep, 2 light, 3 rem, 4 awake, 5 manual, −1 missing.
    pub stage_type: Vec<i8>,
    /// The session's zone (`±HH:MM` or an IANA name), when known.
    pub time_zone: Option<String>,
    /// The provider slug.
    pub source_provider: String,
    /// The source type (`unknown` when ours is not one of the reference's).
    pub source_type: String,
    /// The source app, when known.
    pub source_app_id: Option<String>,
    /// The source device, when known.
    pub source_device_id: Option<String>,
    /// When the sleep was stored.
    pub created_at: String,
    /// When the sleep was last stored.
    pub updated_at: String,
    /// The user.
    pub user_id: Uuid,
    /// The source, as the summaries carry it.
    #[schema(value_type = Object)]
    pub source: Value,
}

/// `GET /v2/summary/sleep_cycle/{user_id}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SleepCycles {
    /// One per sleep session with a hypnogram, oldest first.
    pub sleep_cycle: Vec<SleepCycle>,
}

/// Stage runs of a hypnogram: (start offset, end offset, stage), in seconds.
pub(crate) fn stage_runs(stages: &[i8], interval: i64) -> Vec<(i64, i64, i8)> {
    let mut runs: Vec<(i64, i64, i8)> = Vec::new();
    for (i, stage) in stages.iter().enumerate() {
        let from = interval.saturating_mul(i as i64);
        let to = from.saturating_add(interval);
        match runs.last_mut() {
            Some(last) if last.2 == *stage => last.1 = to,
            _ => runs.push((from, to, *stage)),
        }
    }
    runs
}

/// The sleep cycles of stored sleep rows, ordered by session end then provider.
pub fn sleep_cycles(batches: &[RecordBatch], user_id: Uuid) -> Vec<SleepCycle> {
    let mut out: Vec<(i64, String, SleepCycle)> = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let Some(session) = session_at(batch, row) else {
                continue;
            };
            let Some((stages, interval)) = &session.stages else {
                continue;
            };
            let runs = stage_runs(stages, *interval);
            let stored = match cell_by_name(batch, crate::schema::INGESTED_AT, row) {
                Cell::Micros(m) => format_instant(m, None),
                _ => String::new(),
            };
            let cycle = SleepCycle {
                id: derive_id(&["sleep_cycle", &user_id.to_string(), &session.id]),
                sleep_id: session.id.clone(),
                session_start: format_instant(session.start, session.tz),
                session_end: format_instant(session.end, session.tz),
                stage_start_offset_second: runs.iter().map(|r| r.0).collect(),
                stage_end_offset_second: runs.iter().map(|r| r.1).collect(),
                stage_type: runs.iter().map(|r| r.2).collect(),
                time_zone: string(batch, "time_zone", row),
                source_provider: session.provider.clone(),
                source_type: reference_source_type(string(batch, "source_type", row)),
                source_app_id: string(batch, "source_app_id", row),
                source_device_id: string(batch, "source_device_id", row),
                created_at: stored.clone(),
                updated_at: stored,
                user_id,
                source: source_object(batch, row),
            };
            out.push((session.end, session.provider, cycle));
        }
    }
    out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    out.into_iter().map(|(_, _, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_neighbouring_stages_are_one_run() {
        let runs = stage_runs(&[4, 2, 2, 1, 1, 3, 2, 4], 300);
        assert_eq!(
            runs,
            vec![
                (0, 300, 4),
                (300, 900, 2),
                (900, 1500, 1),
                (1500, 1800, 3),
                (1800, 2100, 2),
                (2100, 2400, 4)
            ]
        );
        assert!(stage_runs(&[], 300).is_empty());
    }
}
