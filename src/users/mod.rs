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
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::loc;
use crate::store::metadata::{NewUser, User, UserPatch};
use crate::validation::decode::member;
use crate::validation::{Checks, Invalid, decode};

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

/// `POST /v2/user/`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NewUserRequest {
    /// The team's own id for the user: 1–256 characters, not an e-mail address or a phone
    /// number.
    pub client_user_id: String,
    /// IANA time zone identifier.
    #[serde(default)]
    pub fallback_time_zone: Option<String>,
    /// A past date.
    #[serde(default, deserialize_with = "member::optional_date")]
    pub fallback_birth_date: Option<NaiveDate>,
    /// Ingestion start bound.
    #[serde(default, deserialize_with = "member::optional_date")]
    pub ingestion_start: Option<NaiveDate>,
    /// Ingestion end bound, not before the start.
    #[serde(default, deserialize_with = "member::optional_date")]
    pub ingestion_end: Option<NaiveDate>,
}

/// `PATCH /v2/user/{user_id}`: absent members are left alone, `null` clears one.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct UserPatchRequest {
    /// The team's own id for the user (cannot be cleared).
    #[serde(default, deserialize_with = "member::patched")]
    #[schema(value_type = Option<String>)]
    pub client_user_id: Option<Option<String>>,
    /// IANA time zone identifier.
    #[serde(default, deserialize_with = "member::patched")]
    #[schema(value_type = Option<String>)]
    pub fallback_time_zone: Option<Option<String>>,
    /// A past date.
    #[serde(default, deserialize_with = "member::patched_date")]
    #[schema(value_type = Option<NaiveDate>)]
    pub fallback_birth_date: Option<Option<NaiveDate>>,
    /// Ingestion start bound.
    #[serde(default, deserialize_with = "member::patched_date")]
    #[schema(value_type = Option<NaiveDate>)]
    pub ingestion_start: Option<Option<NaiveDate>>,
    /// Ingestion end bound.
    #[serde(default, deserialize_with = "member::patched_date")]
    #[schema(value_type = Option<NaiveDate>)]
    pub ingestion_end: Option<Option<NaiveDate>>,
}

fn check_client_user_id(checks: &mut Checks, value: &str) {
    let msg = if value.trim().is_empty() {
        "client_user_id must not be empty"
    } else if value.chars().count() > 256 {
        "client_user_id must be at most 256 characters"
    } else if looks_like_email(value) {
        "client_user_id must not be an e-mail address"
    } else if looks_like_phone(value) {
        "client_user_id must not be a phone number"
    } else {
        return;
    };
    checks.refuse(loc!["client_user_id"], value, msg);
}

fn check_time_zone(checks: &mut Checks, zone: Option<&str>) {
    if let Some(zone) = zone
        && zone.parse::<chrono_tz::Tz>().is_err()
    {
        checks.refuse(
            loc!["fallback_time_zone"],
            zone,
            format!("{zone:?} is not a valid IANA time zone identifier (e.g. \"Europe/London\")"),
        );
    }
}

fn check_birth_date(checks: &mut Checks, date: Option<NaiveDate>, today: NaiveDate) {
    if let Some(date) = date
        && date >= today
    {
        checks.refuse(
            loc!["fallback_birth_date"],
            date,
            "fallback_birth_date must be in the past",
        );
    }
}

fn check_bounds(checks: &mut Checks, start: Option<NaiveDate>, end: Option<NaiveDate>) {
    if let (Some(s), Some(e)) = (start, end)
        && s > e
    {
        checks.refuse(
            loc!["ingestion_end"],
            e,
            "ingestion_end must not be before ingestion_start",
        );
    }
}

/// Validates a `POST /v2/user/` body.
pub fn parse_new_user(body: &Value, today: NaiveDate) -> Result<NewUser, Invalid> {
    let (req, mut checks) = decode::<NewUserRequest>(body, loc!["body"])?;
    check_client_user_id(&mut checks, &req.client_user_id);
    check_time_zone(&mut checks, req.fallback_time_zone.as_deref());
    check_birth_date(&mut checks, req.fallback_birth_date, today);
    check_bounds(&mut checks, req.ingestion_start, req.ingestion_end);
    checks.finish_with(NewUser {
        client_user_id: req.client_user_id,
        fallback_time_zone: req.fallback_time_zone,
        fallback_birth_date: req.fallback_birth_date,
        ingestion_start: req.ingestion_start,
        ingestion_end: req.ingestion_end,
    })
}

/// Validates a `PATCH /v2/user/{user_id}` body against the user's current bounds.
pub fn parse_user_patch(
    body: &Value,
    current: &User,
    today: NaiveDate,
) -> Result<UserPatch, Invalid> {
    let (req, mut checks) = decode::<UserPatchRequest>(body, loc!["body"])?;
    let client_user_id = match req.client_user_id {
        Some(Some(id)) => {
            check_client_user_id(&mut checks, &id);
            Some(id)
        }
        Some(None) => {
            checks.fail(
                loc!["client_user_id"],
                "value_error",
                "client_user_id cannot be cleared",
            );
            None
        }
        None => None,
    };
    check_time_zone(
        &mut checks,
        req.fallback_time_zone.clone().flatten().as_deref(),
    );
    check_birth_date(&mut checks, req.fallback_birth_date.flatten(), today);
    let start = req.ingestion_start.unwrap_or(current.ingestion_start);
    let end = req.ingestion_end.unwrap_or(current.ingestion_end);
    check_bounds(&mut checks, start, end);
    checks.finish_with(UserPatch {
        client_user_id,
        fallback_time_zone: req.fallback_time_zone,
        fallback_birth_date: req.fallback_birth_date,
        ingestion_start: req.ingestion_start,
        ingestion_end: req.ingestion_end,
    })
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
            "fallback_birth_date": "2030-02-28", "colour": 1});
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
    fn a_date_that_does_not_exist_is_named_at_its_member() {
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        let body = json!({"client_user_id": "u1", "fallback_birth_date": "2021-02-30"});
        let err = parse_new_user(&body, today).unwrap_err();
        assert_eq!(err.0.len(), 1, "{err:?}");
        assert_eq!(err.0[0].loc, loc!["body", "fallback_birth_date"]);
        assert!(err.0[0].msg.contains("YYYY-MM-DD"), "{}", err.0[0].msg);
        assert_eq!(err.0[0].input, Some(json!("2021-02-30")));
    }

    #[test]
    fn a_patch_cannot_clear_the_client_user_id_but_can_clear_the_rest() {
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        let current = User {
            id: uuid::Uuid::nil(),
            team_id: uuid::Uuid::nil(),
            client_user_id: "u1".into(),
            created_at: chrono::DateTime::UNIX_EPOCH,
            fallback_time_zone: None,
            fallback_birth_date: None,
            ingestion_start: NaiveDate::from_ymd_opt(2024, 1, 1),
            ingestion_end: None,
        };
        let err = parse_user_patch(&json!({"client_user_id": null}), &current, today).unwrap_err();
        assert_eq!(err.0[0].loc, loc!["body", "client_user_id"]);
        let patch = parse_user_patch(&json!({"ingestion_start": null}), &current, today).unwrap();
        assert_eq!(patch.ingestion_start, Some(None));
        assert_eq!(patch.fallback_time_zone, None);
        let err =
            parse_user_patch(&json!({"ingestion_end": "2023-12-31"}), &current, today).unwrap_err();
        assert_eq!(err.0[0].loc, loc!["body", "ingestion_end"]);
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
