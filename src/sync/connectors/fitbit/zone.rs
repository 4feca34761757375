//! The user's zone, and Fitbit's local times (no offset) read in it as instants.
//!
//! Decisions where the documentation is silent:
//! - A local time the zone's clocks repeat (the hour after a switch back from summer time) is
//!   read as the earlier instant; one they skip (the hour of the switch to summer time) is no
//!   instant at all and its record is skipped as malformed.

use chrono::{
    DateTime, FixedOffset, NaiveDate, NaiveDateTime, SecondsFormat, TimeDelta, TimeZone, Utc,
};
use serde_json::Value;

use crate::sync::Window;

/// The zone Fitbit's local times are read in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum UserZone {
    /// An IANA zone (the profile's `timezone`, or the fallback).
    Named(chrono_tz::Tz),
    /// A fixed offset (the profile's `offsetFromUTCMillis`, when `timezone` is unreadable).
    Fixed(FixedOffset),
}

impl UserZone {
    /// The zone of a profile document `{"user": {"timezone", "offsetFromUTCMillis"}}`.
    pub(crate) fn of_profile(profile: &Value) -> Option<UserZone> {
        let user = profile.get("user")?;
        if let Some(tz) = user
            .get("timezone")
            .and_then(Value::as_str)
            .and_then(|name| name.parse::<chrono_tz::Tz>().ok())
        {
            return Some(UserZone::Named(tz));
        }
        let millis = user.get("offsetFromUTCMillis").and_then(Value::as_i64)?;
        let seconds = i32::try_from(millis / 1000).ok()?;
        FixedOffset::east_opt(seconds).map(UserZone::Fixed)
    }

    /// The instant a local time names, in its offset; `None` when the zone skips it.
    pub(crate) fn resolve(&self, local: NaiveDateTime) -> Option<DateTime<FixedOffset>> {
        match self {
            UserZone::Named(tz) => tz
                .from_local_datetime(&local)
                .earliest()
                .map(|t| t.fixed_offset()),
            UserZone::Fixed(offset) => offset.from_local_datetime(&local).single(),
        }
    }

    /// The zone as the wire's `time_zone`: its IANA name, else `±HH:MM`.
    pub(crate) fn label(&self) -> String {
        match self {
            UserZone::Named(tz) => tz.name().to_owned(),
            UserZone::Fixed(offset) => offset.to_string(),
        }
    }

    /// The local calendar day of an instant.
    fn local_day(&self, at: DateTime<Utc>) -> NaiveDate {
        match self {
            UserZone::Named(tz) => at.with_timezone(tz).date_naive(),
            UserZone::Fixed(offset) => at.with_timezone(offset).date_naive(),
        }
    }

    /// The first and last local calendar days the window touches.
    pub(crate) fn days(&self, window: &Window) -> (NaiveDate, NaiveDate) {
        let last = window.end - TimeDelta::nanoseconds(1);
        (self.local_day(window.start), self.local_day(last))
    }
}

/// An instant as it travels: RFC 3339 in its local offset.
pub(crate) fn stamp(at: DateTime<FixedOffset>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

/// An instant's offset in seconds east of UTC.
pub(crate) fn offset(at: DateTime<FixedOffset>) -> i32 {
    at.offset().local_minus_utc()
}
