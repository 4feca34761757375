//! Decoding a segment's bytes into record batches, skipping row groups whose time statistics
//! miss the requested window.

use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::file::metadata::RowGroupMetaData;
use datafusion::parquet::file::statistics::Statistics;

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
    let reader = builder
        .with_row_groups(selected)
        .with_batch_size(batch_size.max(1024))
        .build()?;
    for batch in reader {
        let batch = batch?;
        out.rows += batch.num_rows();
        // Same columns and types; re-labelled so every batch carries the canonical schema.
        out.batches.push(RecordBatch::try_new(
            schema.clone(),
            batch.columns().to_vec(),
        )?);
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
