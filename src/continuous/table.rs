//! A user's result table: one record batch with the query's output schema, rows ordered by
//! the group keys (ascending, nulls last, as the per-user endpoint orders them); stored as an
//! Arrow IPC stream in the metadata database when small ([`to_ipc`]), else as one Parquet file. [`merge`] replaces the rows of the re-evaluated buckets with fresh ones and
//! answers which fresh rows are new or differ from the rows they replace.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{
    SortColumn, SortOptions, concat_batches, filter_record_batch, lexsort_to_indices, take,
};
use datafusion::arrow::datatypes::{DataType, SchemaRef, TimestampMicrosecondType};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::file::properties::WriterProperties;

use serde_json::Value;

use super::ContinuousError;
use crate::engine::{Limits, QueryResult, encode_json};

/// What [`merge`] answers.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The whole new table.
    pub table: RecordBatch,
    /// The fresh rows that are new or differ from the stored row with the same keys.
    pub changed: RecordBatch,
    /// Whether the table differs from the old one (changed rows, or rows removed).
    pub differs: bool,
}

/// Merges `fresh` (every row of the buckets starting in `range`, µs of floating time) into
/// `old` (the stored table, if any): the old rows of those buckets are replaced. `keys` name
/// the group-key columns, `bucket` the `date_trunc` one.
pub fn merge(
    old: Option<&RecordBatch>,
    fresh: &RecordBatch,
    (bucket, keys): (&str, &[String]),
    range: (i64, i64),
) -> Result<Merged, ContinuousError> {
    let Some(old) = old.filter(|o| o.num_rows() > 0) else {
        return Ok(Merged {
            table: sorted(fresh, keys)?,
            changed: sorted(fresh, keys)?,
            differs: fresh.num_rows() > 0,
        });
    };
    let inside = in_range(old, bucket, range)?;
    let kept = filter_record_batch(old, &not(&inside))?;
    let replaced = filter_record_batch(old, &inside)?;
    // Compare rows by their keys, then by every column.
    let key_rows = |b: &RecordBatch| rows(b, keys);
    let all: Vec<String> = fresh
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let (old_keys, old_all) = (key_rows(&replaced)?, rows(&replaced, &all)?);
    let before: HashMap<&[u8], &[u8]> = old_keys
        .iter()
        .zip(old_all.iter())
        .map(|(k, a)| (k.as_slice(), a.as_slice()))
        .collect();
    let (new_keys, new_all) = (key_rows(fresh)?, rows(fresh, &all)?);
    let is_changed: BooleanArray = new_keys
        .iter()
        .zip(new_all.iter())
        .map(|(k, a)| Some(before.get(k.as_slice()) != Some(&a.as_slice())))
        .collect();
    let changed = filter_record_batch(fresh, &is_changed)?;
    let removed = replaced.num_rows() + changed.num_rows() > fresh.num_rows();
    let table = concat_batches(&fresh.schema(), [&kept, fresh])?;
    Ok(Merged {
        table: sorted(&table, keys)?,
        changed: sorted(&changed, keys)?,
        differs: changed.num_rows() > 0 || removed,
    })
}

/// Each row of `batch`'s `columns`, encoded so equal values give equal bytes.
fn rows(batch: &RecordBatch, columns: &[String]) -> Result<Vec<Vec<u8>>, ContinuousError> {
    let arrays: Vec<ArrayRef> = columns
        .iter()
        .map(|c| column(batch, c).cloned())
        .collect::<Result<_, _>>()?;
    let fields = arrays
        .iter()
        .map(|a| SortField::new(a.data_type().clone()))
        .collect();
    let converter = RowConverter::new(fields)?;
    let converted = converter.convert_columns(&arrays)?;
    Ok(converted.iter().map(|r| r.as_ref().to_vec()).collect())
}

fn column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef, ContinuousError> {
    batch
        .column_by_name(name)
        .ok_or_else(|| ContinuousError::Table(format!("no column {name:?}")))
}

/// Which rows' bucket starts inside `range`.
fn in_range(
    batch: &RecordBatch,
    bucket: &str,
    (start, end): (i64, i64),
) -> Result<BooleanArray, ContinuousError> {
    let array = column(batch, bucket)?;
    match array.data_type() {
        DataType::Timestamp(_, _) => {
            let times = array.as_primitive::<TimestampMicrosecondType>();
            Ok(times
                .iter()
                .map(|t| Some(t.is_some_and(|t| t >= start && t < end)))
                .collect())
        }
        other => Err(ContinuousError::Table(format!(
            "bucket column {bucket:?} is {other}, not a timestamp"
        ))),
    }
}

fn not(mask: &BooleanArray) -> BooleanArray {
    mask.iter().map(|v| v.map(|v| !v)).collect()
}

/// The rows of `batch` ordered by `keys`, ascending, nulls last.
pub fn sorted(batch: &RecordBatch, keys: &[String]) -> Result<RecordBatch, ContinuousError> {
    if batch.num_rows() < 2 || keys.is_empty() {
        return Ok(batch.clone());
    }
    let options = SortOptions {
        descending: false,
        nulls_first: false,
    };
    let columns: Vec<SortColumn> = keys
        .iter()
        .map(|k| {
            Ok(SortColumn {
                values: column(batch, k)?.clone(),
                options: Some(options),
            })
        })
        .collect::<Result<_, ContinuousError>>()?;
    let indices: UInt32Array = lexsort_to_indices(&columns, None)?;
    let taken: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .map(|c| take(c.as_ref(), &indices, None))
        .collect::<Result<_, _>>()?;
    Ok(RecordBatch::try_new(batch.schema(), taken)?)
}

/// One batch of `schema` holding every row of `batches`.
pub fn one_batch(
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<RecordBatch, ContinuousError> {
    Ok(concat_batches(schema, batches)?)
}

/// The rows of `table` as the per-user endpoint's JSON table (`{<column>: [...]}`, §4.2
/// values), whatever their number (the endpoint's cell limit is for queries, not for a table
/// already computed).
pub fn to_json(table: &RecordBatch, limits: &Limits) -> Result<Value, ContinuousError> {
    let limits = Limits {
        max_json_cells: usize::MAX,
        ..limits.clone()
    };
    let result = QueryResult {
        schema: table.schema(),
        batches: vec![table.clone()],
    };
    let encoded = encode_json(&[result], &limits)
        .map_err(|e| ContinuousError::Table(format!("encoding the table: {e}")))?;
    Ok(encoded
        .pointer("/results/0/table")
        .cloned()
        .unwrap_or_default())
}

/// The table as one Parquet file.
pub fn to_parquet(table: &RecordBatch) -> Result<Vec<u8>, ContinuousError> {
    let props = WriterProperties::builder().build();
    Ok(crate::parquet_write::write(
        Vec::new(),
        table.schema(),
        props,
        std::slice::from_ref(table),
    )?)
}

/// A table back from its Parquet file.
pub fn from_parquet(bytes: Bytes) -> Result<RecordBatch, ContinuousError> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?;
    let schema = Arc::clone(builder.schema());
    let batches = builder.build()?.collect::<Result<Vec<_>, _>>()?;
    one_batch(&schema, &batches)
}

/// The table as an Arrow IPC stream (uncompressed: small tables, read back whole).
pub fn to_ipc(table: &RecordBatch) -> Result<Vec<u8>, ContinuousError> {
    let mut writer = StreamWriter::try_new(Vec::new(), &table.schema())?;
    writer.write(table)?;
    Ok(writer.into_inner()?)
}

/// A table back from its Arrow IPC stream.
pub fn from_ipc(bytes: &[u8]) -> Result<RecordBatch, ContinuousError> {
    let reader = StreamReader::try_new(bytes, None)?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>()?;
    one_batch(&schema, &batches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Float64Array, TimestampMicrosecondArray};
    use datafusion::arrow::datatypes::{Field, Schema, TimeUnit};

    const DAY: i64 = 86_400_000_000;

    fn table(rows: &[(i64, Option<f64>)]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new(
                "group_key.0",
                DataType::Timestamp(TimeUnit::Microsecond, None),
                true,
            ),
            Field::new("mean.heartrate.value", DataType::Float64, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(TimestampMicrosecondArray::from(
                    rows.iter().map(|r| r.0 * DAY).collect::<Vec<_>>(),
                )),
                Arc::new(Float64Array::from(
                    rows.iter().map(|r| r.1).collect::<Vec<_>>(),
                )),
            ],
        )
        .unwrap()
    }

    fn values(b: &RecordBatch) -> Vec<(i64, Option<f64>)> {
        let t = b.column(0).as_primitive::<TimestampMicrosecondType>();
        let v = b.column(1).as_any().downcast_ref::<Float64Array>().unwrap();
        (0..b.num_rows())
            .map(|i| (t.value(i) / DAY, v.is_valid(i).then(|| v.value(i))))
            .collect()
    }

    fn keys() -> Vec<String> {
        vec!["group_key.0".to_owned()]
    }

    #[test]
    fn fresh_buckets_replace_old_ones_and_only_differences_are_changes() {
        let old = table(&[(1, Some(60.0)), (2, Some(61.0)), (3, Some(62.0)), (5, None)]);
        // Days 2..4 re-evaluated: day 2 unchanged, day 3 changed, day 4 new.
        let fresh = table(&[(4, Some(70.0)), (2, Some(61.0)), (3, Some(63.0))]);
        let m = merge(
            Some(&old),
            &fresh,
            ("group_key.0", &keys()),
            (2 * DAY, 5 * DAY),
        )
        .unwrap();
        assert_eq!(
            values(&m.table),
            vec![
                (1, Some(60.0)),
                (2, Some(61.0)),
                (3, Some(63.0)),
                (4, Some(70.0)),
                (5, None)
            ]
        );
        assert_eq!(values(&m.changed), vec![(3, Some(63.0)), (4, Some(70.0))]);
        assert!(m.differs);
    }

    #[test]
    fn the_same_rows_again_change_nothing() {
        let old = table(&[(1, Some(60.0)), (2, None)]);
        let m = merge(Some(&old), &old, ("group_key.0", &keys()), (0, 10 * DAY)).unwrap();
        assert_eq!(m.changed.num_rows(), 0);
        assert!(!m.differs);
        assert_eq!(values(&m.table), values(&old));
    }

    #[test]
    fn a_vanished_row_leaves_the_table_unannounced() {
        let old = table(&[(1, Some(60.0)), (2, Some(61.0))]);
        let fresh = table(&[(1, Some(60.0))]);
        let m = merge(Some(&old), &fresh, ("group_key.0", &keys()), (0, 10 * DAY)).unwrap();
        assert_eq!(values(&m.table), vec![(1, Some(60.0))]);
        assert_eq!(m.changed.num_rows(), 0);
        assert!(m.differs);
    }

    #[test]
    fn parquet_round_trips() {
        let t = table(&[(1, Some(60.5)), (2, None)]);
        let back = from_parquet(Bytes::from(to_parquet(&t).unwrap())).unwrap();
        assert_eq!(values(&back), values(&t));
        assert_eq!(back.schema(), t.schema());
    }

    #[test]
    fn ipc_round_trips() {
        let t = table(&[(1, Some(60.5)), (2, None)]);
        let back = from_ipc(&to_ipc(&t).unwrap()).unwrap();
        assert_eq!(values(&back), values(&t));
        assert_eq!(back.schema(), t.schema());
        assert!(from_ipc(b"not a stream").is_err());
    }
}
