//! Column-major JSON (§4.2): `{"results": [{"table": {"<name>": [...], ...}}, ...]}`.
//! Floating datetimes as `2025-02-17T00:00:00` (fraction only when non-zero), dates as
//! `2025-02-17`, UTC datetimes with `Z`, NaN and infinities as `null`.

use chrono::DateTime;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Float64Type, Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType,
};
use serde_json::{Map, Number, Value};

use super::super::{EngineError, Limits, QueryResult};

fn datetime(micros: i64, utc: bool) -> Value {
    match DateTime::from_timestamp_micros(micros) {
        Some(t) => {
            let s = t.naive_utc().format("%Y-%m-%dT%H:%M:%S%.f").to_string();
            Value::String(if utc { s + "Z" } else { s })
        }
        None => Value::Null,
    }
}

fn values(a: &ArrayRef, out: &mut Vec<Value>) -> Result<(), EngineError> {
    let get = |i: usize| a.is_valid(i);
    match a.data_type() {
        DataType::Null => out.extend((0..a.len()).map(|_| Value::Null)),
        DataType::Float64 => {
            let p = a.as_primitive::<Float64Type>();
            out.extend((0..a.len()).map(|i| {
                if get(i) {
                    Number::from_f64(p.value(i)).map_or(Value::Null, Value::Number)
                } else {
                    Value::Null
                }
            }));
        }
        DataType::Int64 => {
            let p = a.as_primitive::<Int64Type>();
            out.extend((0..a.len()).map(|i| {
                if get(i) {
                    Value::from(p.value(i))
                } else {
                    Value::Null
                }
            }));
        }
        DataType::Int32 => {
            let p = a.as_primitive::<Int32Type>();
            out.extend((0..a.len()).map(|i| {
                if get(i) {
                    Value::from(p.value(i))
                } else {
                    Value::Null
                }
            }));
        }
        DataType::Boolean => {
            let p = a.as_boolean();
            out.extend((0..a.len()).map(|i| {
                if get(i) {
                    Value::Bool(p.value(i))
                } else {
                    Value::Null
                }
            }));
        }
        DataType::Utf8 => {
            let p = a.as_string::<i32>();
            out.extend((0..a.len()).map(|i| {
                if get(i) {
                    Value::String(p.value(i).to_owned())
                } else {
                    Value::Null
                }
            }));
        }
        DataType::Utf8View => {
            let p = a.as_string_view();
            out.extend((0..a.len()).map(|i| {
                if get(i) {
                    Value::String(p.value(i).to_owned())
                } else {
                    Value::Null
                }
            }));
        }
        DataType::Date32 => {
            let p = a.as_primitive::<Date32Type>();
            out.extend((0..a.len()).map(|i| {
                if !get(i) {
                    return Value::Null;
                }
                let d = DateTime::from_timestamp(i64::from(p.value(i)) * 86_400, 0);
                d.map_or(Value::Null, |d| {
                    Value::String(d.format("%Y-%m-%d").to_string())
                })
            }));
        }
        DataType::Timestamp(TimeUnit::Microsecond, tz) => {
            let p = a.as_primitive::<TimestampMicrosecondType>();
            let utc = tz.is_some();
            out.extend((0..a.len()).map(|i| {
                if get(i) {
                    datetime(p.value(i), utc)
                } else {
                    Value::Null
                }
            }));
        }
        other => {
            return Err(EngineError::Internal(format!(
                "no JSON encoding for {other}"
            )));
        }
    }
    Ok(())
}

/// Encodes results as the §4.2 JSON document; a query over `limits.max_json_cells` cells is
/// a [`EngineError::ResultTooLarge`].
pub fn encode_json(results: &[QueryResult], limits: &Limits) -> Result<Value, EngineError> {
    let mut list = Vec::with_capacity(results.len());
    for (i, r) in results.iter().enumerate() {
        let cells = r.num_rows() * r.schema.fields().len();
        if cells > limits.max_json_cells {
            return Err(EngineError::ResultTooLarge {
                query: i,
                cells,
                limit: limits.max_json_cells,
            });
        }
        let mut table = Map::new();
        for (c, field) in r.schema.fields().iter().enumerate() {
            let mut col = Vec::with_capacity(r.num_rows());
            for b in &r.batches {
                values(b.column(c), &mut col)?;
            }
            table.insert(field.name().clone(), Value::Array(col));
        }
        let mut entry = Map::new();
        entry.insert("table".into(), Value::Object(table));
        list.push(Value::Object(entry));
    }
    let mut doc = Map::new();
    doc.insert("results".into(), Value::Array(list));
    Ok(Value::Object(doc))
}
