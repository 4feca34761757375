//! Decoding a segment's bytes into record batches, skipping row groups whose time statistics
//! miss the requested window and building constant columns instead of decoding them.

use bytes::Bytes;
use datafusion::arrow::array::{Array, ArrayRef, RecordBatch};
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::RowGroupMetaData;
use datafusion::parquet::file::statistics::Statistics;

use super::constant::{ConstantPool, column_constant};
use super::error::StoreError;
use crate::schema::Dataset;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// One decoded segment.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    pub(crate) batches: Vec<RecordBatch>,
    pub(crate) rows: usize,
    pub(crate) row_groups_read: usize,
    pub(crate) row_groups_pruned: usize,
}

/// Decodes `bytes`; with a window `[start, end)` in microseconds, only row groups whose time
/// column may hold a value in it (or that have no statistics).
pub(crate) fn decode(
    bytes: Bytes,
    dataset: Dataset,
    window: Option<(i64, i64)>,
    batch_size: usize,
    pool: &mut ConstantPool,
) -> Result<Decoded, StoreError> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?;
    let time = dataset.time_column();
    let time_leaf = builder
        .parquet_schema()
        .columns()
        .iter()
        .position(|c| c.path().string() == time);
    let groups = builder.metadata().row_groups();
    let selected: Vec<usize> = match (window, time_leaf) {
        (Some((start, end)), Some(leaf)) => (0..groups.len())
            .filter(|&i| may_overlap(&groups[i], leaf, start, end))
            .collect(),
        _ => (0..groups.len()).collect(),
    };
    let mut out = Decoded {
        row_groups_read: selected.len(),
        row_groups_pruned: groups.len() - selected.len(),
        ..Decoded::default()
    };
    if selected.is_empty() {
        return Ok(out);
    }
    let schema = dataset.schema();
    // Columns proven constant by their statistics are built, not decoded (see `constant`).
    // The time column is always decoded, so the projection is never empty.
    let parquet = builder.parquet_schema();
    let chosen: Vec<&RowGroupMetaData> = selected.iter().map(|&i| &groups[i]).collect();
    let rows_selected: usize = chosen.iter().map(|g| g.num_rows() as usize).sum();
    let batch_size = batch_size.max(1024);
    let constants: Vec<Option<ArrayRef>> = schema
        .fields()
        .iter()
        .map(|field| {
            if field.name() == time {
                return None;
            }
            let leaf = parquet
                .columns()
                .iter()
                .position(|c| c.path().string() == *field.name())?;
            let value = column_constant(&chosen, leaf)?;
            pool.get(field, &value, batch_size.min(rows_selected))
        })
        .collect();
    let decoded_roots: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| constants[i].is_none())
        .collect();
    let mask = ProjectionMask::roots(parquet, decoded_roots);
    let reader = builder
        .with_row_groups(selected)
        .with_projection(mask)
        .with_batch_size(batch_size)
        .build()?;
    for batch in reader {
        let batch = batch?;
        let n = batch.num_rows();
        out.rows += n;
        let mut decoded = batch.columns().iter();
        let columns: Vec<ArrayRef> = constants
            .iter()
            .map(|c| match c {
                Some(array) if array.len() >= n => Ok(array.slice(0, n)),
                Some(_) => Err(StoreError::Parquet(ParquetError::General(
                    "batch longer than the reader's batch size".to_owned(),
                ))),
                None => decoded.next().cloned().ok_or_else(|| {
                    StoreError::Parquet(ParquetError::General("projected column missing".into()))
                }),
            })
            .collect::<Result<_, _>>()?;
        // Same columns and types; labelled with the canonical schema.
        out.batches
            .push(RecordBatch::try_new(schema.clone(), columns)?);
    }
    Ok(out)
}

/// Whether a row group's time statistics allow a value in `[start, end)`.
fn may_overlap(group: &RowGroupMetaData, leaf: usize, start: i64, end: i64) -> bool {
    let range = match group.column(leaf).statistics() {
        Some(Statistics::Int64(s)) => s.min_opt().zip(s.max_opt()).map(|(a, b)| (*a, *b)),
        Some(Statistics::Int32(s)) => s.min_opt().zip(s.max_opt()).map(|(a, b)| {
            (
                i64::from(*a) * MICROS_PER_DAY,
                i64::from(*b) * MICROS_PER_DAY,
            )
        }),
        _ => return true,
    };
    match range {
        Some((min, max)) => max >= start && min < end,
        // Statistics without min/max: only nulls (never in a window) or unknown.
        None => group
            .column(leaf)
            .statistics()
            .is_none_or(|s| s.null_count_opt().is_none()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{
        ArrayRef, AsArray, Float64Array, StringArray, TimestampMicrosecondArray, new_null_array,
    };

    use super::*;
    use crate::schema::resource;
    use crate::store::health::segment_write::{write_segment, writer_properties};

    /// 300 samples; `unit` is "a" for the first 100 rows and "b" after; `source_app_id` null
    /// for the first 100 and "app" after.
    fn segment() -> (Dataset, Bytes, RecordBatch) {
        let dataset = Dataset::Timeseries(resource("heartrate").unwrap());
        let schema = dataset.schema();
        let n = 300;
        let columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| -> ArrayRef {
                match f.name().as_str() {
                    "timestamp" | "ingested_at" => Arc::new(
                        TimestampMicrosecondArray::from_iter_values(0..n).with_timezone("UTC"),
                    ),
                    "unit" => Arc::new(StringArray::from_iter_values(
                        (0..n).map(|i| if i < 100 { "a" } else { "b" }),
                    )),
                    "source_app_id" => Arc::new(StringArray::from_iter(
                        (0..n).map(|i| (i >= 100).then_some("app")),
                    )),
                    "source_provider" | "source_type" => {
                        Arc::new(StringArray::from_iter_values((0..n).map(|_| "p")))
                    }
                    "value" => Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64))),
                    _ => new_null_array(f.data_type(), n as usize),
                }
            })
            .collect();
        let batch = RecordBatch::try_new(schema, columns).unwrap();
        let dir = tempfile::tempdir().unwrap();
        write_segment(
            dir.path(),
            "s.parquet",
            &batch,
            writer_properties(dataset, 100),
        )
        .unwrap();
        let bytes = Bytes::from(std::fs::read(dir.path().join("s.parquet")).unwrap());
        (dataset, bytes, batch)
    }

    #[test]
    fn constant_shortcuts_match_full_decoding_with_and_without_pruning() {
        let (dataset, bytes, batch) = segment();
        let mut pool = ConstantPool::default();
        let all = decode(bytes.clone(), dataset, None, 1024, &mut pool).unwrap();
        assert_eq!(all.batches, vec![batch.clone()]);
        // Only the last two row groups: `unit` and `source_app_id` are constant there.
        let tail = decode(bytes, dataset, Some((150, 1000)), 1024, &mut pool).unwrap();
        assert_eq!((tail.row_groups_read, tail.row_groups_pruned), (2, 1));
        assert_eq!(tail.batches, vec![batch.slice(100, 200)]);
        let unit = tail.batches[0]
            .column_by_name("unit")
            .unwrap()
            .as_string::<i32>();
        assert!(unit.iter().all(|u| u == Some("b")));
    }
}
