//! The team as the reference's SDKs read it (issue 42): `GET /v2/team/{team_id}` (the
//! reference's `ClientFacingTeam`), `GET /v2/team/{team_id}/physicians` and
//! `GET /v2/team/users/search?query_id=`.
//!
//! Decisions where the reference leaves room:
//! - a key reads only its own team: another team's id answers 404 exactly like an unknown one;
//! - wearhouse has no organisations above teams, so `org_id` is the team's own id; the
//!   reference's secrets and third-party settings (`client_secret`, `api_key`, `api_keys`,
//!   `webhook_secret`, Svix, Airtable) are always `null`: keys are shown once at creation
//!   (`/v2/team/keys`), webhook secrets by their endpoint; no patient is messaged, so every
//!   `*_communication_enabled` is `false`; orders carry the team's own physician, so
//!   `delegated_flow` is `order_and_results_with_customer_physician_network`;
//! - physicians are those the team's orders named (`physician` of `POST /v3/order`), one per
//!   NPI with the latest name given, by last name;
//! - search (`query_id`, at least 2 characters): users whose id starts with it or whose
//!   `client_user_id` contains it, case-insensitively, oldest first, at most 100
//!   (`store::metadata::user_search`); without `query_id`, the team's first 100 users.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::AppState;
use super::error::ApiError;
use super::extract::{AuthTeam, PathId, QueryParams};
use super::models;
use super::users::render;
use crate::store::metadata::lab::physicians;
use crate::store::metadata::user_search::{self, SEARCH_LIMIT};
use crate::users::wire::UserResource;
use crate::validation::Violation;

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_team))
        .routes(routes!(team_physicians))
        .routes(routes!(search_users))
}

/// The team (the reference's `ClientFacingTeam`; module docs for each member's value here).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TeamResource {
    /// The team's id.
    pub id: Uuid,
    /// The team's id again: there are no organisations above teams.
    pub org_id: Uuid,
    /// Display name.
    pub name: String,
    /// Always `null` (no Svix application).
    pub svix_app_id: Option<String>,
    /// Always `null`.
    pub client_id: Option<String>,
    /// Always `null`: secrets are never returned.
    pub client_secret: Option<String>,
    /// Always `null`.
    pub airtable_api_key: Option<String>,
    /// Always `null`.
    pub airtable_base_id: Option<String>,
    /// Always `null`: each webhook endpoint has its own secret.
    pub webhook_secret: Option<String>,
    /// Always `null`: keys are shown once, at creation.
    pub api_key: Option<String>,
    /// Always `null`: list keys (without their values) with `GET /v2/team/keys`.
    pub api_keys: Option<Vec<Value>>,
    /// Always `null`.
    pub configuration: Option<Value>,
    /// Always `false` (deprecated in the reference).
    pub testkits_texts_enabled: bool,
    /// Always `false`: no patient is messaged.
    pub lab_tests_patient_communication_enabled: bool,
    /// Always `false`.
    pub lab_tests_patient_sms_communication_enabled: bool,
    /// Always `false`.
    pub lab_tests_patient_email_communication_enabled: bool,
    /// Always `null`.
    pub logo_url: Option<String>,
    /// `order_and_results_with_customer_physician_network`: orders name the team's physician.
    pub delegated_flow: String,
    /// Always `null`.
    pub critical_result_notification_email: Option<String>,
}

/// A physician the team ordered under.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TeamPhysician {
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// National Provider Identifier.
    pub npi: String,
}

/// The team of the key, when `id` is it.
fn own_team(team: &AuthTeam, id: Uuid) -> Result<(), ApiError> {
    if team.0.id == id {
        Ok(())
    } else {
        Err(ApiError::NotFound("Team"))
    }
}

/// Read the key's team.
#[utoipa::path(get, path = "/v2/team/{team_id}", tag = "team",
    params(("team_id" = Uuid, Path, description = "The key's own team (another id answers 404)")),
    responses((status = 200, description = "The team", body = TeamResource),
              (status = 404, description = "Not the key's team", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn get_team(team: AuthTeam, PathId(id): PathId) -> Result<Json<TeamResource>, ApiError> {
    own_team(&team, id)?;
    let t = team.0;
    Ok(Json(TeamResource {
        id: t.id,
        org_id: t.id,
        name: t.name,
        svix_app_id: None,
        client_id: None,
        client_secret: None,
        airtable_api_key: None,
        airtable_base_id: None,
        webhook_secret: None,
        api_key: None,
        api_keys: None,
        configuration: None,
        testkits_texts_enabled: false,
        lab_tests_patient_communication_enabled: false,
        lab_tests_patient_sms_communication_enabled: false,
        lab_tests_patient_email_communication_enabled: false,
        logo_url: None,
        delegated_flow: "order_and_results_with_customer_physician_network".to_owned(),
        critical_result_notification_email: None,
    }))
}

/// The physicians the team's orders named, one per NPI, by last name.
#[utoipa::path(get, path = "/v2/team/{team_id}/physicians", tag = "team",
    params(("team_id" = Uuid, Path, description = "The key's own team (another id answers 404)")),
    responses((status = 200, description = "The physicians", body = Vec<TeamPhysician>),
              (status = 404, description = "Not the key's team", body = models::ErrorDetail)),
    security(("api_key" = [])))]
async fn team_physicians(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<Vec<TeamPhysician>>, ApiError> {
    own_team(&team, id)?;
    let rows = physicians::list(&mut *state.meta.reader().await?, id).await?;
    Ok(Json(
        rows.into_iter()
            .map(|p| TeamPhysician {
                first_name: p.first_name,
                last_name: p.last_name,
                npi: p.npi,
            })
            .collect(),
    ))
}

/// Search the team's users by user id (prefix) or `client_user_id` (substring, any case).
#[utoipa::path(get, path = "/v2/team/users/search", tag = "team",
    params(("query_id" = Option<String>, Query, min_length = 2,
            description = "At least 2 characters: a user id's start, or part of a client_user_id")),
    responses((status = 200, description = "The matching users, oldest first, at most 100", body = Vec<UserResource>),
              (status = 422, description = "query_id shorter than 2 characters", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn search_users(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<Vec<UserResource>>, ApiError> {
    let found = match query.get("query_id") {
        Some(q) if q.chars().count() < 2 => {
            return Err(ApiError::invalid(
                Violation::new(
                    crate::loc!["query", "query_id"],
                    "string_too_short",
                    "String should have at least 2 characters",
                )
                .with_input(Value::from(q)),
            ));
        }
        Some(q) => user_search::search(&mut *state.meta.reader().await?, team.0.id, q).await?,
        None => state.meta.list_users(team.0.id, 0, SEARCH_LIMIT).await?.0,
    };
    let mut users = Vec::with_capacity(found.len());
    for user in &found {
        users.push(render(&state, user).await?);
    }
    Ok(Json(users))
}
