//! Column-major JSON (§4.2): `{"results": [{"table": {"<name>": [...], ...}}, ...]}`.
//! Floating datetimes as `2025-02-17T00:00:00` (fraction only when non-zero: 3 digits for whole
//! milliseconds, else 6), dates as `2025-02-17`, UTC datetimes with `Z`, NaN and infinities as
//! `null`.
//!
//! The document is written straight from the Arrow arrays into one byte buffer: no
//! `serde_json::Value` per cell, and dates and times formatted from integers, not through a
//! format string (encoding was a fifth of the server's CPU on hourly-bucket answers). Numbers
//! and strings go through serde_json's own writers (ryu, itoa, its escaping), so the bytes are
//! what serialising the equivalent `Value` gives; a test compares the two on random columns.

use chrono::{DateTime, Datelike, Timelike};
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Float64Type, Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType,
};
use serde_json::Value;

use crate::engine::{EngineError, Limits, QueryResult};

/// Encodes results as the §4.2 JSON document; a query over `limits.max_json_cells` cells is
/// a [`EngineError::ResultTooLarge`], refused before anything is written.
pub fn encode_json_bytes(results: &[QueryResult], limits: &Limits) -> Result<Vec<u8>, EngineError> {
    let mut cells_total = 0;
    for (i, r) in results.iter().enumerate() {
        let cells = r.num_rows() * r.schema.fields().len();
        if cells > limits.max_json_cells {
            return Err(EngineError::ResultTooLarge {
                query: i,
                cells,
                limit: limits.max_json_cells,
            });
        }
        cells_total += cells;
    }
    // Most cells are numbers or short timestamps: a guess that avoids most regrowth.
    let mut out = Vec::with_capacity(64 + cells_total * 12);
    out.extend_from_slice(b"{\"results\":[");
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"table\":{");
        for (c, field) in r.schema.fields().iter().enumerate() {
            if c > 0 {
                out.push(b',');
            }
            write_str(&mut out, field.name());
            out.extend_from_slice(b":[");
            let mut first = true;
            for b in &r.batches {
                write_values(b.column(c), &mut out, &mut first)?;
            }
            out.push(b']');
        }
        out.extend_from_slice(b"}}");
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

/// [`encode_json_bytes`] as a `serde_json::Value` (for callers that inspect the document).
pub fn encode_json(results: &[QueryResult], limits: &Limits) -> Result<Value, EngineError> {
    let bytes = encode_json_bytes(results, limits)?;
    serde_json::from_slice(&bytes).map_err(|e| EngineError::internal("json", e))
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Appends the cells of `a`, each preceded by a comma unless it is the column's first.
fn write_values(a: &ArrayRef, out: &mut Vec<u8>, first: &mut bool) -> Result<(), EngineError> {
    let mut each = |out: &mut Vec<u8>, cell: &mut dyn FnMut(&mut Vec<u8>, usize)| {
        for i in 0..a.len() {
            if !std::mem::take(first) {
                out.push(b',');
            }
            if a.is_valid(i) {
                cell(out, i);
            } else {
                out.extend_from_slice(b"null");
            }
        }
    };
    match a.data_type() {
        // A NullArray has no validity buffer: `is_valid` says true for its cells.
        DataType::Null => each(out, &mut |out, _| out.extend_from_slice(b"null")),
        DataType::Float64 => {
            let p = a.as_primitive::<Float64Type>();
            each(out, &mut |out, i| {
                let v = p.value(i);
                if v.is_finite() {
                    let _ = serde_json::to_writer(&mut *out, &v);
                } else {
                    out.extend_from_slice(b"null");
                }
            });
        }
        DataType::Int64 => {
            let p = a.as_primitive::<Int64Type>();
            each(out, &mut |out, i| {
                let _ = serde_json::to_writer(&mut *out, &p.value(i));
            });
        }
        DataType::Int32 => {
            let p = a.as_primitive::<Int32Type>();
            each(out, &mut |out, i| {
                let _ = serde_json::to_writer(&mut *out, &p.value(i));
            });
        }
        DataType::Boolean => {
            let p = a.as_boolean();
            each(out, &mut |out, i| {
                out.extend_from_slice(if p.value(i) { b"true" } else { b"false" });
            });
        }
        DataType::Utf8 => {
            let p = a.as_string::<i32>();
            each(out, &mut |out, i| write_str(out, p.value(i)));
        }
        DataType::Utf8View => {
            let p = a.as_string_view();
            each(out, &mut |out, i| write_str(out, p.value(i)));
        }
        DataType::Date32 => {
            let p = a.as_primitive::<Date32Type>();
            each(
                out,
                &mut |out, i| match i64::from(p.value(i)).checked_mul(86_400_000_000) {
                    Some(micros) => write_datetime(out, micros, Part::Date),
                    None => out.extend_from_slice(b"null"),
                },
            );
        }
        DataType::Timestamp(TimeUnit::Microsecond, tz) => {
            let p = a.as_primitive::<TimestampMicrosecondType>();
            let part = if tz.is_some() {
                Part::Utc
            } else {
                Part::Floating
            };
            each(out, &mut |out, i| write_datetime(out, p.value(i), part));
        }
        other => {
            return Err(EngineError::Internal(format!(
                "no JSON encoding for {other}"
            )));
        }
    }
    Ok(())
}

/// What of an instant a cell shows.
#[derive(Clone, Copy, PartialEq)]
enum Part {
    /// `2025-02-17`
    Date,
    /// `2025-02-17T08:30:00` (wall time, no zone)
    Floating,
    /// `2025-02-17T08:30:00Z`
    Utc,
}

/// Writes `micros` (since the epoch) as a JSON string; `null` when out of chrono's range.
/// Years outside 0–9999 take chrono's formatter (a sign and more digits); the rest are
/// written digit by digit.
fn write_datetime(out: &mut Vec<u8>, micros: i64, part: Part) {
    let Some(t) = DateTime::from_timestamp_micros(micros) else {
        out.extend_from_slice(b"null");
        return;
    };
    let t = t.naive_utc();
    let year = t.year();
    if !(0..=9999).contains(&year) {
        let format = if part == Part::Date {
            "%Y-%m-%d"
        } else {
            "%Y-%m-%dT%H:%M:%S%.f"
        };
        let mut s = t.format(format).to_string();
        if part == Part::Utc {
            s.push('Z');
        }
        write_str(out, &s);
        return;
    }
    let digits = |out: &mut Vec<u8>, v: u32, n: usize| {
        let mut buf = [b'0'; 6];
        let mut v = v;
        for d in buf[..n].iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            v /= 10;
        }
        out.extend_from_slice(&buf[..n]);
    };
    out.push(b'"');
    digits(out, year as u32, 4);
    out.push(b'-');
    digits(out, t.month(), 2);
    out.push(b'-');
    digits(out, t.day(), 2);
    if part != Part::Date {
        out.push(b'T');
        digits(out, t.hour(), 2);
        out.push(b':');
        digits(out, t.minute(), 2);
        out.push(b':');
        digits(out, t.second(), 2);
        let micro = t.nanosecond() / 1_000;
        if micro != 0 {
            out.push(b'.');
            if micro % 1_000 == 0 {
                digits(out, micro / 1_000, 3);
            } else {
                digits(out, micro, 6);
            }
        }
        if part == Part::Utc {
            out.push(b'Z');
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{
        BooleanArray, Date32Array, Float64Array, Int32Array, Int64Array, NullArray, StringArray,
        StringViewArray, TimestampMicrosecondArray,
    };
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use serde_json::{Map, Number};

    use super::*;

    /// The reference: each cell as a `serde_json::Value`, formatted through chrono's format
    /// strings (the encoder this module replaced).
    fn reference_cell(a: &ArrayRef, i: usize) -> Value {
        if !a.is_valid(i) {
            return Value::Null;
        }
        let datetime = |micros: i64, format: &str, z: bool| {
            DateTime::from_timestamp_micros(micros).map_or(Value::Null, |t| {
                let s = t.naive_utc().format(format).to_string();
                Value::String(if z { s + "Z" } else { s })
            })
        };
        match a.data_type() {
            DataType::Float64 => Number::from_f64(a.as_primitive::<Float64Type>().value(i))
                .map_or(Value::Null, Value::Number),
            DataType::Int64 => Value::from(a.as_primitive::<Int64Type>().value(i)),
            DataType::Int32 => Value::from(a.as_primitive::<Int32Type>().value(i)),
            DataType::Boolean => Value::Bool(a.as_boolean().value(i)),
            DataType::Utf8 => Value::from(a.as_string::<i32>().value(i)),
            DataType::Utf8View => Value::from(a.as_string_view().value(i)),
            DataType::Date32 => {
                let days = i64::from(a.as_primitive::<Date32Type>().value(i));
                DateTime::from_timestamp(days * 86_400, 0).map_or(Value::Null, |d| {
                    Value::String(d.format("%Y-%m-%d").to_string())
                })
            }
            DataType::Timestamp(_, tz) => datetime(
                a.as_primitive::<TimestampMicrosecondType>().value(i),
                "%Y-%m-%dT%H:%M:%S%.f",
                tz.is_some(),
            ),
            _ => Value::Null,
        }
    }

    fn reference(results: &[QueryResult]) -> Vec<u8> {
        let list: Vec<Value> = results
            .iter()
            .map(|r| {
                let mut table = Map::new();
                for (c, field) in r.schema.fields().iter().enumerate() {
                    let col: Vec<Value> = r
                        .batches
                        .iter()
                        .flat_map(|b| {
                            let a = b.column(c).clone();
                            (0..a.len()).map(move |i| reference_cell(&a, i))
                        })
                        .collect();
                    table.insert(field.name().clone(), Value::Array(col));
                }
                serde_json::json!({ "table": table })
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({ "results": list })).unwrap()
    }

    fn random_micros(g: &mut ChaCha8Rng) -> i64 {
        match g.gen_range(0..6) {
            0 => g.gen_range(-62_135_596_800_000_000..253_402_300_799_000_000), // years 1–9999
            1 => g.gen_range(1_700_000_000..1_800_000_000) * 1_000_000,         // whole seconds
            2 => g.gen_range(1_700_000_000_000..1_800_000_000_000) * 1_000,     // whole millis
            3 => g.gen_range(-300_000_000_000_000_000..-62_135_596_800_000_000), // before year 0
            4 => g.gen_range(253_402_300_800_000_000..300_000_000_000_000_000), // after year 9999
            _ => [i64::MIN, i64::MAX, 0, -1][g.gen_range(0..4)],
        }
    }

    fn random_batch(g: &mut ChaCha8Rng, n: usize) -> RecordBatch {
        let valid = |g: &mut ChaCha8Rng| g.gen_ratio(9, 10);
        let floats: Float64Array = (0..n)
            .map(|_| {
                valid(g).then(|| match g.gen_range(0..5) {
                    0 => f64::NAN,
                    1 => [f64::INFINITY, f64::NEG_INFINITY, -0.0, 1e300, 5e-324][g.gen_range(0..5)],
                    2 => f64::from(g.gen_range(-1000..1000)),
                    _ => g.gen_range(-1e6..1e6),
                })
            })
            .collect();
        let ints: Int64Array = (0..n).map(|_| valid(g).then(|| g.r#gen::<i64>())).collect();
        let small: Int32Array = (0..n).map(|_| valid(g).then(|| g.r#gen::<i32>())).collect();
        let bools: BooleanArray = (0..n)
            .map(|_| valid(g).then(|| g.r#gen::<bool>()))
            .collect();
        let words = [
            "",
            "oura",
            "quote\"back\\slash",
            "tab\tnew\nline",
            "ünïcødé ✓",
            "\u{1}",
        ];
        let strings: StringArray = (0..n)
            .map(|_| valid(g).then(|| words[g.gen_range(0..words.len())]))
            .collect();
        let views: StringViewArray = (0..n)
            .map(|_| valid(g).then(|| words[g.gen_range(0..words.len())]))
            .collect();
        let dates: Date32Array = (0..n)
            .map(|_| {
                valid(g).then(|| match g.gen_range(0..3) {
                    0 => g.r#gen::<i32>(),
                    _ => g.gen_range(-800_000..3_000_000),
                })
            })
            .collect();
        let floating: TimestampMicrosecondArray =
            (0..n).map(|_| valid(g).then(|| random_micros(g))).collect();
        let utc = TimestampMicrosecondArray::from_iter(
            (0..n).map(|_| valid(g).then(|| random_micros(g))),
        )
        .with_timezone("UTC");
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("mean.value", Arc::new(floats)),
            ("count.value", Arc::new(ints)),
            ("date_part", Arc::new(small)),
            ("flag", Arc::new(bools)),
            ("source_provider", Arc::new(strings)),
            ("name \"quoted\"", Arc::new(views)),
            ("group_key.0", Arc::new(dates)),
            ("group_key.1", Arc::new(floating)),
            ("newest.profile", Arc::new(utc)),
            ("nothing", Arc::new(NullArray::new(n))),
        ];
        RecordBatch::try_from_iter(columns).unwrap()
    }

    #[test]
    fn bytes_equal_serialising_the_reference_values() {
        let mut g = ChaCha8Rng::seed_from_u64(7);
        for round in 0..40 {
            let results: Vec<QueryResult> = (0..g.gen_range(0..4))
                .map(|_| {
                    let batches: Vec<RecordBatch> = (0..g.gen_range(0..3))
                        .map(|_| {
                            let n = g.gen_range(0..60);
                            random_batch(&mut g, n)
                        })
                        .collect();
                    let schema = batches.first().map(|b| b.schema()).unwrap_or_else(|| {
                        Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]))
                    });
                    QueryResult { schema, batches }
                })
                .collect();
            let got = encode_json_bytes(&results, &Limits::default()).unwrap();
            let want = reference(&results);
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(want).unwrap(),
                "round {round}"
            );
        }
    }

    #[test]
    fn a_result_over_the_cell_limit_is_refused() {
        let mut g = ChaCha8Rng::seed_from_u64(1);
        let batch = random_batch(&mut g, 10);
        let results = vec![QueryResult {
            schema: batch.schema(),
            batches: vec![batch],
        }];
        let limits = Limits {
            max_json_cells: 99,
            ..Limits::default()
        };
        match encode_json_bytes(&results, &limits) {
            Err(EngineError::ResultTooLarge {
                query: 0,
                cells: 100,
                limit: 99,
            }) => {}
            other => panic!("{other:?}"),
        }
    }
}
