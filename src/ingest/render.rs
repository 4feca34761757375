//! Getter rendering (`data-model.md` "Reading and writing"): stored rows back to the JSON the
//! push API accepts, plus the read-only members (`user_id`, `calendar_date`, `source`,
//! `created_at`, `updated_at`).
//!
//! Decisions where the spec is silent:
//! - Instants render in the row's own offset (`timezone_offset`), else `Z`; `calendar_date` is
//!   the local day of the index instant in that offset (UTC without one); profile's is the UTC
//!   day of `updated_at`.
//! - Summary `created_at`/`updated_at` are the row's `ingested_at` (profile has its own).
//! - Rows are ordered by index time, then provider; absent values render as `null`, except
//!   `sleep_stream` (null without a hypnogram) and the optional sample source fields
//!   (`source_workout_id`, `source_sport`), which are left out when null.

use datafusion::arrow::record_batch::RecordBatch;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::columns::{Cell, cell_by_name};
use super::fields::json_name;
use super::page::{PageBuilder, PageLimits};
use super::zone::{format_instant, local_date};
use crate::providers;
use crate::schema::{Kind, Resource, Table};

/// A cell as plain JSON (instants in UTC, dates as `YYYY-MM-DD`).
pub(crate) fn plain(cell: Cell) -> Value {
    match cell {
        Cell::Null => Value::Null,
        Cell::Str(s) => Value::String(s),
        Cell::Int(v) => Value::from(v),
        Cell::Float(v) => Value::from(v),
        Cell::Bool(v) => Value::Bool(v),
        Cell::Date(d) => Value::String(date_string(d)),
        Cell::Micros(m) => Value::String(format_instant(m, None)),
        Cell::Stages(s) => Value::from(s),
    }
}

/// Days since the epoch as `YYYY-MM-DD`.
pub(crate) fn date_string(days: i32) -> String {
    local_date(i64::from(days) * 86_400_000_000, None).to_string()
}

fn str_cell(batch: &RecordBatch, column: &str, row: usize) -> Option<String> {
    match cell_by_name(batch, column, row) {
        Cell::Str(s) => Some(s),
        _ => None,
    }
}

/// The row's `timezone_offset`, when it has one.
pub(crate) fn offset(batch: &RecordBatch, row: usize) -> Option<i32> {
    match cell_by_name(batch, crate::schema::TIMEZONE_OFFSET, row) {
        Cell::Int(v) => i32::try_from(v).ok(),
        _ => None,
    }
}

/// The `source` object of a row: its source columns plus the catalogue's name, slug and logo.
pub(crate) fn source(batch: &RecordBatch, row: usize) -> Value {
    let provider = str_cell(batch, "source_provider", row).unwrap_or_default();
    let entry = providers::provider(&provider);
    serde_json::json!({
        "provider": provider,
        "type": str_cell(batch, "source_type", row),
        "app_id": str_cell(batch, "source_app_id", row),
        "device_id": str_cell(batch, "source_device_id", row),
        "name": entry.map(|p| p.name),
        "slug": entry.map(|p| p.slug),
        "logo": entry.map(|p| p.logo.clone()),
    })
}

fn index_micros(table: Table, batch: &RecordBatch, row: usize) -> i64 {
    match cell_by_name(batch, table.index_column(), row) {
        Cell::Micros(m) => m,
        Cell::Date(d) => i64::from(d) * 86_400_000_000,
        _ => 0,
    }
}

fn render_row(table: Table, batch: &RecordBatch, row: usize, user_id: Uuid) -> Value {
    let tz = offset(batch, row);
    let mut obj = Map::new();
    obj.insert("id".into(), plain(cell_by_name(batch, "id", row)));
    obj.insert("user_id".into(), Value::String(user_id.to_string()));
    let calendar = match cell_by_name(batch, table.index_column(), row) {
        Cell::Date(d) => date_string(d),
        Cell::Micros(m) if table == Table::Profile => local_date(m, None).to_string(),
        Cell::Micros(m) => local_date(m, tz).to_string(),
        _ => String::new(),
    };
    obj.insert("calendar_date".into(), Value::String(calendar));
    for column in table.columns().iter().filter(|c| c.name != "id") {
        let value = match (column.kind, cell_by_name(batch, column.name, row)) {
            (Kind::Instant, Cell::Micros(m)) => Value::String(format_instant(m, tz)),
            (_, cell) => plain(cell),
        };
        obj.insert(json_name(table, column.name).to_owned(), value);
    }
    if table == Table::Sleep {
        let stream = match cell_by_name(batch, "hypnogram", row) {
            Cell::Stages(stages) => {
                let interval = match cell_by_name(batch, "hypnogram_interval_second", row) {
                    Cell::Int(i) => i,
                    _ => super::summary::DEFAULT_HYPNOGRAM_INTERVAL,
                };
                serde_json::json!({"hypnogram": stages, "interval": interval})
            }
            _ => Value::Null,
        };
        obj.insert("sleep_stream".into(), stream);
    }
    obj.insert("source".into(), source(batch, row));
    if table != Table::Profile {
        let ingested = plain(cell_by_name(batch, crate::schema::INGESTED_AT, row));
        obj.insert("created_at".into(), ingested.clone());
        obj.insert("updated_at".into(), ingested);
    }
    Value::Object(obj)
}

/// Renders summary rows of one table, ordered by index time then provider.
pub fn render_summaries(table: Table, batches: &[RecordBatch], user_id: Uuid) -> Vec<Value> {
    let mut rows: Vec<(i64, String, Value)> = batches
        .iter()
        .flat_map(|b| (0..b.num_rows()).map(move |r| (b, r)))
        .map(|(b, r)| {
            let provider = str_cell(b, "source_provider", r).unwrap_or_default();
            (
                index_micros(table, b, r),
                provider,
                render_row(table, b, r, user_id),
            )
        })
        .collect();
    rows.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    rows.into_iter().map(|(_, _, v)| v).collect()
}

/// Renders the latest profile (greatest `updated_at`, then latest ingested) of the given rows.
pub fn render_profile(batches: &[RecordBatch], user_id: Uuid) -> Option<Value> {
    let key = |b: &RecordBatch, r: usize| {
        let m = |c| match cell_by_name(b, c, r) {
            Cell::Micros(m) => m,
            _ => i64::MIN,
        };
        (m("updated_at"), m(crate::schema::INGESTED_AT))
    };
    batches
        .iter()
        .flat_map(|b| (0..b.num_rows()).map(move |r| (b, r)))
        .max_by_key(|(b, r)| key(b, *r))
        .map(|(b, r)| render_row(Table::Profile, b, r, user_id))
}

/// Renders samples of one resource in paging order (timestamp, then source), as `Value`s: for
/// tests and small sets; the HTTP layer pages and streams them (see `page.rs`).
pub fn render_samples(resource: Resource, batches: &[RecordBatch]) -> Vec<Value> {
    let limits = PageLimits {
        rows: usize::MAX,
        bytes: usize::MAX,
    };
    let mut page = PageBuilder::new(resource, None, limits);
    page.feed(batches.to_vec());
    let mut out = Vec::new();
    // Writing to a Vec cannot fail; the bytes are JSON by construction.
    let _ = page.finish().write_plain(&mut out);
    serde_json::from_slice(&out).unwrap_or_default()
}
