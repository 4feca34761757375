//! The columnar push, for data teams: `POST /v2/user/{user_id}/data` with the rows of one
//! timeseries resource as an Arrow IPC stream (`application/vnd.apache.arrow.stream`) or a
//! Parquet file (`application/vnd.apache.parquet`), in the resource's own columns (the
//! timeseries schema of `data-model.md`, as a Parquet export of the resource carries them).
//! It answers and stores exactly as the JSON push does: the same [`PushBatches`], so the same
//! all-or-nothing write, connection, compaction and events.
//!
//! Decisions where the spec is silent:
//! - The resource is the `resource` query parameter; the provider and source come from the
//!   `provider`, `source_type`, `source_app_id` and `source_device_id` query parameters, or
//!   from the stream's `source_*` columns, which must then hold one value throughout (a push
//!   is one source, as a JSON body is), and agree with the parameter when both are given.
//!   `ingested_at` is the service's and refused as a column.
//! - Columns are matched by name; any other column is refused, naming it. Types convert where
//!   nothing is lost: any timestamp unit (a zone-less timestamp reads as UTC) to microseconds,
//!   integers and `float32` to `float64` value columns, integer offsets to `int32`, large,
//!   view and dictionary strings to strings.
//! - Every row passes the JSON push's rules for a sample (`sample.rs`): `timestamp` and the
//!   family's value columns present and non-null, values finite and within the resource's
//!   range, `unit` (when given) the resource's unit, `type` on the resources that require it,
//!   offsets within ±18 h, and on interval families `end` not before `timestamp`, `duration`
//!   within a year and agreeing with `end` (each derived from the other). A violation names
//!   the column and the first offending row (`["body", "value", 1234]`) and rejects the push.
//! - Notes (free text with tags) are pushed as JSON only (422 naming the resource).

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, RecordBatch, TimestampMicrosecondArray, new_null_array,
};
use datafusion::arrow::compute::{CastOptions, cast_with_options, concat_batches};
use datafusion::arrow::datatypes::{
    DataType, Float64Type, Int32Type, Schema, SchemaRef, TimeUnit, TimestampMicrosecondType,
};
use datafusion::arrow::ipc::reader::StreamReader;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

use super::columnar_table::{TableSource, columnar_table, parse_table_rows};
use super::fields::{SOURCE_TYPES, sample_range};
use super::push::PushBatches;
use crate::loc;
use crate::providers;
use crate::schema::{
    Dataset, Family, INGESTED_AT, Resource, TIMEZONE_OFFSET, repeated_str, resource,
};
use crate::validation::{Invalid, Violation};

/// The media type of an Arrow IPC stream body.
pub const ARROW_STREAM_MEDIA_TYPE: &str = "application/vnd.apache.arrow.stream";
/// The media type of a Parquet file body.
pub const PARQUET_MEDIA_TYPE: &str = "application/vnd.apache.parquet";

/// The longest sample interval accepted, in seconds (a leap year), as on the JSON push.
const MAX_DURATION: f64 = 366.0 * 86_400.0;
/// The widest offset from UTC, in seconds.
const MAX_OFFSET: i32 = 18 * 3600;
const MICROS: f64 = 1e6;

/// How a columnar body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Columnar {
    /// An Arrow IPC stream.
    ArrowStream,
    /// A Parquet file.
    Parquet,
}

impl Columnar {
    /// The encoding a `Content-Type` names, if it is a columnar one.
    pub fn from_media_type(content_type: &str) -> Option<Columnar> {
        let essence = content_type.split(';').next().unwrap_or("").trim();
        if essence.eq_ignore_ascii_case(ARROW_STREAM_MEDIA_TYPE) {
            Some(Columnar::ArrowStream)
        } else if essence.eq_ignore_ascii_case(PARQUET_MEDIA_TYPE) {
            Some(Columnar::Parquet)
        } else {
            None
        }
    }
}

/// The query parameters of a columnar push.
#[derive(Debug, Clone, Default)]
pub struct ColumnarTarget {
    /// `resource`: the timeseries the rows belong to.
    pub resource: Option<String>,
    /// `provider`: the provider slug, unless a `source_provider` column gives it.
    pub provider: Option<String>,
    /// `source_type`.
    pub source_type: Option<String>,
    /// `source_app_id`.
    pub app_id: Option<String>,
    /// `source_device_id`.
    pub device_id: Option<String>,
    /// The user the rows belong to: part of the ids derived for table rows.
    pub user_id: uuid::Uuid,
}

/// Validates a columnar push body into the batch the store keeps (see the module docs).
pub fn parse_push_columnar(
    body: Bytes,
    format: Columnar,
    target: &ColumnarTarget,
    now: DateTime<Utc>,
) -> Result<PushBatches, Invalid> {
    if let Some(table) = target.resource.as_deref().and_then(columnar_table) {
        return table_push(body, format, target, table, now);
    }
    let resource = target_resource(target)?;
    let dataset = Dataset::Timeseries(resource);
    let storage = dataset.schema();
    let input = decode(body, format)?;
    let schema = input.schema();
    let columns = Columns::check(&schema, &storage)?;
    let entry = push_provider(&input, target)?;
    let source_type = source_value(
        &input,
        "source_type",
        target.source_type.as_deref(),
        "source_type",
    )?
    .unwrap_or_else(|| entry.default_source_type.to_owned());
    if !SOURCE_TYPES.contains(&source_type.as_str()) {
        return Err(Violation::new(
            loc!["query", "source_type"],
            "enum",
            format!("source_type must be one of {SOURCE_TYPES:?}"),
        )
        .with_input(Value::from(source_type))
        .into());
    }
    let rows = input.num_rows();
    let mut out = PushBatches {
        provider: entry.slug.to_owned(),
        ..PushBatches::default()
    };
    if rows == 0 {
        return Ok(out);
    }
    let sources = Sources {
        provider: entry.slug,
        source_type: &source_type,
        app_id: target.app_id.as_deref(),
        device_id: target.device_id.as_deref(),
        ingested_at: now.timestamp_micros(),
    };
    let batch =
        Rows::new(&input, resource, &columns, &storage)?.into_storage(&storage, &sources)?;
    out.batches.push((dataset, batch));
    Ok(out)
}

/// A summary table's rows (`columnar_table.rs`), the source read as for a timeseries.
fn table_push(
    body: Bytes,
    format: Columnar,
    target: &ColumnarTarget,
    table: crate::schema::Table,
    now: DateTime<Utc>,
) -> Result<PushBatches, Invalid> {
    let input = decode(body, format)?;
    let entry = push_provider(&input, target)?;
    let source = TableSource {
        provider: entry.slug.to_owned(),
        source_type: source_value(
            &input,
            "source_type",
            target.source_type.as_deref(),
            "source_type",
        )?,
        app_id: source_value(
            &input,
            "source_app_id",
            target.app_id.as_deref(),
            "source_app_id",
        )?,
        device_id: source_value(
            &input,
            "source_device_id",
            target.device_id.as_deref(),
            "source_device_id",
        )?,
    };
    parse_table_rows(&input, table, source, target.user_id, now)
}

fn target_resource(target: &ColumnarTarget) -> Result<Resource, Violation> {
    let name = target.resource.as_deref().ok_or_else(|| {
        Violation::new(
            loc!["query", "resource"],
            "missing",
            "a columnar push names its timeseries: the `resource` query parameter",
        )
    })?;
    let found = resource(name).ok_or_else(|| {
        Violation::new(
            loc!["query", "resource"],
            "enum",
            "Unknown timeseries resource",
        )
        .with_input(Value::from(name))
    })?;
    if found.family == Family::Note {
        return Err(Violation::value(
            loc!["query", "resource"],
            "notes are pushed as JSON (their tags are a list per sample)",
        )
        .with_input(Value::from(name)));
    }
    Ok(found)
}

/// The body's rows as one batch (one copy; the stream's schema as sent).
fn decode(body: Bytes, format: Columnar) -> Result<RecordBatch, Violation> {
    let unreadable = |what: &str, e: &dyn std::fmt::Display| {
        Violation::new(
            loc!["body"],
            "value_error",
            format!("not a readable {what}: {e}"),
        )
    };
    let (schema, batches): (SchemaRef, Vec<RecordBatch>) = match format {
        Columnar::ArrowStream => {
            let reader = StreamReader::try_new(std::io::Cursor::new(body), None)
                .map_err(|e| unreadable("Arrow IPC stream", &e))?;
            let schema = reader.schema();
            let batches = reader
                .collect::<Result<_, _>>()
                .map_err(|e| unreadable("Arrow IPC stream", &e))?;
            (schema, batches)
        }
        Columnar::Parquet => {
            let builder = ParquetRecordBatchReaderBuilder::try_new(body)
                .map_err(|e| unreadable("Parquet file", &e))?;
            let schema = builder.schema().clone();
            let reader = builder
                .with_batch_size(1 << 16)
                .build()
                .map_err(|e| unreadable("Parquet file", &e))?;
            let batches = reader
                .collect::<Result<_, _>>()
                .map_err(|e| unreadable("Parquet file", &e))?;
            (schema, batches)
        }
    };
    concat_batches(&schema, &batches).map_err(|e| unreadable("body", &e))
}

/// The stream's columns by storage column: for each storage field, the input column index.
struct Columns {
    at: Vec<Option<usize>>,
}

impl Columns {
    /// Checks every input column against the storage schema (see the module docs).
    fn check(input: &Schema, storage: &Schema) -> Result<Columns, Invalid> {
        let mut violations = Vec::new();
        let mut at = vec![None; storage.fields().len()];
        for (i, field) in input.fields().iter().enumerate() {
            let name = field.name();
            let found = storage
                .fields()
                .iter()
                .position(|f| f.name() == name && name != INGESTED_AT);
            let Some(s) = found else {
                let known: Vec<&str> = storage
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .filter(|n| *n != INGESTED_AT)
                    .collect();
                violations.push(Violation::new(
                    loc!["body", name.as_str()],
                    "extra_forbidden",
                    format!("not a column of this resource; its columns are {known:?}"),
                ));
                continue;
            };
            let want = storage.field(s).data_type();
            if !convertible(field.data_type(), want) {
                violations.push(Violation::new(
                    loc!["body", name.as_str()],
                    "type_error",
                    format!("expected {want}, got {}", field.data_type()),
                ));
                continue;
            }
            at[s] = Some(i);
        }
        let this = Columns { at };
        if this.index(storage, "timestamp").is_none() {
            violations.push(Violation::new(
                loc!["body", "timestamp"],
                "missing",
                "the timestamp column is required",
            ));
        }
        if violations.is_empty() {
            Ok(this)
        } else {
            Err(Invalid(violations))
        }
    }

    fn index(&self, storage: &Schema, name: &str) -> Option<usize> {
        let s = storage.index_of(name).ok()?;
        self.at[s]
    }
}

/// Whether an input type converts to the storage type without loss (see the module docs).
fn convertible(from: &DataType, to: &DataType) -> bool {
    if from == to {
        return true;
    }
    match to {
        DataType::Timestamp(..) => matches!(from, DataType::Timestamp(..)),
        DataType::Float64 => from.is_integer() || matches!(from, DataType::Float32),
        DataType::Int32 => from.is_integer(),
        DataType::Utf8 => match from {
            DataType::LargeUtf8 | DataType::Utf8View => true,
            DataType::Dictionary(_, v) => matches!(**v, DataType::Utf8 | DataType::LargeUtf8),
            _ => false,
        },
        _ => false,
    }
}

/// The push's provider: the `provider` query parameter or the `source_provider` column, which
/// must name a provider of the catalogue.
fn push_provider(
    input: &RecordBatch,
    target: &ColumnarTarget,
) -> Result<&'static providers::Provider, Violation> {
    let provider = source_value(
        input,
        "source_provider",
        target.provider.as_deref(),
        "provider",
    )?
    .ok_or_else(|| {
        Violation::new(
            loc!["query", "provider"],
            "missing",
            "the provider slug is required: a `provider` query parameter or a \
             `source_provider` column",
        )
    })?;
    match providers::provider(&provider) {
        Some(entry) => Ok(entry),
        None => Err(
            Violation::new(loc!["query", "provider"], "enum", "Unknown provider slug")
                .with_input(Value::from(provider)),
        ),
    }
}

/// A `source_*` value of the push: the query parameter and/or a column holding one value.
fn source_value(
    input: &RecordBatch,
    column: &str,
    parameter: Option<&str>,
    query_name: &str,
) -> Result<Option<String>, Violation> {
    let Some(array) = input.column_by_name(column) else {
        return Ok(parameter.map(str::to_owned));
    };
    let strings = to_utf8(array).map_err(|e| Violation::value(loc!["body", column], e))?;
    let strings = strings.as_string::<i32>();
    let mut value: Option<&str> = None;
    for i in 0..strings.len() {
        let v = strings.is_valid(i).then(|| strings.value(i));
        match (value, v) {
            (_, None) => {
                return Err(Violation::new(
                    loc!["body", column, i],
                    "missing",
                    format!("{column} must not be null"),
                ));
            }
            (None, Some(v)) => value = Some(v),
            (Some(a), Some(b)) if a != b => {
                return Err(Violation::value(
                    loc!["body", column, i],
                    format!("a push is one source: {column} is {a:?} on row 0 and {b:?} here"),
                )
                .with_input(Value::from(b)));
            }
            _ => {}
        }
    }
    match (value, parameter) {
        (Some(a), Some(b)) if a != b => Err(Violation::value(
            loc!["query", query_name],
            format!("the {query_name} parameter {b:?} contradicts the {column} column {a:?}"),
        )
        .with_input(Value::from(b))),
        (v, p) => Ok(v.or(p).map(str::to_owned)),
    }
}

fn to_utf8(array: &ArrayRef) -> Result<ArrayRef, String> {
    cast_with_options(array, &DataType::Utf8, &CastOptions::default()).map_err(|e| e.to_string())
}

/// The push's source, the same for every row.
struct Sources<'a> {
    provider: &'a str,
    source_type: &'a str,
    app_id: Option<&'a str>,
    device_id: Option<&'a str>,
    ingested_at: i64,
}

/// The input rows, each provided column converted to its storage type once.
struct Rows<'a> {
    input: &'a RecordBatch,
    resource: Resource,
    /// By storage field: the converted input column, if the input has it.
    converted: Vec<Option<ArrayRef>>,
}

impl<'a> Rows<'a> {
    fn new(
        input: &'a RecordBatch,
        resource: Resource,
        columns: &Columns,
        storage: &Schema,
    ) -> Result<Self, Invalid> {
        let converted = storage
            .fields()
            .iter()
            .zip(&columns.at)
            .map(|(field, at)| {
                at.map(|i| convert(input.column(i), field.name(), field.data_type()))
                    .transpose()
            })
            .collect::<Result<_, _>>()?;
        Ok(Rows {
            input,
            resource,
            converted,
        })
    }

    /// The converted input column for storage column `name`, if the input has it.
    fn column(&self, name: &str, storage: &Schema) -> Option<ArrayRef> {
        let i = storage.index_of(name).ok()?;
        self.converted[i].clone()
    }

    /// The storage batch: input columns converted and checked, derived and constant columns
    /// filled.
    fn into_storage(
        self,
        storage: &SchemaRef,
        sources: &Sources<'_>,
    ) -> Result<RecordBatch, Invalid> {
        let n = self.input.num_rows();
        let family = self.resource.family;
        let timestamp = self.timestamp("timestamp", storage).ok_or_else(|| {
            Violation::new(
                loc!["body", "timestamp"],
                "missing",
                "timestamp is required",
            )
        })?;
        if let Some(i) = first_null(&timestamp) {
            return Err(Violation::new(
                loc!["body", "timestamp", i],
                "missing",
                "timestamp must not be null",
            )
            .into());
        }
        let mut interval = None;
        if family.is_interval() {
            interval = Some(self.interval(&timestamp, storage)?);
        }
        if let Some(offsets) = self.column("timezone_offset", storage) {
            let offsets = offsets.as_primitive::<Int32Type>();
            if let Some(i) =
                (0..n).find(|&i| offsets.is_valid(i) && offsets.value(i).abs() > MAX_OFFSET)
            {
                return Err(Violation::value(
                    loc!["body", TIMEZONE_OFFSET, i],
                    "an offset is at most 18 hours (64,800 s) from UTC",
                )
                .with_input(Value::from(offsets.value(i)))
                .into());
            }
        }
        if let Some(units) = self.column("unit", storage) {
            let units = units.as_string::<i32>();
            let unit = self.resource.unit;
            if let Some(i) = (0..n).find(|&i| units.is_valid(i) && units.value(i) != unit) {
                return Err(Violation::value(
                    loc!["body", "unit", i],
                    format!("unit must be {unit:?}"),
                )
                .with_input(Value::from(units.value(i)))
                .into());
            }
        }
        if super::sample_rules::requires(self.resource, "type") {
            let types = self.column("type", storage);
            let missing = match &types {
                None => Some(0),
                Some(t) => first_null(t),
            };
            if let Some(i) = missing {
                return Err(Violation::new(
                    loc!["body", "type", i],
                    "missing",
                    format!("type is required on {} samples", self.resource.name),
                )
                .into());
            }
        }
        let bounds = sample_range(self.resource.name, self.resource.unit);
        for name in super::sample_rules::measured(family) {
            let values = self.column(name, storage).ok_or_else(|| {
                Violation::new(
                    loc!["body", *name],
                    "missing",
                    format!("the {name} column is required"),
                )
            })?;
            let values = values.as_primitive::<Float64Type>();
            let bad = (0..n).find(|&i| {
                !values.is_valid(i) || {
                    let v = values.value(i);
                    !v.is_finite() || v < bounds.0 || v > bounds.1
                }
            });
            if let Some(i) = bad {
                let v = values.is_valid(i).then(|| values.value(i));
                let violation = match v {
                    None => Violation::new(
                        loc!["body", *name, i],
                        "missing",
                        format!("{name} must not be null"),
                    ),
                    Some(v) => Violation::value(
                        loc!["body", *name, i],
                        format!(
                            "{name} must be a finite number from {} to {}",
                            bounds.0, bounds.1
                        ),
                    )
                    .with_input(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)),
                };
                return Err(violation.into());
            }
        }
        let constant = |v: &str| -> ArrayRef { Arc::new(repeated_str(v, n)) };
        let optional = |v: Option<&str>, field: &str| -> ArrayRef {
            match (self.column(field, storage), v) {
                (Some(column), _) => column,
                (None, Some(v)) => constant(v),
                (None, None) => new_null_array(&DataType::Utf8, n),
            }
        };
        let mut out: Vec<ArrayRef> = Vec::with_capacity(storage.fields().len());
        for field in storage.fields() {
            let name = field.name().as_str();
            let column = match name {
                "timestamp" => Arc::new(timestamp.clone()) as ArrayRef,
                "unit" => constant(self.resource.unit),
                "end" | "duration" => match (&interval, name) {
                    (Some((end, _)), "end") => end.clone(),
                    (Some((_, duration)), _) => duration.clone(),
                    (None, _) => new_null_array(field.data_type(), n),
                },
                "source_provider" => constant(sources.provider),
                "source_type" => constant(sources.source_type),
                "source_app_id" => optional(sources.app_id, name),
                "source_device_id" => optional(sources.device_id, name),
                INGESTED_AT => Arc::new(
                    TimestampMicrosecondArray::from_iter_values(std::iter::repeat_n(
                        sources.ingested_at,
                        n,
                    ))
                    .with_timezone("UTC"),
                ),
                _ => match self.column(name, storage) {
                    Some(column) => column,
                    None => new_null_array(field.data_type(), n),
                },
            };
            out.push(column);
        }
        RecordBatch::try_new(storage.clone(), out).map_err(|e| {
            Violation::value(
                loc!["body"],
                format!("the rows do not fit the resource: {e}"),
            )
            .into()
        })
    }

    fn timestamp(&self, name: &str, storage: &Schema) -> Option<TimestampMicrosecondArray> {
        self.column(name, storage)
            .map(|c| c.as_primitive::<TimestampMicrosecondType>().clone())
    }

    /// `end` and `duration` of an interval family, each derived from the other (`sample.rs`).
    fn interval(
        &self,
        start: &TimestampMicrosecondArray,
        storage: &Schema,
    ) -> Result<(ArrayRef, ArrayRef), Invalid> {
        let n = start.len();
        let end = self.timestamp("end", storage);
        let duration = self.column("duration", storage);
        let duration = duration.as_ref().map(|d| d.as_primitive::<Float64Type>());
        let mut ends = Vec::with_capacity(n);
        let mut durations = Vec::with_capacity(n);
        for i in 0..n {
            let s = start.value(i);
            let e = end.as_ref().and_then(|a| a.is_valid(i).then(|| a.value(i)));
            let d = duration.and_then(|a| a.is_valid(i).then(|| a.value(i)));
            if let Some(d) = d
                && !(0.0..=MAX_DURATION).contains(&d)
            {
                return Err(Violation::value(
                    loc!["body", "duration", i],
                    format!("duration must be from 0 to {MAX_DURATION} seconds"),
                )
                .into());
            }
            let e = match (e, d) {
                (Some(e), _) if e < s => {
                    return Err(Violation::value(
                        loc!["body", "end", i],
                        "end must not be before timestamp",
                    )
                    .into());
                }
                (Some(e), Some(d)) if ((e - s) as f64 / MICROS - d).abs() > 1.0 => {
                    return Err(Violation::value(
                        loc!["body", "duration", i],
                        "duration must equal end - start",
                    )
                    .into());
                }
                (Some(e), _) => Some(e),
                (None, Some(d)) => Some(s + (d * MICROS).round() as i64),
                (None, None) => None,
            };
            ends.push(e);
            durations.push(e.map(|e| (e - s) as f64 / MICROS));
        }
        let ends = TimestampMicrosecondArray::from(ends).with_timezone("UTC");
        Ok((Arc::new(ends), Arc::new(Float64Array::from(durations))))
    }
}

/// `column` (the input's column `name`) converted to the storage type `want`.
fn convert(column: &ArrayRef, name: &str, want: &DataType) -> Result<ArrayRef, Invalid> {
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    let converted = match (column.data_type(), want) {
        // Zone-less and zoned timestamps alike: the unit changed, then labelled with the
        // storage zone. Arrow's values are instants whatever the label, so the label is all
        // that changes; a cast from zone-less to zoned would instead read each value as a wall
        // time there, one zone lookup per value (an eighth of an Arrow push's time).
        (DataType::Timestamp(..), DataType::Timestamp(TimeUnit::Microsecond, zone)) => {
            cast_with_options(
                column,
                &DataType::Timestamp(TimeUnit::Microsecond, None),
                &options,
            )
            .map(|c| {
                let micros = c.as_primitive::<TimestampMicrosecondType>().clone();
                Arc::new(micros.with_timezone_opt(zone.clone())) as ArrayRef
            })
        }
        (DataType::Timestamp(..), DataType::Timestamp(unit, _)) => {
            cast_with_options(column, &DataType::Timestamp(*unit, None), &options)
                .and_then(|c| cast_with_options(&c, want, &options))
        }
        _ => cast_with_options(column, want, &options),
    };
    converted.map_err(|e| {
        Violation::new(
            loc!["body", name],
            "type_error",
            format!("cannot be read as {want}: {e}"),
        )
        .into()
    })
}

fn first_null(a: &dyn Array) -> Option<usize> {
    if a.null_count() == 0 {
        return None;
    }
    (0..a.len()).find(|&i| a.is_null(i))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{TimestampMillisecondArray, TimestampNanosecondArray};

    use super::*;

    /// Every timestamp column keeps its instants: zoned or not, in any unit, it is stored as
    /// microseconds labelled UTC.
    #[test]
    fn timestamps_keep_their_instants_whatever_their_zone_and_unit() {
        let want = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        // 2025-01-01T00:00:00Z and one second and a half later.
        let ms = [1_735_689_600_000, 1_735_689_601_500];
        let columns: [ArrayRef; 4] = [
            Arc::new(TimestampMillisecondArray::from(ms.to_vec())),
            Arc::new(TimestampMillisecondArray::from(ms.to_vec()).with_timezone("Europe/Berlin")),
            Arc::new(TimestampMillisecondArray::from(ms.to_vec()).with_timezone("-05:00")),
            Arc::new(
                TimestampNanosecondArray::from(ms.map(|m| m * 1_000_000).to_vec())
                    .with_timezone("UTC"),
            ),
        ];
        for column in columns {
            let label = column.data_type().to_string();
            let out = convert(&column, "timestamp", &want).unwrap();
            assert_eq!(out.data_type(), &want, "{label}");
            let micros = out
                .as_primitive::<TimestampMicrosecondType>()
                .values()
                .to_vec();
            assert_eq!(micros, ms.map(|m| m * 1000).to_vec(), "{label}");
        }
    }
}
