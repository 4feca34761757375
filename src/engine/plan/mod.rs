//! The engine's planner: a validated query to a DataFusion logical plan over the user's data
//! ([`compile::compile`]), with the functions, aggregates and the physical operator of our own
//! that the plans use (time UDFs, `oldest`/`newest`, `best`, the time-bucket aggregate, ALIGN's gap filling) and the
//! provider-priority plan shape; `readiness` computes the `derived_readiness` table.

pub(super) mod align;
pub(super) mod best;
pub(super) mod bucket;
pub(super) mod catalog;
pub(super) mod compile;
pub(super) mod expr;
pub(super) mod list_reduce;
pub mod macros;
mod operator;
pub(super) mod ordered;
pub(super) mod priority;
pub(super) mod readiness;
pub(super) mod team;
pub(super) mod udaf;
pub(super) mod udf;
