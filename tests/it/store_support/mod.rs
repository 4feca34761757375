//! Batch builders for the store tests: rows of any dataset, filled from the storage schema so
//! every table and family can be written without hand-written column lists.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray, new_null_array,
};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::DataType;
use uuid::Uuid;
use wearhouse::schema::{Dataset, INGESTED_AT, resource};
use wearhouse::store::health::{HealthStore, StoreOptions};

/// Microseconds per day.
pub const DAY: i64 = 86_400_000_000;
/// 2026-01-01T00:00:00Z in microseconds.
pub const T0: i64 = 1_767_225_600_000_000;

/// One row: what the tests vary.
#[derive(Debug, Clone)]
pub struct Row {
    pub time: i64,
    pub id: String,
    pub provider: &'static str,
    pub value: f64,
    pub ingested: i64,
}

/// A row at `time` with id `id`, value `value`, ingested at `T0`.
pub fn row(time: i64, id: &str, value: f64) -> Row {
    Row {
        time,
        id: id.to_owned(),
        provider: "oura",
        value,
        ingested: T0,
    }
}

/// A batch of `dataset` holding `rows`; columns not driven by `Row` get type-appropriate values.
pub fn batch(dataset: Dataset, rows: &[Row]) -> RecordBatch {
    let schema = dataset.schema();
    let time_col = dataset.time_column();
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| -> ArrayRef {
            let name = f.name().as_str();
            let times = || rows.iter().map(|r| r.time);
            match (name, f.data_type()) {
                ("id", _) => Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.id))),
                ("source_provider", _) => Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|r| r.provider),
                )),
                ("source_type", _) => {
                    Arc::new(StringArray::from_iter_values(rows.iter().map(|_| "watch")))
                }
                (n, _) if n == INGESTED_AT => Arc::new(
                    TimestampMicrosecondArray::from_iter_values(rows.iter().map(|r| r.ingested))
                        .with_timezone("UTC"),
                ),
                (n, DataType::Timestamp(..)) if n == time_col => Arc::new(
                    TimestampMicrosecondArray::from_iter_values(times()).with_timezone("UTC"),
                ),
                (_, DataType::Timestamp(..)) => Arc::new(
                    TimestampMicrosecondArray::from_iter_values(times().map(|t| t + 60_000_000))
                        .with_timezone("UTC"),
                ),
                (_, DataType::Date32) => Arc::new(Date32Array::from_iter_values(
                    times().map(|t| t.div_euclid(DAY) as i32),
                )),
                (_, DataType::Float64) => {
                    Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.value)))
                }
                (_, DataType::Int64) => Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|r| r.value as i64),
                )),
                (_, DataType::Int32) => {
                    Arc::new(Int32Array::from_iter_values(rows.iter().map(|_| 3600)))
                }
                (_, DataType::Boolean) => {
                    Arc::new(BooleanArray::from_iter(rows.iter().map(|_| Some(false))))
                }
                (_, DataType::Utf8) => {
                    Arc::new(StringArray::from_iter_values(rows.iter().map(|_| name)))
                }
                (_, other) => new_null_array(other, rows.len()),
            }
        })
        .collect();
    RecordBatch::try_new(schema, columns).expect("test batch matches the schema")
}

/// All batches as one (empty batch of the schema when there are none).
pub fn one(dataset: Dataset, batches: &[RecordBatch]) -> RecordBatch {
    concat_batches(&dataset.schema(), batches).expect("same schema")
}

/// The `Float64` column `name` as values.
pub fn floats(batch: &RecordBatch, name: &str) -> Vec<f64> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
        .expect("float column")
        .values()
        .to_vec()
}

/// The time column of `dataset` as microseconds (`Date32` days as midnight UTC).
pub fn times(dataset: Dataset, batch: &RecordBatch) -> Vec<i64> {
    let col = batch
        .column_by_name(dataset.time_column())
        .expect("time column");
    if let Some(ts) = col.as_any().downcast_ref::<TimestampMicrosecondArray>() {
        return ts.values().to_vec();
    }
    let days = col
        .as_any()
        .downcast_ref::<Date32Array>()
        .expect("date column");
    days.values().iter().map(|d| i64::from(*d) * DAY).collect()
}

pub fn heartrate() -> Dataset {
    Dataset::Timeseries(resource("heartrate").unwrap())
}

pub fn at(us: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(us).unwrap()
}

pub fn open(dir: &tempfile::TempDir, options: StoreOptions) -> HealthStore {
    HealthStore::open(dir.path().to_str().unwrap(), options).unwrap()
}

pub fn ids() -> (Uuid, Uuid) {
    (Uuid::new_v4(), Uuid::new_v4())
}

/// Segment files (not temp files) in a dataset folder.
pub fn segment_files(store: &HealthStore, team: Uuid, user: Uuid, dataset: Dataset) -> Vec<String> {
    let dir = store
        .root()
        .join(format!("{team}/{user}/{}", dataset.path()));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".parquet"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}
