//! Continuous queries (`analytics.md` §4): a team registers an aggregate query once, and
//! wearhouse keeps each user's result table current as data arrives and announces only what
//! changed, as `continuous_query.result_table.changed` events through the outbox.
//!
//! Flow: a change to a user's data (a push, announced by `data::announce`; a provider pull,
//! `data::write_parsed`) calls [`record_changes`] in the transaction that makes it known, which
//! widens the (query, user) range of changed data not yet evaluated and enqueues that pair's
//! `continuous.evaluate` job ([`schedule`]); a patched setting the language reads (the
//! fallback zone or birth date, the ingestion bounds: `data::update_user`) calls
//! [`record_settings_change`], which asks for a whole evaluation. The job ([`evaluate`]) re-runs
//! the query over the buckets the changes can touch through the per-user query path
//! (`crate::query::execute`), merges them into the stored result table ([`table`]), keeps the
//! new table (inline in the state's row while small, else as a new Parquet file in the user's
//! folder: `keep.rs`), and commits, in one transaction fenced by the table's version: the new
//! table (or file name), the changes it covered, the events of the changed rows (and, with
//! `export_preferences.fhir_observations`, their FHIR R4 Observations: [`fhir`]) and the task's
//! end. A crash before that commit leaves at most an unnamed file and repeats the evaluation
//! (nothing was announced); after it, nothing is repeated: each change is announced exactly
//! once.
//!
//! Decisions where the spec is silent:
//! - `query` is one query of the aggregate language (`select`, `group_by`, `where`, and
//!   `align`), `query_config` the request's `config`; there is no timeframe: the table covers
//!   all of the user's data (within its ingestion bounds), and a full evaluation reaches to
//!   the user's current day.
//! - "The buckets a change can touch": those holding the changed data's floating times (its
//!   UTC range widened by the ±18 h any offset allows), and for `derived_readiness` the 22 days
//!   after them (each day's baseline reads the 21 before it). A query with `align` re-evaluates
//!   its whole table on every change (a carried value can reach any later bucket, and the
//!   spine ends at "now"), still announcing only the rows that changed.
//! - Rows of re-evaluated buckets that no longer exist (deleted data) leave the table and are
//!   not announced: the event carries new or changed rows only, as §4 says.
//! - `minimum_gap_duration_second` null means no gap: a change is evaluated as soon as the job
//!   runner takes it. Changes inside the gap are coalesced into one evaluation.
//! - Slugs are unique among a team's *active* queries; archiving frees the slug. An archived
//!   query is no longer evaluated; its tables stay readable.
//! - `fhir_observations: true` exports each changed row as FHIR R4 Observations (one per
//!   numeric aggregate cell) in `continuous_query.fhir_observations.changed` events, a type of
//!   its own beside `result_table.changed` and independent of `data_events.enabled`; LOINC
//!   codes, time, identity and the place of the other group keys are decided in [`fhir`].
//! - A new query is evaluated for every existing user of the team by a `continuous.backfill`
//!   job (pages of users, each page's marks and jobs in one transaction, then the next page's
//!   job); its progress is the query's `evaluation` member.

mod definition;
pub mod evaluate;
pub mod event_data;
pub mod fhir;
mod keep;
pub mod manage;
pub mod schedule;
mod shape;
pub mod table;

pub use definition::{
    ContinuousQuery, DataEvents, Definition, EvaluationProgress, ExportPreferences,
    NewContinuousQuery, PatchContinuousQuery, SchedulingPreferences,
};
pub use evaluate::{Evaluation, Evaluator, evaluate};
pub use manage::ValidateAnswer;
pub use schedule::{Backfill, record_changes, record_settings_change, span_of};
pub use shape::Shape;

use crate::store::health::StoreError;
use crate::store::metadata::MetadataError;
use crate::validation::Invalid;

/// Failures of continuous-query operations.
#[derive(Debug, thiserror::Error)]
pub enum ContinuousError {
    /// The input was rejected.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// No such query for this team.
    #[error("continuous query not found")]
    NotFound,
    /// The team has an active query with this slug.
    #[error("a continuous query with slug {0:?} exists")]
    SlugTaken(String),
    /// The user has no result table for the query yet (or is not the team's).
    #[error("no result table yet")]
    NoTable,
    /// Running the query.
    #[error(transparent)]
    Query(#[from] crate::query::QueryError),
    /// The health store.
    #[error("health store: {0}")]
    Store(#[from] StoreError),
    /// The metadata store.
    #[error("metadata store: {0}")]
    Metadata(#[from] MetadataError),
    /// A stored table or definition could not be read back, or a table not built.
    #[error("result table: {0}")]
    Table(String),
}

impl From<datafusion::arrow::error::ArrowError> for ContinuousError {
    fn from(e: datafusion::arrow::error::ArrowError) -> Self {
        ContinuousError::Table(e.to_string())
    }
}

impl From<datafusion::parquet::errors::ParquetError> for ContinuousError {
    fn from(e: datafusion::parquet::errors::ParquetError) -> Self {
        ContinuousError::Table(e.to_string())
    }
}
