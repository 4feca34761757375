//! Deterministic test datasets: rows as maps (so the reference evaluator reads them directly)
//! and their conversion to record batches with the storage schemas. Every scenario is named
//! and seeded; `testdata/README.md` describes them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime};
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Float64Array, Int8Builder, Int32Array, Int64Array,
    ListBuilder, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use wearhouse::schema::Dataset;

/// One stored value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    I(i64),
    F(f64),
    S(String),
    B(bool),
    /// microseconds since the epoch (UTC instant)
    T(i64),
    /// days since the epoch
    D(i32),
    L(Vec<i8>),
}

pub type Row = BTreeMap<String, Val>;
pub type Data = HashMap<Dataset, Vec<Row>>;

pub fn ts(s: &str) -> i64 {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S")
        .unwrap()
        .and_utc()
        .timestamp_micros()
}

pub fn day(s: &str) -> i32 {
    let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
    (d - NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()).num_days() as i32
}

pub const H: i64 = 3_600_000_000;
pub const M: i64 = 60_000_000;

pub fn s(v: &str) -> Val {
    Val::S(v.to_owned())
}

/// Converts rows to one batch with the dataset's storage schema (absent columns are null).
pub fn to_batch(d: Dataset, rows: &[Row]) -> RecordBatch {
    let schema = d.schema();
    let cols: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| {
            let get = |r: &Row| r.get(f.name().as_str()).cloned();
            // A column of `$array` from each row's value of the shape `$val`, else null.
            macro_rules! column {
                ($array:ty, $val:pat => $cell:expr) => {
                    rows.iter()
                        .map(|r| match get(r) {
                            Some($val) => Some($cell),
                            _ => None,
                        })
                        .collect::<$array>()
                };
            }
            let a: ArrayRef = match f.data_type() {
                DataType::Utf8 => Arc::new(column!(StringArray, Val::S(s) => s)),
                DataType::Int64 => Arc::new(column!(Int64Array, Val::I(i) => i)),
                DataType::Int32 => Arc::new(column!(Int32Array, Val::I(i) => i as i32)),
                DataType::Float64 => Arc::new(column!(Float64Array, Val::F(x) => x)),
                DataType::Boolean => Arc::new(column!(BooleanArray, Val::B(b) => b)),
                DataType::Date32 => Arc::new(column!(Date32Array, Val::D(d) => d)),
                DataType::Timestamp(TimeUnit::Microsecond, _) => Arc::new(
                    column!(TimestampMicrosecondArray, Val::T(t) => t).with_timezone("UTC"),
                ),
                DataType::List(_) => {
                    let mut b = ListBuilder::new(Int8Builder::new());
                    for r in rows {
                        match get(r) {
                            Some(Val::L(v)) => {
                                v.iter().for_each(|c| b.values().append_value(*c));
                                b.append(true);
                            }
                            _ => b.append(false),
                        }
                    }
                    Arc::new(b.finish())
                }
                other => panic!("unsupported type {other}"),
            };
            a
        })
        .collect();
    let fixed: Vec<ArrayRef> = cols
        .into_iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            if let DataType::List(item) = f.data_type() {
                cast_list(c, item.clone())
            } else {
                c
            }
        })
        .collect();
    RecordBatch::try_new(schema, fixed).unwrap()
}

fn cast_list(c: ArrayRef, item: Arc<datafusion::arrow::datatypes::Field>) -> ArrayRef {
    datafusion::arrow::compute::cast(&c, &DataType::List(item)).unwrap()
}

pub fn batches(data: &Data) -> HashMap<Dataset, Vec<RecordBatch>> {
    data.iter()
        .map(|(d, rows)| (*d, vec![to_batch(*d, rows)]))
        .collect()
}

pub fn source(r: &mut Row, provider: &str, source_type: &str, ingested: i64) {
    r.insert("source_provider".into(), s(provider));
    r.insert("source_type".into(), s(source_type));
    r.insert("ingested_at".into(), Val::T(ingested));
}

/// A heart-rate-like discrete sample.
pub fn sample(
    t: i64,
    offset: Option<i64>,
    value: f64,
    provider: &str,
    source_type: &str,
    ingested: i64,
) -> Row {
    let mut r = Row::new();
    r.insert("timestamp".into(), Val::T(t));
    if let Some(o) = offset {
        r.insert("timezone_offset".into(), Val::I(o));
    }
    r.insert("value".into(), Val::F(value));
    r.insert("unit".into(), s("bpm"));
    source(&mut r, provider, source_type, ingested);
    r
}
