//! The aggregate query engine (`spec/aggregate-dsl.md`): request validation, compilation to
//! DataFusion logical plans, execution under time and memory limits, and the JSON and Parquet
//! encoders. No HTTP and no store in here: callers hand in record batches with the storage
//! schemas of [`crate::schema`] and map [`EngineError`] to status codes.
//!
//! Flow: [`parse_request`] → [`required_inputs`] (the caller loads those datasets) →
//! [`Engine::execute`] (which calls [`compile`] per query) → [`encode_json`] or
//! [`encode_parquet_tar`]. [`Engine::explain_analyze`] runs the same plans and reports each
//! phase's time and the physical plan with its metrics (diagnostics). An [`Engine`] is built
//! once at start-up and holds the limits, the planning state (DataFusion's function registry,
//! our optimiser rules and planner) and the CPU runtime; each request only gets a task context
//! with its own memory pool, and one deadline for all its phases.
//!
//! Module map: `lang/` (the front end, §1–§2: `request` the typed request, `parse`/`envelope`/
//! `parse_expr`/`rules`/`where_clause` its validation, over [`crate::validation::read`]; `align`
//! the ALIGN clause of `analytics.md` §1), `plan/` (the planner, §3:
//! `catalog`/`expr`/`compile`/`priority`/`best`, `udf`/`udaf`/`macros` our functions, `bucket` the
//! time-bucket operator, `align` ALIGN's gap filling after the aggregate), `time` (floating time and calendar arithmetic, shared by both),
//! `execute`/`instance` (running a request), `budget` (what a request holds, charged to its
//! pool), `encode` (§4).
//!
//! Two plan shapes: the general one (`plan/compile.rs`: filter, projection, aggregate, best-source
//! aggregate, sort) for every query, and, for the most common shape (one resource, one
//! `date_trunc` group key, mean/min/max/sum/count/oldest/newest of float fields), a logical
//! extension node planned as our own operator (`plan/bucket/`), which reads runs of rows per
//! source and skips whole batches a better source already owns. Tests compare the two on
//! random queries; `Limits::bucket_operator = false` forces the general one.
//!
//! ALIGN (`analytics.md` §1) is one more plan node, `AlignExec`, between the aggregate (or the
//! bucket operator) and the sort: it lays each partition of the non-date group keys on its
//! bucket spine and carries every column on its own, so the JSON and Parquet answers come from
//! the same batches. "Now" is [`UserContext::now`], set by the caller.
//!
//! Decisions where the spec is silent (details in each module's docs):
//! - The window's `anchor − past` starts at the anchor's local midnight; `ingestion_end` is an
//!   inclusive day. Date-indexed tables (activity, meal) compare their day's midnight.
//! - Profile times stay UTC: its index is output with `Z` and buckets/parts use UTC wall time.
//! - Without `group_by` a query either aggregates every select item over the window (one row,
//!   none when the window is empty) or lists rows; mixing is a 422.
//! - Row-level results are ordered by index time, provider, source type, record id (or
//!   resource) and stored instant; groups by keys ascending with nulls last.
//! - Priority ties among unranked source types go by source-type name before provider rank.
//! - `mean`, `median` and `stddev` are DataFusion's `avg`, `median` and `stddev` over the input
//!   cast to Float64 (they are exactly the §3.6 semantics then); `oldest`/`newest` are our own
//!   UDAF (`plan/udaf.rs`) over (value, index time, ingestion time), ignoring null values.
//! - Memory exhaustion is [`EngineError::ResourcesExhausted`], answered 422 by the HTTP layer
//!   (the request is too big for the memory limit; narrowing the timeframe helps, retrying not).
//!   The limit covers the request, not only DataFusion's operators: the input batches it reads
//!   and the result tables it keeps are charged to the same pool (`budget.rs`).
//! - Queries run on the engine's own multi-threaded runtime, so the caller's timer answers the
//!   timeout on time, and are aborted when their future is dropped (a 504 stops the work);
//!   encoders have `*_blocking` wrappers for async callers.

mod budget;
mod encode;
mod error;
mod execute;
mod instance;
mod lang;
mod limits;
mod plan;
mod stored;
mod task;
mod team;
pub mod time;

#[cfg(test)]
mod tests;

pub use budget::InputSize;
pub use encode::json::{encode_json, encode_json_bytes};
pub use encode::parquet_tar::encode_parquet_tar;
pub use encode::{
    JSON_MEDIA_TYPE, OutputFormat, PARQUET_TAR_MEDIA_TYPE, encode_blocking, encode_json_blocking,
    encode_parquet_tar_blocking,
};
pub use error::EngineError;
pub use execute::{Inputs, QueryResult, required_inputs};
pub use instance::{Engine, execute, explain_analyze};
pub use lang::align::{Align, Carry, CarryMode};
pub use lang::parse::{parse_request, parse_team_request};
pub use lang::request::{
    DatePart, Func, GroupBy, Operand, Period, Query, QuerySource, SelectItem, SelectKind,
    Timeframe, Unit, UserKey, ValidRequest, ValueMacro, ValueType,
};
pub use lang::subquery::{SubArg, Subquery};
pub use lang::where_clause::{CmpOp, Literal, WhereExpr};
pub use limits::Limits;
pub use plan::catalog::{Catalog, UserContext, data_type_of};
pub use plan::compile::compile;
pub use plan::macros;
pub use plan::priority::provider_order;
pub use plan::readiness::BASELINE_DAYS as READINESS_BASELINE_DAYS;
pub use plan::udf::{DatePartUdf, DateTrunc, FloatingTime};
pub use task::AbortOnDrop;
pub use team::{Member, Runner, TeamRequest, TeamRun, UserPart};
