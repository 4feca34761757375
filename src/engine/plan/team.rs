//! The plans of a team query (`analytics.md` §5; the request's split is `engine/team.rs`).
//!
//! A query that splits by user runs as the per-user query for each user (`compile.rs`, with
//! every group key selected as `__k{i}`); its answers are stacked and sorted here
//! ([`by_user`]). A query across users runs, for each user, [`rows`]: the rows the per-user
//! query would aggregate (its window, its `where`, and, when it is prioritised, only the rows
//! of each group's best source, chosen per user):
//!
//! ```text
//! scan → filter (the user's window, WHERE) → projection: keys __k*, inputs __a*, [__time,
//! __ingested], [source code]
//!   ⋉ (semi join on keys and source, nulls equal) the same rows aggregated by keys to
//!     best_source(source code)
//! ```
//!
//! and [`across`] aggregates every user's rows together with the per-user query's own
//! aggregates. So every function is exact across users (a median of all the chosen rows, not
//! a median of medians), and the per-user choices (provider priority, floating time in the
//! user's zone, ingestion bounds) are made before anything is combined.

use std::sync::Arc;

use datafusion::common::{JoinType, NullEquality, Result as DfResult};
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder, TableSource, ident};
use datafusion::prelude::{Expr, lit};

use super::best::Best;
use super::catalog::Catalog;
use super::compile::{
    INGESTED, NON_EMPTY, TIME, aggregate, arg, group_key, kept_rows, key, output, project, res,
    scanned, team_order,
};
use super::expr::{RowExprs, column};
use super::priority::{SOURCE, Sources, provider_order};
use crate::engine::EngineError;
use crate::engine::lang::request::{Func, Query, SelectKind, ValidRequest};
use crate::schema::INGESTED_AT;

const BEST: &str = "__best";
const TEAM_INPUT: &str = "team_rows";

/// One user's rows of query `query_index` as its per-user query would aggregate them: keys
/// `__k{i}`, aggregate inputs `__a{j}`, and `__time`/`__ingested` when an `oldest`/`newest`
/// needs them. `req` holds no user keys.
pub fn rows(
    req: &ValidRequest,
    query_index: usize,
    catalog: &Catalog,
) -> Result<LogicalPlan, EngineError> {
    let (q, input, rows) = scanned(req, query_index, catalog)?;
    rows_plan(req, q, catalog, &rows, input).map_err(|source| EngineError::Planning { source })
}

fn ordered(q: &Query) -> bool {
    q.select.iter().any(|s| {
        matches!(
            s.kind,
            SelectKind::Aggregate(Func::Oldest | Func::Newest, _)
        )
    })
}

fn rows_plan(
    req: &ValidRequest,
    q: &Query,
    catalog: &Catalog,
    rows: &RowExprs<'_>,
    input: LogicalPlanBuilder,
) -> DfResult<LogicalPlan> {
    let mut proj = Vec::new();
    for (i, g) in q.group_by.iter().enumerate() {
        proj.push(group_key(g, rows)?.alias(key(i)));
    }
    for (j, item) in q.select.iter().enumerate() {
        if let SelectKind::Aggregate(_, op) = &item.kind {
            proj.push(rows.operand(op).alias(arg(j)));
        }
    }
    if ordered(q) {
        proj.push(rows.index_ts().alias(TIME));
        proj.push(ident(INGESTED_AT).alias(INGESTED));
    }
    let prioritised = q.prioritised();
    let sources = Sources::new(provider_order(
        &req.priority_overrides,
        &team_order(q, catalog),
    ));
    if prioritised {
        let code = sources.code(ident("source_provider"), ident("source_type"));
        proj.push(code.alias(SOURCE));
    }
    let selected = project(input.filter(kept_rows(req, q, catalog, rows))?, proj)?;
    if !prioritised {
        return selected.build();
    }
    // Each group's best source among those with rows in it (§3.5), then only its rows.
    let n = q.group_by.len();
    let keys: Vec<Expr> = (0..n).map(|i| column(&key(i))).collect();
    let best = selected.clone().aggregate(
        keys,
        vec![Best::call(&sources, column(SOURCE), column(SOURCE)).alias(BEST)],
    )?;
    let renamed: Vec<Expr> = (0..n)
        .map(|i| column(&key(i)).alias(format!("__b{i}")))
        .chain([column(BEST)])
        .collect();
    let best = project(best, renamed)?.build()?;
    let left: Vec<String> = (0..n).map(key).chain([SOURCE.to_owned()]).collect();
    let right: Vec<String> = (0..n)
        .map(|i| format!("__b{i}"))
        .chain([BEST.to_owned()])
        .collect();
    let kept = selected.join_detailed(
        best,
        JoinType::LeftSemi,
        (left, right),
        None,
        NullEquality::NullEqualsNull,
    )?;
    // The source code is the user's own interning: it leaves the user's rows here.
    let out: Vec<Expr> = kept
        .schema()
        .fields()
        .iter()
        .filter(|f| f.name() != SOURCE)
        .map(|f| column(f.name()))
        .collect();
    project(kept, out)?.build()
}

/// Every user's rows of a query across users ([`rows`]), aggregated as the per-user query
/// aggregates one user's, sorted by its keys and named as §4.1 names them.
pub fn across(q: &Query, input: Arc<dyn TableSource>) -> Result<LogicalPlan, EngineError> {
    across_plan(q, input).map_err(|source| EngineError::Planning { source })
}

fn across_plan(q: &Query, input: Arc<dyn TableSource>) -> DfResult<LogicalPlan> {
    let keys: Vec<Expr> = (0..q.group_by.len()).map(|i| column(&key(i))).collect();
    let mut aggs: Vec<Expr> = q
        .select
        .iter()
        .enumerate()
        .filter_map(|(j, item)| match &item.kind {
            SelectKind::Aggregate(f, _) => Some(aggregate(*f, column(&arg(j))).alias(res(j))),
            _ => None,
        })
        .collect();
    if keys.is_empty() {
        aggs.push(count(lit(1i64)).alias(NON_EMPTY));
    }
    let plan = LogicalPlanBuilder::scan(TEAM_INPUT, input, None)?.aggregate(keys.clone(), aggs)?;
    let plan = if keys.is_empty() {
        plan.filter(column(NON_EMPTY).gt(lit(0i64)))?
    } else {
        plan.sort(sorted(keys))?
    };
    project(plan, output(q))?.build()
}

/// Every user's answer to a query split by user, stacked with the user keys as columns
/// (`__k{i}` for every group key, `__r{j}` for every aggregate): sorted by the group keys in
/// their order, named as §4.1 names them.
pub fn by_user(q: &Query, input: Arc<dyn TableSource>) -> Result<LogicalPlan, EngineError> {
    let keys: Vec<Expr> = (0..q.group_by.len()).map(|i| column(&key(i))).collect();
    LogicalPlanBuilder::scan(TEAM_INPUT, input, None)
        .and_then(|p| p.sort(sorted(keys)))
        .and_then(|p| project(p, output(q)))
        .and_then(LogicalPlanBuilder::build)
        .map_err(|source| EngineError::Planning { source })
}

/// Ascending, nulls last: the order of §4.2.
fn sorted(keys: Vec<Expr>) -> Vec<datafusion::logical_expr::SortExpr> {
    keys.into_iter().map(|k| k.sort(true, false)).collect()
}
