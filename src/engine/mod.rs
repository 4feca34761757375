//! The aggregate query engine (`spec/aggregate-dsl.md`): request validation, compilation to
//! DataFusion logical plans, execution under time and memory limits, and the JSON and Parquet
//! encoders. No HTTP and no store in here: callers hand in record batches with the storage
//! schemas of [`crate::schema`] and map [`EngineError`] to status codes.
//!
//! Flow: [`parse_request`] → [`required_inputs`] (the caller loads those datasets) →
//! [`execute`] (which calls [`compile`] per query) → [`encode_json`] or [`encode_parquet_tar`].
//!
//! Module map: `request` (typed request), `parse`/`parse_expr`/`rules`/`where_clause`
//! (validation, §1–§2), `time`/`udf`/`macros` (floating time, buckets, parts, sleep macros),
//! `catalog`/`expr`/`compile`/`priority` (plans, §3), `execute`, `encode` (§4).

mod catalog;
mod compile;
mod encode;
mod envelope;
mod error;
mod execute;
mod expr;
mod json_check;
mod limits;
pub mod macros;
mod parse;
mod parse_expr;
mod priority;
mod request;
mod rules;
pub mod time;
mod udf;
mod where_clause;

#[cfg(test)]
mod tests;

pub use catalog::{Catalog, UserContext, data_type_of};
pub use compile::compile;
pub use encode::json::encode_json;
pub use encode::parquet_tar::encode_parquet_tar;
pub use encode::{encode_json_blocking, encode_parquet_tar_blocking};
pub use error::EngineError;
pub use execute::{QueryResult, execute, required_inputs};
pub use limits::Limits;
pub use parse::parse_request;
pub use priority::provider_order;
pub use request::{
    DatePart, Func, GroupBy, Operand, Period, Query, QuerySource, SelectItem, SelectKind,
    Timeframe, Unit, ValidRequest, ValueMacro, ValueType,
};
pub use udf::{DatePartUdf, DateTrunc, FloatingTime};
pub use where_clause::{CmpOp, Literal, WhereExpr};
