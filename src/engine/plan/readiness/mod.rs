//! `derived_readiness` (`analytics.md` §2): one row per local calendar day of daily sleep,
//! recovery, stress and strain scores, computed at query time from the user's stored sleep,
//! activity, workouts, heart-rate and HRV samples and profile. Nothing of it is stored: a
//! night pushed late changes every day whose scores it feeds the next time a query reads them.
//!
//! ## The plan
//! [`plan`] is a logical extension node, [`ReadinessNode`], a leaf that reads six of the
//! user's datasets (`inputs.rs`: each the catalog's batches, a filter to the days the window
//! can depend on and the columns the formulas read, floating time and the `sleep_score` macro
//! being the language's own expressions; the heart-rate input, the one large input, is read
//! raw). It is planned as [`ReadinessExec`], which evaluates those expressions over the
//! batches and computes the rows (`days.rs`), the heart-rate samples reduced to daily loads in
//! one pass over the stored batches (`load.rs`: the window and floating time applied as the
//! language applies them, no copy of the rows, no sort of rows already in order). The
//! compiler then treats the node's output like a date-indexed table (window, WHERE, grouping,
//! sort), so select, group by, where, ALIGN and both answer formats work as for any table.
//!
//! ## Days, nights and sources
//! - A **day** is a local calendar day (floating time, `aggregate-dsl.md` §3.2). A day has a
//!   row when the window holds it and it has a night or a training load (below); no row
//!   otherwise (only non-empty groups produce rows).
//! - A **night** belongs to the day its session ends on (the sleep table's index). Sessions of
//!   type `short_sleep` and `acknowledged_nap` are not nights. Of the day's sessions, those of
//!   the best source (§3.5's rank: source type, then provider under the request's overrides and
//!   the team's `sleep` order) are kept, and of them the longest (`stage_asleep_second`, else
//!   `duration_second`; ties to the later end, then the greater id) is the night.
//! - Every other input is also taken from its best source per day, under the team's order for
//!   its data type (`activity`, `workouts`, `timeseries`, `profile`). The source columns of a
//!   row are the night's (null without a night); prioritisation is off for this table (a day's
//!   row is already of one source per input).
//!
//! ## Inputs of a night
//! - `hrv`: the session's `hrv_mean_rmssd`; without it, the mean of the best source's `hrv`
//!   samples between its start and end (floating time, both included).
//! - `rhr`: the session's `heart_rate_resting`; without it, the day's activity
//!   `heart_rate_resting`.
//! - `sleep`: the session's `sleep_score` value macro (§2.3: duration against 8 h, efficiency,
//!   latency, deep and REM share, awakenings), so it can be checked with that macro.
//!
//! ## The baseline
//! The baseline of day D is the nights of the 21 days D−21 … D−1 (D's own night excluded). A
//! day is **scored** when its baseline holds at least 7 nights; otherwise every score, zone and
//! the chronotype are null. The baseline rolls: a user who stops wearing a device loses it
//! after two weeks, and regains it after 7 new nights. It is read back 21 days before the
//! window's first day, never before the user's `ingestion_start`.
//!
//! ## Scores of a scored day (`score.rs`)
//! - `sleep_score` = the night's `sleep`; null without a night.
//! - `recovery_score` (null without a night): with `z = (x − mean) / max(sd, 1)` of the
//!   night's value against the baseline's (mean and sample sd, n − 1, over the baseline nights
//!   that have the value; at least 2 needed),
//!   `S_hrv = clamp(50 + 25·z_hrv, 0, 100)`, `S_rhr = clamp(50 − 25·z_rhr, 0, 100)` and
//!   `S_sleep = sleep`; recovery = `round((0.5·S_hrv + 0.25·S_rhr + 0.25·S_sleep) / Σw)`, a
//!   missing component leaving the sum with its weight (the others renormalised), halves away
//!   from zero. `recovery_zone`: `Red` 0–33, `Amber` 34–66, `Green` 67–100.
//! - `stress_score` = 100 − recovery.
//! - `strain_score` (null without a load): the day's training impulse T (weighted minutes) is
//!   the largest of the loads it has: (a) heart-rate samples of the best source, each standing
//!   for the time to that source's next sample on the same day, at most 5 min (the day's last
//!   sample for none), weighted `clamp(⌊10·hr/hr_max⌋ − 4, 0, 5)` (0 below 50 % of the maximum
//!   heart rate, then 1–5 for 50–60 … ≥ 90 %); (b) workouts of the best source started that
//!   day: minutes in `heart_rate_zone_1` … `_6` weighted 0 … 5; (c) the day's activity:
//!   `intensity_low/medium/high_second` minutes weighted 1, 2, 3. `hr_max` = 220 − age on
//!   the day (full years from the best profile's `birth_date`), 190 without one. Then
//!   `strain = min(21, 21 · ln(1 + T/30) / ln(1 + 800/30))`, rounded to one decimal.
//!   `strain_zone` by its integer part: `Low` 0–6, `Moderate` 7–13, `High` 14–17,
//!   `Very High` 18–21.
//! - `chronotype`: the median floating midpoint of the baseline's nights (on a clock starting
//!   at noon, so nights do not wrap at midnight; an even count takes the mean of the middle
//!   two, rounded down to the second), read with the `chronotype` macro's thresholds (§2.3):
//!   `lark`, `third`, `owl`, the same vocabulary as the macro.
//!
//! Decisions where the spec is silent: the baseline is a rolling 21-day window (not the
//! user's first 21 days); strain and chronotype wait for the baseline like the scores (the
//! spec nulls "a day's scores"); a load from several inputs takes the largest, since each
//! covers part of the day at most; value macros stay the sleep table's (this table has its
//! own `chronotype` and `sleep_score` columns).

mod columns;
mod days;
mod exec;
mod inputs;
mod load;
mod score;

pub use score::BASELINE_DAYS;

use std::sync::Arc;

use chrono_tz::Tz;
use datafusion::common::DFSchema;
use datafusion::logical_expr::{Extension, LogicalPlan};

use exec::ReadinessNode;
pub(crate) use exec::ReadinessPlanner;
pub(crate) use inputs::Bounds;

use crate::engine::EngineError;
use crate::engine::lang::request::ValidRequest;
use crate::engine::plan::catalog::{Catalog, data_type_of};
use crate::engine::plan::priority::provider_order;
use crate::schema::{Dataset, Derived, Table};

/// The provider order of each input's data type for one request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Orders {
    /// Sleep sessions.
    pub sleep: Vec<String>,
    /// Activity days.
    pub activity: Vec<String>,
    /// Workouts.
    pub workouts: Vec<String>,
    /// Heart-rate and HRV samples.
    pub timeseries: Vec<String>,
    /// Profiles.
    pub profile: Vec<String>,
}

/// What one readiness node computes: its days and the provider orders.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Spec {
    /// The days of the window and of its baseline; None for an empty window.
    pub bounds: Option<Bounds>,
    /// Provider orders.
    pub orders: Orders,
    /// The user's fallback zone (floating time of the heart-rate samples read raw).
    pub zone: Option<Tz>,
}

/// The `derived_readiness` rows of the request's window as a logical plan.
pub fn plan(req: &ValidRequest, catalog: &Catalog) -> Result<LogicalPlan, EngineError> {
    let order = |t: Table| {
        let team = catalog
            .user
            .team_priorities
            .get(data_type_of(Dataset::Table(t)))
            .cloned()
            .unwrap_or_default();
        provider_order(&req.priority_overrides, &team)
    };
    let timeseries = catalog
        .user
        .team_priorities
        .get("timeseries")
        .cloned()
        .unwrap_or_default();
    let bounds = Bounds::of(&req.timeframe, &catalog.user);
    let spec = Spec {
        bounds,
        orders: Orders {
            sleep: order(Table::Sleep),
            activity: order(Table::Activity),
            workouts: order(Table::Workout),
            timeseries: provider_order(&req.priority_overrides, &timeseries),
            profile: order(Table::Profile),
        },
        zone: catalog.user.fallback_time_zone,
    };
    let inputs = inputs::inputs(catalog, bounds)?;
    let schema = DFSchema::try_from(Derived::Readiness.schema())
        .map_err(|source| EngineError::Planning { source })?;
    let node = ReadinessNode::new(inputs, spec, Arc::new(schema));
    Ok(LogicalPlan::Extension(Extension {
        node: Arc::new(node),
    }))
}

/// The datasets a readiness query reads and the floating days each needs, as
/// `[first, end)` day numbers (the profile: every day up to the window's end).
pub(crate) fn input_days(bounds: &Bounds) -> Vec<(Dataset, i64, i64)> {
    let resource = |name| crate::schema::resource(name).map(Dataset::Timeseries);
    let baseline = bounds.load_first_day;
    let mut out = vec![
        (Dataset::Table(Table::Sleep), baseline - 1, bounds.end_day),
        (Dataset::Table(Table::Activity), baseline, bounds.end_day),
        (
            Dataset::Table(Table::Workout),
            bounds.first_day,
            bounds.end_day,
        ),
        (Dataset::Table(Table::Profile), i64::MIN, bounds.end_day),
    ];
    if let Some(d) = resource("heartrate") {
        out.push((d, bounds.first_day, bounds.end_day));
    }
    if let Some(d) = resource("hrv") {
        out.push((d, baseline - 1, bounds.end_day));
    }
    out
}
