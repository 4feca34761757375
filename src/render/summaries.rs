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

use super::page::{PageBuilder, PageLimits};
use crate::ingest::columns::{Cell, cell_by_name};
use crate::ingest::fields::wire;
use crate::ingest::zone::{date_string, format_instant, local_date};
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
        Cell::Entries(entries) => entries
            .into_iter()
            .map(|e| Value::Array(e.into_iter().map(plain).collect()))
            .collect(),
    }
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

/// A cell in its wire unit (`column = wire × factor`).
fn in_wire_unit(cell: Cell, factor: f64) -> Value {
    if factor == 1.0 {
        return plain(cell);
    }
    match cell {
        Cell::Int(v) => Value::from(v as f64 / factor),
        Cell::Float(v) => Value::from(v / factor),
        other => plain(other),
    }
}

/// Sets `path` (dot-separated keys) in `obj`, creating the objects on the way.
fn insert_path(obj: &mut Map<String, Value>, path: &str, value: Value) {
    match path.split_once('.') {
        None => {
            obj.insert(path.to_owned(), value);
        }
        Some((head, rest)) => {
            let inner = obj
                .entry(head.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(inner) = inner {
                insert_path(inner, rest, value);
            }
        }
    }
}

/// Replaces nested objects whose every leaf is null by null (the reference has no object where
/// it has no value: `heart_rate`, `map`, `macros`, ...).
fn collapse_empty(value: &mut Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => {
            let mut empty = true;
            for v in map.values_mut() {
                if collapse_empty(v) {
                    *v = Value::Null;
                } else {
                    empty = false;
                }
            }
            empty
        }
        _ => false,
    }
}

fn int_cell(batch: &RecordBatch, column: &str, row: usize) -> Option<i64> {
    match cell_by_name(batch, column, row) {
        Cell::Int(v) => Some(v),
        _ => None,
    }
}

/// A sport's number: stable for its slug (the reference numbers its sports; ours are named).
pub fn sport_id(slug: &str) -> u32 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(slug.as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) & 0x7fff_ffff
}

fn render_row(table: Table, batch: &RecordBatch, row: usize, user_id: Uuid) -> Value {
    let tz = offset(batch, row);
    let mut obj = Map::new();
    let id = plain(cell_by_name(batch, "id", row));
    obj.insert("id".into(), id.clone());
    obj.insert("user_id".into(), Value::String(user_id.to_string()));
    let calendar = match cell_by_name(batch, table.index_column(), row) {
        Cell::Date(d) => date_string(d),
        Cell::Micros(m) if table == Table::Profile => local_date(m, None).to_string(),
        Cell::Micros(m) => local_date(m, tz).to_string(),
        _ => String::new(),
    };
    let midnight = Value::String(format!("{calendar}T00:00:00+00:00"));
    obj.insert("calendar_date".into(), Value::String(calendar.clone()));
    for column in table.columns() {
        let Some(place) = wire(table, column.name) else {
            continue;
        };
        let value = match (column.kind, cell_by_name(batch, column.name, row)) {
            (Kind::Instant, Cell::Micros(m)) => Value::String(format_instant(m, tz)),
            (_, cell) => in_wire_unit(cell, place.factor),
        };
        insert_path(&mut obj, place.path, value);
    }
    match table {
        Table::Sleep => sleep_members(&mut obj, batch, row, tz, midnight),
        Table::Activity => {
            obj.insert("date".into(), midnight);
        }
        Table::Body => {
            obj.insert("date".into(), midnight);
            obj.insert(
                "timezone_offset".into(),
                tz.map_or(Value::Null, Value::from),
            );
        }
        Table::Workout => workout_members(&mut obj, batch, row, tz, &id),
        Table::Meal => meal_members(&mut obj, batch, row, &calendar, midnight, &id),
        // The reference's profile admits `wheelchair_use` only as `true` or absent.
        Table::Profile => {
            if obj.get("wheelchair_use") != Some(&Value::Bool(true)) {
                obj.remove("wheelchair_use");
            }
        }
        Table::MenstrualCycle => {
            // The reference's cycle carries its source columns at the top level too.
            super::cycle::render_members(&mut obj, |c| cell_by_name(batch, c, row));
            for key in crate::schema::SOURCE_COLUMNS {
                obj.insert(key.into(), plain(cell_by_name(batch, key, row)));
            }
        }
    }
    for value in obj.values_mut() {
        if value.is_object() && collapse_empty(value) {
            *value = Value::Null;
        }
    }
    obj.insert("source".into(), source(batch, row));
    if table != Table::Profile {
        let ingested = plain(cell_by_name(batch, crate::schema::INGESTED_AT, row));
        obj.insert("created_at".into(), ingested.clone());
        obj.insert("updated_at".into(), ingested);
    }
    Value::Object(obj)
}

/// Sleep's own members: `date`, the offset in seconds, the stage totals the reference requires
/// (0 when the provider gave none) and the hypnogram as the reference's stage samples.
fn sleep_members(
    obj: &mut Map<String, Value>,
    batch: &RecordBatch,
    row: usize,
    tz: Option<i32>,
    midnight: Value,
) {
    obj.insert("date".into(), midnight);
    obj.insert(
        "timezone_offset".into(),
        tz.map_or(Value::Null, Value::from),
    );
    for key in ["duration", "total", "awake", "light", "rem", "deep"] {
        if obj.get(key).is_none_or(Value::is_null) {
            obj.insert(key.into(), Value::from(0));
        }
    }
    let stream = match cell_by_name(batch, "hypnogram", row) {
        Cell::Stages(stages) => {
            let interval = int_cell(batch, "hypnogram_interval_second", row)
                .unwrap_or(crate::ingest::summary::DEFAULT_HYPNOGRAM_INTERVAL);
            let start = match cell_by_name(batch, "session_start", row) {
                Cell::Micros(m) => m,
                _ => 0,
            };
            serde_json::json!({
                "hypnogram": super::hypnogram::stage_samples(&stages, start, interval, tz),
            })
        }
        _ => Value::Null,
    };
    obj.insert("sleep_stream".into(), stream);
}

/// Workout's own members: heart-rate zones as one list, the sport, the provider's id and the
/// offset in seconds.
fn workout_members(
    obj: &mut Map<String, Value>,
    batch: &RecordBatch,
    row: usize,
    tz: Option<i32>,
    id: &Value,
) {
    let zones: Vec<Option<f64>> = (1..=6)
        .map(
            |i| match cell_by_name(batch, &format!("heart_rate_zone_{i}"), row) {
                Cell::Float(v) => Some(v),
                _ => None,
            },
        )
        .collect();
    let hr_zones = if zones.iter().all(Option::is_none) {
        Value::Null
    } else {
        zones
            .iter()
            .map(|z| Value::from(z.unwrap_or(0.0).round() as i64))
            .collect()
    };
    obj.insert("hr_zones".into(), hr_zones);
    let name = str_cell(batch, "sport_name", row);
    let slug = str_cell(batch, "sport_slug", row);
    let sport = match (name, slug) {
        (None, None) => Value::Null,
        (name, slug) => {
            let slug = slug.or(name.clone()).unwrap_or_default();
            serde_json::json!({
                "id": sport_id(&slug),
                "name": name.unwrap_or_else(|| slug.clone()),
                "slug": slug,
            })
        }
    };
    obj.insert("sport".into(), sport);
    if obj.get("provider_id").is_none_or(Value::is_null) {
        obj.insert("provider_id".into(), id.clone());
    }
    obj.insert(
        "timezone_offset".into(),
        tz.map_or(Value::Null, Value::from),
    );
}

/// Meal's own members: the day and its midnight as `timestamp`, the reference's bookkeeping
/// numbers, the energy's unit, and the source ids at the top level as the reference has them.
fn meal_members(
    obj: &mut Map<String, Value>,
    batch: &RecordBatch,
    row: usize,
    calendar: &str,
    midnight: Value,
    id: &Value,
) {
    obj.insert("date".into(), Value::String(calendar.to_owned()));
    obj.insert("timestamp".into(), midnight);
    obj.insert("provider_id".into(), id.clone());
    if obj.get("name").is_none_or(Value::is_null) {
        obj.insert("name".into(), Value::String(String::new()));
    }
    let provider = str_cell(batch, "source_provider", row).unwrap_or_default();
    let priority = providers::DEFAULT_PRIORITY
        .iter()
        .position(|p| *p == provider)
        .map_or(0, |i| i + 1);
    let source = providers::CATALOGUE
        .iter()
        .position(|p| p.slug == provider)
        .map_or(0, |i| i + 1);
    obj.insert("priority_id".into(), Value::from(priority));
    obj.insert("source_id".into(), Value::from(source));
    obj.insert(
        "source_app_id".into(),
        str_cell(batch, "source_app_id", row).map_or(Value::Null, Value::from),
    );
    obj.insert(
        "source_device_id".into(),
        str_cell(batch, "source_device_id", row).map_or(Value::Null, Value::from),
    );
    if let Some(Value::Object(energy)) = obj.get_mut("energy")
        && energy.get("value").is_some_and(|v| !v.is_null())
    {
        energy.insert("unit".into(), Value::from("kcal"));
    }
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
