//! Time zones as records give them (`"+02:00"`, `"Z"`, an IANA name, or seconds east of UTC),
//! the offsets derived from them, and the rendering of instants in a row's own offset.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveTime, Offset, SecondsFormat, TimeZone, Utc};
use chrono_tz::Tz;

/// The largest offset accepted, in seconds (±18 h, as ISO 8601 and chrono allow).
pub(crate) const MAX_OFFSET: i64 = 18 * 3600;

/// A record's zone: a fixed offset or a named (DST-aware) zone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Zone {
    /// Seconds east of UTC.
    Fixed(i32),
    /// An IANA zone.
    Named(Tz),
}

impl Zone {
    /// Parses `Z`, `±HH:MM`, `±HHMM`, `±HH` or an IANA name.
    pub(crate) fn parse(s: &str) -> Option<Zone> {
        if s == "Z" {
            return Some(Zone::Fixed(0));
        }
        if let Some(rest) = s.strip_prefix('+').or_else(|| s.strip_prefix('-')) {
            let sign = if s.starts_with('-') { -1 } else { 1 };
            let digits: String = rest.chars().filter(|c| *c != ':').collect();
            let well_formed = digits.chars().all(|c| c.is_ascii_digit())
                && matches!(digits.len(), 2 | 4)
                && (rest.len() == digits.len() || rest.as_bytes().get(2) == Some(&b':'));
            if !well_formed {
                return None;
            }
            let hours: i64 = digits.get(0..2)?.parse().ok()?;
            let minutes: i64 = digits.get(2..4).map_or(Ok(0), str::parse).ok()?;
            let secs = sign * (hours * 3600 + minutes * 60);
            if minutes >= 60 || secs.abs() > MAX_OFFSET {
                return None;
            }
            return i32::try_from(secs).ok().map(Zone::Fixed);
        }
        s.parse::<Tz>().ok().map(Zone::Named)
    }

    /// The offset in seconds east of UTC at an instant.
    pub(crate) fn offset_at(self, at: DateTime<Utc>) -> i32 {
        match self {
            Zone::Fixed(secs) => secs,
            Zone::Named(tz) => tz
                .offset_from_utc_datetime(&at.naive_utc())
                .fix()
                .local_minus_utc(),
        }
    }

    /// The offset at local noon of a calendar day (the day's offset for date-indexed rows).
    pub(crate) fn offset_on(self, date: NaiveDate) -> i32 {
        match self {
            Zone::Fixed(secs) => secs,
            Zone::Named(tz) => {
                let noon = date.and_time(NaiveTime::from_hms_opt(12, 0, 0).unwrap_or_default());
                tz.offset_from_local_datetime(&noon)
                    .earliest()
                    .map_or(0, |o| o.fix().local_minus_utc())
            }
        }
    }

    /// `+HH:MM` for a fixed offset, the name for a named zone.
    pub(crate) fn label(self) -> String {
        match self {
            Zone::Fixed(secs) => format_offset(secs),
            Zone::Named(tz) => tz.name().to_owned(),
        }
    }
}

/// `+HH:MM` (or `-HH:MM`) for seconds east of UTC.
pub(crate) fn format_offset(secs: i32) -> String {
    let sign = if secs < 0 { '-' } else { '+' };
    let abs = secs.unsigned_abs();
    format!("{sign}{:02}:{:02}", abs / 3600, (abs % 3600) / 60)
}

/// An instant as ISO 8601, in the given offset when known (else `Z`).
pub(crate) fn format_instant(micros: i64, offset: Option<i32>) -> String {
    let utc = DateTime::<Utc>::from_timestamp_micros(micros).unwrap_or_default();
    match offset.and_then(FixedOffset::east_opt) {
        Some(fixed) if fixed.local_minus_utc() != 0 => utc
            .with_timezone(&fixed)
            .to_rfc3339_opts(SecondsFormat::AutoSi, true),
        _ => utc.to_rfc3339_opts(SecondsFormat::AutoSi, true),
    }
}

/// The local calendar day of an instant in an offset (UTC when unknown).
pub(crate) fn local_date(micros: i64, offset: Option<i32>) -> NaiveDate {
    let shifted = micros + i64::from(offset.unwrap_or(0)) * 1_000_000;
    DateTime::<Utc>::from_timestamp_micros(shifted)
        .unwrap_or_default()
        .date_naive()
}

/// Days since the epoch as `YYYY-MM-DD`.
pub(crate) fn date_string(days: i32) -> String {
    local_date(i64::from(days) * 86_400_000_000, None).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_offsets_and_names() {
        assert_eq!(Zone::parse("+02:00"), Some(Zone::Fixed(7200)));
        assert_eq!(Zone::parse("-0530"), Some(Zone::Fixed(-19800)));
        assert_eq!(Zone::parse("Z"), Some(Zone::Fixed(0)));
        assert_eq!(Zone::parse("+25:00"), None);
        assert_eq!(Zone::parse("+2:00"), None);
        assert_eq!(Zone::parse("Mars/Olympus"), None);
        let berlin = Zone::parse("Europe/Berlin").unwrap();
        let winter = "2025-01-15T12:00:00Z".parse().unwrap();
        let summer = "2025-07-15T12:00:00Z".parse().unwrap();
        assert_eq!(berlin.offset_at(winter), 3600);
        assert_eq!(berlin.offset_at(summer), 7200);
        assert_eq!(
            berlin.offset_on(NaiveDate::from_ymd_opt(2025, 7, 1).unwrap()),
            7200
        );
    }

    #[test]
    fn formats_in_the_rows_offset() {
        assert_eq!(format_offset(-19800), "-05:30");
        let micros = 1_736_942_400_000_000; // 2025-01-15T12:00:00Z
        assert_eq!(
            format_instant(micros, Some(3600)),
            "2025-01-15T13:00:00+01:00"
        );
        assert_eq!(format_instant(micros, None), "2025-01-15T12:00:00Z");
        assert_eq!(
            local_date(micros, Some(13 * 3600)).to_string(),
            "2025-01-16"
        );
    }
}
