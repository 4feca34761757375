//! Row-level work on decoded batches: reading the time column, sorting by it, resolving
//! replacements (newest version per record key), and cutting a sorted result to a window.
//!
//! Order conventions: rows are sorted by the dataset's time column ascending with nulls first
//! (only summary tables can have a null index); a `Date32` day counts as its midnight UTC.
//! Segments and merges keep that order across sources; timeseries reads then regroup their
//! result by source ([`group_by_source`]), each batch still sorted by time.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, RecordBatch, TimestampMicrosecondArray, UInt32Array,
};
use datafusion::arrow::compute::{concat_batches, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Date32Type, TimeUnit, TimestampMicrosecondType};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::row::{RowConverter, SortField};

use crate::schema::{
    ConstantProofs, Dataset, INGESTED_AT, repeated_str, rows_by_source, source_columns,
};

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// Read access to a time column (an instant or a calendar day) as microseconds.
pub(crate) enum TimeColumn<'a> {
    /// `Timestamp(Microsecond, _)`.
    Instant(&'a TimestampMicrosecondArray),
    /// `Date32`, read as midnight UTC.
    Day(&'a Date32Array),
}

impl<'a> TimeColumn<'a> {
    /// The time column `name` of `batch`.
    pub(crate) fn of(batch: &'a RecordBatch, name: &str) -> Result<Self, ArrowError> {
        let array = batch
            .column_by_name(name)
            .ok_or_else(|| ArrowError::SchemaError(format!("missing time column {name}")))?;
        Self::from_array(array)
    }

    fn from_array(array: &'a ArrayRef) -> Result<Self, ArrowError> {
        match array.data_type() {
            DataType::Timestamp(TimeUnit::Microsecond, _) => Ok(TimeColumn::Instant(
                array.as_primitive::<TimestampMicrosecondType>(),
            )),
            DataType::Date32 => Ok(TimeColumn::Day(array.as_primitive::<Date32Type>())),
            other => Err(ArrowError::SchemaError(format!(
                "unsupported time column type {other}"
            ))),
        }
    }

    /// Row `i`'s time in microseconds, `None` when null.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<i64> {
        match self {
            TimeColumn::Instant(a) => a.is_valid(i).then(|| a.value(i)),
            TimeColumn::Day(a) => a
                .is_valid(i)
                .then(|| i64::from(a.value(i)) * MICROS_PER_DAY),
        }
    }

    fn len(&self) -> usize {
        match self {
            TimeColumn::Instant(a) => a.len(),
            TimeColumn::Day(a) => a.len(),
        }
    }

    fn null_count(&self) -> usize {
        match self {
            TimeColumn::Instant(a) => a.null_count(),
            TimeColumn::Day(a) => a.null_count(),
        }
    }

    /// Smallest and largest non-null time of a column sorted with nulls first.
    pub(crate) fn sorted_range(&self) -> Option<(i64, i64)> {
        let first = self.get(self.null_count())?;
        let last = self.get(self.len().checked_sub(1)?)?;
        Some((first, last))
    }

    /// Smallest and largest non-null time.
    #[cfg(test)]
    pub(crate) fn range(&self) -> Option<(i64, i64)> {
        let mut range: Option<(i64, i64)> = None;
        for t in (0..self.len()).filter_map(|i| self.get(i)) {
            range = Some(range.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        }
        range
    }

    /// Whether rows are in time order (nulls first); `strict` also demands distinct times.
    pub(crate) fn is_sorted(&self, strict: bool) -> bool {
        if strict && self.null_count() > 0 {
            return false;
        }
        if let TimeColumn::Instant(a) = self
            && a.null_count() == 0
        {
            let v = a.values();
            return if strict {
                v.windows(2).all(|w| w[0] < w[1])
            } else {
                v.windows(2).all(|w| w[0] <= w[1])
            };
        }
        (1..self.len()).all(|i| {
            let (a, b) = (self.get(i - 1), self.get(i));
            if strict { a < b } else { a <= b }
        })
    }

    /// First row whose time is at or after `t` (nulls count as before everything), in a sorted
    /// column.
    pub(crate) fn partition_point(&self, t: i64) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.get(mid).is_none_or(|v| v < t) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// `batch` sorted by its time column (nulls first), stable; returned as is when already sorted.
pub(crate) fn sort_by_time(batch: RecordBatch, time: &str) -> Result<RecordBatch, ArrowError> {
    let col = TimeColumn::of(&batch, time)?;
    if col.is_sorted(false) {
        return Ok(batch);
    }
    let mut idx: Vec<u32> = (0..batch.num_rows() as u32).collect();
    idx.sort_by_key(|&i| col.get(i as usize));
    take_record_batch(&batch, &UInt32Array::from(idx))
}

/// Resolves replacements: of the rows sharing a record key (`Dataset::key_columns`), keeps the
/// one with the newest `ingested_at`, ties going to the row that comes later in `batches`
/// (callers pass segments in creation order, rows in file order). The result is one batch
/// sorted by time (nulls first), and the number of rows dropped.
pub(crate) fn newest_per_key(
    batches: &[RecordBatch],
    dataset: Dataset,
) -> Result<(RecordBatch, usize), ArrowError> {
    let schema = dataset.schema();
    let all = concat_batches(&schema, batches)?;
    let n = all.num_rows();
    let keys: Vec<ArrayRef> = dataset
        .key_columns()
        .iter()
        .map(|name| {
            all.column_by_name(name)
                .cloned()
                .ok_or_else(|| ArrowError::SchemaError(format!("missing key column {name}")))
        })
        .collect::<Result<_, _>>()?;
    let converter = RowConverter::new(
        keys.iter()
            .map(|a| SortField::new(a.data_type().clone()))
            .collect(),
    )?;
    let rows = converter.convert_columns(&keys)?;
    let ingested = all
        .column_by_name(INGESTED_AT)
        .ok_or_else(|| ArrowError::SchemaError(format!("missing {INGESTED_AT}")))?
        .as_primitive_opt::<TimestampMicrosecondType>()
        .ok_or_else(|| ArrowError::SchemaError(format!("{INGESTED_AT} is not a timestamp")))?;
    let ingested_at = |i: usize| ingested.is_valid(i).then(|| ingested.value(i));

    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by(|&a, &b| {
        rows.row(a)
            .cmp(&rows.row(b))
            .then_with(|| ingested_at(a).cmp(&ingested_at(b)))
            .then(a.cmp(&b))
    });
    let mut kept: Vec<usize> = Vec::with_capacity(n);
    for (pos, &i) in order.iter().enumerate() {
        let last_of_key = order
            .get(pos + 1)
            .is_none_or(|&next| rows.row(next) != rows.row(i));
        if last_of_key {
            kept.push(i);
        }
    }
    let time = TimeColumn::of(&all, dataset.time_column())?;
    kept.sort_unstable_by_key(|&i| (time.get(i), i));
    let dropped = n - kept.len();
    let idx = UInt32Array::from_iter_values(kept.into_iter().map(|i| i as u32));
    Ok((take_record_batch(&all, &idx)?, dropped))
}

/// Cuts batches, each sorted by time, to rows whose time is in `[start, end)`.
/// Zero-copy: the result slices the input.
pub(crate) fn slice_window(
    batches: &[RecordBatch],
    time: &str,
    start: i64,
    end: i64,
) -> Result<Vec<RecordBatch>, ArrowError> {
    let mut out = Vec::new();
    for batch in batches {
        let col = TimeColumn::of(batch, time)?;
        let lo = col.partition_point(start);
        let hi = col.partition_point(end).max(lo);
        if hi > lo {
            out.push(batch.slice(lo, hi - lo));
        }
    }
    Ok(out)
}

/// One source's batches while regrouping, each marked when it was split out of a mixed batch.
struct SourceGroup {
    provider: String,
    source_type: String,
    parts: Vec<(RecordBatch, bool)>,
}

/// Regroups time-sorted batches so that each holds one source (`source_provider`,
/// `source_type`) and at most `chunk_rows` rows: every source's batches in input order, so
/// each stays sorted by time, and sources in first-seen order. Mixed batches (merged segments
/// interleave a ring's and a watch's samples) are split once here, so the cached result serves
/// every query without a per-query split. The source columns of every part (without nulls)
/// become zero-copy slices of one constant array per source, as `constant.rs` builds them for constant
/// segments: readers that check a batch's source (the engine) then find every batch in memory
/// they already proved.
pub(crate) fn group_by_source(
    batches: Vec<RecordBatch>,
    chunk_rows: usize,
) -> Result<Vec<RecordBatch>, ArrowError> {
    let chunk_rows = chunk_rows.max(1);
    let mut groups: Vec<SourceGroup> = Vec::new();
    let mut proofs = ConstantProofs::default();
    for batch in batches {
        let (provider, source_type) = source_columns(&batch)?;
        let mut parts = Vec::new();
        for s in rows_by_source(provider, source_type, &mut proofs) {
            let part = match &s.rows {
                None => (batch.clone(), false),
                Some(rows) => (take_record_batch(&batch, rows)?, true),
            };
            parts.push(((s.provider, s.source_type), part));
        }
        for ((p, t), part) in parts {
            match groups
                .iter_mut()
                .find(|g| g.provider == p && g.source_type == t)
            {
                Some(g) => g.parts.push(part),
                None => groups.push(SourceGroup {
                    provider: p.to_owned(),
                    source_type: t.to_owned(),
                    parts: vec![part],
                }),
            }
        }
    }
    let mut out = Vec::new();
    for SourceGroup {
        provider,
        source_type,
        parts: list,
    } in groups
    {
        // Every part's source columns become slices of one array per source: a part split
        // out of a mixed batch, one longer than a chunk, and also a whole batch whose columns
        // were decoded, not built, because its segment's statistics could not prove them
        // constant (a merged segment holds several sources). Readers that check a batch's
        // source (the engine, every query) then compare no bytes, and the cached read holds
        // one copy of each source's names instead of one per row. A whole batch with a null
        // source column is kept as it is (a rebuilt column has no nulls).
        let rebuild = |(b, split): &(RecordBatch, bool)| {
            *split || b.num_rows() > chunk_rows || !has_null_source(b)
        };
        let longest = list
            .iter()
            .filter(|part| rebuild(part))
            .map(|(b, _)| b.num_rows())
            .max()
            .unwrap_or(0)
            .min(chunk_rows);
        let constant = |v: &str| -> ArrayRef { Arc::new(repeated_str(v, longest)) };
        let columns = (longest > 0).then(|| (constant(&provider), constant(&source_type)));
        for part in list {
            let Some((p, t)) = columns.as_ref().filter(|_| rebuild(&part)) else {
                out.push(part.0);
                continue;
            };
            let batch = part.0;
            let schema = batch.schema();
            let (pi, ti) = (
                schema.index_of("source_provider")?,
                schema.index_of("source_type")?,
            );
            let mut start = 0;
            while start < batch.num_rows() {
                let n = chunk_rows.min(batch.num_rows() - start);
                let mut columns = batch.slice(start, n).columns().to_vec();
                columns[pi] = p.slice(0, n);
                columns[ti] = t.slice(0, n);
                out.push(RecordBatch::try_new(schema.clone(), columns)?);
                start += n;
            }
        }
    }
    Ok(out)
}

/// Whether neither source column of `batch` holds a null (then a rebuilt column is the same).
fn has_null_source(batch: &RecordBatch) -> bool {
    match source_columns(batch) {
        Ok((p, t)) => p.null_count() > 0 || t.null_count() > 0,
        Err(_) => true,
    }
}

/// Re-labels `batch` with the dataset's storage schema, checking names, types and
/// nullability.
pub(crate) fn conform(
    batch: RecordBatch,
    schema: &Arc<datafusion::arrow::datatypes::Schema>,
) -> Result<RecordBatch, ArrowError> {
    let theirs = batch.schema();
    if theirs.fields().len() != schema.fields().len() {
        return Err(ArrowError::SchemaError(format!(
            "expected {} columns, got {}",
            schema.fields().len(),
            theirs.fields().len()
        )));
    }
    for (want, got) in schema.fields().iter().zip(theirs.fields()) {
        if want.name() != got.name() || want.data_type() != got.data_type() {
            return Err(ArrowError::SchemaError(format!(
                "expected column {} of type {}, got {} of type {}",
                want.name(),
                want.data_type(),
                got.name(),
                got.data_type()
            )));
        }
    }
    RecordBatch::try_new(schema.clone(), batch.columns().to_vec())
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Float64Array, StringArray};

    use super::*;
    use crate::schema::Table;

    /// A body batch: (measured_at, id, weight, ingested_at).
    fn body(rows: &[(Option<i64>, &str, f64, i64)]) -> RecordBatch {
        let dataset = Dataset::Table(Table::Body);
        let schema = dataset.schema();
        let columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| -> ArrayRef {
                match f.name().as_str() {
                    "id" => Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
                    "measured_at" => Arc::new(
                        TimestampMicrosecondArray::from_iter(rows.iter().map(|r| r.0))
                            .with_timezone("UTC"),
                    ),
                    "weight_kilogram" => {
                        Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.2)))
                    }
                    "source_provider" | "source_type" => {
                        Arc::new(StringArray::from_iter_values(rows.iter().map(|_| "p")))
                    }
                    "ingested_at" => Arc::new(
                        TimestampMicrosecondArray::from_iter_values(rows.iter().map(|r| r.3))
                            .with_timezone("UTC"),
                    ),
                    _ => datafusion::arrow::array::new_null_array(f.data_type(), rows.len()),
                }
            })
            .collect();
        RecordBatch::try_new(schema, columns).unwrap()
    }

    fn weights(b: &RecordBatch) -> Vec<f64> {
        b.column_by_name("weight_kilogram")
            .unwrap()
            .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
            .values()
            .to_vec()
    }

    #[test]
    fn newest_ingested_wins_and_ties_go_to_the_later_row() {
        let dataset = Dataset::Table(Table::Body);
        let older = body(&[(Some(10), "a", 1.0, 5), (Some(20), "b", 2.0, 5)]);
        let newer = body(&[(Some(30), "a", 3.0, 4), (Some(5), "b", 4.0, 5)]);
        let (out, dropped) = newest_per_key(&[older, newer], dataset).unwrap();
        assert_eq!(dropped, 2);
        // a: ingested 5 beats 4 (even though written first); b: tie, the later row wins.
        assert_eq!(weights(&out), vec![4.0, 1.0]);
    }

    #[test]
    fn regrouped_batches_share_one_copy_of_each_source_name() {
        // Two batches of one source whose source columns were decoded, each its own copy.
        let first = body(&[(Some(10), "a", 1.0, 0), (Some(20), "b", 2.0, 0)]);
        let second = body(&[(Some(30), "c", 3.0, 0)]);
        let out = group_by_source(vec![first, second], 1024).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(weights(&out[0]), vec![1.0, 2.0]);
        assert_eq!(weights(&out[1]), vec![3.0]);
        let text =
            |b: &RecordBatch, c: &str| b.column_by_name(c).unwrap().as_string::<i32>().clone();
        for column in ["source_provider", "source_type"] {
            let (a, b) = (text(&out[0], column), text(&out[1], column));
            assert_eq!(
                a.values().as_ptr(),
                b.values().as_ptr(),
                "{column}: one copy"
            );
            assert!(a.iter().chain(b.iter()).all(|v| v == Some("p")), "{column}");
        }
    }

    #[test]
    fn sorting_puts_null_times_first_and_windows_exclude_them() {
        let batch = body(&[
            (Some(30), "c", 3.0, 0),
            (None, "n", 0.0, 0),
            (Some(10), "a", 1.0, 0),
        ]);
        let sorted = sort_by_time(batch, "measured_at").unwrap();
        assert_eq!(weights(&sorted), vec![0.0, 1.0, 3.0]);
        let col = TimeColumn::of(&sorted, "measured_at").unwrap();
        assert_eq!(col.sorted_range(), col.range());
        assert_eq!(col.sorted_range(), Some((10, 30)));
        let cut = slice_window(std::slice::from_ref(&sorted), "measured_at", 10, 30).unwrap();
        assert_eq!(weights(&cut[0]), vec![1.0]);
        assert!(
            slice_window(&[sorted], "measured_at", 31, 40)
                .unwrap()
                .is_empty()
        );
    }
}
