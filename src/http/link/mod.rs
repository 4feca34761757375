//! `/v2/link`, the hosted link page `/link` and the user's connections: the HTTP side of
//! [`crate::link`].

pub(super) mod bulk_import;
pub(super) mod bulk_ops;
mod codes;
mod demo;
mod deregister;
mod email;
mod oauth;
mod page;
mod password;
mod sign_in;
mod team_apps;
mod tokens;

use utoipa_axum::router::OpenApiRouter;

use super::AppState;
use super::error::ApiError;
use crate::loc;
use crate::validation::Violation;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(demo::routes())
        .merge(deregister::routes())
        .merge(tokens::routes())
        .merge(codes::routes())
        .merge(oauth::routes())
        .merge(team_apps::routes())
        .merge(password::routes())
        .merge(email::routes())
        .merge(page::routes())
        .merge(bulk_import::routes())
        .merge(sign_in::routes())
        .merge(bulk_ops::routes())
}

/// A catalogue slug from the path, or a 422 at `["path", "provider"]`.
pub(crate) fn path_provider(slug: &str) -> Result<&'static crate::providers::Provider, ApiError> {
    crate::providers::provider(slug).ok_or_else(|| {
        ApiError::invalid(
            Violation::new(
                loc!["path", "provider"],
                "enum",
                format!("{slug:?} is not a provider slug of the catalogue (GET /v2/providers)"),
            )
            .with_input(serde_json::Value::from(slug)),
        )
    })
}
