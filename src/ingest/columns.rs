//! Rows of loosely typed cells in, Arrow record batches out, and back.
//!
//! Parsing builds one [`Row`] per record, naming columns; [`BatchBuilder`] lays the rows out in
//! the dataset's schema (unnamed columns are null). Rendering reads cells back with [`cell`], so
//! one place knows how every Arrow type of `crate::schema` maps to Rust values.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanBuilder, Date32Builder, Float64Builder, Int8Builder,
    Int32Builder, Int64Builder, ListArray, ListBuilder, StringBuilder, StructArray,
    TimestampMicrosecondBuilder,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Field, Fields, Float64Type, Int8Type, Int32Type, Int64Type, SchemaRef,
    TimeUnit, TimestampMicrosecondType,
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
    /// `List(Struct)`: entries of a list column, each its fields' cells in storage order.
    Entries(Vec<Vec<Cell>>),
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
    /// An empty row with room for `cells` cells.
    pub(crate) fn with_capacity(cells: usize) -> Self {
        Row(Vec::with_capacity(cells))
    }

    /// Adds the cell of a column not yet set, without looking for it (a row built column by
    /// column, each once; [`Row::set`] replaces).
    pub(crate) fn add(&mut self, column: &'static str, cell: Cell) {
        debug_assert!(self.get(column).is_none(), "{column} set twice");
        self.0.push((column, cell));
    }

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

/// One column being built: an Arrow builder of the column's type.
enum ColumnBuilder {
    Utf8(StringBuilder),
    Int64(Int64Builder),
    Int32(Int32Builder),
    Float64(Float64Builder),
    Boolean(BooleanBuilder),
    Date32(Date32Builder),
    Micros(TimestampMicrosecondBuilder, Option<Arc<str>>),
    Stages(ListBuilder<Int8Builder>),
    /// A list of structs: rows kept as cells, laid out at the end (few rows, short lists).
    Entries(Fields, Vec<Option<Vec<Vec<Cell>>>>),
}

impl ColumnBuilder {
    fn new(name: &str, data_type: &DataType) -> Result<Self, ArrowError> {
        Ok(match data_type {
            DataType::Utf8 => ColumnBuilder::Utf8(StringBuilder::new()),
            DataType::Int64 => ColumnBuilder::Int64(Int64Builder::new()),
            DataType::Int32 => ColumnBuilder::Int32(Int32Builder::new()),
            DataType::Float64 => ColumnBuilder::Float64(Float64Builder::new()),
            DataType::Boolean => ColumnBuilder::Boolean(BooleanBuilder::new()),
            DataType::Date32 => ColumnBuilder::Date32(Date32Builder::new()),
            DataType::Timestamp(TimeUnit::Microsecond, tz) => {
                ColumnBuilder::Micros(TimestampMicrosecondBuilder::new(), tz.clone())
            }
            DataType::List(item) => match item.data_type() {
                DataType::Struct(fields) => ColumnBuilder::Entries(fields.clone(), Vec::new()),
                _ => ColumnBuilder::Stages(ListBuilder::new(Int8Builder::new())),
            },
            other => {
                return Err(ArrowError::NotYetImplemented(format!(
                    "column {name}: type {other}"
                )));
            }
        })
    }

    fn append(&mut self, name: &str, cell: &Cell) -> Result<(), ArrowError> {
        match (self, cell) {
            (ColumnBuilder::Utf8(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::Utf8(b), Cell::Str(s)) => b.append_value(s),
            (ColumnBuilder::Int64(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::Int64(b), Cell::Int(v)) => b.append_value(*v),
            (ColumnBuilder::Int32(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::Int32(b), Cell::Int(v)) => {
                b.append_value(i32::try_from(*v).map_err(|_| mismatch(name, cell))?)
            }
            (ColumnBuilder::Float64(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::Float64(b), Cell::Float(v)) => b.append_value(*v),
            (ColumnBuilder::Boolean(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::Boolean(b), Cell::Bool(v)) => b.append_value(*v),
            (ColumnBuilder::Date32(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::Date32(b), Cell::Date(v)) => b.append_value(*v),
            (ColumnBuilder::Micros(b, _), Cell::Null) => b.append_null(),
            (ColumnBuilder::Micros(b, _), Cell::Micros(v)) => b.append_value(*v),
            (ColumnBuilder::Stages(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::Stages(b), Cell::Stages(stages)) => {
                b.values().append_slice(stages);
                b.append(true);
            }
            (ColumnBuilder::Entries(_, rows), Cell::Null) => rows.push(None),
            (ColumnBuilder::Entries(fields, rows), Cell::Entries(entries)) => {
                if entries.iter().any(|e| e.len() != fields.len()) {
                    return Err(mismatch(name, cell));
                }
                rows.push(Some(entries.clone()));
            }
            (_, other) => return Err(mismatch(name, other)),
        }
        Ok(())
    }

    fn finish(self) -> Result<ArrayRef, ArrowError> {
        Ok(match self {
            ColumnBuilder::Entries(fields, rows) => entries_array(fields, rows)?,
            other => other.finish_flat(),
        })
    }

    fn finish_flat(self) -> ArrayRef {
        match self {
            ColumnBuilder::Utf8(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Int64(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Int32(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Float64(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Boolean(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Date32(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Micros(mut b, tz) => Arc::new(b.finish().with_timezone_opt(tz)),
            ColumnBuilder::Stages(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Entries(fields, _) => {
                datafusion::arrow::array::new_empty_array(&DataType::Struct(fields))
            }
        }
    }
}

/// A `List(Struct(fields))` array from rows of entries (null rows are null lists).
fn entries_array(
    fields: Fields,
    rows: Vec<Option<Vec<Vec<Cell>>>>,
) -> Result<ArrayRef, ArrowError> {
    let mut children = fields
        .iter()
        .map(|f| ColumnBuilder::new(f.name(), f.data_type()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut offsets = vec![0i32];
    let mut valid = Vec::with_capacity(rows.len());
    for row in &rows {
        valid.push(row.is_some());
        for entry in row.iter().flatten() {
            for ((child, field), cell) in children.iter_mut().zip(fields.iter()).zip(entry) {
                child.append(field.name(), cell)?;
            }
        }
        let len = row.as_ref().map_or(0, Vec::len);
        let last = offsets.last().copied().unwrap_or(0);
        offsets.push(last + i32::try_from(len).map_err(|_| mismatch("list", &Cell::Null))?);
    }
    let arrays = children
        .into_iter()
        .map(ColumnBuilder::finish)
        .collect::<Result<Vec<_>, _>>()?;
    let values = StructArray::try_new(fields.clone(), arrays, None)?;
    let item = Arc::new(Field::new("item", DataType::Struct(fields), true));
    let list = ListArray::try_new(
        item,
        OffsetBuffer::new(offsets.into()),
        Arc::new(values),
        Some(NullBuffer::from(valid)),
    )?;
    Ok(Arc::new(list))
}

/// Accumulates rows for one schema straight into Arrow builders (no per-cell copy is kept).
/// Columns named as constants at creation are not pushed per row: [`BatchBuilder::finish_with`]
/// fills them with one value (a push's source columns and `ingested_at`).
pub(crate) struct BatchBuilder {
    schema: SchemaRef,
    columns: Vec<Option<ColumnBuilder>>,
    slots: Vec<Cell>,
    rows: usize,
    /// The column index of the name each position of the previous row held: the rows of one
    /// parser name their cells in the same order, so a cell's column is found with one
    /// comparison rather than a search of the schema.
    places: Vec<(&'static str, usize)>,
}

impl BatchBuilder {
    /// An empty builder for `schema`.
    pub(crate) fn new(schema: SchemaRef) -> Self {
        Self::with_constants(schema, &[])
    }

    /// An empty builder for `schema` whose `constants` columns are filled at the end.
    pub(crate) fn with_constants(schema: SchemaRef, constants: &[&str]) -> Self {
        let columns = schema
            .fields()
            .iter()
            .map(|f| {
                if constants.contains(&f.name().as_str()) {
                    None
                } else {
                    // A type outside the schemas of `crate::schema` is a bug, reported by
                    // `finish` rather than here.
                    ColumnBuilder::new(f.name(), f.data_type()).ok()
                }
            })
            .collect();
        let slots = vec![Cell::Null; schema.fields().len()];
        BatchBuilder {
            schema,
            columns,
            slots,
            rows: 0,
            places: Vec::new(),
        }
    }

    /// Number of rows pushed so far.
    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// Appends a row; a column the schema lacks is a bug and reported as such.
    pub(crate) fn push(&mut self, row: Row) -> Result<(), ArrowError> {
        for (position, (name, cell)) in row.0.into_iter().enumerate() {
            let i = match self.places.get(position) {
                Some(&(known, i)) if known == name => i,
                _ => {
                    let i = self.schema.index_of(name)?;
                    self.places.truncate(position);
                    self.places.push((name, i));
                    i
                }
            };
            self.slots[i] = cell;
        }
        let fields = self.schema.fields();
        for ((column, slot), field) in self.columns.iter_mut().zip(&mut self.slots).zip(fields) {
            let cell = std::mem::replace(slot, Cell::Null);
            if let Some(column) = column {
                column.append(field.name(), &cell)?;
            }
        }
        self.rows += 1;
        Ok(())
    }

    /// Lays the rows out as one record batch.
    pub(crate) fn finish(self) -> Result<RecordBatch, ArrowError> {
        self.finish_with(&[])
    }

    /// Lays the rows out as one record batch, filling each constant column with its value from
    /// `constants` (null when not given).
    pub(crate) fn finish_with(self, constants: &[(&str, Cell)]) -> Result<RecordBatch, ArrowError> {
        let mut arrays = Vec::with_capacity(self.columns.len());
        for (field, column) in self.schema.fields().iter().zip(self.columns) {
            let name = field.name();
            let array = match column {
                Some(column) => column.finish()?,
                None => {
                    let value = constants
                        .iter()
                        .find(|(c, _)| c == name)
                        .map_or(&Cell::Null, |(_, v)| v);
                    let mut column = ColumnBuilder::new(name, field.data_type())?;
                    for _ in 0..self.rows {
                        column.append(name, value)?;
                    }
                    column.finish()?
                }
            };
            arrays.push(array);
        }
        RecordBatch::try_new(self.schema, arrays)
    }
}

fn mismatch(name: &str, cell: &Cell) -> ArrowError {
    ArrowError::InvalidArgumentError(format!("column {name}: unexpected cell {cell:?}"))
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
        DataType::List(item) if matches!(item.data_type(), DataType::Struct(_)) => {
            let values = array.as_list::<i32>().value(row);
            let entries = values.as_struct();
            Cell::Entries(
                (0..entries.len())
                    .map(|i| {
                        entries
                            .columns()
                            .iter()
                            .map(|c| cell(c.as_ref(), i))
                            .collect()
                    })
                    .collect(),
            )
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
