//! The sleep value macros of §2.3 as pure per-session functions plus one UDF that applies them
//! to sleep-table columns (a user has one row per night, so a row loop is the right tool).
//!
//! Decisions where the spec is silent:
//! - The hypnogram is read as stage codes (1 deep, 2 light, 3 rem, 4 awake, 5 manual, −1
//!   missing), one per `hypnogram_interval_second` (default 300 s). Codes 5 and −1 are skipped
//!   when counting awakenings (they neither start nor end a stage); the trailing awake time of
//!   `awake_at` is the trailing run of code 4. An empty hypnogram counts as none.
//! - `chronotype` uses the floating midpoint `start + (end − start) / 2`.
//!
//! ## The sleep score (`sleep_score`, 0–100, deterministic)
//! Let `total` = `stage_asleep_second`, or `duration_second` when that is null. Components,
//! each in [0, 1], with weights:
//! - duration (40): `min(total / 28 800, 1)` (8 h target);
//! - efficiency (20): `clamp(efficiency / 100, 0, 1)`;
//! - latency (10): 1 up to 15 min, falling linearly to 0 at 60 min;
//! - deep share (10): `clamp(deep / total / 0.20, 0, 1)`;
//! - REM share (10): `clamp(rem / total / 0.25, 0, 1)`;
//! - awakenings (10): `max(0, 1 − awakenings / 10)`.
//!
//! A component whose input is null (or whose share has `total = 0`) is left out and the
//! remaining weights are renormalised; `total` null gives a null score. The score is
//! `round(100 × Σ wᵢ·sᵢ / Σ wᵢ)`, halves away from zero. The provider's own `score` is never used.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int64Array, ListArray, StringArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{
    DataType, Float64Type, Int8Type, Int64Type, TimestampMicrosecondType,
};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::Expr;

use super::udf::floating_type;
use crate::engine::lang::request::ValueMacro;

const DEFAULT_INTERVAL_SECONDS: i64 = 300;

/// lark / third / owl from the floating midpoint's time of day, in seconds after midnight.
pub fn chronotype(midpoint_seconds_of_day: i64) -> &'static str {
    if midpoint_seconds_of_day >= 17 * 3600 || midpoint_seconds_of_day <= 3 * 3600 + 1800 {
        "lark"
    } else if midpoint_seconds_of_day <= 6 * 3600 {
        "third"
    } else {
        "owl"
    }
}

/// Number of transitions from light, deep or REM to awake; `None` without a hypnogram.
pub fn awakenings(hypnogram: Option<&[i8]>) -> Option<i64> {
    let h = hypnogram.filter(|h| !h.is_empty())?;
    let mut prev_asleep = false;
    let mut n = 0;
    for &code in h.iter().filter(|c| (1..=4).contains(*c)) {
        if code == 4 && prev_asleep {
            n += 1;
        }
        prev_asleep = code != 4;
    }
    Some(n)
}

/// Seconds of trailing awake time (0 without a hypnogram).
pub fn trailing_awake_seconds(hypnogram: Option<&[i8]>, interval: Option<i64>) -> i64 {
    let h = hypnogram.unwrap_or(&[]);
    let run = h.iter().rev().take_while(|c| **c == 4).count() as i64;
    run.saturating_mul(
        interval
            .filter(|i| *i > 0)
            .unwrap_or(DEFAULT_INTERVAL_SECONDS),
    )
}

/// Inputs of the sleep score.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ScoreInputs {
    /// `duration_second`.
    pub duration: Option<i64>,
    /// `stage_asleep_second`.
    pub asleep: Option<i64>,
    /// `efficiency`, percent.
    pub efficiency: Option<f64>,
    /// `latency_second`.
    pub latency: Option<i64>,
    /// `stage_deep_second`.
    pub deep: Option<i64>,
    /// `stage_rem_second`.
    pub rem: Option<i64>,
    /// The `awakenings` macro.
    pub awakenings: Option<i64>,
}

/// The documented sleep score (module docs).
pub fn sleep_score(x: ScoreInputs) -> Option<i64> {
    let total = x.asleep.or(x.duration)? as f64;
    let clamp = |v: f64| v.clamp(0.0, 1.0);
    let share = |v: Option<i64>, target: f64| {
        v.filter(|_| total > 0.0)
            .map(|v| clamp(v as f64 / total / target))
    };
    let parts = [
        (40.0, Some(clamp(total / 28_800.0))),
        (20.0, x.efficiency.map(|e| clamp(e / 100.0))),
        (
            10.0,
            x.latency.map(|l| clamp(1.0 - (l as f64 - 900.0) / 2700.0)),
        ),
        (10.0, share(x.deep, 0.20)),
        (10.0, share(x.rem, 0.25)),
        (10.0, x.awakenings.map(|a| clamp(1.0 - a as f64 / 10.0))),
    ];
    let (num, den) = parts.iter().fold((0.0, 0.0), |(n, d), (w, s)| match s {
        Some(s) if s.is_finite() => (n + w * s, d + w),
        _ => (n, d),
    });
    Some((100.0 * num / den).round() as i64)
}

/// The columns each macro reads, in argument order (floating times already converted).
pub enum MacroArgs {
    /// chronotype(start, end)
    Chronotype(Expr, Expr),
    /// asleep_at(start, latency_second)
    AsleepAt(Expr, Expr),
    /// awake_at(end, hypnogram, hypnogram_interval_second)
    AwakeAt(Expr, Expr, Expr),
    /// awakenings(hypnogram)
    Awakenings(Expr),
    /// sleep_score(duration, asleep, efficiency, latency, deep, rem, hypnogram)
    SleepScore(Vec<Expr>),
}

/// One UDF per macro.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SleepMacro {
    which: ValueMacro,
    name: String,
    signature: Signature,
}

impl SleepMacro {
    /// The macro applied to its columns.
    pub fn call(args: MacroArgs) -> Expr {
        let (which, args) = match args {
            MacroArgs::Chronotype(a, b) => (ValueMacro::Chronotype, vec![a, b]),
            MacroArgs::AsleepAt(a, b) => (ValueMacro::AsleepAt, vec![a, b]),
            MacroArgs::AwakeAt(a, b, c) => (ValueMacro::AwakeAt, vec![a, b, c]),
            MacroArgs::Awakenings(a) => (ValueMacro::Awakenings, vec![a]),
            MacroArgs::SleepScore(v) => (ValueMacro::SleepScore, v),
        };
        let udf = SleepMacro {
            which,
            name: format!("macro_{}", which.name()),
            signature: Signature::variadic_any(Volatility::Immutable),
        };
        ScalarUDF::from(udf).call(args)
    }
}

fn hypnogram(list: &ListArray, i: usize) -> Option<Vec<i8>> {
    if list.is_null(i) {
        return None;
    }
    let v = list.value(i);
    let codes = v.as_primitive_opt::<Int8Type>()?;
    Some(codes.iter().map(|c| c.unwrap_or(-1)).collect())
}

fn opt_i64(a: &ArrayRef, i: usize) -> Option<i64> {
    let a = a.as_primitive_opt::<Int64Type>()?;
    a.is_valid(i).then(|| a.value(i))
}

fn opt_ts(a: &ArrayRef, i: usize) -> Option<i64> {
    let a = a.as_primitive_opt::<TimestampMicrosecondType>()?;
    a.is_valid(i).then(|| a.value(i))
}

impl ScalarUDFImpl for SleepMacro {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(match self.which {
            ValueMacro::Chronotype => DataType::Utf8,
            ValueMacro::AsleepAt | ValueMacro::AwakeAt => floating_type(),
            ValueMacro::Awakenings | ValueMacro::SleepScore => DataType::Int64,
        })
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let a = ColumnarValue::values_to_arrays(&args.args)?;
        let n = args.number_rows;
        let list = |k: usize| a.get(k).and_then(|x| x.as_list_opt::<i32>());
        let out: ArrayRef = match (self.which, a.len()) {
            (ValueMacro::Chronotype, 2) => Arc::new(
                (0..n)
                    .map(|i| {
                        let (s, e) = (opt_ts(&a[0], i)?, opt_ts(&a[1], i)?);
                        let mid = s / 2 + e / 2 + (s % 2 + e % 2) / 2;
                        Some(chronotype(
                            mid.rem_euclid(crate::engine::time::MICROS_PER_DAY) / 1_000_000,
                        ))
                    })
                    .collect::<StringArray>(),
            ),
            (ValueMacro::AsleepAt, 2) => Arc::new(
                (0..n)
                    .map(|i| {
                        Some(opt_ts(&a[0], i)?.saturating_add(
                            opt_i64(&a[1], i).unwrap_or(0).saturating_mul(1_000_000),
                        ))
                    })
                    .collect::<TimestampMicrosecondArray>(),
            ),
            (ValueMacro::AwakeAt, 3) => Arc::new(
                (0..n)
                    .map(|i| {
                        let h = list(1).and_then(|l| hypnogram(l, i));
                        let awake = trailing_awake_seconds(h.as_deref(), opt_i64(&a[2], i));
                        Some(opt_ts(&a[0], i)?.saturating_sub(awake.saturating_mul(1_000_000)))
                    })
                    .collect::<TimestampMicrosecondArray>(),
            ),
            (ValueMacro::Awakenings, 1) => Arc::new(
                (0..n)
                    .map(|i| awakenings(list(0).and_then(|l| hypnogram(l, i)).as_deref()))
                    .collect::<Int64Array>(),
            ),
            (ValueMacro::SleepScore, 7) => {
                let eff = a[2]
                    .as_primitive_opt::<Float64Type>()
                    .cloned()
                    .unwrap_or_else(|| Float64Array::new_null(n));
                Arc::new(
                    (0..n)
                        .map(|i| {
                            let h = list(6).and_then(|l| hypnogram(l, i));
                            sleep_score(ScoreInputs {
                                duration: opt_i64(&a[0], i),
                                asleep: opt_i64(&a[1], i),
                                efficiency: eff.is_valid(i).then(|| eff.value(i)),
                                latency: opt_i64(&a[3], i),
                                deep: opt_i64(&a[4], i),
                                rem: opt_i64(&a[5], i),
                                awakenings: awakenings(h.as_deref()),
                            })
                        })
                        .collect::<Int64Array>(),
                )
            }
            (m, k) => return exec_err!("macro {m:?} called with {k} arguments"),
        };
        Ok(ColumnarValue::Array(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chronotype_boundaries() {
        assert_eq!(chronotype(17 * 3600), "lark");
        assert_eq!(chronotype(3 * 3600 + 1800), "lark");
        assert_eq!(chronotype(3 * 3600 + 1801), "third");
        assert_eq!(chronotype(6 * 3600), "third");
        assert_eq!(chronotype(6 * 3600 + 1), "owl");
    }

    #[test]
    fn awakenings_skip_missing_and_count_sleep_to_awake() {
        assert_eq!(awakenings(Some(&[4, 2, 4, 4, 1, -1, 4, 3, 5, 4])), Some(3));
        assert_eq!(awakenings(None), None);
        assert_eq!(trailing_awake_seconds(Some(&[2, 4, 4]), Some(30)), 60);
    }

    #[test]
    fn score_of_a_perfect_night_is_100_and_missing_inputs_renormalise() {
        let perfect = ScoreInputs {
            duration: Some(30_000),
            asleep: Some(28_800),
            efficiency: Some(100.0),
            latency: Some(600),
            deep: Some(6_000),
            rem: Some(7_200),
            awakenings: Some(0),
        };
        assert_eq!(sleep_score(perfect), Some(100));
        let half = ScoreInputs {
            asleep: Some(14_400),
            ..Default::default()
        };
        assert_eq!(sleep_score(half), Some(50));
        assert_eq!(sleep_score(ScoreInputs::default()), None);
    }
}
