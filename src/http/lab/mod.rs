//! `/v3`: laboratory testing. Rules live in [`crate::lab`]; these handlers decode (typed bodies,
//! query parameters), call, encode typed answers. One router per path family: catalogue, area,
//! orders, appointments.

mod appointments;
mod area;
pub(super) mod catalogue;
mod documents;
mod marker_codes;
mod orders;
mod transactions;

use utoipa_axum::router::OpenApiRouter;

use super::AppState;
use super::error::ApiError;
use super::extract::{IntParam, QueryParams};
use crate::lab::LabError;
use crate::lab::page::Page;

/// The page number of the lab's page-numbered lists.
pub(crate) const PAGE: IntParam = IntParam::new("page", 1, 1, i64::MAX);
/// The page size of the lab's page-numbered lists.
pub(crate) const SIZE: IntParam = IntParam::new("size", 50, 1, 100);
/// A lab's id in a query.
pub(crate) const LAB_ID: IntParam = IntParam::new("lab_id", 0, 1, i64::MAX);

/// Documented routes of `/v3`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(catalogue::routes())
        .merge(area::routes())
        .merge(orders::routes())
        .merge(appointments::routes())
        .merge(documents::routes())
        .merge(transactions::routes())
        .merge(marker_codes::routes())
}

impl From<LabError> for ApiError {
    fn from(err: LabError) -> Self {
        match err {
            LabError::Invalid(invalid) => ApiError::Invalid(invalid),
            LabError::NotFound(what) => ApiError::NotFound(what),
            LabError::NotAllowed(msg) => ApiError::BadRequest(msg),
            LabError::Conflict(msg) => ApiError::Conflict(msg),
            LabError::ProviderFailed(msg) => ApiError::UpstreamFailed(msg),
            LabError::Metadata(e) => e.into(),
            LabError::Corrupt(_) => ApiError::internal(err),
        }
    }
}

/// `page` (≥ 1, default 1) and `size` (1–100, default 50).
pub fn page(query: &QueryParams) -> Result<Page, ApiError> {
    Ok(Page {
        page: query.read(&PAGE)?,
        size: query.read(&SIZE)?,
    })
}

impl crate::lab::orders::list::Params for QueryParams {
    fn one(&self, name: &str) -> Option<&str> {
        self.get(name)
    }

    fn many(&self, name: &str) -> Vec<&str> {
        self.all(name)
    }
}
