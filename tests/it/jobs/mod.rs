//! Durable background work (`src/jobs/`): the runner on both metadata backends (`runner`) and
//! the jobs as the API lists them (`api`); `support` holds the helpers both use.

mod api;
mod runner;
pub(crate) mod support;
