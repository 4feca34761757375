//! The team's webhook endpoints: create, list, get, patch, delete, secret rotation (what was
//! sent to them, and the stored events, are `history.rs`). Bodies are parsed here into
//! violations located at `body.<member>`; the HTTP layer only decodes and encodes.
//!
//! Decisions where the spec is silent:
//! - `event_types` must be known names, or prefixes of one ending in `*`; an empty list is
//!   refused (it would receive nothing). PATCH takes `url`, `event_types` (null: every type),
//!   `description` and `disabled` (false re-enables a disabled endpoint and clears its failure
//!   run; true disables it now).
//! - Rotation keeps the previous secret signing for 24 h; rotating again inside that window
//!   replaces the previous secret with the one being retired.

use chrono::Duration;
use serde_json::{Value, json};
use uuid::Uuid;

use super::signing;
use super::types::valid_pattern;
use super::url_rules::UrlRules;
use crate::loc;
use crate::store::metadata::webhooks::{self, Endpoint};
use crate::store::metadata::{MetadataError, MetadataStore, now};
use crate::users::render_time;
use crate::validation::{Invalid, ObjectReader, Violation};

/// How long the previous secret keeps signing after a rotation.
pub const ROTATION_OVERLAP: Duration = Duration::hours(24);

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
