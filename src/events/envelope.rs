//! An event as the caller builds it ([`Event`]) and as receivers get it: the envelope
//! `{event_type, data, user_id, client_user_id, team_id}` of `events.md`.
//!
//! An event's `data` is built from a serde type by [`Event::new`] (the types of `data` are in
//! [`super::data`] and in the emitting domains) and held as JSON, so the outbox, the record
//! splitting and the listing handle every event alike; the envelope is a serde type too.

use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::types::EventType;

/// The largest envelope one event may carry (`events.md`); larger data sets are split.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Where record sets are actually split: a quarter of the limit. Bodies of a whole mebibyte,
/// written to the outbox one after another, left ~50 MiB of heap behind on a million-sample
/// push (the memory test's budget is 4x the push body); quarter-size bodies leave none.
pub const SPLIT_BYTES: usize = MAX_BODY_BYTES / 4;

/// Room left for the envelope around `data`'s records (type, ids, source).
const ENVELOPE_ROOM: usize = 16 * 1024;

/// The user an event concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventUser {
    /// The service's user id.
    pub id: Uuid,
    /// The team's id for the user.
    pub client_user_id: String,
}

impl EventUser {
    /// The user an event concerns.
    pub fn of(user: &crate::store::metadata::User) -> Self {
        EventUser {
            id: user.id,
            client_user_id: user.client_user_id.clone(),
        }
    }
}

/// A provider as connection and historical-pull events carry it: `{name, slug, logo}` (one
/// shape in every event, so a receiver reads one).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProviderRef {
    /// Its display name (the slug for a provider the catalogue no longer has).
    pub name: String,
    /// Its slug.
    pub slug: String,
    /// Its logo's URL, when the catalogue has it.
    pub logo: Option<String>,
}

impl ProviderRef {
    /// The provider of `slug`, as events carry it.
    pub fn of(slug: &str) -> ProviderRef {
        let entry = crate::providers::provider(slug);
        ProviderRef {
            name: entry.map_or(slug, |p| p.name).to_owned(),
            slug: slug.to_owned(),
            logo: entry.map(|p| p.logo.clone()),
        }
    }
}

/// An event to emit: its type, the user it concerns (if any) and its `data`.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The type.
    pub event_type: EventType,
    /// The user.
    pub user: Option<EventUser>,
    /// The `data` member, rendered by the domain that emits it.
    pub data: Value,
}

/// The envelope receivers get, members in the order they have always come.
#[derive(Serialize)]
struct Envelope<'a> {
    event_type: String,
    data: &'a Value,
    user_id: Option<Uuid>,
    client_user_id: Option<&'a str>,
    team_id: Uuid,
}

impl Event {
    /// An event of `event_type` about `user` whose `data` is `data`'s JSON. The types given
    /// are plain structs of ids, strings, numbers and JSON, whose JSON cannot fail; one that
    /// did is logged and carries `null`, never a panic.
    pub fn new(event_type: EventType, user: Option<EventUser>, data: &impl Serialize) -> Event {
        let data = serde_json::to_value(data).unwrap_or_else(|e| {
            tracing::error!(event_type = %event_type.name(), error = %e, "event data not JSON");
            Value::Null
        });
        Event {
            event_type,
            user,
            data,
        }
    }

    /// The envelope of this event for `team`, as the JSON text every delivery sends.
    pub fn envelope(&self, team: Uuid) -> String {
        let envelope = Envelope {
            event_type: self.event_type.name(),
            data: &self.data,
            user_id: self.user.as_ref().map(|u| u.id),
            client_user_id: self.user.as_ref().map(|u| u.client_user_id.as_str()),
            team_id: team,
        };
        // Ids, strings and JSON: writing them cannot fail.
        serde_json::to_string(&envelope).unwrap_or_default()
    }

    /// The events carrying `records` as `{data: [...], source}`: one event, or several when the
    /// records would make a body over [`MAX_BODY_BYTES`] (each record stays whole; records are
    /// kept in order).
    pub fn records(
        event_type: EventType,
        user: EventUser,
        records: Vec<Value>,
        source: Value,
    ) -> Vec<Event> {
        let budget = Event::records_budget(&source);
        let mut chunks: Vec<Vec<Value>> = Vec::new();
        let mut current = Vec::new();
        let mut size = 0;
        for record in records {
            let len = record.to_string().len() + 1;
            if !current.is_empty() && size + len > budget {
                chunks.push(std::mem::take(&mut current));
                size = 0;
            }
            size += len;
            current.push(record);
        }
        if !current.is_empty() {
            chunks.push(current);
        }
        chunks
            .into_iter()
            .map(|chunk| Event::record_chunk(event_type, user.clone(), chunk, source.clone()))
            .collect()
    }

    /// The bytes of records (serialized, one separator each) one event carries with `source`:
    /// its body stays under [`SPLIT_BYTES`], so well under [`MAX_BODY_BYTES`].
    pub fn records_budget(source: &Value) -> usize {
        SPLIT_BYTES - ENVELOPE_ROOM - source.to_string().len().min(ENVELOPE_ROOM)
    }

    /// One event carrying `records` as `{data: [...], source}` (the caller keeps it under
    /// [`Event::records_budget`]).
    pub fn record_chunk(
        event_type: EventType,
        user: EventUser,
        records: Vec<Value>,
        source: Value,
    ) -> Event {
        let mut data = Map::new();
        data.insert("data".to_owned(), Value::Array(records));
        data.insert("source".to_owned(), source);
        Event {
            event_type,
            user: Some(user),
            data: Value::Object(data),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn large_record_sets_split_under_the_body_limit_in_order() {
        let user = EventUser {
            id: Uuid::new_v4(),
            client_user_id: "c".to_owned(),
        };
        let records: Vec<Value> = (0..40_000)
            .map(|i| json!({"timestamp": i, "value": 60.5, "unit": "bpm", "pad": "x".repeat(20)}))
            .collect();
        let events = Event::records(
            EventType::DailyCreated("heartrate"),
            user.clone(),
            records,
            json!({"provider": "oura"}),
        );
        assert!(events.len() >= 2, "{}", events.len());
        let mut next = 0;
        for (i, e) in events.iter().enumerate() {
            let body = e.envelope(Uuid::new_v4());
            assert!(body.len() <= SPLIT_BYTES, "{}", body.len());
            if i + 1 < events.len() {
                assert!(
                    body.len() > SPLIT_BYTES / 2,
                    "events are filled: {}",
                    body.len()
                );
            }
            for r in e.data["data"].as_array().unwrap_or(&Vec::new()) {
                assert_eq!(r["timestamp"], next);
                next += 1;
            }
        }
        assert_eq!(next, 40_000);
        let one = Event::records(
            EventType::DailyCreated("sleep"),
            user,
            vec![json!({})],
            json!({}),
        );
        let body: Value = serde_json::from_str(&one[0].envelope(Uuid::nil())).unwrap_or_default();
        assert_eq!(body["event_type"], "daily.data.sleep.created");
        for key in ["data", "user_id", "client_user_id", "team_id"] {
            assert!(body.get(key).is_some(), "{key}");
        }
    }

    #[test]
    fn the_envelope_is_the_json_it_always_was() {
        let team = Uuid::new_v4();
        let user = EventUser {
            id: Uuid::new_v4(),
            client_user_id: "c\"1".to_owned(),
        };
        let data = json!({"b": 1, "a": [1.5, null]});
        for user in [Some(user), None] {
            let event = Event {
                event_type: EventType::DailyCreated("sleep"),
                user: user.clone(),
                data: data.clone(),
            };
            let (id, client) = match &user {
                Some(u) => (json!(u.id), json!(u.client_user_id)),
                None => (Value::Null, Value::Null),
            };
            let before = json!({
                "event_type": "daily.data.sleep.created",
                "data": data,
                "user_id": id,
                "client_user_id": client,
                "team_id": team,
            })
            .to_string();
            assert_eq!(event.envelope(team), before);
        }
    }
}
