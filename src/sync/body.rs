//! Building the push body a connector answers: what every normaliser shares.

use serde_json::{Map, Value, json};

use super::Pulled;

/// Inserts `value` under `key` when there is one.
pub(crate) fn put<T: Into<Value>>(obj: &mut Map<String, Value>, key: &str, value: Option<T>) {
    if let Some(v) = value {
        obj.insert(key.to_owned(), v.into());
    }
}

/// A number as JSON: integral values as integers (`61`, not `61.0`), so bodies read as the
/// provider's documents did.
pub(crate) fn num(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

/// The push body of `provider` with source type `source_type`: each table part and timeseries
/// that received records, and the profile if there is one.
pub(crate) fn pulled(
    (provider, source_type): (&str, &str),
    tables: Vec<(&str, Vec<Value>)>,
    profile: Option<Value>,
    series: Vec<(&str, Vec<Value>)>,
    skipped: usize,
) -> Pulled {
    let mut body = Map::new();
    body.insert("provider".into(), provider.into());
    body.insert("source".into(), json!({ "type": source_type }));
    for (key, rows) in tables {
        if !rows.is_empty() {
            body.insert(key.into(), Value::Array(rows));
        }
    }
    put(&mut body, "profile", profile);
    let series: Map<String, Value> = series
        .into_iter()
        .filter(|(_, samples)| !samples.is_empty())
        .map(|(resource, samples)| (resource.to_owned(), Value::Array(samples)))
        .collect();
    if !series.is_empty() {
        body.insert("timeseries".into(), Value::Object(series));
    }
    Pulled {
        body: Value::Object(body),
        skipped,
    }
}
