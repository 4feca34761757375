//! Demo mode: connecting a demo-capable provider generates and stores synthetic history for the
//! user through the same validation and write path as a client's push.
//!
//! The generator's seed comes from the user id, so every provider connected to one user
//! describes the same life: a ring and a watch of one user overlap on the same nights.
//! The day bodies of one provider are merged into one push per source before writing, so 90
//! days land as a handful of segments, not hundreds.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Map, Value};

use super::DataError;
use super::connections::resource_name;
use crate::events::outbox;
use crate::ingest::demo::{self, Persona};
use crate::ingest::{PushUser, parse_push};
use crate::store::health::HealthStore;
use crate::store::metadata::{
    self, ConnectionStatus, MetadataError, MetadataStore, User, connections,
};
use crate::validation::{Invalid, Violation};

/// Default history length of a demo connection, in days.
pub const DEFAULT_DAYS: u32 = 90;

/// The seed of a user's demo life: the first eight bytes of its id.
pub fn seed_for(user: &User) -> u64 {
    let bytes = user.id.as_bytes();
    u64::from_le_bytes([
        bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
    ])
}

/// Parses a persona name (`regular`, `traveller`, `athlete`).
pub fn persona(name: &str) -> Option<Persona> {
    match name {
        "regular" => Some(Persona::Regular),
        "traveller" => Some(Persona::Traveller),
        "athlete" => Some(Persona::Athlete),
        _ => None,
    }
}

/// Merges day bodies that share provider and source into one body each, keeping order.
pub fn merge_bodies(bodies: Vec<Value>) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::new();
    for body in bodies {
        let Value::Object(parts) = body else { continue };
        let same_source = |m: &Value| {
            m.get("provider") == parts.get("provider") && m.get("source") == parts.get("source")
        };
        let index = match merged.iter().position(same_source) {
            Some(i) => i,
            None => {
                let mut head = Map::new();
                for key in ["provider", "source"] {
                    if let Some(v) = parts.get(key) {
                        head.insert(key.to_owned(), v.clone());
                    }
                }
                merged.push(Value::Object(head));
                merged.len() - 1
            }
        };
        let Some(target) = merged[index].as_object_mut() else {
            continue;
        };
        for (key, value) in parts {
            match (key.as_str(), value) {
                ("provider" | "source", _) => {}
                ("profile", v) => {
                    target.entry("profile").or_insert(v);
                }
                ("timeseries", Value::Object(series)) => {
                    let slot = target
                        .entry("timeseries")
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Some(slot) = slot.as_object_mut() {
                        for (resource, samples) in series {
                            append(
                                slot.entry(resource)
                                    .or_insert_with(|| Value::Array(Vec::new())),
                                samples,
                            );
                        }
                    }
                }
                (_, v) => append(
                    target
                        .entry(key)
                        .or_insert_with(|| Value::Array(Vec::new())),
                    v,
                ),
            }
        }
    }
    merged
}

fn append(slot: &mut Value, more: Value) {
    if let (Some(list), Value::Array(items)) = (slot.as_array_mut(), more) {
        list.extend(items);
    }
}

/// Connects a demo provider: generates `days` days ending `end`, stores them, records the
/// connection, and emits `provider.connection.created` (a new connection) and one
/// `historical.data.<resource>.created` per resource written, after the last chunk, in the
/// connection's transaction. Answers the counts stored.
#[allow(clippy::too_many_arguments)]
pub async fn connect(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    provider: &str,
    persona: Persona,
    days: u32,
    end: NaiveDate,
    now: DateTime<Utc>,
) -> Result<Vec<Value>, DataError> {
    let bodies = demo::generate(provider, persona, seed_for(user), end, days).map_err(|e| {
        Invalid(vec![Violation::value(
            crate::loc!["body", "provider"],
            e.to_string(),
        )])
    })?;
    let zone = PushUser {
        fallback_time_zone: super::fallback_zone(user),
    };
    let mut counts = Vec::new();
    let mut written: Vec<&'static str> = Vec::new();
    for body in merge_bodies(bodies) {
        let parsed = parse_push(&body, &zone, now)?;
        counts.push(parsed.counts());
        for dataset in super::write_parsed(meta, store, user, parsed).await? {
            let name = resource_name(dataset);
            if !written.contains(&name) {
                written.push(name);
            }
        }
    }
    let start = end - chrono::Days::new(u64::from(days.saturating_sub(1)));
    let mut events = Vec::new();
    let mut tx = meta.begin().await?;
    let had = connections::connections(&mut tx, user.id)
        .await?
        .iter()
        .any(|c| c.provider == provider);
    connections::upsert_connection(&mut tx, user.id, provider, ConnectionStatus::Connected).await?;
    if !had {
        events.push(super::connection_created(store, user, provider, &[]).await?);
    }
    events.extend(super::historical_created(
        user,
        provider,
        &written,
        (start, end),
    ));
    let enqueued = outbox::enqueue(&mut tx, user.team_id, &events, metadata::now()).await?;
    tx.commit().await.map_err(MetadataError::from)?;
    if enqueued.deliveries > 0 {
        meta.jobs_wake().notify_waiters();
    }
    Ok(counts)
}
