//! Electrocardiogram summaries (`GET /v2/summary/electrocardiogram/{user_id}`, the reference's
//! `ClientFacingElectrocardiogram`), **derived** from the stored `electrocardiogram_voltage`
//! samples, not stored: a recording is a run of one source's voltage samples (provider, source
//! type, app, device) whose neighbours are at most [`RECORDING_GAP_MICROS`] apart.
//!
//! Decided so because the samples are the recording: a separate pushable table would hold a
//! second copy of what the samples already say (start, end, count, rate) and could disagree
//! with them. What the samples do not carry (the device's `classification`,
//! `inconclusive_cause`, `algorithm_version`, `heart_rate_mean`, `source_device_model`) is
//! null. `sampling_frequency_hz` is the samples per second over the recording (null for a
//! single sample); `time_zone` the first sample's offset as `±HH:MM`; `id` is derived from
//! the user, the source and the start (stable across reads); `created_at`/`updated_at` are
//! when the recording's samples were first and last stored.

use std::collections::BTreeMap;

use datafusion::arrow::record_batch::RecordBatch;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::summaries::source;
use crate::ingest::columns::{Cell, cell_by_name};
use crate::ingest::summary::derive_id;
use crate::ingest::zone::format_instant;
use crate::providers::SOURCE_TYPES;

/// The largest gap between two samples of one recording: 5 seconds.
pub const RECORDING_GAP_MICROS: i64 = 5_000_000;

/// The reference's `ClientFacingElectrocardiogram`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Electrocardiogram {
    /// Derived from the user, the source and the start.
    pub id: String,
    /// The first sample's instant.
    pub session_start: String,
    /// The last sample's instant.
    pub session_end: String,
    /// The recording's samples.
    pub voltage_sample_count: i64,
    /// Not in the samples: null.
    pub heart_rate_mean: Option<i64>,
    /// Samples per second over the recording.
    pub sampling_frequency_hz: Option<f64>,
    /// Not in the samples: null.
    pub classification: Option<String>,
    /// Not in the samples: null.
    pub inconclusive_cause: Option<String>,
    /// Not in the samples: null.
    pub algorithm_version: Option<String>,
    /// The first sample's offset as `±HH:MM`, when known.
    pub time_zone: Option<String>,
    /// The provider slug.
    pub source_provider: String,
    /// The source type (`unknown` when ours is not one of the reference's).
    pub source_type: String,
    /// The source app, when known.
    pub source_app_id: Option<String>,
    /// Not in the samples: null.
    pub source_device_model: Option<String>,
    /// The source device, when known.
    pub source_device_id: Option<String>,
    /// When the first of its samples was stored.
    pub created_at: String,
    /// When the last of its samples was stored.
    pub updated_at: String,
    /// The user.
    pub user_id: Uuid,
    /// The source object.
    #[schema(value_type = Object)]
    pub source: Value,
}

/// `GET /v2/summary/electrocardiogram/{user_id}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Electrocardiograms {
    /// One per recording, oldest first.
    pub electrocardiogram: Vec<Electrocardiogram>,
}

/// A sample's source: (provider, type, app, device).
type SourceKey = (String, String, Option<String>, Option<String>);

/// One sample: (instant, offset, stored at, the source object).
type Sample = (i64, Option<i32>, i64, Value);

fn text(batch: &RecordBatch, column: &str, row: usize) -> Option<String> {
    match cell_by_name(batch, column, row) {
        Cell::Str(s) => Some(s),
        _ => None,
    }
}

fn offset_text(seconds: i32) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.unsigned_abs() / 60;
    format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

/// The recordings of stored voltage samples, ordered by start then provider.
pub fn electrocardiograms(batches: &[RecordBatch], user_id: Uuid) -> Vec<Electrocardiogram> {
    let mut by_source: BTreeMap<SourceKey, Vec<Sample>> = BTreeMap::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let (Cell::Micros(at), Some(provider)) = (
                cell_by_name(batch, "timestamp", row),
                text(batch, "source_provider", row),
            ) else {
                continue;
            };
            let kind = text(batch, "source_type", row)
                .filter(|k| SOURCE_TYPES.contains(&k.as_str()))
                .unwrap_or_else(|| "unknown".to_owned());
            let key = (
                provider,
                kind,
                text(batch, "source_app_id", row),
                text(batch, "source_device_id", row),
            );
            let tz = match cell_by_name(batch, crate::schema::TIMEZONE_OFFSET, row) {
                Cell::Int(v) => i32::try_from(v).ok(),
                _ => None,
            };
            let stored = match cell_by_name(batch, crate::schema::INGESTED_AT, row) {
                Cell::Micros(m) => m,
                _ => at,
            };
            let mut src = source(batch, row);
            if let Value::Object(map) = &mut src {
                map.retain(|_, v| !v.is_null());
            }
            by_source
                .entry(key)
                .or_default()
                .push((at, tz, stored, src));
        }
    }
    let mut out = Vec::new();
    for (key, mut samples) in by_source {
        samples.sort_by_key(|s| s.0);
        let mut from = 0;
        for i in 1..=samples.len() {
            let split =
                i == samples.len() || samples[i].0 - samples[i - 1].0 > RECORDING_GAP_MICROS;
            if split {
                out.push(recording(&key, &samples[from..i], user_id));
                from = i;
            }
        }
    }
    out.sort_by(|a, b| (a.0, &a.1.source_provider).cmp(&(b.0, &b.1.source_provider)));
    out.into_iter().map(|(_, e)| e).collect()
}

fn recording(key: &SourceKey, samples: &[Sample], user_id: Uuid) -> (i64, Electrocardiogram) {
    let (start, tz, _, src) = samples[0].clone();
    let end = samples[samples.len() - 1].0;
    let count = samples.len() as i64;
    let seconds = (end - start) as f64 / 1e6;
    let frequency = (count > 1 && seconds > 0.0)
        .then(|| ((count - 1) as f64 / seconds * 1000.0).round() / 1000.0);
    let stored = samples.iter().map(|s| s.2);
    let (first, last) = (
        stored.clone().min().unwrap_or(start),
        stored.max().unwrap_or(start),
    );
    let (provider, kind, app, device) = key.clone();
    let id = derive_id(&[
        "electrocardiogram",
        &user_id.to_string(),
        &provider,
        &kind,
        app.as_deref().unwrap_or(""),
        device.as_deref().unwrap_or(""),
        &start.to_string(),
    ]);
    let ecg = Electrocardiogram {
        id,
        session_start: format_instant(start, tz),
        session_end: format_instant(end, tz),
        voltage_sample_count: count,
        heart_rate_mean: None,
        sampling_frequency_hz: frequency,
        classification: None,
        inconclusive_cause: None,
        algorithm_version: None,
        time_zone: tz.map(offset_text),
        source_provider: provider,
        source_type: kind,
        source_app_id: app,
        source_device_model: None,
        source_device_id: device,
        created_at: format_instant(first, None),
        updated_at: format_instant(last, None),
        user_id,
        source: src,
    };
    (start, ecg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_read_as_hours_and_minutes() {
        assert_eq!(offset_text(3600), "+01:00");
        assert_eq!(offset_text(-16200), "-04:30");
        assert_eq!(offset_text(0), "+00:00");
    }
}
