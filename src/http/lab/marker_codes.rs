//! `GET /v3/lab_tests/{lab_id}/markers/{provider_id}`: one marker of a lab by the lab's own
//! order code. The router's path names the first parameter `lab_test_id`, as the sibling route
//! `/v3/lab_tests/{lab_test_id}` does (one name per segment position); the document names it
//! `lab_id`, as the reference does, and the handler reads the parameters by position.
//! An unknown lab or code answers 404 "Marker not found"; a lab id that is not an integer 422.

use axum::Json;
use axum::routing::get;
use serde_json::Value;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use super::super::AppState;
use super::super::error::ApiError;
use super::super::extract::{ApiPath, AuthTeam, QueryParams, parse_uuid};
use crate::lab::catalogue::markers;
use crate::lab::model::catalogue::Marker;
use crate::loc;
use crate::validation::{Invalid, Loc, Violation};

#[derive(OpenApi)]
#[openapi(paths(marker_by_provider_id))]
struct Doc;

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(Doc::openapi()).route(
        "/v3/lab_tests/{lab_test_id}/markers/{provider_id}",
        get(marker_by_provider_id),
    )
}

/// A lab's marker by the lab's order code.
#[utoipa::path(get, path = "/v3/lab_tests/{lab_id}/markers/{provider_id}", tag = "lab",
    params(("lab_id" = i64, Path, description = "The lab (GET /v3/lab_tests/labs)"),
           ("provider_id" = String, Path, description = "The lab's order code of the marker"),
           ("lab_account_id" = Option<uuid::Uuid>, Query, description = "Accepted for the reference's clients; there are no lab accounts here")),
    responses((status = 200, body = Marker),
              (status = 404, description = "No such lab or marker code", body = super::super::models::ErrorDetail),
              (status = 422, description = "A lab id that is not an integer", body = super::super::models::ValidationError)),
    security(("api_key" = [])))]
async fn marker_by_provider_id(
    _team: AuthTeam,
    path: Result<ApiPath<(String, String)>, ApiError>,
    query: QueryParams,
) -> Result<Json<Marker>, ApiError> {
    let ApiPath((lab_id, provider_id)) = path.map_err(documented_names)?;
    let lab_id: i64 = lab_id.parse().map_err(|_| {
        ApiError::invalid(
            Violation::new(
                loc!["path", "lab_id"],
                "int_parsing",
                "Input should be a valid integer",
            )
            .with_input(Value::from(lab_id.clone())),
        )
    })?;
    if let Some(raw) = query.get("lab_account_id") {
        parse_uuid(raw, loc!["query", "lab_account_id"])?;
    }
    markers::by_provider_id(lab_id, &provider_id)
        .cloned()
        .map(Json)
        .ok_or(ApiError::NotFound("Marker"))
}

/// A path rejection located at the document's parameter name (`lab_id`), not the router's.
fn documented_names(error: ApiError) -> ApiError {
    match error {
        ApiError::Invalid(Invalid(mut violations)) => {
            for v in &mut violations {
                for loc in &mut v.loc {
                    if *loc == Loc::Key("lab_test_id".to_owned()) {
                        *loc = Loc::Key("lab_id".to_owned());
                    }
                }
            }
            ApiError::Invalid(Invalid(violations))
        }
        other => other,
    }
}
