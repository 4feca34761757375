//! A user's provider list (`GET /v2/user/providers/{user_id}`): each connection with its
//! catalogue details and per-resource availability.
//!
//! Availability (the spec names the values `available` and `unavailable` only): a resource the
//! provider supports is `available` when the connection is `connected` and the user has stored
//! data of that resource, else `unavailable`. Scope requirements are empty: no provider of this
//! deployment asks for OAuth scopes yet.

use serde_json::{Value, json};

use super::DataError;
use crate::providers;
use crate::schema::{Dataset, Table};
use crate::store::health::HealthStore;
use crate::store::metadata::{ConnectionStatus, MetadataStore, User};
use crate::users::render_time;

/// The resource name a dataset is listed under (`workouts`, `heartrate`, ...).
pub fn resource_name(dataset: Dataset) -> &'static str {
    match dataset {
        Dataset::Table(Table::Workout) => "workouts",
        Dataset::Table(t) => t.name(),
        Dataset::Timeseries(r) => r.name,
    }
}

/// The entries of the user's provider list, oldest connection first.
pub async fn provider_entries(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
) -> Result<Vec<Value>, DataError> {
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
            let availability: serde_json::Map<String, Value> = catalogued
                .map(|p| p.supported_resources)
                .unwrap_or_default()
                .iter()
                .map(|r| {
                    let available = c.status == ConnectionStatus::Connected && stored.contains(r);
                    let scopes = json!({
                        "user_granted": {"required": [], "optional": []},
                        "user_denied": {"required": [], "optional": []},
                    });
                    let status = if available {
                        "available"
                    } else {
                        "unavailable"
                    };
                    (
                        (*r).to_owned(),
                        json!({ "status": status, "scope_requirements": scopes }),
                    )
                })
                .collect();
            json!({
                "name": catalogued.map_or(c.provider.as_str(), |p| p.name),
                "slug": c.provider,
                "logo": catalogued.map(|p| p.logo.clone()),
                "status": c.status.as_str(),
                "created_on": render_time(c.created_at),
                "resource_availability": availability,
                "error_details": null,
            })
        })
        .collect())
}
