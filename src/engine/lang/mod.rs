//! The engine's front end: the request language of `aggregate-dsl.md` §1–§2. A JSON body goes in
//! ([`parse::parse_request`]); a [`request::ValidRequest`] comes out, every rule checked and every
//! refusal located, before any data is read. `subquery.rs` holds the scalar-output subqueries
//! over list columns of `analytics.md` §3 (compiled by `plan/list_reduce.rs`).

pub(super) mod align;
pub(super) mod envelope;
pub(super) mod parse;
pub(super) mod parse_expr;
pub(super) mod request;
pub(super) mod rules;
pub(super) mod subquery;
pub(super) mod where_clause;
