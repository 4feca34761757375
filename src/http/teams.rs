//! `/v2/team/source/priorities`: the team's provider order per data type, used by the aggregate
//! engine's provider prioritisation (`aggregate-dsl.md` §3.5).
//!
//! `GET ?data_type=sleep` answers `[{"data_type": "sleep", "priorities": [...]}]`: the team's
//! configured order, or the default order when it has set none (`"configured": false`), in a
//! list as the reference SDK reads it. Without `data_type` it answers every data type. `PATCH ?data_type=sleep` with
//! `{"priorities": ["oura", ...]}` replaces the order: slugs must be catalogue providers, listed
//! once; providers left out rank after the listed ones in the default order.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{AuthTeam, Decoded, QueryParams};
use crate::loc;
use crate::providers::{self, DEFAULT_PRIORITY};
use crate::validation::Violation;

/// The data types a team orders providers for.
pub const DATA_TYPES: [&str; 6] = [
    "sleep",
    "activity",
    "workouts",
    "body",
    "meal",
    "timeseries",
];

/// A team's provider order for one data type.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Priorities {
    /// sleep, activity, workouts, body, meal or timeseries.
    data_type: &'static str,
    /// Whether the team set it (else it is the default order).
    configured: bool,
    /// Provider slugs, first wins.
    priorities: Vec<String>,
}

/// `PATCH /v2/team/source/priorities`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PrioritiesRequest {
    /// Catalogue provider slugs, each once, first wins.
    priorities: Vec<String>,
}

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_priorities, patch_priorities))
}

fn data_type(query: &QueryParams, required: bool) -> Result<Option<&'static str>, ApiError> {
    let Some(raw) = query.get("data_type") else {
        if required {
            return Err(ApiError::invalid(Violation::new(
                crate::loc!["query", "data_type"],
                "missing",
                format!("Field required; expected one of: {}", DATA_TYPES.join(", ")),
            )));
        }
        return Ok(None);
    };
    DATA_TYPES
        .iter()
        .find(|t| **t == raw)
        .map(|t| Some(*t))
        .ok_or_else(|| {
            ApiError::invalid(
                Violation::value(
                    crate::loc!["query", "data_type"],
                    format!(
                        "unknown data_type {raw:?}; expected one of: {}",
                        DATA_TYPES.join(", ")
                    ),
                )
                .with_input(Value::from(raw)),
            )
        })
}

/// The team's provider order for one or every data type.
#[utoipa::path(get, path = "/v2/team/source/priorities", tag = "team",
    params(("data_type" = Option<String>, Query, description = "sleep, activity, workouts, body, meal or timeseries")),
    responses((status = 200, description = "The order of `data_type`, or of every data type, as a list (the reference SDK's shape)", body = Vec<Priorities>),
              (status = 422, description = "Unknown data_type", body = super::models::ValidationError)),
    security(("api_key" = [])))]
async fn get_priorities(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<Vec<Priorities>>, ApiError> {
    let configured = state.meta.team_priorities(team.0.id).await?;
    let entry = |t: &'static str| {
        let own = configured.get(t);
        Priorities {
            data_type: t,
            configured: own.is_some(),
            priorities: own
                .cloned()
                .unwrap_or_else(|| DEFAULT_PRIORITY.iter().map(|s| (*s).to_owned()).collect()),
        }
    };
    Ok(Json(match data_type(&query, false)? {
        Some(t) => vec![entry(t)],
        None => DATA_TYPES.iter().map(|t| entry(t)).collect(),
    }))
}

/// Replace the team's provider order for one data type.
#[utoipa::path(patch, path = "/v2/team/source/priorities", tag = "team",
    params(("data_type" = String, Query, description = "sleep, activity, workouts, body, meal or timeseries")),
    request_body(content = PrioritiesRequest),
    responses((status = 200, description = "The stored order, as a list of one", body = Vec<Priorities>),
              (status = 422, description = "Missing or unknown data_type, unknown or repeated provider", body = super::models::ValidationError)),
    security(("api_key" = [])))]
async fn patch_priorities(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
    Decoded(body, mut checks): Decoded<PrioritiesRequest>,
) -> Result<Json<Vec<Priorities>>, ApiError> {
    let data_type = data_type(&query, true)?.unwrap_or("timeseries");
    let mut order: Vec<String> = Vec::new();
    for (i, slug) in body.priorities.into_iter().enumerate() {
        if providers::provider(&slug).is_none() {
            checks.refuse(
                loc!["priorities", i],
                &slug,
                format!("unknown provider {slug:?}"),
            );
        } else if order.contains(&slug) {
            checks.refuse(
                loc!["priorities", i],
                &slug,
                format!("provider {slug:?} is listed twice"),
            );
        } else {
            order.push(slug);
        }
    }
    checks.finish()?;
    state
        .meta
        .set_team_priorities(team.0.id, data_type, &order)
        .await?;
    Ok(Json(vec![Priorities {
        data_type,
        configured: true,
        priorities: order,
    }]))
}
