//! Session streams in the reference's shapes (`ClientFacingSleepStream`, `ClientFacingStream`):
//! the samples of a session's provider inside its window, from stored timeseries rows. See
//! `sessions.rs` for the decisions.

use std::collections::BTreeMap;

use datafusion::arrow::record_batch::RecordBatch;
use serde::Serialize;
use utoipa::ToSchema;

use super::hypnogram::STAGE_UNIT;
use super::sessions::Session;
use crate::ingest::columns::{Cell, cell_by_name};
use crate::ingest::zone::format_instant;

/// One sample of a sleep stream (the reference's `ClientFacing*Timeseries`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StreamSample {
    /// Its place in its list, from 0.
    pub id: i64,
    /// Its instant, in its own offset.
    pub timestamp: String,
    /// A stage's start (hypnogram only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// A stage's end (hypnogram only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    /// Its offset from UTC in seconds, when known.
    pub timezone_offset: Option<i32>,
    /// Its type (`resting`, ...), when it has one.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Its unit.
    pub unit: String,
    /// Its value.
    pub value: f64,
}

/// `GET /v2/timeseries/sleep/{sleep_id}/stream`.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct SleepStream {
    /// Heart-rate variability samples.
    pub hrv: Vec<StreamSample>,
    /// Heart-rate samples.
    pub heartrate: Vec<StreamSample>,
    /// The session's stages, one sample per stage interval.
    pub hypnogram: Vec<StreamSample>,
    /// Respiratory-rate samples.
    pub respiratory_rate: Vec<StreamSample>,
}

/// `GET /v2/timeseries/workouts/{workout_id}/stream`: the reference's column arrays, one entry
/// per instant of `time`.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct WorkoutStream {
    /// Unix seconds.
    pub time: Vec<i64>,
    /// Beats per minute, rounded; null without a sample at that instant.
    pub heartrate: Vec<Option<i64>>,
    /// Metres since the workout's start; null without a distance sample at that instant.
    pub distance: Vec<Option<f64>>,
    /// Not stored: empty.
    pub cadence: Vec<Option<f64>>,
    /// Not stored: empty.
    pub altitude: Vec<Option<f64>>,
    /// Not stored: empty.
    pub velocity_smooth: Vec<Option<f64>>,
    /// Not stored: empty.
    pub lat: Vec<Option<f64>>,
    /// Not stored: empty.
    pub lng: Vec<Option<f64>>,
    /// Not stored: empty.
    pub power: Vec<Option<f64>>,
    /// Not stored: empty.
    pub resistance: Vec<Option<f64>>,
    /// Not stored: empty.
    pub temperature: Vec<Option<f64>>,
}

/// A sample row: (instant in µs, offset, type, unit, value).
type Row = (i64, Option<i32>, Option<String>, Option<String>, f64);

/// The session provider's samples with a value inside the session's window, by time.
fn rows_in(session: &Session, batches: &[RecordBatch]) -> Vec<Row> {
    let mut rows = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let provider = cell_by_name(batch, "source_provider", row);
            if provider != Cell::Str(session.provider.clone()) {
                continue;
            }
            let (Cell::Micros(at), Cell::Float(value)) = (
                cell_by_name(batch, "timestamp", row),
                cell_by_name(batch, "value", row),
            ) else {
                continue;
            };
            if at < session.start || at > session.end {
                continue;
            }
            let text = |column| match cell_by_name(batch, column, row) {
                Cell::Str(s) => Some(s),
                _ => None,
            };
            let tz = match cell_by_name(batch, crate::schema::TIMEZONE_OFFSET, row) {
                Cell::Int(v) => i32::try_from(v).ok(),
                _ => None,
            };
            rows.push((at, tz, text("type"), text("unit"), value));
        }
    }
    rows.sort_by_key(|r| r.0);
    rows
}

fn samples(session: &Session, batches: &[RecordBatch], unit: &str) -> Vec<StreamSample> {
    rows_in(session, batches)
        .into_iter()
        .enumerate()
        .map(|(i, (at, tz, kind, stored_unit, value))| StreamSample {
            id: i as i64,
            timestamp: format_instant(at, tz.or(session.tz)),
            start: None,
            end: None,
            timezone_offset: tz,
            kind,
            unit: stored_unit.unwrap_or_else(|| unit.to_owned()),
            value,
        })
        .collect()
}

/// The session's hypnogram as stream samples.
fn hypnogram(session: &Session) -> Vec<StreamSample> {
    let Some((stages, interval)) = &session.stages else {
        return Vec::new();
    };
    let step = interval.saturating_mul(1_000_000);
    stages
        .iter()
        .enumerate()
        .map(|(i, stage)| {
            let from = session.start.saturating_add(step.saturating_mul(i as i64));
            let at = format_instant(from, session.tz);
            StreamSample {
                id: i as i64,
                timestamp: at.clone(),
                start: Some(at),
                end: Some(format_instant(from.saturating_add(step), session.tz)),
                timezone_offset: session.tz,
                kind: None,
                unit: STAGE_UNIT.to_owned(),
                value: f64::from(*stage),
            }
        })
        .collect()
}

/// Stored timeseries rows of the resources a stream reads.
#[derive(Debug, Default)]
pub struct StreamInputs {
    /// `heartrate` rows.
    pub heartrate: Vec<RecordBatch>,
    /// `hrv` rows.
    pub hrv: Vec<RecordBatch>,
    /// `respiratory_rate` rows.
    pub respiratory_rate: Vec<RecordBatch>,
    /// `distance` rows.
    pub distance: Vec<RecordBatch>,
}

/// A sleep session's stream.
pub fn sleep_stream(session: &Session, inputs: &StreamInputs) -> SleepStream {
    SleepStream {
        hrv: samples(session, &inputs.hrv, "ms"),
        heartrate: samples(session, &inputs.heartrate, "bpm"),
        hypnogram: hypnogram(session),
        respiratory_rate: samples(session, &inputs.respiratory_rate, "breaths/min"),
    }
}

/// A workout's stream.
pub fn workout_stream(session: &Session, inputs: &StreamInputs) -> WorkoutStream {
    let seconds = |micros: i64| micros.div_euclid(1_000_000);
    let mut at: BTreeMap<i64, (Option<i64>, Option<f64>)> = BTreeMap::new();
    for (t, _, _, _, value) in rows_in(session, &inputs.heartrate) {
        at.entry(seconds(t)).or_default().0 = Some(value.round() as i64);
    }
    let mut total = 0.0;
    for (t, _, _, _, value) in rows_in(session, &inputs.distance) {
        total += value;
        at.entry(seconds(t)).or_default().1 = Some(total);
    }
    let mut stream = WorkoutStream::default();
    for (time, (heartrate, distance)) in at {
        stream.time.push(time);
        stream.heartrate.push(heartrate);
        stream.distance.push(distance);
    }
    stream
}
