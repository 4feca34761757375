//! Floating local time as FHIR writes it (see the parent module's decisions): calendar dates
//! for buckets of a day or longer, instants with the fallback zone's offset (else `Z`) for
//! minute and hour buckets.

use chrono::{DateTime, NaiveDateTime, Offset, TimeZone};

use crate::engine::time::MICROS_PER_DAY;
use crate::engine::{Period, Unit};

/// `1 day`, `15 minutes`.
pub(super) fn period_text(p: Period) -> String {
    let unit = Unit::ALL
        .iter()
        .find(|(_, u)| *u == p.unit)
        .map_or("", |(n, _)| *n);
    if p.value == 1 {
        format!("1 {unit}")
    } else {
        format!("{} {unit}s", p.value)
    }
}

fn naive(micros: i64) -> NaiveDateTime {
    DateTime::from_timestamp_micros(micros)
        .unwrap_or_default()
        .naive_utc()
}

/// Floating time as the result table renders it.
pub(super) fn floating(micros: i64) -> String {
    naive(micros).format("%Y-%m-%dT%H:%M:%S%.f").to_string()
}

/// The calendar day of floating time `micros`.
pub(super) fn date(micros: i64) -> String {
    let day = micros.div_euclid(MICROS_PER_DAY) * MICROS_PER_DAY;
    naive(day).format("%Y-%m-%d").to_string()
}

/// Floating time `micros` as a FHIR dateTime: with `zone`'s offset at that local time, else
/// `Z`.
pub(super) fn instant(micros: i64, zone: Option<chrono_tz::Tz>) -> String {
    let local = naive(micros);
    let text = local.format("%Y-%m-%dT%H:%M:%S");
    let Some(tz) = zone else {
        return format!("{text}Z");
    };
    let offset = tz
        .offset_from_local_datetime(&local)
        .earliest()
        .map(|o| o.fix())
        .unwrap_or_else(|| tz.offset_from_utc_datetime(&local).fix());
    let seconds = offset.local_minus_utc();
    let sign = if seconds < 0 { '-' } else { '+' };
    let abs = seconds.unsigned_abs();
    format!("{text}{sign}{:02}:{:02}", abs / 3600, abs % 3600 / 60)
}
