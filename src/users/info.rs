//! Patient details (`PATCH /v2/user/{user_id}/info`): validation and the stored shape.
//!
//! The specs leave the lab-driven name rule and the medical proxy's fields open. Decisions:
//! - a name is 1–50 characters of letters (any script), spaces, hyphens, apostrophes and
//!   periods, with at least one letter;
//! - `phone_number` holds 7–15 digits, optionally a leading `+` and the separators
//!   space, `-`, `.`, `(`, `)`;
//! - `gender` is free text of 1–50 characters (labs each have their own vocabulary);
//! - `dob` is a past date, not before 1900-01-01;
//! - `address.state` is a two-letter US state, district or territory code (upper case);
//! - `medical_proxy` is the reference's `GuarantorDetails` (`{first_name, last_name, address,
//!   phone_number, email?, household_income?, household_size?}`) plus an optional
//!   `relationship`, under the same rules, or null;
//! - the address takes `zip_code` (this service's name) or `zip` (the reference's) and
//!   answers both; `country` defaults to `US`, the only country whose addresses (states, zip
//!   codes) the rules know.
//!
//! The stored (and echoed) document has every field, `null` where optional and absent.

use chrono::NaiveDate;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::wire::{
    Address, Ethnicity, GenderIdentity, MedicalProxy, Race, SexualOrientation, UserInfo,
};
use crate::loc;
use crate::validation::decode::member;
use crate::validation::read::at;
use crate::validation::{Checks, Invalid, Loc, decode};

/// The two-letter codes `state` accepts (states, DC and the territories).
pub const US_STATES: &[&str] = &[
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS",
    "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY",
    "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV",
    "WI", "WY", "DC", "PR", "VI", "GU", "AS", "MP",
];

/// Whether a string satisfies the documented name rule.
pub fn is_valid_name(s: &str) -> bool {
    let count = s.chars().count();
    (1..=50).contains(&count)
        && s.chars().any(char::is_alphabetic)
        && s.chars()
            .all(|c| c.is_alphabetic() || matches!(c, ' ' | '-' | '\'' | '.'))
}

/// Whether a string looks like an e-mail address we can deliver to.
pub fn is_valid_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    let labels: Vec<&str> = domain.split('.').collect();
    s.len() <= 254
        && !local.is_empty()
        && !s.chars().any(char::is_whitespace)
        && labels.len() >= 2
        && labels.iter().all(|l| !l.is_empty() && !l.contains('@'))
        && labels
            .last()
            .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(char::is_alphabetic))
}

/// Whether a string is a phone number under the documented rule.
pub fn is_valid_phone(s: &str) -> bool {
    let body = s.strip_prefix('+').unwrap_or(s);
    let digits = body.chars().filter(char::is_ascii_digit).count();
    (7..=15).contains(&digits)
        && body
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ' ' | '-' | '.' | '(' | ')'))
}

/// Whether a string is a US zip code (`12345` or `12345-6789`).
pub fn is_valid_zip(s: &str) -> bool {
    let b = s.as_bytes();
    let five = |x: &[u8]| x.len() == 5 && x.iter().all(u8::is_ascii_digit);
    match b.len() {
        5 => five(b),
        10 => five(&b[..5]) && b[5] == b'-' && b[6..].iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

fn non_empty(s: &str) -> bool {
    !s.trim().is_empty() && s.chars().count() <= 200
}

fn short_text(s: &str) -> bool {
    (1..=50).contains(&s.trim().chars().count())
}

/// The rules above as the OpenAPI document states them: patterns every match of which the
/// predicates accept (ASCII only, so narrower than the rules: a name with accents is accepted but
/// not promised).
pub struct Patterns {
    /// [`is_valid_name`].
    pub name: &'static str,
    /// [`is_valid_email`].
    pub email: &'static str,
    /// [`is_valid_phone`].
    pub phone: &'static str,
    /// 1 to 50 characters, not only white space.
    pub short_text: &'static str,
    /// [`is_valid_zip`].
    pub zip: &'static str,
}

/// See [`Patterns`].
pub const PATTERNS: Patterns = Patterns {
    name: "^[A-Za-z][A-Za-z .'-]{0,49}$",
    email: "^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\\.[A-Za-z0-9-]{1,63}){0,2}\\.[A-Za-z]{2,24}$",
    phone: "^\\+?[0-9]{7,15}$",
    short_text: "^[A-Za-z][A-Za-z ]{0,48}[A-Za-z]?$",
    zip: "^[0-9]{5}(-[0-9]{4})?$",
};

const EMAIL_RULE: &str = "a valid e-mail address";
const PHONE_RULE: &str = "a phone number of 7-15 digits";
const NAME_RULE: &str = "1-50 letters, spaces, hyphens, apostrophes or periods";
const ZIP_RULE: &str = "five digits, optionally followed by - and four digits";

/// The address as a request gives it: `zip_code` (this service's name) or `zip` (the
/// reference's), `country` optional.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct AddressRequest {
    /// Street and number, 1–200 characters.
    pub first_line: String,
    /// Apartment, suite, ..., at most 200 characters.
    #[serde(default)]
    pub second_line: Option<String>,
    /// Five digits, optionally `-` and four more. This or `zip` is required.
    #[serde(default)]
    pub zip_code: Option<String>,
    /// The reference's name for `zip_code`; when both are sent they must agree.
    #[serde(default)]
    pub zip: Option<String>,
    /// Two-letter US state code.
    pub state: String,
    /// City, 1–200 characters.
    pub city: String,
    /// `US` (the default; the only country the rules know).
    #[serde(default)]
    pub country: Option<String>,
}

/// The medical proxy as a request gives it (the reference's `GuarantorDetails` plus an
/// optional `relationship`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct MedicalProxyRequest {
    /// Given name.
    pub first_name: String,
    /// Family name.
    pub last_name: String,
    /// Postal address (required).
    #[serde(default)]
    pub address: Option<AddressRequest>,
    /// Relationship to the patient, 1–50 characters.
    #[serde(default)]
    pub relationship: Option<String>,
    /// Phone number.
    pub phone_number: String,
    /// E-mail address.
    #[serde(default)]
    pub email: Option<String>,
    /// Household income, 0 or more.
    #[serde(default)]
    pub household_income: Option<i64>,
    /// Household size, 0 or more.
    #[serde(default)]
    pub household_size: Option<i64>,
}

/// `PATCH /v2/user/{user_id}/info`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct UserInfoRequest {
    /// Given name.
    pub first_name: String,
    /// Family name.
    pub last_name: String,
    /// E-mail address.
    pub email: String,
    /// Phone number.
    pub phone_number: String,
    /// Gender, in the lab's vocabulary (1–50 characters).
    pub gender: String,
    /// Date of birth: past, not before 1900-01-01.
    #[serde(deserialize_with = "member::date")]
    pub dob: NaiveDate,
    /// Postal address (required).
    #[serde(default)]
    pub address: Option<AddressRequest>,
    /// Medical proxy.
    #[serde(default)]
    pub medical_proxy: Option<MedicalProxyRequest>,
    /// Race.
    #[serde(default)]
    pub race: Option<Race>,
    /// Ethnicity.
    #[serde(default)]
    pub ethnicity: Option<Ethnicity>,
    /// Sexual orientation.
    #[serde(default)]
    pub sexual_orientation: Option<SexualOrientation>,
    /// Gender identity.
    #[serde(default)]
    pub gender_identity: Option<GenderIdentity>,
}

/// Checks `value` of the member at `at` against its rule.
fn rule(checks: &mut Checks, at: Vec<Loc>, value: &str, ok: fn(&str) -> bool, rule: &str) {
    if !ok(value) {
        let key = match at.last() {
            Some(Loc::Key(k)) => k.clone(),
            _ => String::new(),
        };
        checks.refuse(at, value, format!("{key} must be {rule}"));
    }
}

/// The address, checked; when it is missing or refused, the violations say so and the answer
/// is not used.
fn address(checks: &mut Checks, base: &[Loc], a: Option<AddressRequest>) -> Address {
    let Some(a) = a else {
        checks.fail(at(base, "address"), "missing", "Field required");
        return Address::default();
    };
    let base = at(base, "address");
    rule(
        checks,
        at(&base, "first_line"),
        &a.first_line,
        non_empty,
        "1-200 characters",
    );
    if let Some(second) = &a.second_line {
        rule(
            checks,
            at(&base, "second_line"),
            second,
            |s| s.chars().count() <= 200,
            "at most 200 characters",
        );
    }
    rule(
        checks,
        at(&base, "state"),
        &a.state,
        |s| US_STATES.contains(&s),
        "a two-letter US state code such as \"CA\"",
    );
    rule(
        checks,
        at(&base, "city"),
        &a.city,
        non_empty,
        "1-200 characters",
    );
    // `zip_code` or `zip`: one is required, both must agree, and both are answered.
    match (&a.zip_code, &a.zip) {
        (None, None) => checks.fail(
            at(&base, "zip_code"),
            "missing",
            "Field required (zip_code or zip)",
        ),
        (Some(code), Some(zip)) if code != zip => checks.refuse(
            at(&base, "zip"),
            zip,
            "zip and zip_code differ; send one of them",
        ),
        (Some(zip), _) => rule(checks, at(&base, "zip_code"), zip, is_valid_zip, ZIP_RULE),
        (None, Some(zip)) => rule(checks, at(&base, "zip"), zip, is_valid_zip, ZIP_RULE),
    }
    if let Some(c) = &a.country
        && !c.eq_ignore_ascii_case("US")
    {
        checks.refuse(
            at(&base, "country"),
            c,
            "country must be \"US\": only US addresses are supported",
        );
    }
    let zip = a.zip_code.or(a.zip).unwrap_or_default();
    Address {
        first_line: a.first_line,
        second_line: a.second_line,
        zip_code: zip.clone(),
        zip,
        state: a.state,
        city: a.city,
        country: "US".into(),
    }
}

fn medical_proxy(checks: &mut Checks, p: MedicalProxyRequest) -> MedicalProxy {
    let base = loc!["medical_proxy"];
    rule(
        checks,
        at(&base, "first_name"),
        &p.first_name,
        is_valid_name,
        NAME_RULE,
    );
    rule(
        checks,
        at(&base, "last_name"),
        &p.last_name,
        is_valid_name,
        NAME_RULE,
    );
    if let Some(relationship) = &p.relationship {
        rule(
            checks,
            at(&base, "relationship"),
            relationship,
            short_text,
            "1-50 characters",
        );
    }
    rule(
        checks,
        at(&base, "phone_number"),
        &p.phone_number,
        is_valid_phone,
        PHONE_RULE,
    );
    if let Some(email) = &p.email {
        rule(
            checks,
            at(&base, "email"),
            email,
            is_valid_email,
            EMAIL_RULE,
        );
    }
    let mut count = |key: &str, n: Option<i64>| {
        let n = n?;
        let counted = u64::try_from(n).ok();
        if counted.is_none() {
            checks.refuse(
                at(&base, key),
                n,
                format!("{key} must be an integer, 0 or more"),
            );
        }
        counted
    };
    let household_income = count("household_income", p.household_income);
    let household_size = count("household_size", p.household_size);
    MedicalProxy {
        first_name: p.first_name,
        last_name: p.last_name,
        address: Some(address(checks, &base, p.address)),
        phone_number: Some(p.phone_number),
        email: p.email,
        relationship: p.relationship,
        household_income,
        household_size,
    }
}

/// Validates a user-info body; answers the details to store and echo.
pub fn parse_user_info(body: &Value, today: NaiveDate) -> Result<UserInfo, Invalid> {
    let (req, mut checks) = decode::<UserInfoRequest>(body, loc!["body"])?;
    let c = &mut checks;
    rule(
        c,
        loc!["first_name"],
        &req.first_name,
        is_valid_name,
        NAME_RULE,
    );
    rule(
        c,
        loc!["last_name"],
        &req.last_name,
        is_valid_name,
        NAME_RULE,
    );
    rule(c, loc!["email"], &req.email, is_valid_email, EMAIL_RULE);
    rule(
        c,
        loc!["phone_number"],
        &req.phone_number,
        is_valid_phone,
        PHONE_RULE,
    );
    rule(
        c,
        loc!["gender"],
        &req.gender,
        short_text,
        "1-50 characters",
    );
    let earliest = NaiveDate::from_ymd_opt(1900, 1, 1).unwrap_or(NaiveDate::MIN);
    if req.dob >= today || req.dob < earliest {
        c.refuse(
            loc!["dob"],
            req.dob,
            "dob must be a past date, not before 1900-01-01",
        );
    }
    let info = UserInfo {
        address: address(c, &[], req.address),
        medical_proxy: req.medical_proxy.map(|p| medical_proxy(c, p)),
        first_name: req.first_name,
        last_name: req.last_name,
        email: req.email,
        phone_number: req.phone_number,
        gender: req.gender,
        dob: req.dob,
        race: req.race,
        ethnicity: req.ethnicity,
        sexual_orientation: req.sexual_orientation,
        gender_identity: req.gender_identity,
    };
    checks.finish_with(info)
}

/// Stored details as the typed resource. Details stored before the address carried `zip` and
/// `country` get them here (`zip` = `zip_code`, `country` = `US`).
pub fn typed(mut stored: Value) -> Result<super::wire::UserInfo, serde_json::Error> {
    fn complete(address: Option<&mut Value>) {
        if let Some(Value::Object(a)) = address {
            if !a.contains_key("zip")
                && let Some(zip) = a.get("zip_code").cloned()
            {
                a.insert("zip".into(), zip);
            }
            a.entry("country").or_insert_with(|| Value::from("US"));
        }
    }
    complete(stored.get_mut("address"));
    complete(
        stored
            .get_mut("medical_proxy")
            .and_then(|p| p.get_mut("address")),
    );
    serde_json::from_value(stored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: &Value, today: NaiveDate) -> Result<Value, Invalid> {
        parse_user_info(body, today).map(|info| serde_json::to_value(info).unwrap())
    }

    fn valid() -> Value {
        json!({
            "first_name": "Anne-Marie", "last_name": "O'Neil Jr.", "email": "anne@example.com",
            "phone_number": "+1 415 555 0100", "gender": "female", "dob": "1990-04-01",
            "address": {"first_line": "1 Main St", "second_line": null, "zip_code": "94107-1234",
                        "state": "CA", "city": "San Francisco"},
            "race": "asian"
        })
    }

    #[test]
    fn a_valid_body_is_echoed_with_every_field() {
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        let out = parse(&valid(), today).unwrap();
        assert_eq!(out["first_name"], "Anne-Marie");
        assert_eq!(out["medical_proxy"], Value::Null);
        assert_eq!(out["ethnicity"], Value::Null);
        assert_eq!(out["address"]["zip_code"], "94107-1234");
    }

    #[test]
    fn each_rule_rejects_at_its_location() {
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        let cases: &[(&str, Value, &str)] = &[
            ("/first_name", json!("R2-D2"), "first_name"),
            ("/email", json!("anne@example"), "email"),
            ("/phone_number", json!("12"), "phone_number"),
            ("/dob", json!("2030-01-01"), "dob"),
            ("/dob", json!("1990-02-30"), "dob"),
            ("/address/state", json!("California"), "state"),
            ("/address/zip_code", json!("9410"), "zip_code"),
            ("/race", json!("martian"), "race"),
        ];
        for (pointer, bad, field) in cases {
            let mut body = valid();
            *body.pointer_mut(pointer).unwrap() = bad.clone();
            let err = parse(&body, today).unwrap_err();
            assert_eq!(err.0.len(), 1, "{pointer}: {err:?}");
            let last = serde_json::to_value(&err.0[0].loc).unwrap();
            assert_eq!(last.as_array().unwrap().last().unwrap(), field, "{pointer}");
        }
        let mut body = valid();
        body.as_object_mut().unwrap().remove("address");
        assert_eq!(parse(&body, today).unwrap_err().0[0].kind, "missing");
    }

    #[test]
    fn the_address_takes_zip_or_zip_code_answers_both_and_defaults_the_country() {
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        let mut body = valid();
        body["address"] = json!({"first_line": "1 Main St", "zip": "94107", "state": "CA",
            "city": "San Francisco"});
        let out = parse(&body, today).unwrap();
        assert_eq!(out["address"]["zip"], "94107");
        assert_eq!(out["address"]["zip_code"], "94107");
        assert_eq!(out["address"]["country"], "US");
        let typed = typed(out).unwrap();
        assert_eq!(typed.address.zip_code, "94107");

        body["address"]["zip_code"] = json!("10001");
        let err = parse(&body, today).unwrap_err();
        assert_eq!(
            serde_json::to_value(&err.0[0].loc).unwrap(),
            json!(["body", "address", "zip"])
        );
        body["address"]["zip_code"] = json!("94107");
        body["address"]["country"] = json!("DE");
        let err = parse(&body, today).unwrap_err();
        assert!(err.0[0].msg.contains("US"), "{err:?}");
    }

    #[test]
    fn details_stored_before_zip_and_country_read_with_them() {
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        let mut stored = parse(&valid(), today).unwrap();
        let address = stored["address"].as_object_mut().unwrap();
        address.remove("zip");
        address.remove("country");
        let typed = typed(stored).unwrap();
        assert_eq!(typed.address.zip, "94107-1234");
        assert_eq!(typed.address.country, "US");
    }

    #[test]
    fn the_medical_proxy_is_the_reference_guarantor() {
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        let mut body = valid();
        body["medical_proxy"] = json!({"first_name": "Bob", "last_name": "Smith",
            "phone_number": "+1 415 555 0101", "household_size": 3,
            "address": {"first_line": "2 Main St", "zip": "94107", "state": "CA",
                        "city": "San Francisco", "country": "US"}});
        let out = parse(&body, today).unwrap();
        assert_eq!(out["medical_proxy"]["address"]["zip_code"], "94107");
        assert_eq!(out["medical_proxy"]["household_size"], 3);
        body["medical_proxy"]["household_income"] = json!(-1);
        body["medical_proxy"]
            .as_object_mut()
            .unwrap()
            .remove("address");
        let err = parse(&body, today).unwrap_err();
        assert_eq!(err.0.len(), 2, "{err:?}");
    }

    #[test]
    fn what_the_documented_patterns_admit_the_rules_accept() {
        // Examples at the edges of each pattern.
        for name in ["A", "Mary-Jane O'Neil.", &"a".repeat(50)] {
            assert!(is_valid_name(name), "{name}");
        }
        for email in ["a@b.co", "x.y+z%w@mail-1.example.org"] {
            assert!(is_valid_email(email), "{email}");
        }
        for phone in ["1234567", "+123456789012345"] {
            assert!(is_valid_phone(phone), "{phone}");
        }
        for text in ["A", "ab", &format!("a{}b", " ".repeat(48))] {
            assert!(short_text(text), "{text:?}");
        }
        for zip in ["12345", "12345-6789"] {
            assert!(is_valid_zip(zip), "{zip}");
        }
    }
}
