//! The raw payload of each summary record of a push body: what `GET /v2/summary/{part}/{user_id}/raw`
//! answers later. Parsing collects them beside the batches ([`super::PushBatches::raw`]); the
//! data plane keeps them in the health store.
//!
//! Decisions where the spec is silent:
//! - A pushed record's payload is the record exactly as pushed (members, order and numbers as
//!   the client sent them).
//! - A pulled record's payload is the provider document its connector made it from, which the
//!   typed pulled body carries beside the record ([`super::PulledRecord::document`]); a pulled
//!   record without one keeps no payload (there is nothing as received to keep).
//! - A payload is filed under its record's index instant (the instant the summary getters
//!   filter on: a sleep's end, a workout's start, a body measurement's time, an activity day's
//!   midnight UTC, a profile's `updated_at`), so a raw getter over a date range answers the
//!   payloads of the records the summary getter answers over it.
//! - Its stored document carries what the raw answer needs beside the payload: the provider,
//!   the record's id, the time it was received and, for a workout, its sport.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::columns::{Cell, Row};
use super::fields::push_key;
use crate::schema::Table;

/// One record's payload, ready for the store.
#[derive(Debug, Clone, PartialEq)]
pub struct RawPayload {
    /// The push part (`sleep`, `activity`, `workouts`, `body`, `profile`).
    pub part: &'static str,
    /// Its record's index instant, in microseconds since the epoch.
    pub at: i64,
    /// `{"provider", "id", "received_at", "sport"?, "data"}`.
    pub doc: Value,
}

/// Whether raw payloads are kept for a table's records.
pub(crate) fn kept(table: Table) -> bool {
    matches!(
        table,
        Table::Sleep | Table::Activity | Table::Workout | Table::Body | Table::Profile
    )
}

/// The payload entry of a parsed row.
pub(crate) fn payload(
    table: Table,
    row: &Row,
    provider: &str,
    data: Value,
    now: DateTime<Utc>,
) -> RawPayload {
    let at = match row.get(table.index_column()) {
        Some(Cell::Micros(m)) => *m,
        Some(Cell::Date(d)) => i64::from(*d) * 86_400_000_000,
        _ => now.timestamp_micros(),
    };
    let text = |c: &str| match row.get(c) {
        Some(Cell::Str(s)) => Some(s.clone()),
        _ => None,
    };
    let mut doc = json!({
        "provider": provider,
        "id": text("id"),
        "received_at": now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
    });
    if table == Table::Workout {
        doc["sport"] = json!({"name": text("sport_name"), "slug": text("sport_slug")});
    }
    doc["data"] = data;
    RawPayload {
        part: push_key(table),
        at,
        doc,
    }
}
