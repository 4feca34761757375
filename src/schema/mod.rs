//! The normalised tables of `spec/data-model.md` as Arrow schemas: the one place that says which
//! columns exist, their types and which of them the query language may name.
//!
//! The store writes these schemas to Parquet, ingest builds record batches with them and the
//! aggregate engine validates column names and types against them. Nothing else defines columns.
//!
//! Conventions shared by every schema:
//! - instants are `Timestamp(Microsecond, "UTC")`; local calendar days are `Date32`;
//! - every row carries its source (`source_provider`, `source_type`, `source_app_id`,
//!   `source_device_id`) and `ingested_at`, the instant the store accepted it (newest wins on
//!   replacement, and it breaks `oldest`/`newest` ties);
//! - tables whose index is an instant carry `timezone_offset` (`Int32`, seconds east of UTC,
//!   nullable), derived at ingest from the row's own zone, so floating time needs no parsing at
//!   query time.

mod dataset;
mod derived;
mod lists;
mod resources;
mod source;
mod tables;

pub use dataset::Dataset;
pub use derived::Derived;
pub use lists::{Element, ListColumn, allowed_element_values};
pub use resources::{Family, RESOURCES, Resource, resource};
pub use source::{
    ConstantProofs, SourceRows, constant_str, repeated_str, rows_by_source, source_columns,
};
pub use tables::{Column, Kind, Table};

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// The Arrow type of every stored instant: microseconds since the epoch, in UTC.
pub fn utc_timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// Source attribute columns present on every table, in storage order.
pub const SOURCE_COLUMNS: [&str; 4] = [
    "source_provider",
    "source_type",
    "source_app_id",
    "source_device_id",
];

/// Source attributes the query language may name (`{"source": S}`).
pub const QUERYABLE_SOURCES: [&str; 5] = [
    "source_provider",
    "source_type",
    "source_app_id",
    "source_workout_id",
    "source_sport",
];

/// Name of the ingestion-time column present on every table.
pub const INGESTED_AT: &str = "ingested_at";
/// Name of the per-row offset column (seconds east of UTC) on instant-indexed tables.
pub const TIMEZONE_OFFSET: &str = "timezone_offset";

/// The columns every table and timeseries family ends with: its source and ingestion time.
fn trailer(extra_sources: bool) -> Vec<Field> {
    let mut fields = vec![
        Field::new("source_provider", DataType::Utf8, false),
        Field::new("source_type", DataType::Utf8, false),
        Field::new("source_app_id", DataType::Utf8, true),
        Field::new("source_device_id", DataType::Utf8, true),
    ];
    if extra_sources {
        fields.push(Field::new("source_workout_id", DataType::Utf8, true));
        fields.push(Field::new("source_sport", DataType::Utf8, true));
    }
    fields.push(Field::new(INGESTED_AT, utc_timestamp(), false));
    fields
}

/// Builds a schema from leading fields plus the shared trailer.
fn with_trailer(mut fields: Vec<Field>, extra_sources: bool) -> SchemaRef {
    fields.extend(trailer(extra_sources));
    Arc::new(Schema::new(fields))
}

/// The storage schema of one timeseries family. `resource` is not stored (a folder holds one
/// resource); readers that mix resources add it as a column of their own.
pub fn timeseries_schema(family: Family) -> SchemaRef {
    // Built once per process: every read, write and plan asks for it.
    static SCHEMAS: [std::sync::OnceLock<SchemaRef>; Family::ALL.len()] =
        [const { std::sync::OnceLock::new() }; Family::ALL.len()];
    let i = Family::ALL.iter().position(|f| *f == family).unwrap_or(0);
    SCHEMAS[i]
        .get_or_init(|| build_timeseries_schema(family))
        .clone()
}

fn build_timeseries_schema(family: Family) -> SchemaRef {
    let f64n = |name: &str| Field::new(name, DataType::Float64, true);
    let utf8n = |name: &str| Field::new(name, DataType::Utf8, true);
    let mut fields = vec![
        Field::new("timestamp", utc_timestamp(), false),
        Field::new(TIMEZONE_OFFSET, DataType::Int32, true),
        utf8n("type"),
        utf8n("unit"),
    ];
    let interval = || Field::new("end", utc_timestamp(), true);
    match family {
        Family::Discrete => fields.push(f64n("value")),
        Family::Interval => fields.extend([interval(), f64n("duration"), f64n("value")]),
        Family::Insulin => fields.extend([
            interval(),
            f64n("duration"),
            f64n("value"),
            utf8n("delivery_mode"),
            utf8n("delivery_form"),
            utf8n("bolus_purpose"),
        ]),
        Family::BloodPressure => fields.extend([f64n("systolic"), f64n("diastolic")]),
        Family::Temperature => fields.extend([
            interval(),
            f64n("duration"),
            f64n("value"),
            utf8n("sensor_location"),
        ]),
        Family::WorkoutDuration => fields.extend([
            interval(),
            f64n("duration"),
            f64n("value"),
            utf8n("intensity"),
        ]),
        Family::Note => fields.extend([interval(), utf8n("content"), utf8n("tags")]),
    }
    with_trailer(fields, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_schema_has_the_shared_columns() {
        for family in Family::ALL {
            let schema = timeseries_schema(family);
            for name in ["timestamp", TIMEZONE_OFFSET, "source_provider", INGESTED_AT] {
                assert!(
                    schema.field_with_name(name).is_ok(),
                    "{family:?} lacks {name}"
                );
            }
        }
    }

    #[test]
    fn every_field_a_family_lists_is_in_its_schema() {
        for r in RESOURCES {
            let schema = timeseries_schema(r.family);
            for field in r.family.fields() {
                assert!(
                    schema.field_with_name(field).is_ok(),
                    "{} lacks {field}",
                    r.name
                );
            }
        }
    }
}
