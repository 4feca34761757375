//! `POST /v2/link/bulk_pause`, `/v2/link/bulk_trigger_historical_pull` and
//! `/v2/link/bulk_export` (team key): the HTTP side of [`crate::link::bulk_ops`], in the
//! reference's request shapes.
//!
//! - pause answers 200 `{user_ids_paused, user_ids_skipped}` once committed;
//! - the historical trigger answers 202 `{user_ids_triggered: [], user_ids_failed: []}` once
//!   stored; with `wait_for_completion`, 200 with the final lists when the operation ended
//!   within 20 s (`GET /v2/link/bulk_op` lists it, type `link_bulk_historical_trigger`);
//! - export answers `{data: [ConnectionRecipe], next_token}`; a `next_token` not from an
//!   earlier answer (not a UUID) is a 422 at `["body", "next_token"]`.
//!
//! `user_ids` holds 1 to 1000 ids, each once; `provider` is an OAuth provider of the catalogue.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::bulk_import::ConnectionRecipe;
use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::{AuthTeam, Decoded};
use crate::http::models;
use crate::link::bulk_import::{self, BulkImportError};
use crate::link::bulk_ops;
use crate::loc;
use crate::providers::{self, Provider, scopes};
use crate::validation::{Checks, Violation};

/// The most users one request names.
pub const MAX_USERS: usize = 1000;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(bulk_pause))
        .routes(routes!(bulk_trigger))
        .routes(routes!(bulk_export))
}

/// `POST /v2/link/bulk_pause` body.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BulkPauseRequest {
    /// 1 to 1000 users of the team, each once.
    pub user_ids: Vec<Uuid>,
    /// An OAuth provider of the catalogue.
    pub provider: String,
}

/// `POST /v2/link/bulk_pause` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BulkPauseResult {
    /// Users whose connection is paused now.
    pub user_ids_paused: Vec<Uuid>,
    /// Users left alone: not the team's, not connected, or paused already.
    pub user_ids_skipped: Vec<Uuid>,
}

/// `POST /v2/link/bulk_trigger_historical_pull` body.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BulkTriggerRequest {
    /// 1 to 1000 users of the team, each once.
    pub user_ids: Vec<Uuid>,
    /// An OAuth provider of the catalogue.
    pub provider: String,
    /// Wait up to 20 s for the operation to end (default false).
    #[serde(default)]
    pub wait_for_completion: Option<bool>,
}

/// `POST /v2/link/bulk_trigger_historical_pull` answer: both lists empty until it ended.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BulkTriggerResult {
    /// Users whose historical pull was started again.
    pub user_ids_triggered: Vec<Uuid>,
    /// Users whose pull could not be (`GET /v2/link/bulk_op` says why).
    pub user_ids_failed: Vec<Uuid>,
}

/// `POST /v2/link/bulk_export` body.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BulkExportRequest {
    /// Only these users (at most 1000; one page); default every user.
    #[serde(default)]
    pub user_ids: Option<Vec<Uuid>>,
    /// An OAuth provider the team has its own OAuth application for.
    pub provider: String,
    /// The `next_token` of the previous page.
    #[serde(default)]
    #[schema(format = Uuid)]
    pub next_token: Option<String>,
}

/// `POST /v2/link/bulk_export` answer.
#[derive(Clone, Serialize, ToSchema)]
pub struct BulkExportResult {
    /// The connections, by user id.
    pub data: Vec<ConnectionRecipe>,
    /// Pass it back for the next page; null on the last.
    pub next_token: Option<String>,
}

/// The provider and users of a request, every rule checked at once.
fn check(checks: &mut Checks, provider: &str, users: Option<&[Uuid]>) -> Option<&'static Provider> {
    let found = providers::provider(provider).filter(|p| scopes::is_oauth(p));
    if found.is_none() {
        checks.refuse(
            loc!["provider"],
            provider,
            format!("{provider:?} is not an OAuth provider of the catalogue (GET /v2/providers)"),
        );
    }
    if let Some(users) = users {
        if users.is_empty() || users.len() > MAX_USERS {
            checks.fail(
                loc!["user_ids"],
                "too_long",
                format!("user_ids holds 1 to {MAX_USERS} ids, not {}", users.len()),
            );
        }
        let mut seen = std::collections::HashSet::new();
        for (i, user) in users.iter().enumerate() {
            if !seen.insert(user) {
                checks.refuse(loc!["user_ids", i], user, "this user_id is listed twice");
            }
        }
    }
    found
}

fn checked(provider: Option<&'static Provider>) -> Result<&'static Provider, ApiError> {
    provider.ok_or_else(|| ApiError::internal("validated provider missing"))
}

/// Pause the listed users' connections to a provider: their pulls stop until they link again.
#[utoipa::path(post, path = "/v2/link/bulk_pause", tag = "link",
    request_body(content = BulkPauseRequest),
    responses((status = 200, description = "Paused and skipped users", body = BulkPauseResult),
              (status = 422, description = "Validation error", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn bulk_pause(
    team: AuthTeam,
    State(state): State<AppState>,
    Decoded(body, mut checks): Decoded<BulkPauseRequest>,
) -> Result<Json<BulkPauseResult>, ApiError> {
    let provider = check(&mut checks, &body.provider, Some(&body.user_ids));
    checks.finish()?;
    let done = bulk_ops::pause(&state.meta, team.0.id, checked(provider)?, &body.user_ids).await?;
    Ok(Json(BulkPauseResult {
        user_ids_paused: done.paused,
        user_ids_skipped: done.skipped,
    }))
}

/// Start the listed users' historical pulls of a provider again, as one background operation
/// (`GET /v2/link/bulk_op`). Answers 202 once stored; with `wait_for_completion`, 200 with the
/// final lists when the operation ends within 20 s.
#[utoipa::path(post, path = "/v2/link/bulk_trigger_historical_pull", tag = "link",
    request_body(content = BulkTriggerRequest),
    responses((status = 200, description = "The operation ended within 20 s (wait_for_completion)", body = BulkTriggerResult),
              (status = 202, description = "Stored; the operation runs in the background (both lists empty)", body = BulkTriggerResult),
              (status = 422, description = "Validation error", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn bulk_trigger(
    team: AuthTeam,
    State(state): State<AppState>,
    Decoded(body, mut checks): Decoded<BulkTriggerRequest>,
) -> Result<(StatusCode, Json<BulkTriggerResult>), ApiError> {
    let provider = check(&mut checks, &body.provider, Some(&body.user_ids));
    checks.finish()?;
    let team = team.0.id;
    let op = bulk_ops::submit_trigger(
        &state.meta,
        team,
        checked(provider)?,
        &body.user_ids,
        Utc::now(),
    )
    .await?;
    if body.wait_for_completion.unwrap_or(false)
        && let Some(done) = bulk_import::wait(&state.meta, team, op, bulk_ops::WAIT).await?
    {
        return Ok((
            StatusCode::OK,
            Json(BulkTriggerResult {
                user_ids_triggered: done.imported,
                user_ids_failed: done.failed,
            }),
        ));
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(BulkTriggerResult {
            user_ids_triggered: Vec::new(),
            user_ids_failed: Vec::new(),
        }),
    ))
}

/// Export the team's connections to a provider as connection recipes (tokens in clear), by
/// pages of 100. Needs the team's own OAuth application for the provider: only tokens issued
/// to it are exported.
#[utoipa::path(post, path = "/v2/link/bulk_export", tag = "link",
    request_body(content = BulkExportRequest),
    responses((status = 200, description = "One page of connections", body = BulkExportResult),
              (status = 422, description = "Validation error, or export disabled for the provider", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn bulk_export(
    team: AuthTeam,
    State(state): State<AppState>,
    Decoded(body, mut checks): Decoded<BulkExportRequest>,
) -> Result<Json<BulkExportResult>, ApiError> {
    let provider = check(&mut checks, &body.provider, None);
    let users = body.user_ids.as_ref().map(|ids| {
        if ids.len() > MAX_USERS {
            checks.fail(
                loc!["user_ids"],
                "too_long",
                format!("user_ids holds at most {MAX_USERS} ids, not {}", ids.len()),
            );
        }
        let mut seen = std::collections::HashSet::new();
        ids.iter()
            .copied()
            .filter(|u| seen.insert(*u))
            .collect::<Vec<_>>()
    });
    let after = match body.next_token.as_deref() {
        None | Some("") => None,
        Some(token) => match Uuid::parse_str(token) {
            Ok(u) => Some(u),
            Err(_) => {
                checks.refuse(
                    loc!["next_token"],
                    token,
                    "unknown next_token: pass the next_token of a previous answer",
                );
                None
            }
        },
    };
    checks.finish()?;
    let page = bulk_ops::export(
        &state.meta,
        state.secret.as_ref(),
        team.0.id,
        checked(provider)?,
        users.as_deref(),
        after,
    )
    .await
    .map_err(|e| match e {
        BulkImportError::Disabled(provider) => ApiError::invalid(
            Violation::value(
                loc!["body", "provider"],
                format!(
                    "bulk export is disabled until the team configures its own OAuth \
                     application for {provider}"
                ),
            )
            .with_input(Value::from(provider)),
        ),
        other => other.into(),
    })?;
    Ok(Json(BulkExportResult {
        data: page
            .data
            .into_iter()
            .map(|e| ConnectionRecipe {
                user_id: e.user_id,
                access_token: e.access_token,
                refresh_token: e.refresh_token,
                provider_id: e.provider_id,
                expires_at: e.expires_at,
                oauth_scopes: e.oauth_scopes,
            })
            .collect(),
        next_token: page.next_token.map(|u| u.to_string()),
    }))
}
