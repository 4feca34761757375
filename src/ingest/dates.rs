//! The `start_date`/`end_date` query parameters of the summary and timeseries getters.
//!
//! Decisions where the spec is silent:
//! - A bare date is a UTC day (the getters filter stored UTC instants): `start_date` D means
//!   D 00:00:00Z, `end_date` D means through D 23:59:59.999999Z.
//! - The range is half-open and the end is inclusive, so the returned `end` is one microsecond
//!   after the given end date-time (or the next midnight for a bare end date).
//! - Without `end_date` the range is open-ended (up to the latest representable instant).
//! - Date-times must carry an offset (`Z` or `±HH:MM`).
//! - Both bounds must fall from 0000-01-01 through 9999-12-31 in UTC ([`EARLIEST`], [`LATEST`]):
//!   the four-digit years of RFC 3339, so every instant a push can store and nothing else.
//!   A bound outside (`-262143-01-01`, `+10000-01-01`) is a 422 at its parameter, not a window
//!   to search.

use std::ops::Range;

use chrono::{DateTime, Days, NaiveDate, TimeDelta, Utc};
use serde_json::Value;

use crate::loc;
use crate::validation::{Invalid, Violation};

/// The earliest instant a getter window may start at: 0000-01-01T00:00:00Z.
pub const EARLIEST: DateTime<Utc> = match NaiveDate::from_ymd_opt(0, 1, 1) {
    Some(day) => day.and_time(chrono::NaiveTime::MIN).and_utc(),
    None => DateTime::<Utc>::MIN_UTC,
};

/// The instant a getter window may reach up to (its half-open end): 10000-01-01T00:00:00Z, so
/// the last instant in range is 9999-12-31T23:59:59.999999Z.
pub const LATEST: DateTime<Utc> = match NaiveDate::from_ymd_opt(10_000, 1, 1) {
    Some(day) => day.and_time(chrono::NaiveTime::MIN).and_utc(),
    None => DateTime::<Utc>::MAX_UTC,
};

/// The violation of a bound outside [`EARLIEST`]..[`LATEST`].
fn out_of_range(name: &str, raw: &str) -> Violation {
    Violation::value(
        loc!["query", name],
        "Input should be a date or date-time from 0000-01-01 through 9999-12-31 (UTC)",
    )
    .with_input(Value::from(raw))
}

/// The dates and date-times [`parse_date_range`] accepts, as the OpenAPI document states them: a
/// date `YYYY-MM-DD`, or a date-time with seconds and an offset. Stricter than the parser where a
/// pattern cannot follow the calendar or the offset (days past the 28th, and the years 0000 and
/// 9999, whose edges an offset can push out of [`EARLIEST`]..[`LATEST`], are accepted but not
/// promised).
pub const DATE_OR_DATE_TIME_PATTERN: &str = r"^(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9])-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9]))?$";

enum Bound {
    Day(NaiveDate),
    Instant(DateTime<Utc>),
}

fn parse(name: &str, raw: &str) -> Result<Bound, Violation> {
    if let Ok(day) = NaiveDate::parse_from_str(raw, "%Y-%m-%d") {
        return Ok(Bound::Day(day));
    }
    DateTime::parse_from_rfc3339(raw)
        .map(|t| Bound::Instant(t.with_timezone(&Utc)))
        .map_err(|_| {
            Violation::value(
                loc!["query", name],
                "Input should be a date (YYYY-MM-DD) or a date-time with an offset",
            )
            .with_input(Value::from(raw))
        })
}

/// Parses the getter date range; see the module docs for the rules.
pub fn parse_date_range(
    start_date: Option<&str>,
    end_date: Option<&str>,
) -> Result<Range<DateTime<Utc>>, Invalid> {
    let Some(raw_start) = start_date else {
        return Err(
            Violation::new(loc!["query", "start_date"], "missing", "Field required").into(),
        );
    };
    let start = match parse("start_date", raw_start)? {
        Bound::Day(d) => d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc(),
        Bound::Instant(t) => t,
    };
    if !(EARLIEST..LATEST).contains(&start) {
        return Err(out_of_range("start_date", raw_start).into());
    }
    let end = match end_date.map(|raw| parse("end_date", raw)).transpose()? {
        None => DateTime::<Utc>::MAX_UTC,
        Some(Bound::Day(d)) => d
            .checked_add_days(Days::new(1))
            .and_then(|n| n.and_hms_opt(0, 0, 0))
            .map_or(DateTime::<Utc>::MAX_UTC, |n| n.and_utc()),
        Some(Bound::Instant(t)) => t
            .checked_add_signed(TimeDelta::microseconds(1))
            .unwrap_or(DateTime::<Utc>::MAX_UTC),
    };
    if let Some(raw_end) = end_date
        && !(EARLIEST < end && end <= LATEST)
    {
        return Err(out_of_range("end_date", raw_end).into());
    }
    if end <= start {
        return Err(Violation::value(
            loc!["query", "end_date"],
            "end_date must not be before start_date",
        )
        .with_input(Value::from(end_date.unwrap_or_default()))
        .into());
    }
    Ok(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::Loc;

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn bare_dates_cover_whole_days() {
        let r = parse_date_range(Some("2025-02-01"), Some("2025-02-03")).unwrap();
        assert_eq!(r.start, utc("2025-02-01T00:00:00Z"));
        assert_eq!(r.end, utc("2025-02-04T00:00:00Z"));
        assert!(r.contains(&utc("2025-02-03T23:59:59Z")));
        let same_day = parse_date_range(Some("2025-02-01"), Some("2025-02-01")).unwrap();
        assert!(same_day.contains(&utc("2025-02-01T12:00:00Z")));
    }

    #[test]
    fn date_times_keep_their_offset_and_the_end_is_inclusive() {
        let r = parse_date_range(
            Some("2025-02-01T10:00:00+02:00"),
            Some("2025-02-01T12:00:00Z"),
        )
        .unwrap();
        assert_eq!(r.start, utc("2025-02-01T08:00:00Z"));
        assert!(r.contains(&utc("2025-02-01T12:00:00Z")));
        assert!(!r.contains(&utc("2025-02-01T12:00:01Z")));
        assert_eq!(
            parse_date_range(Some("2025-02-01"), None).unwrap().end,
            DateTime::<Utc>::MAX_UTC
        );
    }

    #[test]
    fn bounds_outside_years_0000_to_9999_are_refused_at_their_parameter() {
        let loc_of = |r: Result<_, Invalid>| r.unwrap_err().0[0].loc.clone();
        let q = |n: &str| vec![Loc::from("query"), Loc::from(n)];
        for start in [
            "-262143-01-01",
            "-0001-12-31",
            "+10000-01-01",
            "262142-12-31",
        ] {
            assert_eq!(
                loc_of(parse_date_range(Some(start), None)),
                q("start_date"),
                "{start}"
            );
        }
        assert_eq!(
            loc_of(parse_date_range(Some("2025-01-01"), Some("+10000-01-01"))),
            q("end_date")
        );
        assert_eq!(
            loc_of(parse_date_range(
                Some("2025-01-01"),
                Some("9999-12-31T23:00:00-05:00")
            )),
            q("end_date")
        );
        let widest = parse_date_range(Some("0000-01-01"), Some("9999-12-31")).unwrap();
        assert_eq!(widest, EARLIEST..LATEST);
        let instants = parse_date_range(
            Some("0000-01-01T00:00:00Z"),
            Some("9999-12-31T23:59:59.999999Z"),
        )
        .unwrap();
        assert_eq!(instants, EARLIEST..LATEST);
    }

    #[test]
    fn bad_input_names_the_parameter() {
        let loc_of = |r: Result<_, Invalid>| r.unwrap_err().0[0].loc.clone();
        let q = |n: &str| vec![Loc::from("query"), Loc::from(n)];
        assert_eq!(loc_of(parse_date_range(None, None)), q("start_date"));
        assert_eq!(
            loc_of(parse_date_range(Some("yesterday"), None)),
            q("start_date")
        );
        assert_eq!(
            loc_of(parse_date_range(Some("2025-02-01T10:00:00"), None)),
            q("start_date")
        );
        assert_eq!(
            loc_of(parse_date_range(Some("2025-02-01"), Some("2025-13-01"))),
            q("end_date")
        );
        assert_eq!(
            loc_of(parse_date_range(Some("2025-02-02"), Some("2025-02-01"))),
            q("end_date")
        );
    }
}
