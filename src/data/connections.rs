//! A user's provider list (`GET /v2/user/providers/{user_id}`): each connection with its
//! catalogue details and per-resource availability.
//!
//! Availability (the spec names the values `available` and `unavailable` only): a resource the
//! provider supports is `available` when the connection is `connected` and the user has stored
//! data of that resource, else `unavailable`. Scope requirements are empty: no provider of this
//! deployment asks for OAuth scopes yet.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::DataError;
use crate::providers;
use crate::schema::{Dataset, Table};
use crate::store::health::HealthStore;
use crate::store::metadata::{ConnectionStatus, MetadataStore, User};
use crate::users::wire::instant;

/// The resource name a dataset is listed under (`workouts`, `heartrate`, ...).
pub fn resource_name(dataset: Dataset) -> &'static str {
    match dataset {
        Dataset::Table(Table::Workout) => "workouts",
        Dataset::Table(t) => t.name(),
        Dataset::Timeseries(r) => r.name,
    }
}

/// Scope names a grant requires and allows.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct Scopes {
    /// Required scopes.
    pub required: Vec<String>,
    /// Optional scopes.
    pub optional: Vec<String>,
}

/// The scopes the user granted and denied.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct ScopeRequirements {
    /// Granted.
    pub user_granted: Scopes,
    /// Denied.
    pub user_denied: Scopes,
}

/// Whether one resource of a connection has data.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Availability {
    /// `available` or `unavailable`.
    pub status: &'static str,
    /// The scopes behind it.
    pub scope_requirements: ScopeRequirements,
}

/// One entry of a user's provider list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProviderEntry {
    /// Display name.
    pub name: String,
    /// Provider slug.
    pub slug: String,
    /// Logo URL.
    pub logo: String,
    /// Connection status: connected, paused, error or deregistered.
    pub status: &'static str,
    /// When the connection was made.
    #[serde(serialize_with = "instant")]
    pub created_on: DateTime<Utc>,
    /// Per supported resource.
    pub resource_availability: BTreeMap<String, Availability>,
    /// Why the connection failed, when it did (no connection of this deployment records one).
    #[schema(value_type = Option<Object>)]
    pub error_details: Option<serde_json::Value>,
}

/// The entries of the user's provider list, oldest connection first.
pub async fn provider_entries(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
) -> Result<Vec<ProviderEntry>, DataError> {
    let connections = meta.connections(user.id).await?;
    if connections.is_empty() {
        return Ok(Vec::new());
    }
    let stored: Vec<&str> = store
        .datasets(user.team_id, user.id)
        .await?
        .into_iter()
        .map(resource_name)
        .collect();
    Ok(connections
        .iter()
        .map(|c| {
            let catalogued = providers::provider(&c.provider);
            let resource_availability = catalogued
                .map(|p| p.supported_resources)
                .unwrap_or_default()
                .iter()
                .map(|r| {
                    let available = c.status == ConnectionStatus::Connected && stored.contains(r);
                    let status = if available {
                        "available"
                    } else {
                        "unavailable"
                    };
                    let entry = Availability {
                        status,
                        scope_requirements: ScopeRequirements::default(),
                    };
                    ((*r).to_owned(), entry)
                })
                .collect();
            ProviderEntry {
                name: catalogued
                    .map_or(c.provider.as_str(), |p| p.name)
                    .to_owned(),
                slug: c.provider.clone(),
                logo: catalogued.map(|p| p.logo.clone()).unwrap_or_default(),
                status: c.status.as_str(),
                created_on: c.created_at,
                resource_availability,
                error_details: None,
            }
        })
        .collect())
}
