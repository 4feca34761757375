//! Rows of loosely typed cells in, Arrow record batches out, and back.
//!
//! Parsing builds one [`Row`] per record, naming columns; [`BatchBuilder`] lays the rows out in
//! the dataset's schema (unnamed columns are null). Rendering reads cells back with [`cell`], so
//! one place knows how every Arrow type of `crate::schema` maps to Rust values.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Date32Array, Float64Array, Int8Builder, Int32Array,
    Int64Array, ListBuilder, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Float64Type, Int8Type, Int32Type, Int64Type, SchemaRef, TimeUnit,
    TimestampMicrosecondType,
};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::record_batch::RecordBatch;

/// One value of one column, before it is laid out in Arrow arrays.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    /// No value.
    Null,
    /// `Utf8`.
    Str(String),
    /// `Int64` or `Int32`.
    Int(i64),
    /// `Float64`.
    Float(f64),
    /// `Boolean`.
    Bool(bool),
    /// `Date32`: days since 1970-01-01.
    Date(i32),
    /// `Timestamp(Microsecond, UTC)`: microseconds since the epoch.
    Micros(i64),
    /// `List(Int8)`: the sleep hypnogram.
    Stages(Vec<i8>),
}

impl Cell {
    /// A string cell, or null.
    pub(crate) fn opt_str(s: Option<&str>) -> Cell {
        s.map_or(Cell::Null, |s| Cell::Str(s.to_owned()))
    }
}

/// The named cells of one record.
#[derive(Debug, Default, Clone)]
pub(crate) struct Row(pub(crate) Vec<(&'static str, Cell)>);

impl Row {
    /// Sets (or replaces) a column's cell.
    pub(crate) fn set(&mut self, column: &'static str, cell: Cell) {
        match self.0.iter_mut().find(|(name, _)| *name == column) {
            Some(slot) => slot.1 = cell,
            None => self.0.push((column, cell)),
        }
    }

    /// The cell of a column, if set.
    pub(crate) fn get(&self, column: &str) -> Option<&Cell> {
        self.0
            .iter()
            .find(|(name, _)| *name == column)
            .map(|(_, c)| c)
    }
}

/// Accumulates rows for one schema.
pub(crate) struct BatchBuilder {
    schema: SchemaRef,
    columns: Vec<Vec<Cell>>,
}

impl BatchBuilder {
    /// An empty builder for `schema`.
    pub(crate) fn new(schema: SchemaRef) -> Self {
        let columns = vec![Vec::new(); schema.fields().len()];
        BatchBuilder { schema, columns }
    }

    /// Number of rows pushed so far.
    pub(crate) fn len(&self) -> usize {
        self.columns.first().map_or(0, Vec::len)
    }

    /// Appends a row; a column the schema lacks is a bug and reported as such.
    pub(crate) fn push(&mut self, row: Row) -> Result<(), ArrowError> {
        let mut cells = vec![Cell::Null; self.columns.len()];
        for (name, cell) in row.0 {
            let i = self.schema.index_of(name)?;
            cells[i] = cell;
        }
        for (column, cell) in self.columns.iter_mut().zip(cells) {
            column.push(cell);
        }
        Ok(())
    }

    /// Lays the rows out as one record batch.
    pub(crate) fn finish(self) -> Result<RecordBatch, ArrowError> {
        let arrays = self
            .schema
            .fields()
            .iter()
            .zip(self.columns)
            .map(|(field, cells)| array(field.name(), field.data_type(), cells))
            .collect::<Result<Vec<_>, _>>()?;
        RecordBatch::try_new(self.schema, arrays)
    }
}

fn mismatch(name: &str, cell: &Cell) -> ArrowError {
    ArrowError::InvalidArgumentError(format!("column {name}: unexpected cell {cell:?}"))
}

fn array(name: &str, data_type: &DataType, cells: Vec<Cell>) -> Result<ArrayRef, ArrowError> {
    macro_rules! collect {
        ($arr:ty, $pat:pat => $val:expr) => {{
            let values = cells
                .iter()
                .map(|cell| match cell {
                    Cell::Null => Ok(None),
                    $pat => Ok(Some($val)),
                    other => Err(mismatch(name, other)),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(<$arr>::from(values)) as ArrayRef
        }};
    }
    Ok(match data_type {
        DataType::Utf8 => collect!(StringArray, Cell::Str(s) => s.as_str()),
        DataType::Int64 => collect!(Int64Array, Cell::Int(v) => *v),
        DataType::Int32 => {
            let values = cells
                .iter()
                .map(|cell| match cell {
                    Cell::Null => Ok(None),
                    Cell::Int(v) => i32::try_from(*v)
                        .map(Some)
                        .map_err(|_| mismatch(name, cell)),
                    other => Err(mismatch(name, other)),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(Int32Array::from(values))
        }
        DataType::Float64 => collect!(Float64Array, Cell::Float(v) => *v),
        DataType::Boolean => collect!(BooleanArray, Cell::Bool(v) => *v),
        DataType::Date32 => collect!(Date32Array, Cell::Date(v) => *v),
        DataType::Timestamp(TimeUnit::Microsecond, tz) => {
            let values = cells
                .iter()
                .map(|cell| match cell {
                    Cell::Null => Ok(None),
                    Cell::Micros(v) => Ok(Some(*v)),
                    other => Err(mismatch(name, other)),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let arr = TimestampMicrosecondArray::from(values);
            Arc::new(match tz {
                Some(tz) => arr.with_timezone(tz.clone()),
                None => arr,
            })
        }
        DataType::List(_) => {
            let mut builder = ListBuilder::new(Int8Builder::new());
            for cell in &cells {
                match cell {
                    Cell::Null => builder.append_null(),
                    Cell::Stages(stages) => {
                        builder.values().append_slice(stages);
                        builder.append(true);
                    }
                    other => return Err(mismatch(name, other)),
                }
            }
            Arc::new(builder.finish())
        }
        other => {
            return Err(ArrowError::NotYetImplemented(format!(
                "column {name}: type {other}"
            )));
        }
    })
}

/// Reads one cell back; types outside the schemas of `crate::schema` read as null.
pub(crate) fn cell(array: &dyn Array, row: usize) -> Cell {
    if array.is_null(row) {
        return Cell::Null;
    }
    match array.data_type() {
        DataType::Utf8 => Cell::Str(array.as_string::<i32>().value(row).to_owned()),
        DataType::Int64 => Cell::Int(array.as_primitive::<Int64Type>().value(row)),
        DataType::Int32 => Cell::Int(i64::from(array.as_primitive::<Int32Type>().value(row))),
        DataType::Float64 => Cell::Float(array.as_primitive::<Float64Type>().value(row)),
        DataType::Boolean => Cell::Bool(array.as_boolean().value(row)),
        DataType::Date32 => Cell::Date(array.as_primitive::<Date32Type>().value(row)),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            Cell::Micros(array.as_primitive::<TimestampMicrosecondType>().value(row))
        }
        DataType::List(_) => {
            let values = array.as_list::<i32>().value(row);
            let stages = values.as_primitive::<Int8Type>();
            Cell::Stages(stages.iter().map(|s| s.unwrap_or(-1)).collect())
        }
        _ => Cell::Null,
    }
}

/// Reads a named column of one row of a batch; a missing column reads as null.
pub(crate) fn cell_by_name(batch: &RecordBatch, column: &str, row: usize) -> Cell {
    batch
        .column_by_name(column)
        .map_or(Cell::Null, |a| cell(a.as_ref(), row))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Table;

    #[test]
    fn cells_round_trip_through_a_batch() {
        let mut b = BatchBuilder::new(Table::Sleep.schema());
        let mut row = Row::default();
        row.set("id", Cell::Str("a".into()));
        row.set("session_end", Cell::Micros(5));
        row.set("timezone_offset", Cell::Int(3600));
        row.set("hypnogram", Cell::Stages(vec![1, 2, -1]));
        row.set("efficiency", Cell::Float(90.5));
        row.set("source_provider", Cell::Str("oura".into()));
        row.set("source_type", Cell::Str("ring".into()));
        row.set("ingested_at", Cell::Micros(7));
        b.push(row).unwrap();
        assert_eq!(b.len(), 1);
        let batch = b.finish().unwrap();
        assert_eq!(cell_by_name(&batch, "session_end", 0), Cell::Micros(5));
        assert_eq!(cell_by_name(&batch, "timezone_offset", 0), Cell::Int(3600));
        assert_eq!(
            cell_by_name(&batch, "hypnogram", 0),
            Cell::Stages(vec![1, 2, -1])
        );
        assert_eq!(cell_by_name(&batch, "efficiency", 0), Cell::Float(90.5));
        assert_eq!(cell_by_name(&batch, "score", 0), Cell::Null);
    }

    #[test]
    fn a_missing_required_column_fails_instead_of_panicking() {
        let mut b = BatchBuilder::new(Table::Sleep.schema());
        b.push(Row::default()).unwrap();
        assert!(b.finish().is_err());
        let mut b = BatchBuilder::new(Table::Sleep.schema());
        let mut row = Row::default();
        row.set("no_such_column", Cell::Null);
        assert!(b.push(row).is_err());
    }
}
