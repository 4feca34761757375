//! The grouped timeseries getter: samples grouped by provider, then by source, with cursor
//! pagination.
//!
//! Decisions where the spec is silent:
//! - Samples are paged in (timestamp, provider, source type, app id, device id) order, `limit`
//!   samples a page (at least 1); a page is then grouped. `next_cursor` is null on the last page.
//! - The cursor is opaque to clients: the hex of the sort key of the first sample of the next
//!   page, so pages stay stable while new data arrives after them. A cursor that does not decode
//!   is a 422 at `["query", "cursor"]`.

use datafusion::arrow::record_batch::RecordBatch;
use serde_json::{Map, Value};

use super::columns::{Cell, cell_by_name};
use super::render::{sample, source};
use crate::loc;
use crate::schema::Resource;
use crate::validation::{Invalid, Violation};

type Key = (i64, String, String, String, String);

fn key(batch: &RecordBatch, row: usize) -> Key {
    let s = |c| match cell_by_name(batch, c, row) {
        Cell::Str(s) => s,
        _ => String::new(),
    };
    let ts = match cell_by_name(batch, "timestamp", row) {
        Cell::Micros(m) => m,
        _ => 0,
    };
    (
        ts,
        s("source_provider"),
        s("source_type"),
        s("source_app_id"),
        s("source_device_id"),
    )
}

fn encode(key: &Key) -> String {
    let text = format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
        key.0, key.1, key.2, key.3, key.4
    );
    hex::encode(text)
}

fn decode(cursor: &str) -> Option<Key> {
    let text = String::from_utf8(hex::decode(cursor).ok()?).ok()?;
    let mut parts = text.split('\u{1f}');
    let ts = parts.next()?.parse().ok()?;
    let mut next = || parts.next().map(str::to_owned);
    let key = (ts, next()?, next()?, next()?, next()?);
    parts.next().is_none().then_some(key)
}

/// Renders one page of samples grouped by provider and source.
pub fn render_grouped(
    resource: Resource,
    batches: &[RecordBatch],
    cursor: Option<&str>,
    limit: usize,
) -> Result<Value, Invalid> {
    let from = cursor
        .map(|c| {
            decode(c).ok_or_else(|| {
                Violation::value(loc!["query", "cursor"], "Invalid cursor")
                    .with_input(Value::from(c))
            })
        })
        .transpose()?;
    let mut rows: Vec<(Key, &RecordBatch, usize)> = batches
        .iter()
        .flat_map(|b| (0..b.num_rows()).map(move |r| (key(b, r), b, r)))
        .filter(|(k, _, _)| from.as_ref().is_none_or(|f| k >= f))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let limit = limit.max(1);
    let next_cursor = rows.get(limit).map(|(k, _, _)| Value::String(encode(k)));
    rows.truncate(limit);

    // provider -> [(source key, source object, data)] in first-seen order
    let mut groups: Map<String, Value> = Map::new();
    let mut index: Vec<(Key, usize)> = Vec::new();
    for (k, batch, row) in rows {
        let provider = k.1.clone();
        let group_key: Key = (0, k.1, k.2, k.3, k.4);
        let list = groups
            .entry(provider)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(list) = list else { continue };
        let slot = match index.iter().find(|(g, _)| *g == group_key) {
            Some((_, i)) => *i,
            None => {
                list.push(serde_json::json!({"source": source(batch, row), "data": []}));
                index.push((group_key, list.len() - 1));
                list.len() - 1
            }
        };
        if let Some(Value::Array(data)) = list.get_mut(slot).and_then(|g| g.get_mut("data")) {
            data.push(sample(resource, batch, row));
        }
    }
    Ok(serde_json::json!({
        "groups": groups,
        "next_cursor": next_cursor.unwrap_or(Value::Null),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let k: Key = (42, "oura".into(), "ring".into(), String::new(), "d1".into());
        assert_eq!(decode(&encode(&k)), Some(k));
        assert_eq!(decode("zz"), None);
        assert_eq!(decode(&hex::encode("1\u{1f}a")), None);
    }
}
