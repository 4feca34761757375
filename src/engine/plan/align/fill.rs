//! ALIGN over one aggregated table: split the rows into partitions by the non-date group keys,
//! lay each partition on its spine and take every other column's cells through the carry
//! (`spine.rs`), one Arrow `take` per column for the whole answer. Any column type carries
//! (numbers, strings, datetimes, booleans): a cell is copied, never recomputed.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{SchemaRef, TimestampMicrosecondType};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::{Result, internal_err};

use super::AlignSpec;
use super::spine::{carry_column, spine};

/// Which input columns play which part.
#[derive(Debug, Clone)]
pub struct Roles {
    /// The `date_trunc` key.
    pub date: usize,
    /// The other group keys: they form the partitions.
    pub partition: Vec<usize>,
}

/// The partitions of `batch`, in order of first appearance, each its rows' indices.
fn partitions(batch: &RecordBatch, roles: &Roles) -> Result<Vec<Vec<u32>>> {
    let n = u32::try_from(batch.num_rows())
        .map_err(|_| datafusion::error::DataFusionError::Internal("too many rows".into()))?;
    if roles.partition.is_empty() {
        return Ok(vec![(0..n).collect()]);
    }
    let cols: Vec<ArrayRef> = roles
        .partition
        .iter()
        .map(|i| batch.column(*i).clone())
        .collect();
    let fields = cols
        .iter()
        .map(|c| SortField::new(c.data_type().clone()))
        .collect();
    let converter = RowConverter::new(fields)?;
    let rows = converter.convert_columns(&cols)?;
    let mut index: HashMap<&[u8], usize> = HashMap::new();
    let mut parts: Vec<Vec<u32>> = Vec::new();
    for i in 0..n {
        let key = rows.row(i as usize).data();
        let k = *index.entry(key).or_insert_with(|| {
            parts.push(Vec::new());
            parts.len() - 1
        });
        parts[k].push(i);
    }
    Ok(parts)
}

/// The aligned table: every partition's spine, each cell carried per column.
pub fn align(
    batch: &RecordBatch,
    roles: &Roles,
    spec: &AlignSpec,
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let buckets = batch
        .column(roles.date)
        .as_primitive_opt::<TimestampMicrosecondType>();
    let Some(buckets) = buckets else {
        return internal_err!("ALIGN's date key is not a microsecond timestamp");
    };
    let width = batch.num_columns();
    // Per output row: its bucket, and per column the input row it takes (None: null).
    let mut dates: Vec<Option<i64>> = Vec::new();
    let mut takes: Vec<Vec<Option<u32>>> = vec![Vec::new(); width];
    for mut rows in partitions(batch, roles)? {
        // A row without a bucket (no date) is answered as it is, after its partition's spine.
        let (mut dated, undated): (Vec<u32>, Vec<u32>) =
            rows.drain(..).partition(|r| buckets.is_valid(*r as usize));
        dated.sort_by_key(|r| buckets.value(*r as usize));
        if let (Some(first), Some(last)) = (dated.first(), dated.last()) {
            let (first, last) = (
                buckets.value(*first as usize),
                buckets.value(*last as usize),
            );
            let spine = spine(first, last, spec.carry, spec.period, spec.reach);
            let mut at: Vec<Option<u32>> = vec![None; spine.len()];
            let mut k = 0;
            for r in &dated {
                let b = buckets.value(*r as usize);
                while k < spine.len() && spine[k] < b {
                    k += 1;
                }
                if k == spine.len() || spine[k] != b {
                    return internal_err!("ALIGN: bucket {b} is not on its spine");
                }
                at[k] = Some(*r);
            }
            let any = dated[0];
            for (c, out) in takes.iter_mut().enumerate() {
                if c == roles.date {
                    continue;
                } else if roles.partition.contains(&c) {
                    out.extend(std::iter::repeat_n(Some(any), spine.len()));
                } else {
                    let column = batch.column(c);
                    let valid: Vec<Option<u32>> = at
                        .iter()
                        .map(|r| r.filter(|r| column.is_valid(*r as usize)))
                        .collect();
                    out.extend(carry_column(&spine, &valid, spec.carry));
                }
            }
            dates.extend(spine.into_iter().map(Some));
        }
        for r in undated {
            for (c, out) in takes.iter_mut().enumerate() {
                if c != roles.date {
                    out.push(Some(r));
                }
            }
            dates.push(None);
        }
    }
    let columns = (0..width)
        .map(|c| {
            if c == roles.date {
                let array = datafusion::arrow::array::TimestampMicrosecondArray::from(
                    std::mem::take(&mut dates),
                )
                .with_data_type(batch.column(c).data_type().clone());
                Ok(Arc::new(array) as ArrayRef)
            } else {
                let idx = UInt32Array::from(std::mem::take(&mut takes[c]));
                Ok(take(batch.column(c).as_ref(), &idx, None)?)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}
