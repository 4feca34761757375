//! `/v2/link`, the hosted link page `/link` and the user's connections: the HTTP side of
//! [`crate::link`].

pub(super) mod bulk_import;
pub(super) mod bulk_ops;
mod codes;
mod connections;
mod demo;
mod email;
mod oauth;
mod page;
mod password;
mod sign_in;
mod team_apps;
mod tokens;

use utoipa_axum::router::OpenApiRouter;

use super::AppState;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(demo::routes())
        .merge(connections::routes())
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
