//! A query's ALIGN clause to its plan node: which column is the spine's and which form the
//! partitions, the window's first and last buckets, and the bucket of "now" in the user's
//! floating time. The compiler calls [`wrap`] on the aggregated plan of every query.

use datafusion::common::{Result, internal_err};
use datafusion::logical_expr::LogicalPlanBuilder;

use super::{AlignNode, AlignSpec, Reach};
use crate::engine::UserContext;
use crate::engine::lang::request::{GroupBy, Query, QuerySource, ValidRequest};
use crate::engine::time;
use crate::schema::Table;

/// `plan` aligned as `q` asks (unchanged without `align`): the group keys are the columns
/// `key(i)`, the `date_trunc` one the spine's. The window and "now" come from the request and
/// the user's context.
pub fn wrap(
    plan: LogicalPlanBuilder,
    req: &ValidRequest,
    q: &Query,
    user: &UserContext,
    key: impl Fn(usize) -> String,
) -> Result<LogicalPlanBuilder> {
    let Some(align) = q.align else {
        return Ok(plan);
    };
    let Some((date, period)) = q.group_by.iter().enumerate().find_map(|(i, g)| match g {
        GroupBy::DateTrunc(p) => Some((i, *p)),
        _ => None,
    }) else {
        return internal_err!("align without a date_trunc passed validation");
    };
    let window =
        time::window(&req.timeframe, user.ingestion_start, user.ingestion_end).map(|(s, e)| {
            (
                time::trunc(time::micros(s), period),
                time::trunc(time::micros(e) - 1, period),
            )
        });
    let now = user.now.map(|now| {
        let utc = now.timestamp_micros();
        let floating = match q.source {
            QuerySource::Table(Table::Profile) => utc,
            _ => time::to_floating(utc, None, user.fallback_time_zone),
        };
        time::trunc(floating, period)
    });
    let spec = AlignSpec {
        carry: align.carry,
        period,
        reach: Reach { window, now },
    };
    let partition = (0..q.group_by.len())
        .filter(|i| *i != date)
        .map(&key)
        .collect();
    Ok(LogicalPlanBuilder::from(AlignNode::plan(
        plan.build()?,
        spec,
        key(date),
        partition,
    )?))
}
