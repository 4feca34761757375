//! [`compile`]: one validated query to a DataFusion `LogicalPlan`, with `LogicalPlanBuilder`
//! and `Expr` only. The plan shape:
//!
//! ```text
//! scan (one table, or a union of resources with a `resource` column)
//!  → filter: index in the floating window, and WHERE
//!  → projection: group keys __k*, aggregate inputs __a*, index time, ingestion time, source
//!  → aggregate by keys (+ the interned (provider, source type) when prioritised)
//!  → [aggregate by keys: each result of the best-ranked source]     (§3.5, `best.rs`)
//!  → sort by keys → projection to the output names of §4.1
//! ```
//! A derived table's scan is its own plan (`readiness.rs`), read from then on like a
//! date-indexed table.
//! Row-level queries skip the aggregate and sort by index time, then provider, source type and
//! record id (or resource), so their order is deterministic. Group keys sort ascending with
//! nulls last.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result as DfResult, plan_err};
use datafusion::functions_aggregate::expr_fn::{avg, count, max, median, min, stddev, sum};
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder, Projection, cast, ident};
use datafusion::prelude::{Expr, lit};

use crate::schema::{
    Dataset, Derived, Family, INGESTED_AT, Resource, TIMEZONE_OFFSET, timeseries_schema,
};

use super::align;
use super::bucket::{self, BucketNode, BucketSpec};
use super::catalog::{Catalog, data_type_of};
use super::expr::{RowExprs, column, floating_lit};
use super::priority::{PROVIDER, SOURCE, SOURCE_TYPE, Sources, keep_best, provider_order};
use super::readiness;
use super::udaf::Pick;
use super::udf::{DatePartUdf, DateTrunc};
use crate::engine::lang::request::{
    Func, GroupBy, Operand, Query, QuerySource, SelectKind, ValidRequest,
};
use crate::engine::{EngineError, time};

pub(super) const TIME: &str = "__time";
pub(super) const INGESTED: &str = "__ingested";
pub(super) const NON_EMPTY: &str = "__rows";

pub(super) fn key(i: usize) -> String {
    format!("__k{i}")
}
pub(super) fn arg(j: usize) -> String {
    format!("__a{j}")
}
pub(super) fn res(j: usize) -> String {
    format!("__r{j}")
}

/// Compiles query `query_index` of `req` against `catalog`. Pure and synchronous.
pub fn compile(
    req: &ValidRequest,
    query_index: usize,
    catalog: &Catalog,
) -> Result<LogicalPlan, EngineError> {
    let (q, scan, rows) = scanned(req, query_index, catalog)?;
    build(req, q, catalog, &rows, scan).map_err(|source| EngineError::Planning { source })
}

/// Query `query_index` of `req`, the scan of what it reads and its per-row expressions.
pub(super) fn scanned<'r>(
    req: &'r ValidRequest,
    query_index: usize,
    catalog: &Catalog,
) -> Result<(&'r Query, LogicalPlanBuilder, RowExprs<'r>), EngineError> {
    let q = req
        .queries
        .get(query_index)
        .ok_or_else(|| EngineError::Internal(format!("no query {query_index}")))?;
    let rows = RowExprs {
        source: &q.source,
        zone: catalog.user.fallback_time_zone,
    };
    Ok((q, scan(req, q, catalog)?, rows))
}

/// The rows a query reads: its window (and the user's ingestion bounds), then its `where`.
pub(super) fn kept_rows(
    req: &ValidRequest,
    q: &Query,
    catalog: &Catalog,
    rows: &RowExprs<'_>,
) -> Expr {
    let pred = window_filter(req, q, catalog, rows);
    match &q.filter {
        Some(w) => pred.and(rows.where_expr(w)),
        None => pred,
    }
}

/// The stored dataset a query reads (its first resource); none for a derived table.
fn dataset_of(q: &Query) -> Option<Dataset> {
    match &q.source {
        QuerySource::Table(t) => Some(Dataset::Table(*t)),
        QuerySource::Timeseries(rs) => rs.first().map(|r| Dataset::Timeseries(*r)),
        QuerySource::Derived(_) => None,
    }
}

fn scan(
    req: &ValidRequest,
    q: &Query,
    catalog: &Catalog,
) -> Result<LogicalPlanBuilder, EngineError> {
    let df = |source| EngineError::Planning { source };
    match &q.source {
        QuerySource::Derived(Derived::Readiness) => {
            readiness::plan(req, catalog).map(LogicalPlanBuilder::from)
        }
        QuerySource::Table(t) => {
            LogicalPlanBuilder::scan(t.name(), catalog.source(Dataset::Table(*t))?, None)
                .map_err(df)
        }
        QuerySource::Timeseries(rs) if rs.len() == 1 => LogicalPlanBuilder::scan(
            rs[0].name,
            catalog.source(Dataset::Timeseries(rs[0]))?,
            None,
        )
        .map_err(df),
        QuerySource::Timeseries(rs) => {
            let fields = union_fields(rs);
            let mut plan: Option<LogicalPlanBuilder> = None;
            for r in rs {
                let schema = timeseries_schema(r.family);
                let mut cols = vec![lit(r.name).alias("resource")];
                for (name, dt) in &fields {
                    let e = if schema.field_with_name(name).is_ok() {
                        cast(ident(name.as_str()), dt.clone())
                    } else {
                        cast(lit(datafusion::common::ScalarValue::Null), dt.clone())
                    };
                    cols.push(e.alias(name.as_str()));
                }
                let one = LogicalPlanBuilder::scan(
                    r.name,
                    catalog.source(Dataset::Timeseries(*r))?,
                    None,
                )
                .and_then(|b| b.project(cols))
                .map_err(df)?;
                plan = Some(match plan {
                    None => one,
                    Some(p) => p.union(one.build().map_err(df)?).map_err(df)?,
                });
            }
            plan.ok_or_else(|| EngineError::Internal("timeseries query without resources".into()))
        }
    }
}

/// Every column of the resources' schemas, first-seen order, with its type.
fn union_fields(rs: &[Resource]) -> Vec<(String, DataType)> {
    let mut out: Vec<(String, DataType)> = Vec::new();
    let families: Vec<Family> = rs.iter().map(|r| r.family).collect();
    for f in families {
        for field in timeseries_schema(f).fields() {
            if !out.iter().any(|(n, _)| n == field.name()) {
                out.push((field.name().clone(), field.data_type().clone()));
            }
        }
    }
    out
}

fn window_filter(req: &ValidRequest, q: &Query, catalog: &Catalog, rows: &RowExprs<'_>) -> Expr {
    let u = &catalog.user;
    let Some((start, end)) = time::window(&req.timeframe, u.ingestion_start, u.ingestion_end)
    else {
        return lit(false);
    };
    let date_index = match &q.source {
        QuerySource::Table(t) if t.index_is_date() => Some(t.index_column()),
        QuerySource::Derived(d) => Some(d.index_column()),
        _ => None,
    };
    match date_index {
        Some(index) => {
            // A date is its midnight: midnight ≥ start ⇔ date ≥ ⌈start⌉ (same for end).
            let ceil = |t: chrono::NaiveDateTime| {
                let d = t.date();
                if t.time() == chrono::NaiveTime::MIN {
                    d
                } else {
                    d.succ_opt().unwrap_or(d)
                }
            };
            let date = |d: chrono::NaiveDate| {
                let days = time::micros(d.and_time(chrono::NaiveTime::MIN))
                    .div_euclid(time::MICROS_PER_DAY);
                lit(datafusion::common::ScalarValue::Date32(
                    i32::try_from(days).ok(),
                ))
            };
            let c = ident(index);
            c.clone()
                .gt_eq(date(ceil(start)))
                .and(c.lt(date(ceil(end))))
        }
        None => {
            let idx = rows.index_ts();
            idx.clone()
                .gt_eq(floating_lit(time::micros(start)))
                .and(idx.lt(floating_lit(time::micros(end))))
        }
    }
}

/// A group key's per-row value.
pub(super) fn group_key(g: &GroupBy, rows: &RowExprs<'_>) -> DfResult<Expr> {
    Ok(match g {
        GroupBy::DateTrunc(p) => DateTrunc::call(*p, rows.index_ts()),
        GroupBy::DatePart(p) => DatePartUdf::call(*p, rows.index_ts()),
        GroupBy::Value(op) => rows.operand(op),
        // A team query runs per user without its user keys (`plan/team.rs`).
        GroupBy::User(_) => return plan_err!("a user group key in a per-user plan"),
    })
}

pub(super) fn aggregate(f: Func, a: Expr) -> Expr {
    let f64 = |e: Expr| cast(e, DataType::Float64);
    match f {
        Func::Mean => avg(f64(a)),
        Func::Min => min(a),
        Func::Max => max(a),
        Func::Sum => sum(a),
        Func::Count => count(a),
        Func::Median => median(f64(a)),
        Func::Stddev => stddev(f64(a)),
        Func::Oldest | Func::Newest => {
            Pick::call(f == Func::Newest, a, column(TIME), column(INGESTED))
        }
    }
}

fn build(
    req: &ValidRequest,
    q: &Query,
    catalog: &Catalog,
    rows: &RowExprs<'_>,
    scan: LogicalPlanBuilder,
) -> DfResult<LogicalPlan> {
    if let Some(spec) = bucket_spec(req, q, catalog) {
        let input = match &q.filter {
            Some(w) => scan.filter(rows.where_expr(w))?,
            None => scan,
        };
        let node = BucketNode::plan(input.build()?, spec.0, spec.1)?;
        let aligned = align::wrap(LogicalPlanBuilder::from(node), req, q, &catalog.user, key)?;
        return project(aligned, output(q))?.build();
    }
    let plan = scan.filter(kept_rows(req, q, catalog, rows))?;
    if !q.aggregates() {
        return row_level(q, rows, plan);
    }
    let prioritised = q.prioritised();
    let mut proj: Vec<Expr> = Vec::new();
    for (i, g) in q.group_by.iter().enumerate() {
        proj.push(group_key(g, rows)?.alias(key(i)));
    }
    let (mut aggs, mut results) = (Vec::new(), Vec::new());
    let mut ordered = false;
    for (j, item) in q.select.iter().enumerate() {
        if let SelectKind::Aggregate(f, op) = &item.kind {
            proj.push(rows.operand(op).alias(arg(j)));
            ordered |= matches!(f, Func::Oldest | Func::Newest);
            aggs.push(aggregate(*f, column(&arg(j))).alias(res(j)));
            results.push(res(j));
        }
    }
    if ordered {
        proj.push(rows.index_ts().alias(TIME));
        proj.push(ident(INGESTED_AT).alias(INGESTED));
    }
    let keys: Vec<Expr> = (0..q.group_by.len()).map(|i| column(&key(i))).collect();
    let mut groups = keys.clone();
    let sources = Sources::new(provider_order(
        &req.priority_overrides,
        &team_order(q, catalog),
    ));
    if prioritised {
        let code = sources.code(ident("source_provider"), ident("source_type"));
        proj.push(code.alias(SOURCE));
        groups.push(column(SOURCE));
    }
    if q.group_by.is_empty() {
        aggs.push(count(lit(1i64)).alias(NON_EMPTY));
    }
    let mut plan = project(plan, proj)?.aggregate(groups, aggs)?;
    if prioritised {
        plan = keep_best(plan, keys.clone(), &results, &sources)?;
    }
    plan = align::wrap(plan, req, q, &catalog.user, key)?;
    if q.group_by.is_empty() {
        plan = plan.filter(column(NON_EMPTY).gt(lit(0i64)))?;
    } else {
        plan = plan.sort(
            keys.iter()
                .map(|k| k.clone().sort(true, false))
                .collect::<Vec<_>>(),
        )?;
    }
    project(plan, output(q))?.build()
}

/// A projection of expressions the compiler built itself: their columns name the input's
/// fields and their names are unique by construction, so the builder's normalisation and
/// name validation (a third of planning time) are skipped.
pub(super) fn project(plan: LogicalPlanBuilder, exprs: Vec<Expr>) -> DfResult<LogicalPlanBuilder> {
    let input = Arc::new(plan.build()?);
    Ok(LogicalPlanBuilder::from(LogicalPlan::Projection(
        Projection::try_new(exprs, input)?,
    )))
}

/// The final projection of an aggregate query: group keys and results to their §4.1 names.
pub(super) fn output(q: &Query) -> Vec<Expr> {
    q.select
        .iter()
        .enumerate()
        .map(|(j, item)| match &item.kind {
            SelectKind::GroupKey(n) => column(&key(*n)).alias(item.name.as_str()),
            _ => column(&res(j)).alias(item.name.as_str()),
        })
        .collect()
}

/// The query as a [`BucketNode`] (its spec and output names), when it has the operator's
/// shape: one resource, one `date_trunc` group key, prioritised, aggregates the operator
/// computes over Float64 fields (`count` over any field). Else the general plan.
fn bucket_spec(
    req: &ValidRequest,
    q: &Query,
    catalog: &Catalog,
) -> Option<(BucketSpec, Vec<String>)> {
    if !catalog.bucket_operator || !q.prioritised() {
        return None;
    }
    let QuerySource::Timeseries(rs) = &q.source else {
        return None;
    };
    let ([r], [GroupBy::DateTrunc(period)]) = (rs.as_slice(), q.group_by.as_slice()) else {
        return None;
    };
    let schema = timeseries_schema(r.family);
    let (mut aggs, mut names) = (Vec::new(), Vec::new());
    for (j, item) in q.select.iter().enumerate() {
        match &item.kind {
            SelectKind::GroupKey(0) => {}
            SelectKind::Aggregate(f, Operand::Field(_, name))
                if bucket::supports(*f) && *name != TIMEZONE_OFFSET =>
            {
                let float = schema.field_with_name(name).ok()?.data_type() == &DataType::Float64;
                if *f != Func::Count && !float {
                    return None;
                }
                aggs.push((*f, (*name).to_owned()));
                names.push(res(j));
            }
            _ => return None,
        }
    }
    let u = &catalog.user;
    let window = time::window(&req.timeframe, u.ingestion_start, u.ingestion_end)
        .map(|(s, e)| (time::micros(s), time::micros(e)));
    let spec = BucketSpec {
        period: *period,
        zone: u.fallback_time_zone,
        window,
        aggs,
        providers: provider_order(&req.priority_overrides, &team_order(q, catalog)),
        filtered: q.filter.is_some(),
    };
    Some((spec, names))
}

/// The team's provider order for the query's data type.
pub(super) fn team_order(q: &Query, catalog: &Catalog) -> Vec<String> {
    dataset_of(q)
        .and_then(|d| catalog.user.team_priorities.get(data_type_of(d)))
        .cloned()
        .unwrap_or_default()
}

fn row_level(q: &Query, rows: &RowExprs<'_>, plan: LogicalPlanBuilder) -> DfResult<LogicalPlan> {
    let mut proj: Vec<Expr> = q
        .select
        .iter()
        .enumerate()
        .map(|(j, item)| match &item.kind {
            SelectKind::Value(op) => rows.operand(op).alias(arg(j)),
            _ => lit(datafusion::common::ScalarValue::Null).alias(arg(j)),
        })
        .collect();
    let mut order = vec![TIME, PROVIDER, SOURCE_TYPE];
    proj.push(rows.index_ts().alias(TIME));
    proj.push(ident("source_provider").alias(PROVIDER));
    proj.push(ident("source_type").alias(SOURCE_TYPE));
    let tiebreak = match &q.source {
        QuerySource::Table(_) => Some("id"),
        QuerySource::Timeseries(rs) if rs.len() > 1 => Some("resource"),
        QuerySource::Timeseries(_) | QuerySource::Derived(_) => None,
    };
    if let Some(t) = tiebreak {
        proj.push(ident(t).alias("__tiebreak"));
        order.push("__tiebreak");
    }
    // Two instants can share a floating time (different offsets): the stored instant decides.
    let raw = match &q.source {
        QuerySource::Table(t) => t.index_column(),
        QuerySource::Timeseries(_) => "timestamp",
        QuerySource::Derived(d) => d.index_column(),
    };
    proj.push(ident(raw).alias("__instant"));
    order.push("__instant");
    let out: Vec<Expr> = q
        .select
        .iter()
        .enumerate()
        .map(|(j, item)| column(&arg(j)).alias(item.name.as_str()))
        .collect();
    project(plan, proj)?
        .sort(
            order
                .into_iter()
                .map(|c| column(c).sort(true, false))
                .collect::<Vec<_>>(),
        )
        .and_then(|sorted| project(sorted, out))?
        .build()
}
