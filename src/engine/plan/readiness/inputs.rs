//! The stored inputs of `derived_readiness` as logical plans: each a scan of one dataset, a
//! filter to the days it can affect (the window, and for the baseline's inputs the 21 days
//! before it, never before the user's `ingestion_start`) and a projection of the columns the
//! formulas read, instants already in floating time (the compiler's own expressions, so
//! floating time, the fallback zone and the `sleep_score` macro are exactly the language's).
//! Heart rate is the exception: its scan's columns as they are, which `load.rs` windows
//! itself (a filter and a projection would copy every row of the largest input, only for
//! one pass to read them).

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use datafusion::common::{ScalarValue, TableReference};
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder, ident};
use datafusion::prelude::{Expr, lit};

use super::load::COLUMNS as HEART_RATE_COLUMNS;
use super::score::BASELINE_DAYS;
use crate::engine::EngineError;
use crate::engine::lang::request::{Operand, QuerySource, Timeframe, ValueMacro};
use crate::engine::plan::catalog::{Catalog, UserContext};
use crate::engine::plan::expr::{RowExprs, floating_lit};
use crate::engine::time::{self, MICROS_PER_DAY};
use crate::schema::{Dataset, Table, resource};

/// The days one readiness query computes and reads, as day numbers since 1970-01-01.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// The first day of the window (its start rounded up to a midnight, as date tables are).
    pub first_day: i64,
    /// The day after the window's last.
    pub end_day: i64,
    /// The first day of the first day's baseline, never before `ingestion_start`.
    pub load_first_day: i64,
    /// The first day of data the user allows to be read.
    pub ingestion_first_day: Option<i64>,
}

fn day_of(d: NaiveDate) -> i64 {
    time::micros(d.and_time(NaiveTime::MIN)).div_euclid(MICROS_PER_DAY)
}

fn ceil_day(t: NaiveDateTime) -> i64 {
    let us = time::micros(t);
    us.div_euclid(MICROS_PER_DAY) + i64::from(us.rem_euclid(MICROS_PER_DAY) > 0)
}

impl Bounds {
    /// The bounds of a timeframe for a user; None when the window is empty.
    pub fn of(tf: &Timeframe, user: &UserContext) -> Option<Bounds> {
        let (start, end) = time::window(tf, user.ingestion_start, user.ingestion_end)?;
        let (first_day, end_day) = (ceil_day(start), ceil_day(end));
        let ingestion_first_day = user.ingestion_start.map(day_of);
        let load_first_day =
            (first_day - BASELINE_DAYS).max(ingestion_first_day.unwrap_or(i64::MIN));
        (first_day < end_day).then_some(Bounds {
            first_day,
            end_day,
            load_first_day,
            ingestion_first_day,
        })
    }

    /// The first floating instant of HRV samples read: baseline nights may start the evening
    /// before their first day.
    pub fn hrv_start(&self) -> i64 {
        let allowed = self
            .ingestion_first_day
            .unwrap_or(i64::MIN / MICROS_PER_DAY);
        (self.load_first_day - 1).max(allowed) * MICROS_PER_DAY
    }
}

fn date_lit(day: i64) -> Expr {
    lit(ScalarValue::Date32(i32::try_from(day).ok()))
}

fn between(e: Expr, from: i64, to: i64) -> Expr {
    e.clone()
        .gt_eq(floating_lit(from))
        .and(e.lt(floating_lit(to)))
}

/// The six input plans, in the order [`super::Input`] names them. Without bounds (an empty
/// window) every input is empty.
pub fn plans(catalog: &Catalog, bounds: Option<Bounds>) -> Result<Vec<LogicalPlan>, EngineError> {
    let zone = catalog.user.fallback_time_zone;
    let (first, end, load, hrv) = match bounds {
        Some(b) => (
            b.first_day * MICROS_PER_DAY,
            b.end_day * MICROS_PER_DAY,
            b.load_first_day * MICROS_PER_DAY,
            b.hrv_start(),
        ),
        None => (0, 0, 0, 0),
    };
    let day = |us: i64| us.div_euclid(MICROS_PER_DAY);
    let sleep_src = QuerySource::Table(Table::Sleep);
    let sleep = RowExprs {
        source: &sleep_src,
        zone,
    };
    let workout_src = QuerySource::Table(Table::Workout);
    let workout = RowExprs {
        source: &workout_src,
        zone,
    };
    let sources = || {
        ["source_provider", "source_type"]
            .into_iter()
            .map(ident)
            .collect::<Vec<_>>()
    };
    let with = |mut v: Vec<Expr>, names: &[&str]| {
        v.extend(names.iter().map(|n| ident(*n)));
        v
    };
    let mut sleep_cols = vec![
        sleep.instant("session_start").alias("start"),
        sleep.instant("session_end").alias("end"),
        sleep
            .operand(&Operand::Macro(ValueMacro::SleepScore))
            .alias("sleep_score"),
    ];
    sleep_cols = with(
        sleep_cols,
        &[
            "id",
            "type",
            "duration_second",
            "stage_asleep_second",
            "hrv_mean_rmssd",
            "heart_rate_resting",
            "source_provider",
            "source_type",
            "source_app_id",
            "source_device_id",
            "ingested_at",
        ],
    );
    let activity_cols = with(
        sources(),
        &[
            "date",
            "heart_rate_resting",
            "intensity_low_second",
            "intensity_medium_second",
            "intensity_high_second",
            "ingested_at",
        ],
    );
    let mut workout_cols = vec![workout.instant("session_start").alias("start")];
    workout_cols = with(
        workout_cols,
        &[
            "heart_rate_zone_1",
            "heart_rate_zone_2",
            "heart_rate_zone_3",
            "heart_rate_zone_4",
            "heart_rate_zone_5",
            "heart_rate_zone_6",
            "source_provider",
            "source_type",
            "ingested_at",
        ],
    );
    let mut out = vec![
        input(
            catalog,
            Dataset::Table(Table::Sleep),
            between(sleep.instant("session_end"), load, end),
            sleep_cols,
        )?,
        input(
            catalog,
            Dataset::Table(Table::Activity),
            ident("date")
                .gt_eq(date_lit(day(load)))
                .and(ident("date").lt(date_lit(day(end)))),
            activity_cols,
        )?,
        input(
            catalog,
            Dataset::Table(Table::Workout),
            between(workout.instant("session_start"), first, end),
            workout_cols,
        )?,
    ];
    let series =
        |name| resource(name).ok_or_else(|| EngineError::Internal(format!("no {name} resource")));
    // Heart rate, the one large input, as the scan has it: `load.rs` applies the window and
    // floating time in its one pass over the rows (the same kernel as `index_ts`).
    let heartrate = Dataset::Timeseries(series("heartrate")?);
    out.push(
        scan(catalog, heartrate)?
            .project(HEART_RATE_COLUMNS.iter().map(|c| ident(*c)))
            .and_then(|b| b.build())
            .map_err(|source| EngineError::Planning { source })?,
    );
    let hrv_series = series("hrv")?;
    let src = QuerySource::Timeseries(vec![hrv_series]);
    let rows = RowExprs { source: &src, zone };
    let mut cols = vec![rows.index_ts().alias("time"), ident("value")];
    cols.extend(sources());
    out.push(input(
        catalog,
        Dataset::Timeseries(hrv_series),
        between(rows.index_ts(), hrv, end),
        cols,
    )?);
    let profile_cols = with(sources(), &["birth_date"]);
    out.push(input(
        catalog,
        Dataset::Table(Table::Profile),
        lit(bounds.is_some()),
        profile_cols,
    )?);
    Ok(out)
}

fn input(
    catalog: &Catalog,
    dataset: Dataset,
    filter: Expr,
    cols: Vec<Expr>,
) -> Result<LogicalPlan, EngineError> {
    scan(catalog, dataset)?
        .filter(filter)
        .and_then(|b| b.project(cols))
        .and_then(|b| b.build())
        .map_err(|source| EngineError::Planning { source })
}

fn scan(catalog: &Catalog, dataset: Dataset) -> Result<LogicalPlanBuilder, EngineError> {
    let name = match dataset {
        Dataset::Table(t) => t.name(),
        Dataset::Timeseries(r) => r.name,
    };
    LogicalPlanBuilder::scan(TableReference::bare(name), catalog.source(dataset)?, None)
        .map_err(|source| EngineError::Planning { source })
}
