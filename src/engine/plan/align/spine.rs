//! The arithmetic of ALIGN over one partition, on bucket starts in floating microseconds: the
//! spine (which buckets get a row) and the carry (which row each cell takes its value from).
//! Buckets step the way `date_trunc` cuts them ([`time::bucket_end`], [`time::trunc`]), so
//! months, weeks and the minute/hour buckets that restart at midnight are walked exactly.
//!
//! Caps are calendar periods added to a bucket's start: a source at `s` reaches the bucket at
//! `b > s` when `s + cap ≥ b` (and, backwards, `b + cap ≥ s`); months clamp the day the way
//! the window does (31 January + 1 month = 28 February). Nearness (carry_nearest) counts
//! buckets along the spine, not microseconds, so a tie between the neighbouring months of
//! February takes January, as between any two equally distant buckets.

use chrono::Months;

use crate::engine::lang::align::{Carry, CarryMode};
use crate::engine::lang::request::{Period, Unit};
use crate::engine::time;

/// What bounds the spine besides the observed buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reach {
    /// The first and last buckets of the query's window; no spine row lies outside them.
    pub window: Option<(i64, i64)>,
    /// The bucket holding "now": forward extension stops there.
    pub now: Option<i64>,
}

/// `t + p` in calendar arithmetic, saturating.
pub fn add(t: i64, p: Period) -> i64 {
    let n = i64::from(p.value);
    let fixed = |unit: i64| t.saturating_add(n.saturating_mul(unit));
    match p.unit {
        Unit::Minute => fixed(60_000_000),
        Unit::Hour => fixed(3_600_000_000),
        Unit::Day => fixed(time::MICROS_PER_DAY),
        Unit::Week => fixed(7 * time::MICROS_PER_DAY),
        Unit::Month | Unit::Year => {
            let months = if p.unit == Unit::Year {
                p.value.saturating_mul(12)
            } else {
                p.value
            };
            chrono::DateTime::from_timestamp_micros(t)
                .and_then(|d| d.naive_utc().checked_add_months(Months::new(months)))
                .map_or(i64::MAX, time::micros)
        }
    }
}

/// Whether a value at bucket `from` may fill bucket `to` (either direction) under `cap`.
fn within(from: i64, to: i64, cap: Option<Period>) -> bool {
    let Some(cap) = cap else { return true };
    if from <= to {
        add(from, cap) >= to
    } else {
        add(to, cap) >= from
    }
}

/// The spine of one partition whose non-empty buckets start at `first..=last`: that range,
/// extended by the cap (backwards for carry_backward and carry_nearest, forwards for
/// carry_forward and carry_nearest, never past the bucket of "now"), inside the window.
pub fn spine(first: i64, last: i64, carry: Carry, period: Period, reach: Reach) -> Vec<i64> {
    let (mut lo, mut hi) = (first, last);
    if let Some(cap) = carry.cap {
        let (win_lo, win_hi) = reach.window.unwrap_or((first, last));
        if carry.mode != CarryMode::Forward {
            while lo > win_lo {
                let prev = time::trunc(lo - 1, period);
                if prev < win_lo || add(prev, cap) < first {
                    break;
                }
                lo = prev;
            }
        }
        if carry.mode != CarryMode::Backward {
            let stop = reach.now.map_or(win_hi, |now| now.min(win_hi));
            loop {
                let next = time::bucket_end(hi, period);
                if next > stop || add(last, cap) < next {
                    break;
                }
                hi = next;
            }
        }
    }
    let mut out = Vec::new();
    let mut b = lo;
    while b <= hi {
        out.push(b);
        b = time::bucket_end(b, period);
    }
    out
}

/// For one column over a spine: the row each spine bucket takes its value from. `rows[j]` is
/// the row of bucket `spine[j]` when it has one and its value is not null; `None` in the
/// answer is an explicit null.
pub fn carry_column(spine: &[i64], rows: &[Option<u32>], carry: Carry) -> Vec<Option<u32>> {
    let n = spine.len();
    let mut past: Vec<Option<usize>> = vec![None; n];
    let mut last = None;
    for j in 0..n {
        if rows[j].is_some() {
            last = Some(j);
        }
        past[j] = last;
    }
    let mut future: Vec<Option<usize>> = vec![None; n];
    let mut next = None;
    for j in (0..n).rev() {
        if rows[j].is_some() {
            next = Some(j);
        }
        future[j] = next;
    }
    (0..n)
        .map(|j| {
            if rows[j].is_some() {
                return rows[j];
            }
            let ok = |k: &usize| within(spine[*k], spine[j], carry.cap);
            let p = past[j].filter(ok);
            let f = future[j].filter(ok);
            let pick = match carry.mode {
                CarryMode::Forward => p,
                CarryMode::Backward => f,
                CarryMode::Nearest => match (p, f) {
                    (Some(p), Some(f)) => Some(if j - p <= f - j { p } else { f }),
                    (p, f) => p.or(f),
                },
            };
            pick.and_then(|k| rows[k])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = time::MICROS_PER_DAY;

    fn carry(mode: CarryMode, days: Option<u32>) -> Carry {
        Carry {
            mode,
            cap: days.map(|value| Period {
                value,
                unit: Unit::Day,
            }),
        }
    }

    fn day() -> Period {
        Period {
            value: 1,
            unit: Unit::Day,
        }
    }

    #[test]
    fn the_spine_extends_by_the_cap_inside_the_window_and_before_now() {
        let reach = Reach {
            window: Some((0, 20 * DAY)),
            now: None,
        };
        let days = |s: Vec<i64>| s.into_iter().map(|b| b / DAY).collect::<Vec<_>>();
        let f = carry(CarryMode::Forward, Some(2));
        assert_eq!(
            days(spine(5 * DAY, 7 * DAY, f, day(), reach)),
            [5, 6, 7, 8, 9]
        );
        let b = carry(CarryMode::Backward, Some(2));
        assert_eq!(days(spine(DAY, 2 * DAY, b, day(), reach)), [0, 1, 2]);
        let n = carry(CarryMode::Nearest, Some(1));
        assert_eq!(days(spine(5 * DAY, 5 * DAY, n, day(), reach)), [4, 5, 6]);
        let none = carry(CarryMode::Nearest, None);
        assert_eq!(days(spine(5 * DAY, 6 * DAY, none, day(), reach)), [5, 6]);
        let now = Reach {
            now: Some(8 * DAY),
            ..reach
        };
        let f5 = carry(CarryMode::Forward, Some(5));
        assert_eq!(days(spine(5 * DAY, 7 * DAY, f5, day(), now)), [5, 6, 7, 8]);
        // Observed buckets past now stay; only the extension stops.
        assert_eq!(
            days(spine(5 * DAY, 9 * DAY, f5, day(), now)),
            [5, 6, 7, 8, 9]
        );
    }

    #[test]
    fn months_step_and_cap_by_the_calendar() {
        let month = Period {
            value: 1,
            unit: Unit::Month,
        };
        let jan = time::days_from_civil(2025, 1, 1) * DAY;
        let mar = time::days_from_civil(2025, 3, 1) * DAY;
        let reach = Reach {
            window: Some((jan, time::days_from_civil(2025, 12, 1) * DAY)),
            now: None,
        };
        let c = Carry {
            mode: CarryMode::Forward,
            cap: Some(month),
        };
        let s = spine(jan, mar, c, month, reach);
        assert_eq!(s.len(), 4);
        assert_eq!(s[1], time::days_from_civil(2025, 2, 1) * DAY);
        assert_eq!(s[3], time::days_from_civil(2025, 4, 1) * DAY);
        let rows = [Some(0), None, Some(1), None];
        assert_eq!(
            carry_column(&s, &rows, c),
            [Some(0), Some(0), Some(1), Some(1)]
        );
    }

    #[test]
    fn carries_respect_caps_and_ties_take_the_past() {
        let s: Vec<i64> = (0..7).map(|d| d * DAY).collect();
        let rows = [Some(0), None, None, None, None, None, Some(1)];
        let f = carry(CarryMode::Forward, Some(2));
        assert_eq!(
            carry_column(&s, &rows, f),
            [Some(0), Some(0), Some(0), None, None, None, Some(1)]
        );
        let b = carry(CarryMode::Backward, Some(1));
        assert_eq!(
            carry_column(&s, &rows, b),
            [Some(0), None, None, None, None, Some(1), Some(1)]
        );
        let n = carry(CarryMode::Nearest, None);
        assert_eq!(
            carry_column(&s, &rows, n),
            [
                Some(0),
                Some(0),
                Some(0),
                Some(0),
                Some(1),
                Some(1),
                Some(1)
            ]
        );
    }
}
