//! Encoding a sorted, key-unique batch as a Parquet segment and making it durable.
//!
//! Encoding: every timestamp/date column is `DELTA_BINARY_PACKED` without a dictionary (sorted
//! sample times delta to a few bits per row, and a per-write constant `ingested_at` to almost
//! nothing); other columns keep Parquet's dictionary default (units, sources, heart rates repeat);
//! Snappy compression (cheap on both ends); chunk statistics on every column and page statistics
//! (column index) on the time column, so reads prune row groups (and readers that can, pages).
//!
//! Durability: the segment is written to `_tmp-*.partial` in its folder with `std::fs`, fsynced,
//! renamed to its final name and the folder fsynced; a new folder is created and its ancestors
//! fsynced first. `object_store`'s `LocalFileSystem::put` does not fsync, so it is not used for
//! writes; it is used for listing and reading, which see only complete files because a rename is
//! atomic. A crash before the rename leaves only a temp file (ignored by readers, swept by
//! compaction); after the directory fsync the segment survives power loss.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::DataType;
use datafusion::parquet::basic::{Compression, Encoding};
use datafusion::parquet::file::metadata::SortingColumn;
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::parquet::schema::types::ColumnPath;

use super::error::StoreError;
use super::gate::{Gate, pass};
use super::layout::temp_name;
use crate::parquet_write;
use crate::schema::Dataset;

/// Parquet writer settings for one dataset.
pub(crate) fn writer_properties(dataset: Dataset, row_group_rows: usize) -> WriterProperties {
    let schema = dataset.schema();
    let time = dataset.time_column();
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(row_group_rows.max(1)))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_column_statistics_enabled(ColumnPath::from(time), EnabledStatistics::Page);
    for field in schema.fields() {
        if matches!(
            field.data_type(),
            DataType::Timestamp(..) | DataType::Date32
        ) {
            let path = ColumnPath::from(field.name().as_str());
            builder = builder
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
        }
    }
    if let Ok(idx) = schema.index_of(time) {
        builder = builder.set_sorting_columns(Some(vec![SortingColumn {
            column_idx: idx as i32,
            descending: false,
            nulls_first: true,
        }]));
    }
    builder.build()
}

/// Writes `batch` as the segment `name` in `dir`, durably (see the module docs). Returns the
/// file size.
#[cfg(test)]
pub(crate) fn write_segment(
    dir: &Path,
    name: &str,
    batch: &RecordBatch,
    props: WriterProperties,
) -> Result<u64, StoreError> {
    write_segment_gated(dir, name, batch, props, &mut None)
}

/// [`write_segment`], waiting for `gate` (when given) between the fsync of the temporary file
/// and the rename that makes the segment visible. The gate is taken only then, so a caller can
/// retry a write that failed before it.
pub(crate) fn write_segment_gated(
    dir: &Path,
    name: &str,
    batch: &RecordBatch,
    props: WriterProperties,
    gate: &mut Option<Gate>,
) -> Result<u64, StoreError> {
    let temp = dir.join(temp_name());
    let result = write_temp(&temp, batch, props).and_then(|size| {
        pass(gate.take())?;
        let target = dir.join(name);
        std::fs::rename(&temp, &target).map_err(|e| StoreError::io(&target, e))?;
        fsync_dir(dir)?;
        Ok(size)
    });
    if result.is_err() {
        // Best effort: a leftover temp file is harmless (ignored, swept later).
        let _ = std::fs::remove_file(&temp);
    }
    result
}

fn write_temp(
    temp: &Path,
    batch: &RecordBatch,
    props: WriterProperties,
) -> Result<u64, StoreError> {
    let file = File::create(temp).map_err(|e| StoreError::io(temp, e))?;
    let mut buffered = parquet_write::write(
        BufWriter::with_capacity(1 << 20, file),
        batch.schema(),
        props,
        std::slice::from_ref(batch),
    )?;
    buffered.flush().map_err(|e| StoreError::io(temp, e))?;
    let file = buffered
        .into_inner()
        .map_err(|e| StoreError::io(temp, e.into_error()))?;
    file.sync_all().map_err(|e| StoreError::io(temp, e))?;
    let size = file.metadata().map_err(|e| StoreError::io(temp, e))?.len();
    Ok(size)
}

/// Encodes `batch` as one Parquet file in memory: for object storage, where one whole-object
/// put makes it durable and visible at once.
pub(crate) fn encode(batch: &RecordBatch, props: WriterProperties) -> Result<Vec<u8>, StoreError> {
    let bytes = parquet_write::write(
        Vec::new(),
        batch.schema(),
        props,
        std::slice::from_ref(batch),
    )?;
    Ok(bytes)
}

/// Writes a small file `name` in `dir` durably: temp file, fsync, rename, folder fsync (the
/// folder must exist).
pub(crate) fn write_durable_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
    let temp = dir.join(temp_name());
    let target = dir.join(name);
    let result = (|| {
        let mut file = File::create(&temp).map_err(|e| StoreError::io(&temp, e))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| StoreError::io(&temp, e))?;
        std::fs::rename(&temp, &target).map_err(|e| StoreError::io(&target, e))?;
        fsync_dir(dir)
    })();
    if result.is_err() {
        // Best effort: a leftover temp file is removed at start-up.
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Fsyncs a directory, making renames and creations in it durable.
pub(crate) fn fsync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io(dir, e))
}

/// Creates `dir` (below `root`) if needed; when it had to be created, fsyncs it and every
/// ancestor up to `root` so the new entries survive a crash.
pub(crate) fn ensure_dir(root: &Path, dir: &Path) -> Result<(), StoreError> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    let mut current = Some(dir);
    while let Some(d) = current {
        fsync_dir(d)?;
        if d == root {
            break;
        }
        current = d.parent().filter(|p| p.starts_with(root));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use datafusion::arrow::array::{
        ArrayRef, Float64Array, Int32Array, StringArray, TimestampMicrosecondArray, new_null_array,
    };
    use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};

    use super::*;
    use crate::schema::resource;

    fn heartrate_batch(rows: i64) -> (Dataset, RecordBatch) {
        let dataset = Dataset::Timeseries(resource("heartrate").unwrap());
        let schema = dataset.schema();
        let ts = |f: &dyn Fn(i64) -> i64| -> ArrayRef {
            Arc::new(
                TimestampMicrosecondArray::from_iter_values((0..rows).map(f)).with_timezone("UTC"),
            )
        };
        let text =
            |v: &str| -> ArrayRef { Arc::new(StringArray::from_iter_values((0..rows).map(|_| v))) };
        let columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| match f.name().as_str() {
                "timestamp" => ts(&|i| 1_000_000 * i),
                "ingested_at" => ts(&|_| 42),
                "timezone_offset" => Arc::new(Int32Array::from_iter_values((0..rows).map(|_| 0))),
                "unit" => text("bpm"),
                "source_provider" => text("oura"),
                "source_type" => text("ring"),
                "value" => Arc::new(Float64Array::from_iter_values(
                    (0..rows).map(|i| (60 + i % 50) as f64),
                )),
                _ => new_null_array(f.data_type(), rows as usize),
            })
            .collect();
        (dataset, RecordBatch::try_new(schema, columns).unwrap())
    }

    #[test]
    fn timestamps_are_delta_encoded_without_dictionary_and_carry_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let (dataset, batch) = heartrate_batch(3000);
        let size = write_segment(
            dir.path(),
            "seg.parquet",
            &batch,
            writer_properties(dataset, 1000),
        )
        .unwrap();
        let bytes = Bytes::from(std::fs::read(dir.path().join("seg.parquet")).unwrap());
        assert_eq!(size, bytes.len() as u64);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
        let reader = SerializedFileReader::new(bytes).unwrap();
        let meta = reader.metadata();
        assert_eq!(meta.num_row_groups(), 3);
        let group = meta.row_group(0);
        let leaf = |name: &str| {
            (0..group.num_columns())
                .find(|&i| group.column(i).column_path().string() == name)
                .unwrap()
        };
        for name in ["timestamp", "ingested_at"] {
            let col = group.column(leaf(name));
            let encodings: Vec<_> = col.encodings().collect();
            assert!(
                encodings.contains(&Encoding::DELTA_BINARY_PACKED),
                "{name}: {encodings:?}"
            );
            assert!(
                col.dictionary_page_offset().is_none(),
                "{name} has a dictionary"
            );
            assert!(
                col.statistics()
                    .is_some_and(|s| s.min_bytes_opt().is_some())
            );
        }
        assert!(
            group
                .column(leaf("value"))
                .dictionary_page_offset()
                .is_some()
        );
        // Page statistics (column index) on the time column.
        assert!(
            group
                .column(leaf("timestamp"))
                .column_index_offset()
                .is_some()
        );
    }
}
