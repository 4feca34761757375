//! The sleep hypnogram as the reference's stage samples: inside a sleep summary's
//! `sleep_stream`, and as the deprecated `hypnogram` timeseries (`service-interface.md`
//! §Versioning), which is a view of the sleep table, not a stored resource.
//!
//! One sample per stage: `{timestamp, start, end, timezone_offset, type, unit: "stage", value}`,
//! `start` = the session's start plus the stage's index times the interval, `end` = `start` plus
//! the interval; values are the stage codes (1 deep, 2 light, 3 rem, 4 awake, 5 manual,
//! −1 missing).

use datafusion::arrow::record_batch::RecordBatch;
use serde_json::{Map, Value, json};

use super::summaries::{offset, source};
use crate::ingest::columns::{Cell, cell_by_name};
use crate::ingest::zone::format_instant;

/// The unit of hypnogram samples.
pub const STAGE_UNIT: &str = "stage";

/// The stage samples of one session starting at `start` (µs since the epoch).
pub(crate) fn stage_samples(
    stages: &[i8],
    start: i64,
    interval: i64,
    tz: Option<i32>,
) -> Vec<Value> {
    let step = interval.saturating_mul(1_000_000);
    stages
        .iter()
        .enumerate()
        .map(|(i, stage)| {
            let from = start.saturating_add(step.saturating_mul(i as i64));
            let at = format_instant(from, tz);
            json!({
                "timestamp": at,
                "start": at,
                "end": format_instant(from.saturating_add(step), tz),
                "timezone_offset": tz,
                "type": null,
                "unit": STAGE_UNIT,
                "value": stage,
            })
        })
        .collect()
}

/// The stage samples of every session in `batches` (sleep rows), each with its source object,
/// ordered by time then provider.
fn samples_with_source(batches: &[RecordBatch]) -> Vec<(i64, Value, Value)> {
    let mut out = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let Cell::Stages(stages) = cell_by_name(batch, "hypnogram", row) else {
                continue;
            };
            let Cell::Micros(start) = cell_by_name(batch, "session_start", row) else {
                continue;
            };
            let interval = match cell_by_name(batch, "hypnogram_interval_second", row) {
                Cell::Int(i) => i,
                _ => crate::ingest::summary::DEFAULT_HYPNOGRAM_INTERVAL,
            };
            let src = source(batch, row);
            let tz = offset(batch, row);
            for (i, sample) in stage_samples(&stages, start, interval, tz)
                .into_iter()
                .enumerate()
            {
                let at = start.saturating_add(interval.saturating_mul(1_000_000 * i as i64));
                out.push((at, src.clone(), sample));
            }
        }
    }
    out.sort_by(|a, b| (a.0, a.1["provider"].as_str()).cmp(&(b.0, b.1["provider"].as_str())));
    out
}

/// The plain getter's answer: every stage sample of the sessions in `batches`.
pub fn hypnogram_plain(batches: &[RecordBatch]) -> Vec<Value> {
    samples_with_source(batches)
        .into_iter()
        .map(|(_, _, sample)| sample)
        .collect()
}

/// The grouped getter's answer: `{"groups": {"<provider>": [{"source", "data"}]},
/// "next_cursor": null}` (one page: a window's sessions are few).
pub fn hypnogram_grouped(batches: &[RecordBatch]) -> Value {
    let mut groups: Map<String, Value> = Map::new();
    for (_, src, sample) in samples_with_source(batches) {
        let provider = src["provider"].as_str().unwrap_or_default().to_owned();
        let Value::Array(list) = groups
            .entry(provider)
            .or_insert_with(|| Value::Array(Vec::new()))
        else {
            continue;
        };
        match list.iter_mut().find(|g| g["source"] == src) {
            Some(group) => {
                if let Some(Value::Array(data)) = group.get_mut("data") {
                    data.push(sample);
                }
            }
            None => list.push(json!({"source": src, "data": [sample]})),
        }
    }
    json!({"groups": groups, "next": null, "next_cursor": null})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_become_consecutive_samples() {
        let samples = stage_samples(&[4, 2, -1], 0, 300, Some(3600));
        assert_eq!(samples.len(), 3);
        assert_eq!(samples[0]["start"], "1970-01-01T01:00:00+01:00");
        assert_eq!(samples[1]["start"], "1970-01-01T01:05:00+01:00");
        assert_eq!(samples[1]["end"], "1970-01-01T01:10:00+01:00");
        assert_eq!(samples[2]["value"], -1);
        assert_eq!(samples[0]["unit"], STAGE_UNIT);
    }
}
