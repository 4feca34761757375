//! Provider prioritisation (§3.5) as a plan shape: the first aggregate groups by (group keys,
//! provider, source type); this module ranks those sub-groups and keeps the best per group with
//! `row_number() OVER (PARTITION BY keys ORDER BY rank)`.
//!
//! Rank order: source type (`SOURCE_TYPE_PRIORITY`, others after and by name), then provider:
//! request overrides, then the team's order for the data type, then the default order and the
//! rest of the catalogue (`effective_priority`); an unlisted provider ranks last, by slug.

use datafusion::common::Result as DfResult;
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{ExprFunctionExt, LogicalPlanBuilder, SortExpr, case};
use datafusion::prelude::{Expr, lit};

use crate::providers::{SOURCE_TYPE_PRIORITY, effective_priority};

use super::expr::column;

/// Internal column names of the provider and source type of a sub-group.
pub const PROVIDER: &str = "__provider";
/// See [`PROVIDER`].
pub const SOURCE_TYPE: &str = "__source_type";
const ROW: &str = "__best";

/// The provider order for one query: overrides, then the team's order, then the defaults.
pub fn provider_order(overrides: &[String], team: &[String]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for s in overrides.iter().cloned().chain(effective_priority(team)) {
        if !order.contains(&s) {
            order.push(s);
        }
    }
    order
}

fn rank(col: &str, order: &[&str]) -> DfResult<Expr> {
    let mut c = case(column(col));
    for (i, s) in order.iter().enumerate() {
        c = c.when(lit(*s), lit(i as i64));
    }
    c.otherwise(lit(order.len() as i64))
}

/// Keeps, per group of `keys`, the sub-group of the best (source type, provider).
pub fn keep_best(
    plan: LogicalPlanBuilder,
    keys: Vec<Expr>,
    providers: &[String],
) -> DfResult<LogicalPlanBuilder> {
    let providers: Vec<&str> = providers.iter().map(String::as_str).collect();
    let order: Vec<SortExpr> = vec![
        rank(SOURCE_TYPE, SOURCE_TYPE_PRIORITY)?.sort(true, true),
        column(SOURCE_TYPE).sort(true, true),
        rank(PROVIDER, &providers)?.sort(true, true),
        column(PROVIDER).sort(true, true),
    ];
    let best = row_number()
        .partition_by(keys)
        .order_by(order)
        .build()?
        .alias(ROW);
    plan.window(vec![best])?.filter(column(ROW).eq(lit(1u64)))
}
