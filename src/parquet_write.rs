//! Parquet encoding on every core: one file written with its column chunks encoded in parallel.
//!
//! `ArrowWriter` encodes one column after another on the caller's thread, and encoding is most
//! of what a large write costs: a store segment of a 500,000-row push, a compaction, a Parquet
//! answer of 7.8 M rows. Column chunks are independent, so [`write`] encodes each (row group,
//! column) pair as its own task on up to [`std::thread::available_parallelism`] scoped threads
//! and appends the finished chunks in order: the file is byte for byte the one `ArrowWriter`
//! writes with the same properties (same row groups, pages, statistics and embedded Arrow
//! schema), only sooner.
//!
//! Row groups are encoded a window at a time (as many as there are threads), so a write holds
//! at most that many encoded row groups in memory before they reach the sink, as `ArrowWriter`
//! holds one. Writes under [`PARALLEL_ROWS`] rows stay on the caller's thread: spawning costs
//! more than it saves there.

use std::io::Write;
use std::num::NonZeroUsize;
use std::sync::Mutex;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::{FieldRef, SchemaRef};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves,
};
use datafusion::parquet::errors::{ParquetError, Result};
use datafusion::parquet::file::properties::WriterProperties;

/// Fewer rows than this are encoded on the caller's thread.
pub const PARALLEL_ROWS: usize = 65_536;

/// Writes `batches` (all of `schema`) as one Parquet file to `sink` with `props`, encoding
/// column chunks on every core (see the module docs). Returns the sink.
pub fn write<W: Write + Send>(
    sink: W,
    schema: SchemaRef,
    props: WriterProperties,
    batches: &[RecordBatch],
) -> Result<W> {
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let threads = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    write_with(
        sink,
        schema,
        props,
        batches,
        threads.min(rows / PARALLEL_ROWS + 1),
    )
}

/// [`write`] on at most `threads` threads (1: the caller's alone).
pub fn write_with<W: Write + Send>(
    sink: W,
    schema: SchemaRef,
    props: WriterProperties,
    batches: &[RecordBatch],
    threads: usize,
) -> Result<W> {
    if props.max_row_group_bytes().is_some() || props.content_defined_chunking().is_some() {
        // Row groups cut by size or content: `ArrowWriter`'s own business.
        return sequential(sink, schema, props, batches);
    }
    let group_rows = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
    // `ArrowWriter` embeds the Arrow schema (time zones, string types) in the file's metadata.
    let (mut file, factory) =
        ArrowWriter::try_new(sink, schema, Some(props))?.into_serialized_writer()?;
    let groups = row_groups(batches, group_rows);
    let window = threads.max(1);
    for (first, chunk) in groups.chunks(window).enumerate() {
        let encoded = encode_groups(&factory, first * window, chunk, threads)?;
        for columns in encoded {
            let mut group = file.next_row_group()?;
            for column in columns {
                column.append_to_row_group(&mut group)?;
            }
            group.close()?;
        }
    }
    file.into_inner()
}

/// [`write`] by `ArrowWriter` itself, on the caller's thread.
fn sequential<W: Write + Send>(
    sink: W,
    schema: SchemaRef,
    props: WriterProperties,
    batches: &[RecordBatch],
) -> Result<W> {
    let mut writer = ArrowWriter::try_new(sink, schema, Some(props))?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.into_inner()
}

/// One row group's input: its slices of the batches, in order.
type Group = Vec<RecordBatch>;

/// Cuts the rows of `batches` into row groups of `group_rows` rows (the last may be shorter),
/// as `ArrowWriter` does; slices share the batches' buffers.
fn row_groups(batches: &[RecordBatch], group_rows: usize) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut filled = group_rows; // the current group is full: start a new one
    for batch in batches {
        let mut offset = 0;
        while offset < batch.num_rows() {
            if filled == group_rows {
                groups.push(Vec::new());
                filled = 0;
            }
            let take = (group_rows - filled).min(batch.num_rows() - offset);
            if let Some(group) = groups.last_mut() {
                group.push(batch.slice(offset, take));
            }
            offset += take;
            filled += take;
        }
    }
    groups
}

/// Encodes every column chunk of `groups` (row group indexes from `first`) on up to `threads`
/// threads; answers the chunks by row group, in column order.
fn encode_groups(
    factory: &ArrowRowGroupWriterFactory,
    first: usize,
    groups: &[Group],
    threads: usize,
) -> Result<Vec<Vec<ArrowColumnChunk>>> {
    // One task per (row group, field), with the writers of the field's leaf columns (one for a
    // primitive or string field; a nested field has several).
    let mut tasks: Vec<Task> = Vec::new();
    for (i, group) in groups.iter().enumerate() {
        let mut writers = factory.create_column_writers(first + i)?.into_iter();
        let Some(head) = group.first() else { continue };
        for (c, field) in head.schema().fields().iter().enumerate() {
            let arrays: Vec<ArrayRef> = group.iter().map(|b| b.column(c).clone()).collect();
            // The leaf count is the type's: counted on an empty slice, not the rows.
            let leaves = compute_leaves(field, &head.column(c).slice(0, 0))?.len();
            let writers: Vec<ArrowColumnWriter> = writers.by_ref().take(leaves).collect();
            if writers.len() != leaves {
                return Err(ParquetError::General("fewer writers than leaves".into()));
            }
            tasks.push(Task {
                group: i,
                field: field.clone(),
                arrays,
                writers,
            });
        }
    }
    let count = tasks.len();
    let queue = Mutex::new(tasks.into_iter().enumerate());
    let done = Mutex::new(Vec::with_capacity(count));
    let work = || {
        while let Some((i, task)) = queue.lock().ok().and_then(|mut q| q.next()) {
            let group = task.group;
            let chunks = task.encode();
            if let Ok(mut done) = done.lock() {
                done.push((i, group, chunks));
            }
        }
    };
    let helpers = threads.min(count).saturating_sub(1);
    std::thread::scope(|scope| {
        for _ in 0..helpers {
            scope.spawn(work);
        }
        work();
    });
    let mut done = done
        .into_inner()
        .map_err(|_| ParquetError::General("an encoding thread panicked".into()))?;
    if done.len() != count {
        return Err(ParquetError::General(
            "a column chunk was not encoded".into(),
        ));
    }
    done.sort_unstable_by_key(|(i, _, _)| *i);
    let mut out: Vec<Vec<ArrowColumnChunk>> = groups.iter().map(|_| Vec::new()).collect();
    for (_, group, chunks) in done {
        out[group].extend(chunks?);
    }
    Ok(out)
}

/// The column chunks of one field in one row group: its leaves over the group's `arrays`.
struct Task {
    group: usize,
    field: FieldRef,
    arrays: Vec<ArrayRef>,
    /// One per leaf column, in leaf order.
    writers: Vec<ArrowColumnWriter>,
}

impl Task {
    fn encode(mut self) -> Result<Vec<ArrowColumnChunk>> {
        for array in &self.arrays {
            // Levels are computed once per array for all of the field's leaves.
            for (leaf, writer) in compute_leaves(&self.field, array)?
                .iter()
                .zip(&mut self.writers)
            {
                writer.write(leaf)?;
            }
        }
        self.writers
            .into_iter()
            .map(ArrowColumnWriter::close)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use datafusion::arrow::array::{Float64Array, Int32Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use super::*;

    fn batches(rows: usize, per_batch: usize) -> (SchemaRef, Vec<RecordBatch>) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int32, false),
            Field::new("v", DataType::Float64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let out = (0..rows)
            .step_by(per_batch)
            .map(|first| {
                let range = first..(first + per_batch).min(rows);
                RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(Int32Array::from_iter_values(
                            range.clone().map(|i| i as i32),
                        )),
                        Arc::new(Float64Array::from_iter(
                            range
                                .clone()
                                .map(|i| (i % 7 != 0).then_some(i as f64 / 4.0)),
                        )),
                        Arc::new(StringArray::from_iter(
                            range.map(|i| (i % 5 != 0).then(|| format!("s{}", i % 13))),
                        )),
                    ],
                )
                .unwrap()
            })
            .collect();
        (schema, out)
    }

    #[test]
    fn parallel_files_are_byte_identical_to_arrow_writer_and_read_back() {
        let (schema, input) = batches(10_007, 999);
        let props = || {
            WriterProperties::builder()
                .set_max_row_group_row_count(Some(1_000))
                .set_data_page_row_count_limit(128)
                .build()
        };
        let expected = sequential(Vec::new(), schema.clone(), props(), &input).unwrap();
        let groups = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(expected.clone()))
            .unwrap()
            .metadata()
            .num_row_groups();
        assert_eq!(groups, 11);
        for threads in [1, 2, 3, 8] {
            let bytes = write_with(Vec::new(), schema.clone(), props(), &input, threads).unwrap();
            assert_eq!(bytes, expected, "{threads} threads");
        }
        let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(expected))
            .unwrap()
            .build()
            .unwrap();
        let read: Vec<RecordBatch> = reader.collect::<std::result::Result<_, _>>().unwrap();
        let read = datafusion::arrow::compute::concat_batches(&schema, &read).unwrap();
        let sent = datafusion::arrow::compute::concat_batches(&schema, &input).unwrap();
        assert_eq!(read, sent);
    }

    #[test]
    fn cuts_row_groups_across_batches() {
        let (_, input) = batches(25, 10);
        let groups = row_groups(&input, 7);
        let sizes: Vec<Vec<usize>> = groups
            .iter()
            .map(|g| g.iter().map(RecordBatch::num_rows).collect())
            .collect();
        assert_eq!(sizes, vec![vec![7], vec![3, 4], vec![6, 1], vec![4]]);
        assert!(row_groups(&[], 7).is_empty());
    }

    #[test]
    fn an_empty_write_is_a_valid_empty_file() {
        let (schema, _) = batches(0, 1);
        let bytes = write(Vec::new(), schema, WriterProperties::default(), &[]).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(bytes)).unwrap();
        assert_eq!(reader.metadata().file_metadata().num_rows(), 0);
        assert_eq!(reader.schema().fields().len(), 3);
    }
}
