//! How a continuous query's table is keyed and which of its buckets a change can touch.
//!
//! A change is a UTC range of changed data (`dirty`). Its rows' floating times lie within
//! ±18 h of it (offsets are within ±18 h), so the buckets holding them are those from the
//! bucket of `start − 18 h` to the bucket of `end + 18 h`; `derived_readiness` days also read
//! the [`READINESS_BASELINE_DAYS`] days before them, so its reach goes that much further. The
//! recomputed window is widened to whole days (the engine's timeframe is in days; every day
//! boundary is a bucket boundary of sub-day buckets, and week, month, year and N-day buckets
//! start at midnight), and to at least two days (a timeframe's `past` is at least one day).
//! Every bucket starting inside the window is recomputed whole, and the stored rows of those
//! buckets are replaced.

use crate::engine::time::{self, MICROS_PER_DAY};
use crate::engine::{Period, Query, QuerySource, READINESS_BASELINE_DAYS};

/// The margin between a UTC instant and its floating time.
const OFFSET_MARGIN: i64 = 18 * 3_600 * 1_000_000;

/// How a continuous query's table is keyed and re-evaluated.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// The `date_trunc` period.
    pub period: Period,
    /// The output column holding the bucket start.
    pub bucket_column: String,
    /// Every group key's output column, in group-by order (the rows' identity).
    pub keys: Vec<String>,
    /// Every change re-evaluates the whole table (ALIGN).
    pub whole: bool,
    /// Days after a change's buckets that it can still affect (readiness baselines).
    pub reach_days: i64,
}

impl Shape {
    /// The shape of a validated continuous query.
    pub fn new(query: &Query, period: Period, bucket_column: String, keys: Vec<String>) -> Self {
        let reach_days = match query.source {
            QuerySource::Derived(_) => READINESS_BASELINE_DAYS + 1,
            _ => 0,
        };
        Shape {
            period,
            bucket_column,
            keys,
            whole: query.align.is_some(),
            reach_days,
        }
    }

    /// The days `[first, end)` (days since 1970-01-01) to recompute for data changed in the UTC
    /// range `start..=end` (µs).
    pub fn days(&self, (start, end): (i64, i64)) -> (i64, i64) {
        let first = time::trunc(start.saturating_sub(OFFSET_MARGIN), self.period);
        let reach = end
            .saturating_add(OFFSET_MARGIN)
            .saturating_add(self.reach_days.saturating_mul(MICROS_PER_DAY));
        let last = time::bucket_end(time::trunc(reach, self.period), self.period);
        let first_day = first.div_euclid(MICROS_PER_DAY);
        let end_day =
            last.div_euclid(MICROS_PER_DAY) + i64::from(last.rem_euclid(MICROS_PER_DAY) > 0);
        (first_day.min(end_day - 2), end_day)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Unit;

    fn shape(value: u32, unit: Unit, reach_days: i64) -> Shape {
        Shape {
            period: Period { value, unit },
            bucket_column: "group_key.0".to_owned(),
            keys: vec!["group_key.0".to_owned()],
            whole: false,
            reach_days,
        }
    }

    fn at(day: i64, hour: i64) -> i64 {
        day * MICROS_PER_DAY + hour * 3_600_000_000
    }

    #[test]
    fn a_change_reaches_the_buckets_any_offset_puts_it_in() {
        // Noon UTC on day 100: floating times from day 99 18:00 to day 101 06:00.
        let days = shape(1, Unit::Day, 0).days((at(100, 12), at(100, 12)));
        assert_eq!(days, (99, 102));
        // Hourly buckets: whole days still.
        assert_eq!(
            shape(1, Unit::Hour, 0).days((at(100, 12), at(100, 12))),
            (99, 102)
        );
    }

    #[test]
    fn weeks_and_months_are_recomputed_whole() {
        // Day 4 is Monday 1970-01-05; day 20 is a Wednesday: its week is days 18..25.
        let (first, end) = shape(1, Unit::Week, 0).days((at(20, 12), at(20, 12)));
        assert_eq!((first, end), (18, 25));
        // 1970-02-10 (day 40): February is days 31..59.
        assert_eq!(
            shape(1, Unit::Month, 0).days((at(40, 12), at(40, 12))),
            (31, 59)
        );
    }

    #[test]
    fn readiness_reaches_its_baseline_days_later() {
        let (_, end) = shape(1, Unit::Day, 22).days((at(100, 12), at(100, 12)));
        assert_eq!(end, 102 + 22);
    }

    #[test]
    fn the_window_is_at_least_two_days() {
        // Midnight UTC exactly, date-indexed rows: still two whole days at least.
        let (first, end) = shape(1, Unit::Day, 0).days((at(100, 0), at(100, 0)));
        assert!(end - first >= 2);
    }
}
