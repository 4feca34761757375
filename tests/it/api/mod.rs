//! The HTTP surface as a client sees it (`src/http/`): route-level rules (`routes`), unknown
//! methods and paths, the OpenAPI document and the push schema it states, rate limits, team API
//! keys, the reference's SDK and schema fuzzing against the real server, and the reference's
//! published shapes of every answer (`surface`, `surface_team`).

mod keys;
mod methods;
mod openapi;
mod rate_limit;
mod routes;
mod schema_fuzz;
mod sdk;
pub(crate) mod surface;
mod surface_team;
