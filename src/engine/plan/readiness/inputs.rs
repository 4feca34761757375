//! The stored inputs of `derived_readiness`: each one dataset's batches (the catalog's), a
//! filter to the days it can affect (the window, and for the baseline's inputs the 21 days
//! before it, never before the user's `ingestion_start`) and the columns the formulas read,
//! instants already in floating time. Filter and columns are the compiler's own expressions,
//! so floating time, the fallback zone and the `sleep_score` macro are exactly the language's;
//! the readiness operator evaluates them over the batches itself (`exec.rs`). Heart rate is
//! the exception: its batches as they are, which `load.rs` windows itself (a filter and a
//! projection would copy every row of the largest input, only for one pass to read them).
//!
//! Why not a scan, a filter and a projection per input, planned by DataFusion: those six small
//! plans cost more to optimise and plan than the whole computation (issue 39: planning them
//! was most of a 90-day query), for a few hundred rows each.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use datafusion::arrow::array::RecordBatch;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::ident;
use datafusion::prelude::{Expr, lit};

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

/// One stored input of the node: its dataset's batches, and unless it is read raw (heart
/// rate), the rows it keeps and the named columns it computes from them.
#[derive(Debug, Clone)]
pub struct Input {
    /// The dataset read.
    pub dataset: Dataset,
    /// Its batches, as the catalog holds them (the dataset's storage schema).
    pub batches: Vec<RecordBatch>,
    /// The rows kept and the columns computed; None hands the batches on as they are.
    pub select: Option<Select>,
}

/// What one input keeps of its rows and computes from them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Select {
    /// The rows kept (true; null and false drop the row, as a filter does).
    pub filter: Expr,
    /// The columns: name and expression over the storage schema.
    pub columns: Vec<(String, Expr)>,
}

impl PartialEq for Input {
    /// The same dataset, selection and arrays (by identity: a node is compared with its own
    /// copies, never with another request's).
    fn eq(&self, other: &Self) -> bool {
        let same = |a: &RecordBatch, b: &RecordBatch| {
            a.num_rows() == b.num_rows()
                && a.num_columns() == b.num_columns()
                && a.columns()
                    .iter()
                    .zip(b.columns())
                    .all(|(x, y)| std::sync::Arc::ptr_eq(x, y))
        };
        self.dataset == other.dataset
            && self.select == other.select
            && self.batches.len() == other.batches.len()
            && self
                .batches
                .iter()
                .zip(&other.batches)
                .all(|(a, b)| same(a, b))
    }
}
impl Eq for Input {}
impl std::hash::Hash for Input {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.dataset.hash(state);
        self.select.hash(state);
        self.batches
            .iter()
            .map(RecordBatch::num_rows)
            .sum::<usize>()
            .hash(state);
    }
}

/// The six inputs, in the order [`super::exec`] names them. Without bounds (an empty window)
/// every input keeps no row.
pub fn inputs(catalog: &Catalog, bounds: Option<Bounds>) -> Result<Vec<Input>, EngineError> {
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
    let named = |name: &str, e: Expr| (name.to_owned(), e);
    let with = |mut v: Vec<(String, Expr)>, names: &[&str]| {
        v.extend(names.iter().map(|n| named(n, ident(*n))));
        v
    };
    let sources = || with(Vec::new(), &["source_provider", "source_type"]);
    let sleep_cols = with(
        vec![
            named("start", sleep.instant("session_start")),
            named("end", sleep.instant("session_end")),
            named(
                "sleep_score",
                sleep.operand(&Operand::Macro(ValueMacro::SleepScore)),
            ),
        ],
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
    let workout_cols = with(
        vec![named("start", workout.instant("session_start"))],
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
    let input = |dataset: Dataset, filter: Expr, columns: Vec<(String, Expr)>| Input {
        dataset,
        batches: catalog.batches(dataset),
        select: Some(Select { filter, columns }),
    };
    let series =
        |name| resource(name).ok_or_else(|| EngineError::Internal(format!("no {name} resource")));
    let heartrate = Dataset::Timeseries(series("heartrate")?);
    let hrv_series = series("hrv")?;
    let src = QuerySource::Timeseries(vec![hrv_series]);
    let rows = RowExprs { source: &src, zone };
    let mut hrv_cols = vec![
        named("time", rows.index_ts()),
        named("value", ident("value")),
    ];
    hrv_cols.extend(sources());
    Ok(vec![
        input(
            Dataset::Table(Table::Sleep),
            between(sleep.instant("session_end"), load, end),
            sleep_cols,
        ),
        input(
            Dataset::Table(Table::Activity),
            ident("date")
                .gt_eq(date_lit(day(load)))
                .and(ident("date").lt(date_lit(day(end)))),
            activity_cols,
        ),
        input(
            Dataset::Table(Table::Workout),
            between(workout.instant("session_start"), first, end),
            workout_cols,
        ),
        // Heart rate, the one large input, as stored: `load.rs` applies the window and
        // floating time in its one pass over the rows (the same kernel as `index_ts`).
        Input {
            dataset: heartrate,
            batches: catalog.batches(heartrate),
            select: None,
        },
        input(
            Dataset::Timeseries(hrv_series),
            between(rows.index_ts(), hrv, end),
            hrv_cols,
        ),
        input(
            Dataset::Table(Table::Profile),
            lit(bounds.is_some()),
            with(sources(), &["birth_date"]),
        ),
    ])
}
