//! `/v3/lab_tests...` and `/v3/lab_test`: labs, markers, the team's lab tests.

use axum::Json;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::AppState;
use super::super::error::ApiError;
use super::super::extract::{AuthTeam, IntParam, PathId, QueryParams, parse_uuid};
use super::page;
use crate::http::extract::Typed;
use crate::lab::catalogue::{self, labs};
use crate::lab::model::catalogue::{
    CreateLabTest, Lab, LabTest, LabTestPage, MarkersPage, OrderSetMarkersRequest, PatchLabTest,
};
use crate::loc;

/// `GET /v3/lab_test`'s page size.
pub(crate) const LAB_TEST_LIMIT: IntParam = IntParam::new("lab_test_limit", 50, 1, 100);

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_labs))
        .routes(routes!(list_markers))
        .routes(routes!(create_lab_test, list_lab_tests_deprecated))
        .routes(routes!(get_lab_test, patch_lab_test))
        .routes(routes!(lab_test_markers))
        .routes(routes!(order_set_markers))
        .routes(routes!(list_lab_tests))
}

/// The labs.
#[utoipa::path(get, path = "/v3/lab_tests/labs", tag = "lab",
    responses((status = 200, body = Vec<Lab>), (status = 401, description = "No or unknown API key")),
    security(("api_key" = [])))]
async fn list_labs(_team: AuthTeam) -> Json<Vec<Lab>> {
    Json(labs::labs())
}

/// The marker catalogue, optionally of one lab and by name (case-insensitive substring).
#[utoipa::path(get, path = "/v3/lab_tests/markers", tag = "lab",
    params(("lab_id" = Option<i64>, Query), ("name" = Option<String>, Query),
           ("page" = Option<i64>, Query, description = "≥ 1, default 1"),
           ("size" = Option<i64>, Query, description = "1 to 100, default 50")),
    responses((status = 200, body = MarkersPage), (status = 422, description = "Bad page, size or lab_id")),
    security(("api_key" = [])))]
async fn list_markers(_team: AuthTeam, query: QueryParams) -> Result<Json<MarkersPage>, ApiError> {
    let p = page(&query)?;
    let lab_id = match query.get("lab_id") {
        None => None,
        Some(_) => Some(query.read(&super::LAB_ID)?),
    };
    Ok(Json(catalogue::list_markers(lab_id, query.get("name"), p)?))
}

/// Creates a lab test from markers of one lab.
#[utoipa::path(post, path = "/v3/lab_tests", tag = "lab", request_body = CreateLabTest,
    responses((status = 200, body = LabTest), (status = 422, description = "Unknown markers, mixed labs, a method the lab does not offer")),
    security(("api_key" = [])))]
async fn create_lab_test(
    team: AuthTeam,
    State(state): State<AppState>,
    Typed(body): Typed<CreateLabTest>,
) -> Result<Json<LabTest>, ApiError> {
    Ok(Json(catalogue::create(&state.meta, team.0.id, body).await?))
}

/// Every lab test of the team (deprecated: use `GET /v3/lab_test`).
#[utoipa::path(get, path = "/v3/lab_tests", tag = "lab",
    responses((status = 200, body = Vec<LabTest>)), security(("api_key" = [])))]
async fn list_lab_tests_deprecated(
    team: AuthTeam,
    State(state): State<AppState>,
) -> Result<Json<Vec<LabTest>>, ApiError> {
    Ok(Json(catalogue::list_all(&state.meta, team.0.id).await?))
}

/// One lab test.
#[utoipa::path(get, path = "/v3/lab_tests/{lab_test_id}", tag = "lab",
    params(("lab_test_id" = uuid::Uuid, Path)),
    responses((status = 200, body = LabTest), (status = 404, description = "No such lab test")),
    security(("api_key" = [])))]
async fn get_lab_test(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<LabTest>, ApiError> {
    let row = catalogue::get_row(&state.meta, team.0.id, id).await?;
    Ok(Json(catalogue::render(&row)?))
}

/// Changes a lab test's name, description or status.
#[utoipa::path(patch, path = "/v3/lab_tests/{lab_test_id}", tag = "lab",
    params(("lab_test_id" = uuid::Uuid, Path)), request_body = PatchLabTest,
    responses((status = 200, body = LabTest), (status = 404, description = "No such lab test")),
    security(("api_key" = [])))]
async fn patch_lab_test(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    Typed(body): Typed<PatchLabTest>,
) -> Result<Json<LabTest>, ApiError> {
    Ok(Json(
        catalogue::patch(&state.meta, team.0.id, id, body).await?,
    ))
}

/// The markers of a lab test, by page.
#[utoipa::path(get, path = "/v3/lab_tests/{lab_test_id}/markers", tag = "lab",
    params(("lab_test_id" = uuid::Uuid, Path), ("lab_account_id" = Option<uuid::Uuid>, Query),
           ("page" = Option<i64>, Query), ("size" = Option<i64>, Query)),
    responses((status = 200, body = MarkersPage), (status = 404, description = "No such lab test")),
    security(("api_key" = [])))]
async fn lab_test_markers(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    query: QueryParams,
) -> Result<Json<MarkersPage>, ApiError> {
    let p = page(&query)?;
    if let Some(raw) = query.get("lab_account_id") {
        parse_uuid(raw, loc!["query", "lab_account_id"])?;
    }
    Ok(Json(
        catalogue::lab_test_markers(&state.meta, team.0.id, id, p).await?,
    ))
}

/// The markers of an order set (lab tests and add-ons), each once, by page.
#[utoipa::path(post, path = "/v3/lab_tests/list_order_set_markers", tag = "lab",
    params(("page" = Option<i64>, Query), ("size" = Option<i64>, Query)),
    request_body = OrderSetMarkersRequest,
    responses((status = 200, body = MarkersPage), (status = 422, description = "Unknown lab test or marker")),
    security(("api_key" = [])))]
async fn order_set_markers(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
    Typed(body): Typed<OrderSetMarkersRequest>,
) -> Result<Json<MarkersPage>, ApiError> {
    let p = page(&query)?;
    Ok(Json(
        catalogue::order_set_markers(&state.meta, team.0.id, body, p).await?,
    ))
}

/// The team's lab tests by cursor, oldest first.
#[utoipa::path(get, path = "/v3/lab_test", tag = "lab",
    params(("lab_test_limit" = Option<i64>, Query, description = "1 to 100, default 50"),
           ("next_cursor" = Option<String>, Query)),
    responses((status = 200, body = LabTestPage)), security(("api_key" = [])))]
async fn list_lab_tests(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<LabTestPage>, ApiError> {
    let limit = query.read(&LAB_TEST_LIMIT)?;
    let cursor = query
        .get("next_cursor")
        .map(|c| parse_uuid(c, loc!["query", "next_cursor"]))
        .transpose()?;
    Ok(Json(
        catalogue::list_page(&state.meta, team.0.id, limit, cursor).await?,
    ))
}
