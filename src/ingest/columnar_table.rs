//! The columnar push of a summary table with list columns (`menstrual_cycle`): the rows of the
//! table as an Arrow IPC stream or a Parquet file, `resource=menstrual_cycle`, in the table's
//! own columns (`period_start`, `period_end`, `cycle_end`, `is_predicted`, `id`, and the list
//! columns as `list<struct<date, ...>>`, as the table's Parquet export carries them).
//!
//! Each row is checked by the JSON push's rules for the record, not by rules of its own: the
//! rows are written as the JSON records they stand for (Arrow's JSON writer: dates as
//! `YYYY-MM-DD`, lists of structs as arrays of objects, nulls left out) and parsed by the same
//! code as a JSON push (`summary.rs`, `cycle.rs`). A violation therefore names the row and
//! member as the JSON push would (`["body", "menstrual_cycle", 3, "basal_body_temperature", 0,
//! "value"]`). The source comes from the query parameters or from one-valued `source_*`
//! columns, exactly as for a timeseries (`columnar.rs`).
//!
//! Decision: only `menstrual_cycle` is pushed this way (its lists are awkward in JSON from a
//! DataFrame); the other summary tables are pushed as JSON.

use chrono::{DateTime, Utc};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::json::ArrayWriter;
use serde_json::{Map, Value};

use super::push::{PushBatches, PushUser, parse_push};
use crate::loc;
use crate::schema::{INGESTED_AT, SOURCE_COLUMNS, Table};
use crate::validation::{Invalid, Violation};

/// The summary tables a columnar push accepts, by `resource` name.
pub(crate) fn columnar_table(name: &str) -> Option<Table> {
    (name == Table::MenstrualCycle.name()).then_some(Table::MenstrualCycle)
}

/// The source of the push, from the parameters or the stream's `source_*` columns.
pub(crate) struct TableSource {
    pub(crate) provider: String,
    pub(crate) source_type: Option<String>,
    pub(crate) app_id: Option<String>,
    pub(crate) device_id: Option<String>,
}

/// Validates the rows of `table` in `input` into the batch the store keeps.
pub(crate) fn parse_table_rows(
    input: &RecordBatch,
    table: Table,
    source: TableSource,
    user_id: uuid::Uuid,
    now: DateTime<Utc>,
) -> Result<PushBatches, Invalid> {
    let schema = input.schema();
    let storage = table.schema();
    let mut keep = Vec::new();
    let mut violations = Vec::new();
    for (i, field) in schema.fields().iter().enumerate() {
        let name = field.name().as_str();
        if SOURCE_COLUMNS.contains(&name) {
            continue;
        }
        if name == INGESTED_AT || storage.field_with_name(name).is_err() {
            let known: Vec<&str> = storage
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .filter(|n| *n != INGESTED_AT && !SOURCE_COLUMNS.contains(n))
                .collect();
            violations.push(Violation::new(
                loc!["body", name],
                "extra_forbidden",
                format!(
                    "not a column of {}; its columns are {known:?}",
                    table.name()
                ),
            ));
            continue;
        }
        keep.push(i);
    }
    if !violations.is_empty() {
        return Err(Invalid(violations));
    }
    let rows = input
        .project(&keep)
        .map_err(|e| Violation::value(loc!["body"], format!("unreadable rows: {e}")))?;
    let mut writer = ArrayWriter::new(Vec::new());
    writer
        .write(&rows)
        .and_then(|()| writer.finish())
        .map_err(|e| Violation::value(loc!["body"], format!("unreadable rows: {e}")))?;
    let text = writer.into_inner();
    let records: Value = if text.is_empty() {
        Value::Array(Vec::new())
    } else {
        serde_json::from_slice(&text)
            .map_err(|e| Violation::value(loc!["body"], format!("unreadable rows: {e}")))?
    };
    let mut body = Map::new();
    body.insert("provider".into(), Value::from(source.provider));
    let mut src = Map::new();
    for (key, value) in [
        ("type", source.source_type),
        ("app_id", source.app_id),
        ("device_id", source.device_id),
    ] {
        if let Some(v) = value {
            src.insert(key.into(), Value::from(v));
        }
    }
    body.insert("source".into(), Value::Object(src));
    body.insert(super::push_key(table).into(), records);
    let user = PushUser {
        fallback_time_zone: None,
        user_id,
    };
    parse_push(&Value::Object(body), &user, now)
}
