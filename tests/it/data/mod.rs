//! The data plane (`src/ingest/`, `src/render/`, `src/data/`, `src/users/`): the push parser and
//! the getters' renderer (`ingest`), push → getter round trips over HTTP (`api`), the columnar
//! push, the push schema, the reference's series names, derived ids, getter windows, raw
//! summaries and a user's deletion within its undo window.

mod api;
mod columnar;
mod derived_ids;
mod getter_bounds;
mod ingest;
mod push_schema;
mod raw;
mod series_names;
mod user_undo;
