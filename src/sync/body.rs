//! Building the push body a connector answers: what every normaliser shares.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::{Map, Value};

use super::Pulled;
use crate::ingest::{PulledBody, PulledRecord, PulledSamples};
use crate::schema::Table;

/// `record` (a JSON object) made from the provider `document`, which the raw getters keep.
pub(crate) fn with_payload(record: Value, document: &Value) -> PulledRecord {
    PulledRecord::new(record, Some(document.clone()))
}

/// Inserts `value` under `key` when there is one.
pub(crate) fn put<T: Into<Value>>(obj: &mut Map<String, Value>, key: &str, value: Option<T>) {
    if let Some(v) = value {
        obj.insert(key.to_owned(), v.into());
    }
}

/// A number as JSON: integral values as integers (`61`, not `61.0`), so bodies read as the
/// provider's documents did (ingest's rendering of typed samples, the same rule).
pub(crate) use crate::ingest::number as num;

/// The push body of `provider` with source type `source_type`: each table part and timeseries
/// that received records, and the profile if there is one.
pub(crate) fn pulled(
    (provider, source_type): (&str, &str),
    tables: Vec<(Table, Vec<PulledRecord>)>,
    profile: Option<PulledRecord>,
    series: Vec<(&str, PulledSamples)>,
    skipped: usize,
) -> Pulled {
    let body = PulledBody {
        tables: tables.into_iter().filter(|(_, r)| !r.is_empty()).collect(),
        profile,
        timeseries: series
            .into_iter()
            .filter(|(_, samples)| !samples.is_empty())
            .map(|(resource, samples)| (resource.to_owned(), samples))
            .collect(),
        ..PulledBody::new(provider, source_type)
    };
    Pulled { body, skipped }
}

/// mg/dL per mmol/L of glucose (its molar mass, 180.182 g/mol, over 10).
pub(crate) const MG_DL_PER_MMOL_L: f64 = 18.0182;

/// The largest offset kept, in seconds (ingest's limit).
pub(crate) const MAX_OFFSET_SECONDS: i64 = 18 * 3600;

/// The step computed offsets are rounded to, in seconds: every zone's offset is a multiple of
/// 15 minutes, and the difference of two device clocks carries their drift.
const OFFSET_STEP_SECONDS: i64 = 15 * 60;

/// A glucose value in mmol/L, rounded to 2 decimals (one mg/dL is 0.055 mmol/L, so the
/// rounding loses nothing of an integer mg/dL); `None` for a unit but `mg/dL` and `mmol/L`.
pub(crate) fn mmol_per_litre(value: f64, unit: &str) -> Option<f64> {
    let mmol = match unit {
        "mg/dL" => value / MG_DL_PER_MMOL_L,
        "mmol/L" => value,
        _ => return None,
    };
    Some((mmol * 100.0).round() / 100.0)
}

/// The wearer's offset in seconds east of UTC from a device's local clock reading `local` of
/// the instant `utc`: their difference rounded to 15 minutes; `None` beyond ±18 h.
pub(crate) fn clock_offset(utc: DateTime<Utc>, local: NaiveDateTime) -> Option<i64> {
    let diff = (local - utc.naive_utc()).num_seconds();
    let steps = (diff as f64 / OFFSET_STEP_SECONDS as f64).round() as i64;
    let seconds = steps * OFFSET_STEP_SECONDS;
    (seconds.abs() <= MAX_OFFSET_SECONDS).then_some(seconds)
}

/// A provider record a normaliser could not read: logged with the provider, the resource, the
/// record's id (the first of `id_fields` it has) and why, and counted in `skipped`. Answers
/// `None`, so that a reader can return it.
pub(crate) fn skip<T>(
    skipped: &mut usize,
    (provider, id_fields): (&str, &[&str]),
    resource: &str,
    record: &Value,
    why: &str,
) -> Option<T> {
    let id = id_fields
        .iter()
        .find_map(|f| record.get(*f))
        .map_or_else(|| "?".into(), Value::to_string);
    tracing::warn!(
        provider,
        resource,
        id,
        error = why,
        "skipped a malformed provider record"
    );
    *skipped += 1;
    None
}

/// Reads one provider record as `T`, or [`skip`]s it.
pub(crate) fn read_record<'a, T: serde::Deserialize<'a>>(
    skipped: &mut usize,
    who: (&str, &[&str]),
    resource: &str,
    record: &'a Value,
) -> Option<T> {
    match T::deserialize(record) {
        Ok(t) => Some(t),
        Err(e) => skip(skipped, who, resource, record, &e.to_string()),
    }
}
