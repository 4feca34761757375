//! `POST /v2/link/bulk_import` and `GET /v2/link/bulk_op` (team key): the HTTP side of
//! [`crate::link::bulk_import`].
//!
//! The submission answers **202** `{user_ids_imported: [], user_ids_failed: []}` once it is
//! stored; with `wait_for_completion` it waits up to 20 s and answers **200** with the final
//! lists when the operation ended in time (else 202 as without). Tokens are never echoed, not
//! even in a 422's `input`.
//!
//! The operations list is newest first; `page_size` is 1 to 100 (default 10) and
//! `next_cursor` the id of the previous page's last operation (another team's, or an unknown
//! one, is a 422 at `["query", "next_cursor"]`). Beyond the reference's shape, each operation
//! carries `details`: its failed recipes, each `{user_id, reason}`, in submission order.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::{AuthTeam, IntParam, JsonBody, QueryParams, parse_uuid};
use crate::http::models;
use crate::link::bulk_import::{self, BulkImportError, OpStatus, Operation, Recipe};
use crate::loc;
use crate::providers::{self, Provider, scopes};
use crate::users::wire::instant;
use crate::validation::{Checks, Invalid, Loc, Violation, decode};

/// `GET /v2/link/bulk_op`'s page size.
pub(crate) const PAGE_SIZE: IntParam = IntParam::new("page_size", 10, 1, 100);

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(bulk_import_connections))
        .routes(routes!(list_bulk_ops))
}

/// One connection to import.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectionRecipe {
    /// A user of the team.
    pub user_id: Uuid,
    /// The provider's OAuth access token (kept sealed, never shown).
    pub access_token: String,
    /// The provider's OAuth refresh token (kept sealed, never shown).
    pub refresh_token: String,
    /// The user's id at the provider.
    pub provider_id: String,
    /// When the access token expires (unix seconds); an expired one is refreshed at import.
    pub expires_at: i64,
    /// The scopes the grant holds (default: every scope the provider asks for).
    #[serde(default)]
    pub oauth_scopes: Option<Vec<String>>,
}

/// `POST /v2/link/bulk_import` body.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
pub struct BulkImportRequest {
    /// An OAuth provider the team has its own OAuth application for.
    pub provider: String,
    /// At least one recipe, each user at most once.
    pub connections: Vec<ConnectionRecipe>,
    /// Wait up to 20 s for the operation to end (default false).
    #[serde(default)]
    pub wait_for_completion: Option<bool>,
}

/// `POST /v2/link/bulk_import` answer: both lists are empty until the operation ended.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BulkImportResult {
    /// Users whose connection was imported.
    pub user_ids_imported: Vec<Uuid>,
    /// Users whose recipe failed (`GET /v2/link/bulk_op` says why).
    pub user_ids_failed: Vec<Uuid>,
}

/// The kind of a bulk operation.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BulkOpType {
    /// A bulk import of connections.
    LinkBulkImport,
    /// Historical pulls started again for many users (`POST /v2/link/bulk_trigger_historical_pull`).
    LinkBulkHistoricalTrigger,
}

/// Where a bulk operation stands.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BulkOpStatus {
    /// Recipes are waiting.
    InProgress,
    /// Every recipe was imported.
    Success,
    /// Every recipe was handled and at least one failed.
    Failure,
    /// Stopped before every recipe was handled (the team removed its OAuth application, or
    /// the operation's job failed for good).
    Aborted,
}

impl From<OpStatus> for BulkOpStatus {
    fn from(s: OpStatus) -> Self {
        match s {
            OpStatus::InProgress => BulkOpStatus::InProgress,
            OpStatus::Success => BulkOpStatus::Success,
            OpStatus::Failure => BulkOpStatus::Failure,
            OpStatus::Aborted => BulkOpStatus::Aborted,
        }
    }
}

/// A failed recipe.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BulkOpFailure {
    /// Its user.
    pub user_id: Uuid,
    /// Why it failed.
    pub reason: String,
}

/// A bulk operation.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BulkOp {
    /// Its id.
    pub id: Uuid,
    /// What it does.
    #[serde(rename = "type")]
    pub op_type: BulkOpType,
    /// Where it stands.
    pub status: BulkOpStatus,
    /// The provider slug.
    pub provider: String,
    /// Recipes not handled yet.
    pub pending: i64,
    /// Recipes handled (imported or failed).
    pub processed: i64,
    /// Recipes that failed (part of `processed`).
    pub failed: i64,
    /// When it was submitted.
    #[serde(serialize_with = "instant")]
    pub started_at: DateTime<Utc>,
    /// When it ended (null while in progress).
    #[serde(serialize_with = "opt_instant")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub ended_at: Option<DateTime<Utc>>,
    /// The failed recipes and why, in submission order.
    pub details: Vec<BulkOpFailure>,
}

/// `GET /v2/link/bulk_op` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BulkOps {
    /// The team's operations, newest first.
    pub data: Vec<BulkOp>,
    /// Pass as `next_cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
}

fn opt_instant<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => instant(t, s),
        None => s.serialize_none(),
    }
}

impl From<BulkImportError> for ApiError {
    fn from(err: BulkImportError) -> Self {
        match err {
            BulkImportError::Disabled(ref provider) => ApiError::invalid(
                Violation::value(loc!["body", "provider"], err.to_string())
                    .with_input(Value::from(provider.as_str())),
            ),
            BulkImportError::UnknownCursor => ApiError::invalid(Violation::value(
                loc!["query", "next_cursor"],
                "unknown cursor: pass the next_cursor of a previous answer",
            )),
            BulkImportError::Link(e) => e.into(),
        }
    }
}

/// Whether a violation at `loc` may echo its input: only members that hold no token (a body
/// or a recipe that is not an object, or a token member, might).
fn echoable(loc: &[Loc]) -> bool {
    let key = |l: &Loc, names: &[&str]| matches!(l, Loc::Key(k) if names.contains(&k.as_str()));
    match loc {
        [_, member] => key(member, &["provider", "wait_for_completion"]),
        [_, _, _, member, ..] => key(
            member,
            &["user_id", "provider_id", "expires_at", "oauth_scopes"],
        ),
        _ => false,
    }
}

/// Checks one recipe at `connections[i]`, recording its violations in `checks`.
fn check_recipe(checks: &mut Checks, i: usize, r: ConnectionRecipe) -> Recipe {
    for (key, value) in [
        ("access_token", &r.access_token),
        ("refresh_token", &r.refresh_token),
        ("provider_id", &r.provider_id),
    ] {
        if value.trim().is_empty() {
            checks.fail(
                loc!["connections", i, key],
                "string_too_short",
                format!("{key} must not be empty"),
            );
        }
    }
    if r.expires_at <= 0 {
        checks.fail(
            loc!["connections", i, "expires_at"],
            "int_type",
            "expires_at should be a positive whole number of seconds since 1970",
        );
    }
    Recipe {
        user_id: r.user_id,
        access_token: r.access_token,
        refresh_token: r.refresh_token,
        provider_id: r.provider_id,
        expires_at: r.expires_at,
        oauth_scopes: r.oauth_scopes,
    }
}

/// A rejection that echoes no input that may hold a token.
fn without_tokens(Invalid(mut violations): Invalid) -> ApiError {
    for v in &mut violations {
        if !echoable(&v.loc) {
            v.input = None;
        }
    }
    ApiError::Invalid(Invalid(violations))
}

/// Decodes and checks the submission (every rule's violation at once).
fn parse_request(body: &Value) -> Result<(&'static Provider, Vec<Recipe>, bool), ApiError> {
    let (req, mut checks) =
        decode::<BulkImportRequest>(body, loc!["body"]).map_err(without_tokens)?;
    let provider = providers::provider(&req.provider).filter(|p| scopes::is_oauth(p));
    if provider.is_none() {
        checks.refuse(
            loc!["provider"],
            &req.provider,
            format!(
                "{:?} is not an OAuth provider of the catalogue (GET /v2/providers)",
                req.provider
            ),
        );
    }
    if req.connections.is_empty() {
        checks.fail(
            loc!["connections"],
            "too_short",
            "connections needs at least 1 recipe",
        );
    }
    let mut seen = std::collections::HashSet::new();
    let mut recipes = Vec::with_capacity(req.connections.len());
    for (i, recipe) in req.connections.into_iter().enumerate() {
        if !seen.insert(recipe.user_id) {
            checks.refuse(
                loc!["connections", i, "user_id"],
                recipe.user_id,
                "this user_id has a recipe earlier in connections; one per user",
            );
        }
        recipes.push(check_recipe(&mut checks, i, recipe));
    }
    checks.finish().map_err(without_tokens)?;
    let provider = provider.ok_or_else(|| ApiError::internal("validated provider missing"))?;
    Ok((provider, recipes, req.wait_for_completion.unwrap_or(false)))
}

/// Import existing OAuth connections of the team's users as one background operation. Needs
/// the team's own OAuth application for the provider (`PUT
/// /v2/team/provider/{provider}/credentials`). Answers 202 once stored; with
/// `wait_for_completion`, 200 with the final lists when the operation ends within 20 s.
#[utoipa::path(post, path = "/v2/link/bulk_import", tag = "link",
    request_body(content = BulkImportRequest),
    responses((status = 200, description = "The operation ended within 20 s (wait_for_completion)", body = BulkImportResult),
              (status = 202, description = "Stored; the operation runs in the background (both lists empty)", body = BulkImportResult),
              (status = 422, description = "Validation error, or bulk import disabled for the provider", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn bulk_import_connections(
    team: AuthTeam,
    State(state): State<AppState>,
    JsonBody(body): JsonBody,
) -> Result<(StatusCode, Json<BulkImportResult>), ApiError> {
    let (provider, recipes, wait) = parse_request(&body)?;
    let team = team.0.id;
    let op = bulk_import::submit(
        &state.meta,
        state.secret.as_ref(),
        team,
        provider,
        &recipes,
        Utc::now(),
    )
    .await?;
    if wait && let Some(done) = bulk_import::wait(&state.meta, team, op, bulk_import::WAIT).await? {
        return Ok((
            StatusCode::OK,
            Json(BulkImportResult {
                user_ids_imported: done.imported,
                user_ids_failed: done.failed,
            }),
        ));
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(BulkImportResult {
            user_ids_imported: Vec::new(),
            user_ids_failed: Vec::new(),
        }),
    ))
}

/// The team's bulk operations, newest first, a page at a time.
#[utoipa::path(get, path = "/v2/link/bulk_op", tag = "link",
    params(("next_cursor" = Option<String>, Query, description = "the previous page's next_cursor"),
           ("page_size" = Option<i64>, Query, description = "1 to 100, default 10")),
    responses((status = 200, description = "A page of the team's operations", body = BulkOps),
              (status = 422, description = "Validation error", body = models::ValidationError)),
    security(("api_key" = [])))]
async fn list_bulk_ops(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<BulkOps>, ApiError> {
    let page_size = query.read(&PAGE_SIZE)?;
    let cursor = query
        .get("next_cursor")
        .map(|c| parse_uuid(c, loc!["query", "next_cursor"]))
        .transpose()?;
    let (ops, next) = bulk_import::list(&state.meta, team.0.id, cursor, page_size).await?;
    let mut data = Vec::with_capacity(ops.len());
    for op in ops {
        let details = bulk_import::failures(&state.meta, op.id).await?;
        data.push(render(op, details));
    }
    Ok(Json(BulkOps {
        data,
        next_cursor: next.map(|id| id.to_string()),
    }))
}

fn render(op: Operation, details: Vec<(Uuid, String)>) -> BulkOp {
    BulkOp {
        id: op.id,
        op_type: if op.kind == crate::link::bulk_ops::OP_TYPE {
            BulkOpType::LinkBulkHistoricalTrigger
        } else {
            BulkOpType::LinkBulkImport
        },
        status: op.status.into(),
        provider: op.provider,
        pending: op.pending,
        processed: op.processed,
        failed: op.failed,
        started_at: op.started_at,
        ended_at: op.ended_at,
        details: details
            .into_iter()
            .map(|(user_id, reason)| BulkOpFailure { user_id, reason })
            .collect(),
    }
}
