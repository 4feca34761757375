//! Seeded 1 Hz heart rate for the store benches (`store.rs`, `object_store.rs`).

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Float64Array, Int32Array, RecordBatch, StringArray, TimestampMicrosecondArray,
    new_null_array,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use wearhouse::schema::{Dataset, resource};

/// 2026-01-01T00:00:00Z, in microseconds.
pub const T0: i64 = 1_767_225_600_000_000;
/// A second, in microseconds.
pub const SECOND: i64 = 1_000_000;

pub fn heartrate() -> Dataset {
    Dataset::Timeseries(resource("heartrate").expect("heartrate is a resource"))
}

/// `rows` 1 Hz samples of one device, its (provider, source type), from `start`; values a
/// seeded random walk in 45..=185 bpm.
pub fn device_samples(
    (provider, source_type): (&str, &str),
    start: i64,
    rows: usize,
    rng: &mut ChaCha8Rng,
) -> RecordBatch {
    let schema = heartrate().schema();
    let mut bpm = 70.0f64;
    let values: Float64Array = (0..rows)
        .map(|_| {
            bpm = (bpm + rng.gen_range(-2.0..=2.0f64)).clamp(45.0, 185.0);
            Some(bpm.round())
        })
        .collect();
    let ts = |f: &dyn Fn(i64) -> i64| -> ArrayRef {
        Arc::new(
            TimestampMicrosecondArray::from_iter_values((0..rows as i64).map(f))
                .with_timezone("UTC"),
        )
    };
    let text =
        |v: &str| -> ArrayRef { Arc::new(StringArray::from_iter_values((0..rows).map(|_| v))) };
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| match f.name().as_str() {
            "timestamp" => ts(&|i| start + i * SECOND),
            "ingested_at" => ts(&|_| T0 + 100 * 86_400 * SECOND),
            "timezone_offset" => Arc::new(Int32Array::from_iter_values((0..rows).map(|_| 3600))),
            "unit" => text("bpm"),
            "value" => Arc::new(values.clone()),
            "source_provider" => text(provider),
            "source_type" => text(source_type),
            "source_app_id" => text("com.apple.health"),
            _ => new_null_array(f.data_type(), rows),
        })
        .collect();
    RecordBatch::try_new(schema, columns).expect("batch matches the heartrate schema")
}
