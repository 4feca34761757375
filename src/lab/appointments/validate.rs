//! The limits of appointment requests (`service-interface.md` §Limits).

use super::super::LabError;
use super::super::model::appointment::BookRequest;
use crate::loc;
use crate::validation::{Invalid, Violation};

/// Notes longer than this are refused.
pub const MAX_NOTES: usize = 1000;
/// `sync_confirmation_timeout_millisecond` range and default.
pub const SYNC_TIMEOUT_MS: (i64, i64, i64) = (1000, 10_000, 2500);
/// `async_confirmation_timeout_millisecond` range and default (15 minutes).
pub const ASYNC_TIMEOUT_MS: (i64, i64, i64) = (60_000, 172_800_000, 900_000);

const LEGACY_ZONES: [&str; 10] = [
    "CET", "CST6CDT", "EET", "EST", "EST5EDT", "MET", "MST", "MST7MDT", "PST8PDT", "HST",
];

/// Whether a time zone name matches the interface's pattern: `Region/City` (letters, `_`, `-`;
/// optionally a third segment), an `Etc/` form, or one of the legacy names.
pub fn is_valid_zone(s: &str) -> bool {
    if LEGACY_ZONES.contains(&s) {
        return true;
    }
    if let Some(rest) = s.strip_prefix("Etc/") {
        return !rest.is_empty()
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '_'));
    }
    let parts: Vec<&str> = s.split('/').collect();
    (2..=3).contains(&parts.len())
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '-'))
        })
}

/// Notes of at most [`MAX_NOTES`] characters at `field`.
pub fn notes(v: &mut Vec<Violation>, field: &str, notes: Option<&str>) {
    if let Some(n) = notes {
        let count = n.chars().count();
        if count > MAX_NOTES {
            v.push(Violation::value(
                loc!["body", field],
                format!("{field} must be at most {MAX_NOTES} characters, got {count}"),
            ));
        }
    }
}

fn range(
    v: &mut Vec<Violation>,
    field: &str,
    value: Option<i64>,
    (lo, hi, default): (i64, i64, i64),
) -> i64 {
    match value {
        None => default,
        Some(x) if (lo..=hi).contains(&x) => x,
        Some(x) => {
            v.push(
                Violation::value(
                    loc!["body", field],
                    format!("{field} must be between {lo} and {hi}, got {x}"),
                )
                .with_input(x.into()),
            );
            default
        }
    }
}

/// A booking's checked windows: (sync, async) in milliseconds.
pub fn booking(req: &BookRequest) -> Result<(i64, i64), LabError> {
    let mut v = Vec::new();
    notes(
        &mut v,
        "appointment_notes",
        req.appointment_notes.as_deref(),
    );
    let sync = range(
        &mut v,
        "sync_confirmation_timeout_millisecond",
        req.sync_confirmation_timeout_millisecond,
        SYNC_TIMEOUT_MS,
    );
    let asynchronous = range(
        &mut v,
        "async_confirmation_timeout_millisecond",
        req.async_confirmation_timeout_millisecond,
        ASYNC_TIMEOUT_MS,
    );
    if let Some(z) = &req.iana_timezone
        && !is_valid_zone(z)
    {
        v.push(
            Violation::value(
                loc!["body", "iana_timezone"],
                format!("iana_timezone {z:?} is not an IANA time zone name (Region/City, Etc/..., or a legacy name such as EST5EDT)"),
            )
            .with_input(z.as_str().into()),
        );
    }
    if req.booking_key.is_empty() {
        v.push(Violation::value(
            loc!["body", "booking_key"],
            "booking_key must not be empty",
        ));
    }
    if v.is_empty() {
        Ok((sync, asynchronous))
    } else {
        Err(Invalid(v).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_pattern() {
        for ok in [
            "America/New_York",
            "America/Argentina/Buenos_Aires",
            "Etc/GMT+5",
            "EST5EDT",
            "America/Port-au-Prince",
        ] {
            assert!(is_valid_zone(ok), "{ok}");
        }
        for bad in [
            "UTC+1",
            "America",
            "America/New York",
            "",
            "Foo/Bar/Baz/Qux",
            "Etc/",
        ] {
            assert!(!is_valid_zone(bad), "{bad}");
        }
    }
}
