//! One stored sample written straight to JSON bytes, without a `serde_json::Value` in between:
//! the timeseries getters render pages of up to `--getter-max-rows` samples, and a `Value` per
//! sample cost about 1 KB of heap each.
//!
//! The shape is the getters' (`data-model.md`): `{timestamp, start?, end?, timezone_offset,
//! type, unit, value, ...}` then the family's other fields in schema order; `start` repeats
//! `timestamp` on interval families; instants render in the row's own offset, else `Z`;
//! `source_workout_id` and `source_sport` are left out when null; note `tags` render as the
//! JSON array they were pushed as. The source columns and `ingested_at` are not part of a
//! sample (the grouped getter renders the source once per group).

use std::io::{self, Write};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int32Type;
use datafusion::arrow::record_batch::RecordBatch;

use crate::ingest::columns::{Cell, cell};
use crate::ingest::zone::date_string;
use crate::ingest::zone::format_instant;
use crate::schema::{INGESTED_AT, Resource, SOURCE_COLUMNS, TIMEZONE_OFFSET};

/// The spec's leading keys, in order; the rest follow in schema order.
const SAMPLE_ORDER: [&str; 7] = [
    "timestamp",
    "start",
    "end",
    "timezone_offset",
    "type",
    "unit",
    "value",
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum How {
    /// An instant in the row's offset.
    Instant,
    /// Note tags: the stored JSON text, written as JSON when it parses.
    Tags,
    /// Left out when null.
    Optional,
    /// The cell as plain JSON.
    Plain,
}

/// The rendering plan of one batch: which column feeds which key, in output order. Built once
/// per batch, used for every row.
pub(crate) struct SampleWriter<'a> {
    batch: &'a RecordBatch,
    offset: Option<&'a dyn Array>,
    entries: Vec<(&'a str, usize, How)>,
}

fn key_of(name: &str) -> Option<&'static str> {
    SAMPLE_ORDER.iter().copied().find(|k| *k == name)
}

impl<'a> SampleWriter<'a> {
    /// The plan for `batch`, a batch of `resource`.
    pub(crate) fn new(resource: Resource, batch: &'a RecordBatch) -> Self {
        let schema = batch.schema_ref();
        let mut leading: Vec<(&'a str, usize, How)> = Vec::new();
        let mut rest: Vec<(&'a str, usize, How)> = Vec::new();
        for (i, field) in schema.fields().iter().enumerate() {
            let name = field.name().as_str();
            if SOURCE_COLUMNS.contains(&name) || name == INGESTED_AT {
                continue;
            }
            let how = match name {
                "timestamp" | "end" => How::Instant,
                "tags" => How::Tags,
                "source_workout_id" | "source_sport" => How::Optional,
                _ => How::Plain,
            };
            if name == "timestamp" && resource.family.is_interval() {
                leading.push(("start", i, how));
            }
            match key_of(name) {
                Some(k) => leading.push((k, i, how)),
                None => rest.push((name, i, how)),
            }
            // The reference's note sample carries its text as `value`.
            if name == "content" && resource.family == crate::schema::Family::Note {
                leading.push(("value", i, how));
            }
        }
        leading.sort_by_key(|(k, _, _)| SAMPLE_ORDER.iter().position(|o| o == k));
        leading.extend(rest);
        SampleWriter {
            batch,
            offset: batch
                .column_by_name(TIMEZONE_OFFSET)
                .map(|a| a.as_ref() as &dyn Array),
            entries: leading,
        }
    }

    fn offset(&self, row: usize) -> Option<i32> {
        let array = self.offset?;
        if array.is_null(row) {
            return None;
        }
        match array.as_primitive_opt::<Int32Type>() {
            Some(a) => Some(a.value(row)),
            None => match cell(array, row) {
                Cell::Int(v) => i32::try_from(v).ok(),
                _ => None,
            },
        }
    }

    /// Writes row `row` as one JSON object.
    pub(crate) fn write(&self, row: usize, w: &mut impl Write) -> io::Result<()> {
        let tz = self.offset(row);
        w.write_all(b"{")?;
        let mut first = true;
        for (key, column, how) in &self.entries {
            let value = cell(self.batch.column(*column).as_ref(), row);
            if *how == How::Optional && value == Cell::Null {
                continue;
            }
            if !first {
                w.write_all(b",")?;
            }
            first = false;
            write_str(w, key)?;
            w.write_all(b":")?;
            match (how, value) {
                (How::Instant, Cell::Micros(m)) => write_str(w, &format_instant(m, tz))?,
                (How::Tags, Cell::Str(s)) => match serde_json::from_str::<serde_json::Value>(&s) {
                    Ok(v) => serde_json::to_writer(&mut *w, &v)?,
                    Err(_) => write_str(w, &s)?,
                },
                (_, other) => write_cell(w, other)?,
            }
        }
        w.write_all(b"}")
    }
}

fn write_str(w: &mut impl Write, s: &str) -> io::Result<()> {
    serde_json::to_writer(w, s).map_err(io::Error::from)
}

/// A cell as plain JSON (instants in UTC, dates as `YYYY-MM-DD`), as `render::plain` renders it.
fn write_cell(w: &mut impl Write, cell: Cell) -> io::Result<()> {
    match cell {
        Cell::Null => w.write_all(b"null"),
        Cell::Str(s) => write_str(w, &s),
        Cell::Int(v) => write!(w, "{v}"),
        Cell::Float(v) => serde_json::to_writer(w, &v).map_err(io::Error::from),
        Cell::Bool(v) => w.write_all(if v { b"true" } else { b"false" }),
        Cell::Date(d) => write_str(w, &date_string(d)),
        Cell::Micros(m) => write_str(w, &format_instant(m, None)),
        Cell::Stages(s) => serde_json::to_writer(w, &s).map_err(io::Error::from),
        c @ Cell::Entries(_) => {
            serde_json::to_writer(w, &super::summaries::plain(c)).map_err(io::Error::from)
        }
    }
}
