//! The user resource: validation of create and update requests, and the JSON a user renders
//! as (`rest-conventions.md` §Users, `service-interface.md` §User).
//!
//! Decisions where the specs are silent:
//! - `client_user_id` is 1–256 characters. It "looks like an e-mail address" when it has the
//!   form `local@domain.tld`, and "like a phone number" when it holds 7–15 digits written the way
//!   phone numbers are (a leading `+`, or separators such as spaces, dashes, dots, parentheses).
//!   A bare run of digits is allowed: numeric database ids are a common, harmless choice.
//! - `fallback_birth_date` must be a past date; `ingestion_start` must not be after
//!   `ingestion_end`.
//! - In a PATCH, an absent field is left alone and `null` clears it (`client_user_id` cannot be
//!   cleared).

pub mod info;
pub mod wire;

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use serde_json::Value;

use crate::store::metadata::{NewUser, User, UserPatch};
use crate::validation::{Invalid, Loc, ObjectReader};

/// Renders an instant as the API does: RFC 3339, UTC, `Z`, fractional seconds only when set.
pub fn render_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

fn looks_like_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.split('.').count() >= 2
        && domain.split('.').all(|part| !part.is_empty())
}

fn looks_like_phone(s: &str) -> bool {
    let digits = s.chars().filter(char::is_ascii_digit).count();
    let allowed = s
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '+' | ' ' | '-' | '.' | '(' | ')'));
    let phone_punctuation =
        s.starts_with('+') || s.chars().any(|c| matches!(c, ' ' | '-' | '.' | '(' | ')'));
    allowed && phone_punctuation && (7..=15).contains(&digits)
}

fn client_user_id(reader: &mut ObjectReader<'_>, required: bool) -> Option<String> {
    let value = reader.string("client_user_id", required)?;
    let msg = if value.trim().is_empty() {
        "client_user_id must not be empty"
    } else if value.chars().count() > 256 {
        "client_user_id must be at most 256 characters"
    } else if looks_like_email(value) {
        "client_user_id must not be an e-mail address"
    } else if looks_like_phone(value) {
        "client_user_id must not be a phone number"
    } else {
        return Some(value.to_owned());
    };
    reader.fail("client_user_id", "value_error", msg);
    None
}

fn time_zone(reader: &mut ObjectReader<'_>) -> Option<String> {
    let zone = reader.string("fallback_time_zone", false)?;
    if zone.parse::<chrono_tz::Tz>().is_ok() {
        Some(zone.to_owned())
    } else {
        reader.fail(
            "fallback_time_zone",
            "value_error",
            format!("{zone:?} is not a valid IANA time zone identifier (e.g. \"Europe/London\")"),
        );
        None
    }
}

fn birth_date(reader: &mut ObjectReader<'_>, today: NaiveDate) -> Option<NaiveDate> {
    let date = reader.date("fallback_birth_date", false)?;
    if date >= today {
        reader.fail(
            "fallback_birth_date",
            "value_error",
            "fallback_birth_date must be in the past",
        );
        return None;
    }
    Some(date)
}

fn check_bounds(reader: &mut ObjectReader<'_>, start: Option<NaiveDate>, end: Option<NaiveDate>) {
    if let (Some(s), Some(e)) = (start, end)
        && s > e
    {
        reader.fail(
            "ingestion_end",
            "value_error",
            "ingestion_end must not be before ingestion_start",
        );
    }
}

const FIELDS: [&str; 5] = [
    "client_user_id",
    "fallback_time_zone",
    "fallback_birth_date",
    "ingestion_start",
    "ingestion_end",
];

/// Validates a `POST /v2/user/` body.
pub fn parse_new_user(body: &Value, today: NaiveDate) -> Result<NewUser, Invalid> {
    let mut r = ObjectReader::new(body, vec![Loc::from("body")]);
    r.deny_unknown(&FIELDS);
    let cuid = client_user_id(&mut r, true);
    let new = NewUser {
        client_user_id: cuid.unwrap_or_default(),
        fallback_time_zone: time_zone(&mut r),
        fallback_birth_date: birth_date(&mut r, today),
        ingestion_start: r.date("ingestion_start", false),
        ingestion_end: r.date("ingestion_end", false),
    };
    check_bounds(&mut r, new.ingestion_start, new.ingestion_end);
    r.finish().map(|()| new)
}

/// Validates a `PATCH /v2/user/{user_id}` body against the user's current bounds.
pub fn parse_user_patch(
    body: &Value,
    current: &User,
    today: NaiveDate,
) -> Result<UserPatch, Invalid> {
    let mut r = ObjectReader::new(body, vec![Loc::from("body")]);
    r.deny_unknown(&FIELDS);
    let present = |r: &ObjectReader<'_>, key: &str| r.raw(key).is_some();
    let mut patch = UserPatch::default();
    if present(&r, "client_user_id") {
        patch.client_user_id = client_user_id(&mut r, true);
    }
    if present(&r, "fallback_time_zone") {
        patch.fallback_time_zone = Some(time_zone(&mut r));
    }
    if present(&r, "fallback_birth_date") {
        patch.fallback_birth_date = Some(birth_date(&mut r, today));
    }
    if present(&r, "ingestion_start") {
        patch.ingestion_start = Some(r.date("ingestion_start", false));
    }
    if present(&r, "ingestion_end") {
        patch.ingestion_end = Some(r.date("ingestion_end", false));
    }
    let start = patch.ingestion_start.unwrap_or(current.ingestion_start);
    let end = patch.ingestion_end.unwrap_or(current.ingestion_end);
    check_bounds(&mut r, start, end);
    r.finish().map(|()| patch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn client_user_id_rules() {
        for ok in ["abc", "user-17", "1234567890", "a.b", "x@y"] {
            assert!(!looks_like_email(ok) && !looks_like_phone(ok), "{ok}");
        }
        for email in ["a@b.com", "first.last@example.co.uk"] {
            assert!(looks_like_email(email), "{email}");
        }
        for phone in [
            "+44 20 7946 0958",
            "(555) 123-4567",
            "+15551234567",
            "555-123-4567",
        ] {
            assert!(looks_like_phone(phone), "{phone}");
        }
    }

    #[test]
    fn new_user_reports_every_problem_with_its_location() {
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        let body = json!({"client_user_id": "a@b.com", "fallback_time_zone": "Mars/Base",
            "fallback_birth_date": "2025-02-30", "colour": 1});
        let err = parse_new_user(&body, today).unwrap_err();
        let locs: Vec<String> = err
            .0
            .iter()
            .map(|v| serde_json::to_string(&v.loc).unwrap())
            .collect();
        assert_eq!(locs.len(), 4, "{locs:?}");
        for want in [
            "client_user_id",
            "fallback_time_zone",
            "fallback_birth_date",
            "colour",
        ] {
            assert!(
                locs.iter().any(|l| l.contains(want)),
                "{want} missing in {locs:?}"
            );
        }
    }

    #[test]
    fn bounds_must_be_ordered() {
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        let body = json!({"client_user_id": "u1", "ingestion_start": "2024-05-02", "ingestion_end": "2024-05-01"});
        assert!(parse_new_user(&body, today).is_err());
        let body = json!({"client_user_id": "u1", "ingestion_start": "2024-05-01", "ingestion_end": "2024-05-01"});
        assert!(parse_new_user(&body, today).is_ok());
    }
}
