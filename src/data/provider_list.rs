//! A user's provider list (`GET /v2/user/providers/{user_id}`): each connection with its
//! catalogue details and per-resource availability.
//!
//! Availability (`linking.md` §Connections): a resource the provider supports is `available`
//! when the connection is `connected` and the scopes the resource needs were granted, else
//! `unavailable`. The scopes come from [`crate::providers::scopes`]; a connection recorded
//! without a grant (push, demo) counts every scope as granted, a linked one exactly those the
//! provider granted (the rest are denied).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::DataError;
use crate::providers;
use crate::providers::scopes;
use crate::schema::{Dataset, Table};
use crate::store::metadata::connections::ErrorDetails;
use crate::store::metadata::{Connection, ConnectionStatus, MetadataStore, User};
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
    /// The provider's required and optional scopes, split by what the user granted.
    pub scope_requirements: ScopeRequirements,
    /// Why the connection failed (`error` connections), else null.
    pub error_details: Option<ErrorDetails>,
}

/// Splits `wanted` into (granted, denied) under the connection's grant.
fn split(wanted: &[&str], connection: &Connection) -> (Vec<String>, Vec<String>) {
    wanted.iter().map(|s| (*s).to_owned()).partition(|s| {
        connection
            .scopes_granted
            .as_ref()
            .is_none_or(|g| g.contains(s))
    })
}

/// The scope requirements of `required` and `optional` scopes under the connection's grant.
fn requirements(required: &[&str], optional: &[&str], c: &Connection) -> ScopeRequirements {
    let (req_granted, req_denied) = split(required, c);
    let (opt_granted, opt_denied) = split(optional, c);
    ScopeRequirements {
        user_granted: Scopes {
            required: req_granted,
            optional: opt_granted,
        },
        user_denied: Scopes {
            required: req_denied,
            optional: opt_denied,
        },
    }
}

/// The provider-list entry of one connection.
pub fn entry(c: &Connection) -> ProviderEntry {
    let catalogued = providers::provider(&c.provider);
    let resource_availability = catalogued
        .map(|p| {
            p.supported_resources
                .iter()
                .map(|r| {
                    let needs = scopes::resource_scopes(p, r);
                    let scope_requirements = requirements(&needs, &[], c);
                    let available = c.status == ConnectionStatus::Connected
                        && scope_requirements.user_denied.required.is_empty();
                    let status = if available {
                        "available"
                    } else {
                        "unavailable"
                    };
                    let entry = Availability {
                        status,
                        scope_requirements,
                    };
                    ((*r).to_owned(), entry)
                })
                .collect()
        })
        .unwrap_or_default();
    let scope_requirements = catalogued
        .map(|p| {
            let s = scopes::scopes(p);
            requirements(&s.required, &s.optional, c)
        })
        .unwrap_or_default();
    ProviderEntry {
        name: catalogued
            .map_or(c.provider.as_str(), |p| p.name)
            .to_owned(),
        slug: c.provider.clone(),
        logo: catalogued.map(|p| p.logo.clone()).unwrap_or_default(),
        status: c.status.as_str(),
        created_on: c.created_at,
        resource_availability,
        scope_requirements,
        error_details: c.error_details.clone(),
    }
}

/// The entries of the user's provider list, oldest connection first.
pub async fn provider_entries(
    meta: &MetadataStore,
    user: &User,
) -> Result<Vec<ProviderEntry>, DataError> {
    Ok(meta.connections(user.id).await?.iter().map(entry).collect())
}
