//! Calendar arithmetic on floating time, as plain functions over microseconds since
//! 1970-01-01T00:00:00 (floating, so every day has 86 400 s): the window (§3.1), floating
//! conversion (§3.2), `date_trunc` (§3.3) and `date_part` (§3.4). The UDFs of `plan::udf`
//! apply these to Arrow arrays; the test reference evaluator checks them independently.

use chrono::{Datelike, Duration, Months, NaiveDate, NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;

use super::lang::request::{DatePart, Period, Timeframe, Unit};

/// Microseconds in one (floating) day.
pub const MICROS_PER_DAY: i64 = 86_400_000_000;
const MICROS_PER_MINUTE: i64 = 60_000_000;
const MICROS_PER_HOUR: i64 = 3_600_000_000;
/// Days from 0001-01-01 (day 1 of the common era) to 1970-01-01.
const UNIX_EPOCH_DAY_CE: i32 = 719_163;

/// `anchor 00:00 − past`, with calendar months clamped to the month's last day.
pub fn window_start(anchor: NaiveDate, past: Period) -> Option<NaiveDateTime> {
    let midnight = anchor.and_hms_opt(0, 0, 0)?;
    let v = i64::from(past.value);
    match past.unit {
        Unit::Minute => midnight.checked_sub_signed(Duration::try_minutes(v)?),
        Unit::Hour => midnight.checked_sub_signed(Duration::try_hours(v)?),
        Unit::Day => midnight.checked_sub_signed(Duration::try_days(v)?),
        Unit::Week => midnight.checked_sub_signed(Duration::try_weeks(v)?),
        Unit::Month => anchor
            .checked_sub_months(Months::new(past.value))?
            .and_hms_opt(0, 0, 0),
        Unit::Year => anchor
            .checked_sub_months(Months::new(past.value.checked_mul(12)?))?
            .and_hms_opt(0, 0, 0),
    }
}

/// The floating window `[start, end)` of a timeframe, narrowed by the user's ingestion bounds
/// (`ingestion_end` is an inclusive day). `None` when it is empty.
pub fn window(
    tf: &Timeframe,
    ingestion_start: Option<NaiveDate>,
    ingestion_end: Option<NaiveDate>,
) -> Option<(NaiveDateTime, NaiveDateTime)> {
    let mut start = window_start(tf.anchor, tf.past)?;
    let mut end = tf.anchor.succ_opt()?.and_hms_opt(0, 0, 0)?;
    if let Some(s) = ingestion_start.and_then(|d| d.and_hms_opt(0, 0, 0)) {
        start = start.max(s);
    }
    if let Some(e) = ingestion_end.and_then(|d| d.succ_opt()?.and_hms_opt(0, 0, 0)) {
        end = end.min(e);
    }
    (start < end).then_some((start, end))
}

/// Microseconds since the floating epoch of a naive datetime.
pub fn micros(t: NaiveDateTime) -> i64 {
    t.and_utc().timestamp_micros()
}

/// The floating time of a UTC instant: its own offset, else the fallback zone's offset at that
/// instant, else UTC.
pub fn to_floating(utc_micros: i64, offset_seconds: Option<i32>, zone: Option<Tz>) -> i64 {
    let offset = match (offset_seconds, zone) {
        (Some(o), _) => i64::from(o),
        (None, Some(tz)) => zone_offset(tz, utc_micros),
        (None, None) => 0,
    };
    utc_micros.saturating_add(offset * 1_000_000)
}

/// Seconds east of UTC of `tz` at the instant `utc_micros` (DST-aware).
pub fn zone_offset(tz: Tz, utc_micros: i64) -> i64 {
    let secs = utc_micros.div_euclid(1_000_000);
    match chrono::DateTime::from_timestamp(secs, 0) {
        Some(t) => i64::from(
            tz.offset_from_utc_datetime(&t.naive_utc())
                .fix()
                .local_minus_utc(),
        ),
        None => 0,
    }
}

/// (year, month 1–12, day 1–31) of a day number since 1970-01-01 (proleptic Gregorian).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Day number since 1970-01-01 of a civil date.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The start of the `date_trunc` bucket holding floating time `t` (§3.3).
pub fn trunc(t: i64, p: Period) -> i64 {
    let n = i64::from(p.value.max(1));
    let day = t.div_euclid(MICROS_PER_DAY);
    let tod = t.rem_euclid(MICROS_PER_DAY);
    let midnight = day * MICROS_PER_DAY;
    match p.unit {
        Unit::Minute => midnight + tod / MICROS_PER_MINUTE / n * n * MICROS_PER_MINUTE,
        Unit::Hour => midnight + tod / MICROS_PER_HOUR / n * n * MICROS_PER_HOUR,
        Unit::Day => day.div_euclid(n) * n * MICROS_PER_DAY,
        Unit::Week => {
            // 1970-01-05 (day 4) is a Monday.
            let weeks = (day - 4).div_euclid(7);
            (weeks.div_euclid(n) * n * 7 + 4) * MICROS_PER_DAY
        }
        Unit::Month => {
            let (y, m, _) = civil_from_days(day);
            let m0 = (i64::from(m) - 1) / n * n;
            days_from_civil(y, (m0 + 1) as u32, 1) * MICROS_PER_DAY
        }
        Unit::Year => {
            let (y, _, _) = civil_from_days(day);
            days_from_civil(y.div_euclid(n) * n, 1, 1) * MICROS_PER_DAY
        }
    }
}

/// The end (exclusive) of the `date_trunc` bucket that starts at `start`, a value [`trunc`]
/// returned: every `t` in `start..bucket_end(start, p)` truncates to `start`, and the end is
/// the next bucket's start. Minute and hour buckets restart at midnight and month buckets on
/// 1 January (§3.3), so a bucket can be shorter than its period.
pub fn bucket_end(start: i64, p: Period) -> i64 {
    let n = i64::from(p.value.max(1));
    let day = start.div_euclid(MICROS_PER_DAY);
    let next_midnight = (day + 1) * MICROS_PER_DAY;
    match p.unit {
        Unit::Minute => (start + n * MICROS_PER_MINUTE).min(next_midnight),
        Unit::Hour => (start + n * MICROS_PER_HOUR).min(next_midnight),
        Unit::Day => start + n * MICROS_PER_DAY,
        Unit::Week => start + 7 * n * MICROS_PER_DAY,
        Unit::Month => {
            let (y, m, _) = civil_from_days(day);
            let next = i64::from(m) - 1 + n;
            let days = if next >= 12 {
                days_from_civil(y + 1, 1, 1)
            } else {
                days_from_civil(y, (next + 1) as u32, 1)
            };
            days * MICROS_PER_DAY
        }
        Unit::Year => {
            let (y, _, _) = civil_from_days(day);
            days_from_civil(y + n, 1, 1) * MICROS_PER_DAY
        }
    }
}

/// A calendar part of floating time `t` (§3.4).
pub fn part(t: i64, p: DatePart) -> i64 {
    let day = t.div_euclid(MICROS_PER_DAY);
    let tod = t.rem_euclid(MICROS_PER_DAY);
    match p {
        DatePart::Minute => tod / MICROS_PER_MINUTE % 60,
        DatePart::Hour => tod / MICROS_PER_HOUR,
        DatePart::Day => i64::from(civil_from_days(day).2),
        DatePart::Month => i64::from(civil_from_days(day).1),
        DatePart::Year => civil_from_days(day).0,
        DatePart::Weekday => (day + 3).rem_euclid(7) + 1,
        DatePart::Week | DatePart::WeekOfYear | DatePart::DayOfYear => {
            let Some(date) = i32::try_from(day)
                .ok()
                .and_then(|d| d.checked_add(UNIX_EPOCH_DAY_CE))
                .and_then(NaiveDate::from_num_days_from_ce_opt)
            else {
                return 0;
            };
            match p {
                DatePart::Week => i64::from(date.iso_week().week()),
                DatePart::DayOfYear => i64::from(date.ordinal()),
                _ => {
                    let yday = i64::from(date.ordinal0());
                    let wday = i64::from(date.weekday().num_days_from_monday());
                    (yday + 7 - wday) / 7
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> i64 {
        micros(NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap())
    }

    #[test]
    fn bucket_end_is_the_next_buckets_start() {
        use rand::{Rng, SeedableRng};
        let mut g = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let units = [
            (Unit::Minute, 90),
            (Unit::Hour, 30),
            (Unit::Day, 40),
            (Unit::Week, 10),
            (Unit::Month, 14),
            (Unit::Year, 5),
        ];
        for _ in 0..20_000 {
            let (unit, max) = units[g.gen_range(0..units.len())];
            let p = Period {
                value: g.gen_range(1..=max),
                unit,
            };
            // 1960..2060, to cross the epoch, leap years and century rules.
            let t = g.gen_range(-320_000_000_000_000i64..2_840_000_000_000_000);
            let start = trunc(t, p);
            let end = bucket_end(start, p);
            assert!(start <= t && t < end, "{p:?}: {t} not in {start}..{end}");
            assert_eq!(trunc(end - 1, p), start, "{p:?}: bucket of {t} ends early");
            assert_eq!(trunc(end, p), end, "{p:?}: bucket of {t} ends late");
        }
    }

    #[test]
    fn civil_round_trips_and_matches_chrono() {
        for d in [
            -800_000i64,
            -1,
            0,
            1,
            59,
            60,
            365,
            11_016,
            20_000,
            2_932_896,
        ] {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, dd), d);
            let c = NaiveDate::from_num_days_from_ce_opt(d as i32 + UNIX_EPOCH_DAY_CE).unwrap();
            assert_eq!((y, m, dd), (i64::from(c.year()), c.month(), c.day()));
        }
    }

    #[test]
    fn window_clamps_calendar_months() {
        let start = window_start(
            NaiveDate::from_ymd_opt(2025, 5, 31).unwrap(),
            Period {
                value: 1,
                unit: Unit::Month,
            },
        );
        assert_eq!(start.unwrap().to_string(), "2025-04-30 00:00:00");
        let tf = Timeframe {
            anchor: NaiveDate::from_ymd_opt(2024, 12, 13).unwrap(),
            past: Period {
                value: 3,
                unit: Unit::Month,
            },
        };
        let (s, e) = window(&tf, None, None).unwrap();
        assert_eq!((e - s).num_days(), 92);
    }

    #[test]
    fn trunc_follows_the_alignment_rules() {
        let t = at("2025-02-19T13:47:12");
        let p = |value, unit| Period { value, unit };
        assert_eq!(trunc(t, p(15, Unit::Minute)), at("2025-02-19T13:45:00"));
        assert_eq!(trunc(t, p(5, Unit::Hour)), at("2025-02-19T10:00:00"));
        assert_eq!(trunc(t, p(1, Unit::Week)), at("2025-02-17T00:00:00"));
        assert_eq!(trunc(t, p(3, Unit::Month)), at("2025-01-01T00:00:00"));
        assert_eq!(trunc(t, p(10, Unit::Year)), at("2020-01-01T00:00:00"));
        assert_eq!(
            trunc(at("1970-01-04T23:00:00"), p(1, Unit::Week)),
            at("1969-12-29T00:00:00")
        );
    }

    #[test]
    fn parts_match_chrono_formatting() {
        for s in [
            "2025-01-01T00:00:00",
            "2024-12-30T05:06:07",
            "2021-01-03T23:59:59",
            "1969-12-31T12:00:00",
        ] {
            let t = at(s);
            let dt = NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap();
            assert_eq!(
                part(t, DatePart::WeekOfYear),
                dt.format("%W").to_string().parse::<i64>().unwrap(),
                "{s}"
            );
            assert_eq!(part(t, DatePart::Week), i64::from(dt.iso_week().week()));
            assert_eq!(
                part(t, DatePart::Weekday),
                i64::from(dt.weekday().number_from_monday())
            );
            assert_eq!(part(t, DatePart::DayOfYear), i64::from(dt.ordinal()));
        }
    }
}
