//! `/v3/order/area/info` and `/v3/order/psc/info`: coverage of a ZIP code.

use axum::Json;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::AppState;
use super::super::error::ApiError;
use super::super::extract::{AuthTeam, QueryParams, parse_uuid};
use crate::lab::LabError;
use crate::lab::area;
use crate::lab::model::area::{AreaInfo, PscInfo};
use crate::loc;
use crate::validation::Violation;

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(area_info))
        .routes(routes!(psc_info))
}

fn required<'a>(query: &'a QueryParams, name: &str) -> Result<&'a str, ApiError> {
    query.get(name).ok_or_else(|| {
        ApiError::invalid(Violation::new(
            loc!["query", name],
            "missing",
            "Field required",
        ))
    })
}

/// Phlebotomy coverage and patient service centres within `radius` miles of a ZIP code.
#[utoipa::path(get, path = "/v3/order/area/info", tag = "lab",
    params(("zip_code" = String, Query, description = "exactly 5 digits"),
           ("radius" = Option<String>, Query, description = "10, 20, 25, 50 or 100 (miles); default 25"),
           ("lab" = Option<String>, Query, description = "deprecated: one lab slug"),
           ("labs" = Option<Vec<String>>, Query), ("lab_account_id" = Option<uuid::Uuid>, Query)),
    responses((status = 200, body = AreaInfo), (status = 422, description = "Malformed or unknown zip code, radius not allowed, unknown lab")),
    security(("api_key" = [])))]
async fn area_info(
    _team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<AreaInfo>, ApiError> {
    let zip = area::known_zip(
        required(&query, "zip_code")?,
        loc!["query", "zip_code"],
        true,
    )?;
    let radius = area::parse_radius(query.get("radius"), loc!["query", "radius"])?;
    let slugs = area::lab_slugs(&query.all("labs"), query.get("lab"))?;
    if let Some(raw) = query.get("lab_account_id") {
        parse_uuid(raw, loc!["query", "lab_account_id"])?;
    }
    let index = state.lab.pscs();
    Ok(Json(area::area_info(&index, zip, radius, &slugs)))
}

/// The nearest patient service centres of a lab (at most 30).
#[utoipa::path(get, path = "/v3/order/psc/info", tag = "lab",
    params(("zip_code" = String, Query), ("lab_id" = i64, Query),
           ("radius" = Option<String>, Query, description = "10, 20, 25, 50 or 100; default 25")),
    responses((status = 200, body = PscInfo), (status = 422, description = "Bad zip code, lab or radius")),
    security(("api_key" = [])))]
async fn psc_info(
    _team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<PscInfo>, ApiError> {
    let zip = area::known_zip(
        required(&query, "zip_code")?,
        loc!["query", "zip_code"],
        true,
    )?;
    let radius = area::parse_radius(query.get("radius"), loc!["query", "radius"])?;
    required(&query, "lab_id")?;
    let lab_id = query.read(&super::LAB_ID)?;
    let lab = crate::lab::catalogue::labs::lab(lab_id).ok_or_else(|| {
        LabError::invalid(
            Violation::value(loc!["query", "lab_id"], format!("unknown lab {lab_id}"))
                .with_input(lab_id.into()),
        )
    })?;
    let index = state.lab.pscs();
    Ok(Json(area::psc_info(&index, zip, radius, &lab.slug)))
}
