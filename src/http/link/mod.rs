//! `/v2/link` and the user's connections: the HTTP side of [`crate::link`].

mod connections;
mod demo;

use utoipa_axum::router::OpenApiRouter;

use super::AppState;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(demo::routes())
        .merge(connections::routes())
}
