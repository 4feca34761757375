//! Constant columns: a segment's source columns (provider, type, app, unit, `ingested_at`, ...)
//! usually hold one value, since one write comes from one source. Decoding such a column row by
//! row costs as much as a varying one (a string column of 7.8 M rows is ~70 ms); when the
//! Parquet statistics of every selected row group say "no nulls, exact min = max = v", the
//! reader skips the column and the store builds it once per read (shared by every segment
//! holding the same value), then hands out zero-copy slices of it. All-null columns likewise.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Date32Array, Int32Array, Int64Array, TimestampMicrosecondArray, new_null_array,
};
use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};
use datafusion::parquet::file::metadata::RowGroupMetaData;

use crate::schema::repeated_str;

/// What every row of a column holds, when statistics prove it is one thing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Constant {
    /// Every row is null.
    Null,
    /// Every row holds this value (Parquet plain encoding of the statistics).
    Value(Vec<u8>),
}

/// The constant a column chunk holds, if its statistics prove there is one.
fn chunk_constant(group: &RowGroupMetaData, leaf: usize) -> Option<Constant> {
    let stats = group.column(leaf).statistics()?;
    let nulls = stats.null_count_opt()?;
    if nulls > 0 {
        return (i64::try_from(nulls).ok()? == group.num_rows()).then_some(Constant::Null);
    }
    let min = stats.min_bytes_opt()?;
    let exact = stats.min_is_exact() && stats.max_is_exact();
    (exact && stats.max_bytes_opt() == Some(min)).then(|| Constant::Value(min.to_vec()))
}

/// The constant column `leaf` holds in every one of `groups`, if the same in all.
pub(crate) fn column_constant(groups: &[&RowGroupMetaData], leaf: usize) -> Option<Constant> {
    let mut value: Option<Constant> = None;
    for group in groups {
        let v = chunk_constant(group, leaf)?;
        match &value {
            Some(seen) if *seen != v => return None,
            Some(_) => {}
            None => value = Some(v),
        }
    }
    value
}

/// Constant arrays built during one read, shared by every segment and batch that needs the
/// same (column, value): one allocation, many zero-copy slices.
#[derive(Default)]
pub(crate) struct ConstantPool {
    arrays: HashMap<(String, Constant), ArrayRef>,
}

impl ConstantPool {
    /// An array of at least `len` rows of `value` as `field`'s type; `None` for types this does
    /// not handle (the column is then decoded normally).
    pub(crate) fn get(&mut self, field: &Field, value: &Constant, len: usize) -> Option<ArrayRef> {
        let key = (field.name().clone(), value.clone());
        if let Some(array) = self.arrays.get(&key).filter(|a| a.len() >= len) {
            return Some(Arc::clone(array));
        }
        let array = match value {
            Constant::Null if field.is_nullable() => new_null_array(field.data_type(), len),
            Constant::Null => return None,
            Constant::Value(bytes) => constant_array(field, bytes, len)?,
        };
        self.arrays.insert(key, Arc::clone(&array));
        Some(array)
    }
}

/// An array of `len` copies of the statistics value `bytes` as `field`'s type.
fn constant_array(field: &Field, bytes: &[u8], len: usize) -> Option<ArrayRef> {
    let i32v = || bytes.try_into().ok().map(i32::from_le_bytes);
    let i64v = || bytes.try_into().ok().map(i64::from_le_bytes);
    Some(match field.data_type() {
        DataType::Int32 => Arc::new(Int32Array::from_value(i32v()?, len)),
        DataType::Date32 => Arc::new(Date32Array::from_value(i32v()?, len)),
        DataType::Int64 => Arc::new(Int64Array::from_value(i64v()?, len)),
        DataType::Timestamp(TimeUnit::Microsecond, tz) => Arc::new(
            TimestampMicrosecondArray::from_value(i64v()?, len).with_timezone_opt(tz.clone()),
        ),
        DataType::Utf8 => {
            let value = std::str::from_utf8(bytes).ok()?;
            let total = bytes.len().checked_mul(len)?;
            if i32::try_from(total).is_err() {
                return None;
            }
            Arc::new(repeated_str(value, len))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Array, StringArray};

    use super::*;

    #[test]
    fn builds_constant_arrays_of_the_field_type() {
        let f = Field::new("p", DataType::Utf8, false);
        let a = constant_array(&f, b"oura", 3).unwrap();
        assert_eq!(
            a.as_ref(),
            &StringArray::from(vec!["oura"; 3]) as &dyn Array
        );
        let tz = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let f = Field::new("t", tz.clone(), false);
        let a = constant_array(&f, &42i64.to_le_bytes(), 2).unwrap();
        assert_eq!(a.data_type(), &tz);
        assert!(constant_array(&Field::new("x", DataType::Float64, false), &[0; 8], 2).is_none());
        assert!(constant_array(&f, &[1, 2], 2).is_none(), "wrong width");
        let mut pool = ConstantPool::default();
        let f = Field::new("p", DataType::Utf8, true);
        let a = pool.get(&f, &Constant::Value(b"x".to_vec()), 10).unwrap();
        let b = pool.get(&f, &Constant::Value(b"x".to_vec()), 5).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "shared");
        assert_eq!(pool.get(&f, &Constant::Null, 4).unwrap().null_count(), 4);
    }
}
