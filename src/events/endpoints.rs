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
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::signing;
use super::types::valid_pattern;
use super::url_rules::UrlRules;
use crate::loc;
use crate::store::metadata::webhooks::{self, Endpoint};
use crate::store::metadata::{MetadataError, MetadataStore, now};
use crate::users::render_time;
use crate::validation::decode::member;
use crate::validation::{Checks, Invalid, decode};

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

/// A webhook endpoint. `secret` is present only when it is created or its secret rotated.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookEndpoint {
    /// Its id.
    pub id: Uuid,
    /// Where events are delivered (https).
    pub url: String,
    /// The event types (or prefixes ending in `*`) it receives; null: every type.
    pub event_types: Option<Vec<String>>,
    /// The team's note.
    pub description: Option<String>,
    /// Created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// Whether deliveries are stopped.
    pub disabled: bool,
    /// Since when.
    #[schema(format = DateTime)]
    pub disabled_at: Option<String>,
    /// Why.
    pub disabled_reason: Option<String>,
    /// Failing since, while deliveries fail.
    #[schema(format = DateTime)]
    pub failing_since: Option<String>,
    /// The signing secret (`whsec_...`), on creation and rotation only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// When the previous secret stops signing (rotation only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub previous_secret_expires_at: Option<String>,
}

/// An endpoint as the API shows it; `secret` only when `with_secret` (creation, rotation).
pub fn render_endpoint(e: &Endpoint, with_secret: bool) -> WebhookEndpoint {
    WebhookEndpoint {
        id: e.id,
        url: e.url.clone(),
        event_types: e.event_types.clone(),
        description: e.description.clone(),
        created_at: render_time(e.created_at),
        updated_at: render_time(e.updated_at),
        disabled: e.disabled_at.is_some(),
        disabled_at: e.disabled_at.map(render_time),
        disabled_reason: e.disabled_reason.clone(),
        failing_since: e.failing_since.map(render_time),
        secret: with_secret.then(|| e.secret.clone()),
        previous_secret_expires_at: None,
    }
}

/// `POST /v2/team/webhooks`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct NewEndpointRequest {
    /// https URL (private and link-local addresses are refused).
    pub url: String,
    /// Event types to receive, or prefixes ending in `*` (absent or null: every type).
    #[serde(default)]
    pub event_types: Option<Vec<String>>,
    /// A note of at most 500 characters.
    #[serde(default)]
    pub description: Option<String>,
}

/// `PATCH /v2/team/webhooks/{id}`: absent members are left alone, `null` clears one.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct EndpointPatchRequest {
    /// https URL (private and link-local addresses are refused).
    #[serde(default)]
    pub url: Option<String>,
    /// Event types to receive (null: every type).
    #[serde(default, deserialize_with = "member::patched")]
    #[schema(value_type = Option<Vec<String>>)]
    pub event_types: Option<Option<Vec<String>>>,
    /// A note of at most 500 characters (null clears it).
    #[serde(default, deserialize_with = "member::patched")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    /// Stop (`true`) or resume (`false`) deliveries.
    #[serde(default)]
    pub disabled: Option<bool>,
}

fn check_url(checks: &mut Checks, rules: &UrlRules, raw: &str) -> String {
    match rules.check(raw) {
        Ok(url) => url.to_string(),
        Err(msg) => {
            checks.refuse(loc!["url"], raw, msg);
            String::new()
        }
    }
}

fn check_types(checks: &mut Checks, types: &[String]) {
    for (i, item) in types.iter().enumerate() {
        if !valid_pattern(item) {
            checks.refuse(loc!["event_types", i], item, format!(
                "unknown event type {item:?}; expected a name such as daily.data.sleep.created, or a prefix ending in *"
            ));
        }
    }
    if types.is_empty() {
        checks.fail(
            loc!["event_types"],
            "value_error",
            "event_types must not be empty; leave it out to receive every type",
        );
    }
}

fn check_description(checks: &mut Checks, d: &str) {
    if d.chars().count() > 500 {
        checks.fail(
            loc!["description"],
            "string_too_long",
            "description is at most 500 characters",
        );
    }
}

/// Registers an endpoint from a `POST /v2/team/webhooks` body.
pub async fn create(
    meta: &MetadataStore,
    rules: &UrlRules,
    team: Uuid,
    body: &Value,
) -> Result<Endpoint, EventsError> {
    let (req, mut checks) = decode::<NewEndpointRequest>(body, loc!["body"])?;
    let url = check_url(&mut checks, rules, &req.url);
    if let Some(types) = &req.event_types {
        check_types(&mut checks, types);
    }
    if let Some(d) = &req.description {
        check_description(&mut checks, d);
    }
    checks.finish()?;
    let (event_types, description) = (req.event_types, req.description);
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
    let (req, mut checks) = decode::<EndpointPatchRequest>(body, loc!["body"])?;
    let url = req
        .url
        .as_deref()
        .map(|raw| check_url(&mut checks, rules, raw));
    if let Some(Some(types)) = &req.event_types {
        check_types(&mut checks, types);
    }
    if let Some(Some(d)) = &req.description {
        check_description(&mut checks, d);
    }
    checks.finish()?;
    let (types, description, disabled) = (req.event_types, req.description, req.disabled);
    let mut tx = meta.begin().await?;
    let mut e = webhooks::endpoint(&mut tx, team, id)
        .await?
        .ok_or(EventsError::EndpointNotFound)?;
    if let Some(url) = url {
        e.url = url;
    }
    if let Some(types) = types {
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
