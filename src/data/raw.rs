//! Raw summaries (`GET /v2/summary/{sleep|activity|workouts|body|profile|devices}/{user_id}/raw`):
//! the payloads behind a user's summary records as received, in the reference's `RawSleep`,
//! `RawActivity`, `RawWorkout`, `RawBody`, `ProfileInDb` and `RawDevice` shapes. Parsing
//! collects the payloads (`crate::ingest::raw`); [`keep`] stores them with the push
//! ([`HealthStore::write_raw`], compressed JSON in the user's store folder, never in the
//! metadata database); the getters read them back by date range.
//!
//! Decisions where the reference is silent:
//! - `data` is the provider's document as its API answered it for pulled records, the record as
//!   pushed for pushed ones. A pull of a provider whose document is not one summary record
//!   (glucose-only providers: Dexcom, FreeStyle Libre) keeps none.
//! - A record received more than once (overlapping pulls, a re-push) answers once: its newest
//!   payload, by (provider, record id). Entries are ordered by `timestamp`, then provider and id.
//! - `timestamp` is the record's index instant, the one the summary getters filter on (a sleep's
//!   end, a workout's start, a measurement's time, an activity day's midnight UTC), so a raw
//!   getter over a date range answers the payloads of the records the summary getter answers;
//!   `provider_id` is the record's id, `id` a UUID derived from the user, part, provider and
//!   record id; `created_at`/`updated_at` when it was received; `source_id` and `priority_id`
//!   the provider's place in the catalogue and in the default priorities (as meals carry them);
//!   `source_device_id` null (wearhouse keeps no device registry).
//! - The raw profile is the newest profile payload (of `provider` when given); none is a 404,
//!   as for `GET /v2/summary/profile`.
//! - Raw devices are the user's devices (`devices.rs`, same ids), each with the source as it was
//!   pushed or pulled (`{"type", "app_id", "device_id"}`) as `data`: no connector fetches a
//!   device document, and a push names its device by its `source`.
//! - Storing the payloads follows the push's commit: a failure there is logged and the push
//!   still succeeds (its data is durable; only its raw payloads are missing).

use std::collections::HashMap;
use std::ops::Range;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::DataError;
use crate::events::ProviderRef;
use crate::ingest::raw::RawPayload;
use crate::providers;
use crate::store::health::{HealthStore, RAW_PARTS, RawDocument};
use crate::store::metadata::{MetadataStore, User};

/// Stores a push's payloads, one file per part; a failure is logged (see the module docs).
pub async fn keep(store: &HealthStore, user: &User, raw: Vec<RawPayload>) {
    let mut by_part: HashMap<&'static str, Vec<RawDocument>> = HashMap::new();
    for p in raw {
        by_part.entry(p.part).or_default().push(RawDocument {
            at: p.at,
            doc: p.doc,
        });
    }
    for (part, docs) in by_part {
        if let Err(error) = store.write_raw(user.team_id, user.id, part, docs).await {
            tracing::warn!(%error, user = %user.id, part, "could not keep a push's raw payloads");
        }
    }
}

/// The newest payload of each record of `part` in `window`, of `provider` when given, oldest
/// first.
async fn newest(
    store: &HealthStore,
    user: &User,
    part: &str,
    window: Option<Range<DateTime<Utc>>>,
    provider: Option<&str>,
) -> Result<Vec<RawDocument>, DataError> {
    debug_assert!(RAW_PARTS.contains(&part));
    let micros = window.map(|w| w.start.timestamp_micros()..w.end.timestamp_micros());
    let docs = store.read_raw(user.team_id, user.id, part, micros).await?;
    let key = |d: &RawDocument| {
        (
            d.doc["provider"].as_str().unwrap_or_default().to_owned(),
            d.doc["id"].as_str().unwrap_or_default().to_owned(),
        )
    };
    // Files come oldest first: a later document of a record replaces the earlier one.
    let mut latest: HashMap<(String, String), RawDocument> = HashMap::new();
    for doc in docs {
        if provider.is_none_or(|p| doc.doc["provider"] == p) {
            latest.insert(key(&doc), doc);
        }
    }
    let mut out: Vec<RawDocument> = latest.into_values().collect();
    out.sort_by_key(|d| (d.at, key(d)));
    Ok(out)
}

fn instant(micros: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(micros)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The provider's place in the catalogue and in the default priorities (1-based, 0: none).
fn numbers(provider: &str) -> (usize, usize) {
    let source = providers::CATALOGUE
        .iter()
        .position(|p| p.slug == provider)
        .map_or(0, |i| i + 1);
    let priority = providers::DEFAULT_PRIORITY
        .iter()
        .position(|p| *p == provider)
        .map_or(0, |i| i + 1);
    (source, priority)
}

/// One stored document in the reference's raw shape of `part`.
fn render(user: &User, part: &str, d: RawDocument) -> Value {
    let provider = d.doc["provider"].as_str().unwrap_or_default().to_owned();
    let record = d.doc["id"].as_str().unwrap_or_default().to_owned();
    let received = d.doc["received_at"].clone();
    let (source_id, priority_id) = numbers(&provider);
    let id = crate::ingest::derive_id(&["raw", &user.id.to_string(), part, &provider, &record]);
    let mut out = json!({
        "timestamp": instant(d.at),
        "data": d.doc["data"],
        "user_id": user.id,
        "provider_id": record,
        "source_id": source_id,
        "priority_id": priority_id,
        "id": id,
        "source_device_id": null,
        "created_at": received,
        "updated_at": received,
        "source": ProviderRef::of(&provider),
    });
    if part == "workouts" {
        let sport = &d.doc["sport"];
        let slug = sport["slug"]
            .as_str()
            .or(sport["name"].as_str())
            .unwrap_or("other")
            .to_owned();
        let name = sport["name"].as_str().unwrap_or(&slug).to_owned();
        let number = crate::render::sport_id(&slug);
        out["sport_id"] = json!(number);
        out["sport"] = json!({"id": number, "name": name, "slug": slug});
    }
    out
}

/// The raw summaries of `part` (`sleep`, `activity`, `workouts`, `body`) in `window`.
pub async fn summaries(
    store: &HealthStore,
    user: &User,
    part: &str,
    window: Range<DateTime<Utc>>,
    provider: Option<&str>,
) -> Result<Vec<Value>, DataError> {
    let docs = newest(store, user, part, Some(window), provider).await?;
    Ok(docs.into_iter().map(|d| render(user, part, d)).collect())
}

/// The newest raw profile (of `provider` when given), as the reference's `ProfileInDb`.
pub async fn profile(
    store: &HealthStore,
    user: &User,
    provider: Option<&str>,
) -> Result<Option<Value>, DataError> {
    let docs = newest(store, user, "profile", None, provider).await?;
    let newest = docs.into_iter().max_by(|a, b| {
        (a.at, &a.doc["received_at"].as_str()).cmp(&(b.at, &b.doc["received_at"].as_str()))
    });
    Ok(newest.map(|d| {
        let mut out = render(user, "profile", d);
        if let Some(obj) = out.as_object_mut() {
            for member in ["timestamp", "provider_id", "source_device_id"] {
                obj.remove(member);
            }
        }
        out
    }))
}

/// The user's devices (of `provider` when given) as the reference's `RawDevice`.
pub async fn devices(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    provider: Option<&str>,
) -> Result<Vec<Value>, DataError> {
    let devices = super::devices::devices(meta, store, user).await?;
    Ok(devices
        .into_iter()
        .filter(|d| provider.is_none_or(|p| d.provider == p))
        .map(|d| {
            let mut data = json!({"type": d.source_type});
            if let Some(app) = &d.app_id {
                data["app_id"] = json!(app);
            }
            if let Some(device) = &d.device_id {
                data["device_id"] = json!(device);
            }
            let own = d
                .device_id
                .clone()
                .or(d.app_id.clone())
                .unwrap_or_else(|| d.source_type.clone());
            json!({
                "data": data,
                "provider_id": own,
                "user_id": d.user_id,
                "source_id": numbers(&d.provider).0,
                "id": d.id,
                "source": ProviderRef::of(&d.provider),
            })
        })
        .collect())
}
