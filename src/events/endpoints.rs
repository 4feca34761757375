//! The team's side of events: webhook endpoints (create, list, get, patch, delete, secret
//! rotation), their deliveries, replay of a window, the test event, and the stored event list.
//! Bodies are parsed here into violations located at `body.<member>`; the HTTP layer only
//! decodes and encodes.
//!
//! Decisions where the spec is silent:
//! - `event_types` must be known names, or prefixes of one ending in `*`; an empty list is
//!   refused (it would receive nothing). PATCH takes `url`, `event_types` (null: every type),
//!   `description` and `disabled` (false re-enables a disabled endpoint and clears its failure
//!   run; true disables it now).
//! - Rotation keeps the previous secret signing for 24 h; rotating again inside that window
//!   replaces the previous secret with the one being retired.
//! - Replay sends the window's stored events that the endpoint subscribes to, as new deliveries
//!   after the stream's pending ones, with the events' own ids.
//! - The test event is stored and delivered like any other, to every enabled endpoint that
//!   subscribes to its type, with a sample `data` and no user.
//! - Events are listed oldest first from `since` (default: the 30 days kept); the cursor is the
//!   last event's id.

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use super::types::{EventType, matches, valid_pattern};
use super::url_rules::UrlRules;
use super::{Event, outbox, signing};
use crate::loc;
use crate::store::metadata::events::{
    Delivery, DeliveryStatus, EventFilter, EventPosition, StoredEvent, event, list_deliveries,
    list_events,
};
use crate::store::metadata::webhooks::{self, Endpoint};
use crate::store::metadata::{MetadataError, MetadataStore, now};
use crate::users::render_time;
use crate::validation::{Invalid, ObjectReader, Violation};

/// How long the previous secret keeps signing after a rotation.
pub const ROTATION_OVERLAP: Duration = Duration::hours(24);

/// How long events are kept (and listed).
pub const RETENTION: Duration = Duration::days(30);

/// Failures of the endpoint operations.
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    /// The input was rejected.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// No such endpoint for this team.
    #[error("webhook endpoint not found")]
    EndpointNotFound,
    /// The metadata store failed.
    #[error("metadata store: {0}")]
    Metadata(#[from] MetadataError),
}

/// An endpoint as the API shows it; `secret` only when `with_secret` (creation, rotation).
pub fn render_endpoint(e: &Endpoint, with_secret: bool) -> Value {
    let mut v = json!({
        "id": e.id,
        "url": e.url,
        "event_types": e.event_types,
        "description": e.description,
        "created_at": render_time(e.created_at),
        "updated_at": render_time(e.updated_at),
        "disabled": e.disabled_at.is_some(),
        "disabled_at": e.disabled_at.map(render_time),
        "disabled_reason": e.disabled_reason,
        "failing_since": e.failing_since.map(render_time),
    });
    if with_secret {
        v["secret"] = json!(e.secret);
    }
    v
}

fn url_member(r: &mut ObjectReader, rules: &UrlRules, required: bool) -> Option<String> {
    let raw = r.string("url", required)?;
    match rules.check(raw) {
        Ok(url) => Some(url.to_string()),
        Err(msg) => {
            r.fail("url", "value_error", msg);
            None
        }
    }
}

/// `Some(None)`: every type (absent on create, null); `None`: invalid (recorded).
fn types_member(r: &mut ObjectReader) -> Option<Option<Vec<String>>> {
    let list = match r.raw("event_types") {
        None | Some(Value::Null) => return Some(None),
        Some(Value::Array(list)) => list,
        Some(_) => {
            r.fail(
                "event_types",
                "list_type",
                "Input should be a valid list of event type names",
            );
            return None;
        }
    };
    let mut out = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        match item.as_str() {
            Some(p) if valid_pattern(p) => out.push(p.to_owned()),
            _ => {
                let mut l = r.loc_of("event_types");
                l.push(i.into());
                r.violations.push(
                    Violation::value(l, format!(
                        "unknown event type {item}; expected a name such as daily.data.sleep.created, or a prefix ending in *"
                    ))
                    .with_input(item.clone()),
                );
            }
        }
    }
    if list.is_empty() {
        r.fail(
            "event_types",
            "value_error",
            "event_types must not be empty; leave it out to receive every type",
        );
        return None;
    }
    Some(Some(out))
}

fn description_member(r: &mut ObjectReader) -> Option<String> {
    let d = r.string("description", false)?;
    if d.chars().count() > 500 {
        r.fail(
            "description",
            "string_too_long",
            "description is at most 500 characters",
        );
    }
    Some(d.to_owned())
}

/// Registers an endpoint from a `POST /v2/team/webhooks` body.
pub async fn create(
    meta: &MetadataStore,
    rules: &UrlRules,
    team: Uuid,
    body: &Value,
) -> Result<Endpoint, EventsError> {
    let mut r = ObjectReader::new(body, loc!["body"]);
    r.deny_unknown(&["url", "event_types", "description"]);
    let url = url_member(&mut r, rules, true);
    let types = types_member(&mut r);
    let description = description_member(&mut r);
    r.finish()?;
    let (Some(url), Some(event_types)) = (url, types) else {
        return Err(Invalid(vec![Violation::value(loc!["body"], "invalid endpoint")]).into());
    };
    let at = now();
    let endpoint = Endpoint {
        id: Uuid::new_v4(),
        team_id: team,
        url,
        event_types,
        description,
        secret: signing::new_secret(),
        previous_secret: None,
        previous_expires_at: None,
        failing_since: None,
        disabled_at: None,
        disabled_reason: None,
        created_at: at,
        updated_at: at,
    };
    webhooks::insert_endpoint(&mut *meta.writer().await?, &endpoint).await?;
    Ok(endpoint)
}

/// The team's endpoints.
pub async fn list(meta: &MetadataStore, team: Uuid) -> Result<Vec<Endpoint>, EventsError> {
    Ok(webhooks::endpoints(&mut *meta.reader().await?, team).await?)
}

/// One of the team's endpoints.
pub async fn get(meta: &MetadataStore, team: Uuid, id: Uuid) -> Result<Endpoint, EventsError> {
    webhooks::endpoint(&mut *meta.reader().await?, team, id)
        .await?
        .ok_or(EventsError::EndpointNotFound)
}

/// Changes an endpoint from a `PATCH` body.
pub async fn patch(
    meta: &MetadataStore,
    rules: &UrlRules,
    team: Uuid,
    id: Uuid,
    body: &Value,
) -> Result<Endpoint, EventsError> {
    let mut r = ObjectReader::new(body, loc!["body"]);
    r.deny_unknown(&["url", "event_types", "description", "disabled"]);
    let url = url_member(&mut r, rules, false);
    let types = r.raw("event_types").is_some().then(|| types_member(&mut r));
    let description = r.raw("description").map(|_| description_member(&mut r));
    let disabled = match r.raw("disabled") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            r.fail("disabled", "bool_type", "Input should be a valid boolean");
            None
        }
    };
    r.finish()?;
    let mut tx = meta.begin().await?;
    let mut e = webhooks::endpoint(&mut tx, team, id)
        .await?
        .ok_or(EventsError::EndpointNotFound)?;
    if let Some(url) = url {
        e.url = url;
    }
    if let Some(Some(types)) = types {
        e.event_types = types;
    }
    if let Some(description) = description {
        e.description = description;
    }
    let at = now();
    match disabled {
        Some(true) if e.disabled_at.is_none() => {
            e.disabled_at = Some(at);
            e.disabled_reason = Some("disabled by the team".to_owned());
        }
        Some(false) => {
            e.disabled_at = None;
            e.disabled_reason = None;
            e.failing_since = None;
        }
        _ => {}
    }
    e.updated_at = at;
    webhooks::update_endpoint(&mut tx, &e).await?;
    tx.commit().await.map_err(MetadataError::from)?;
    Ok(e)
}

/// Removes an endpoint and its deliveries.
pub async fn delete(meta: &MetadataStore, team: Uuid, id: Uuid) -> Result<(), EventsError> {
    let mut tx = meta.begin().await?;
    if !webhooks::delete_endpoint(&mut tx, team, id).await? {
        return Err(EventsError::EndpointNotFound);
    }
    tx.commit().await.map_err(MetadataError::from)?;
    Ok(())
}

/// Gives an endpoint a new secret; the current one keeps signing for [`ROTATION_OVERLAP`].
pub async fn rotate(meta: &MetadataStore, team: Uuid, id: Uuid) -> Result<Endpoint, EventsError> {
    let mut tx = meta.begin().await?;
    let mut e = webhooks::endpoint(&mut tx, team, id)
        .await?
        .ok_or(EventsError::EndpointNotFound)?;
    let at = now();
    e.previous_secret = Some(std::mem::replace(&mut e.secret, signing::new_secret()));
    e.previous_expires_at = Some(at + ROTATION_OVERLAP);
    e.updated_at = at;
    webhooks::update_endpoint(&mut tx, &e).await?;
    tx.commit().await.map_err(MetadataError::from)?;
    Ok(e)
}

/// A delivery as the API shows it.
pub fn render_delivery(d: &Delivery) -> Value {
    json!({
        "id": d.id,
        "event_id": d.event_id,
        "event_type": d.event_type,
        "status": d.status.as_str(),
        "attempts": d.attempts,
        "last_attempt_at": d.last_attempt_at.map(render_time),
        "status_code": d.last_status_code,
        "duration_ms": d.last_duration_ms,
        "error": d.last_error,
        "next_attempt_at": d.next_attempt_at.filter(|_| d.status == DeliveryStatus::Pending).map(render_time),
        "created_at": render_time(d.created_at),
    })
}

/// A page of an endpoint's deliveries, newest first, and the cursor of the next page.
pub async fn deliveries(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
    status: Option<DeliveryStatus>,
    cursor: Option<Uuid>,
    limit: i64,
) -> Result<(Vec<Delivery>, Option<Uuid>), EventsError> {
    let mut conn = meta.reader().await?;
    webhooks::endpoint(&mut conn, team, id)
        .await?
        .ok_or(EventsError::EndpointNotFound)?;
    let after = match cursor {
        None => None,
        Some(c) => {
            let d = crate::store::metadata::events::delivery(&mut conn, id, c)
                .await?
                .ok_or_else(|| bad_cursor("next_cursor"))?;
            Some((d.created_at, d.id))
        }
    };
    let page = list_deliveries(&mut conn, id, status, after, limit + 1).await?;
    Ok(split_page(page, limit, |d| d.id))
}

fn split_page<T>(mut page: Vec<T>, limit: i64, id: impl Fn(&T) -> Uuid) -> (Vec<T>, Option<Uuid>) {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if page.len() > limit {
        page.truncate(limit);
        let next = page.last().map(id);
        (page, next)
    } else {
        (page, None)
    }
}

fn bad_cursor(name: &str) -> EventsError {
    Invalid(vec![Violation::value(
        loc!["query", name],
        "unknown cursor; pass the next_cursor of a previous answer",
    )])
    .into()
}

fn instant(r: &mut ObjectReader, key: &str, required: bool) -> Option<DateTime<Utc>> {
    let s = r.string(key, required)?;
    match DateTime::parse_from_rfc3339(s) {
        Ok(t) => Some(t.with_timezone(&Utc)),
        Err(_) => {
            r.fail(
                key,
                "datetime_parsing",
                format!("Input should be an ISO 8601 date-time with offset, got {s:?}"),
            );
            None
        }
    }
}

/// Re-sends an endpoint's subscribed events created in `[since, until)`; answers how many.
pub async fn replay(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
    body: &Value,
) -> Result<usize, EventsError> {
    let mut r = ObjectReader::new(body, loc!["body"]);
    r.deny_unknown(&["since", "until"]);
    let since = instant(&mut r, "since", true);
    let until = instant(&mut r, "until", false);
    if let (Some(s), Some(u)) = (since, until)
        && u <= s
    {
        r.fail("until", "value_error", "until must be after since");
    }
    r.finish()?;
    let since = since.unwrap_or_default();
    let mut tx = meta.begin().await?;
    let endpoint = webhooks::endpoint(&mut tx, team, id)
        .await?
        .ok_or(EventsError::EndpointNotFound)?;
    if endpoint.disabled_at.is_some() {
        return Err(Invalid(vec![Violation::value(
            loc!["path", "id"],
            "the endpoint is disabled; re-enable it (PATCH disabled: false) before replaying",
        )])
        .into());
    }
    let filter = EventFilter {
        team,
        user: None,
        event_type: None,
        since,
        until,
    };
    let at = now();
    let mut after: Option<EventPosition> = None;
    let mut count = 0usize;
    loop {
        let page = list_events(&mut tx, &filter, after.as_ref(), 500).await?;
        let Some(last) = page.last() else { break };
        after = Some(position(last));
        for e in &page {
            if matches(endpoint.event_types.as_deref(), &e.event_type) {
                let mut r = outbox::EventRef::from(e);
                r.ordinal = i64::try_from(count).unwrap_or(i64::MAX);
                outbox::deliver(&mut tx, &endpoint, &r, at).await?;
                count += 1;
            }
        }
    }
    tx.commit().await.map_err(MetadataError::from)?;
    if count > 0 {
        meta.jobs_wake().notify_waiters();
    }
    Ok(count)
}

fn position(e: &StoredEvent) -> EventPosition {
    EventPosition {
        created_at: e.created_at,
        ordinal: e.ordinal,
        id: e.id,
    }
}

/// Stores and sends a sample event of the type a `POST /v2/team/events/test` body names;
/// answers its id and how many endpoints it goes to.
pub async fn test_event(
    meta: &MetadataStore,
    team: Uuid,
    body: &Value,
) -> Result<(Uuid, usize), EventsError> {
    let mut r = ObjectReader::new(body, loc!["body"]);
    r.deny_unknown(&["event_type"]);
    let name = r.string("event_type", true);
    let event_type = name.and_then(EventType::parse);
    if name.is_some() && event_type.is_none() {
        r.fail(
            "event_type",
            "enum",
            "unknown event type; expected a name of events.md such as daily.data.sleep.created",
        );
    }
    r.finish()?;
    let Some(event_type) = event_type else {
        return Err(Invalid(vec![Violation::value(
            loc!["body", "event_type"],
            "missing",
        )])
        .into());
    };
    let event = Event {
        event_type,
        user: None,
        data: json!({ "test": true, "message": "a sample event sent by POST /v2/team/events/test" }),
    };
    let out = outbox::publish(meta, team, &[event]).await?;
    let id = out.events.first().copied().unwrap_or_default();
    Ok((id, out.deliveries))
}

/// A stored event as the list shows it: its id and time, then the envelope's members.
pub fn render_event(e: &StoredEvent) -> Value {
    let mut v = serde_json::from_str::<Value>(&e.body).unwrap_or_else(|_| json!({}));
    if let Some(obj) = v.as_object_mut() {
        obj.insert("id".to_owned(), json!(e.id));
        obj.insert("created_at".to_owned(), json!(render_time(e.created_at)));
    }
    v
}

/// A page of the team's stored events, oldest first, and the cursor of the next page.
pub async fn events(
    meta: &MetadataStore,
    team: Uuid,
    user: Option<Uuid>,
    event_type: Option<String>,
    since: Option<DateTime<Utc>>,
    cursor: Option<Uuid>,
    limit: i64,
) -> Result<(Vec<StoredEvent>, Option<Uuid>), EventsError> {
    let kept_from = now() - RETENTION;
    let filter = EventFilter {
        team,
        user,
        event_type,
        since: since.map_or(kept_from, |s| s.max(kept_from)),
        until: None,
    };
    let mut conn = meta.reader().await?;
    let after = match cursor {
        None => None,
        Some(c) => {
            let e = event(&mut conn, c)
                .await?
                .filter(|e| e.team_id == team)
                .ok_or_else(|| bad_cursor("next_cursor"))?;
            Some(position(&e))
        }
    };
    let page = list_events(&mut conn, &filter, after.as_ref(), limit + 1).await?;
    Ok(split_page(page, limit, |e| e.id))
}
