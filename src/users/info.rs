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
use serde_json::{Map, Value};

use crate::validation::{Invalid, Loc, ObjectReader};

const US_STATES: &[&str] = &[
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS",
    "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY",
    "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV",
    "WI", "WY", "DC", "PR", "VI", "GU", "AS", "MP",
];

const RACE: &[&str] = &[
    "african_american_or_black",
    "asian",
    "indigenous_native_american_alaska_native",
    "other",
    "pacific_islander_or_hawaiian",
    "white_caucasian",
];
const ETHNICITY: &[&str] = &["hispanic", "non_hispanic", "ashkenazi_jewish", "other"];
const SEXUAL_ORIENTATION: &[&str] = &[
    "lesbian_gay_or_homosexual",
    "heterosexual_or_straight",
    "bisexual",
    "dont_know",
    "other",
];
const GENDER_IDENTITY: &[&str] = &[
    "male",
    "female",
    "female_to_male_ftm_transgender_male_trans_man",
    "male_to_female_mtf_transgender_female_trans_woman",
    "genderqueer",
    "other",
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

/// One string member's rule: its key, whether it is required, the check and how to describe a
/// value that fails it.
struct Rule(&'static str, bool, fn(&str) -> bool, &'static str);

/// Reads every member a rule names into `out` (null when absent and optional), recording a
/// violation for each value that fails its check.
fn apply(r: &mut ObjectReader<'_>, out: &mut Map<String, Value>, rules: &[Rule]) {
    for Rule(key, required, check, rule) in rules {
        match r.string(key, *required) {
            Some(v) if check(v) => {
                out.insert((*key).into(), Value::from(v));
            }
            Some(_) => r.fail(key, "value_error", format!("{key} must be {rule}")),
            None => {
                out.insert((*key).into(), Value::Null);
            }
        }
    }
}

fn non_empty(s: &str) -> bool {
    !s.trim().is_empty() && s.chars().count() <= 200
}

fn short_text(s: &str) -> bool {
    (1..=50).contains(&s.trim().chars().count())
}

const EMAIL_RULE: &str = "a valid e-mail address";
const PHONE_RULE: &str = "a phone number of 7-15 digits";

fn enumerated(r: &mut ObjectReader<'_>, out: &mut Map<String, Value>, key: &str, allowed: &[&str]) {
    match r.string(key, false) {
        Some(v) if allowed.contains(&v) => {
            out.insert(key.into(), Value::from(v));
        }
        Some(v) => r.fail(
            key,
            "enum",
            format!(
                "unknown {key} {v:?}; expected one of: {}",
                allowed.join(", ")
            ),
        ),
        None => {
            out.insert(key.into(), Value::Null);
        }
    }
}

const NAME_RULE: &str = "1-50 letters, spaces, hyphens, apostrophes or periods";

fn address(
    value: &Value,
    loc: Vec<Loc>,
    violations: &mut Vec<crate::validation::Violation>,
) -> Value {
    let mut r = ObjectReader::new(value, loc);
    r.deny_unknown(&[
        "first_line",
        "second_line",
        "zip_code",
        "zip",
        "state",
        "city",
        "country",
    ]);
    let mut out = Map::new();
    apply(
        &mut r,
        &mut out,
        &[
            Rule("first_line", true, non_empty, "1-200 characters"),
            Rule(
                "second_line",
                false,
                |s| s.chars().count() <= 200,
                "at most 200 characters",
            ),
            Rule(
                "state",
                true,
                |s| US_STATES.contains(&s),
                "a two-letter US state code such as \"CA\"",
            ),
            Rule("city", true, non_empty, "1-200 characters"),
        ],
    );
    // `zip_code` (this service's name) or `zip` (the reference's): one is required, both must
    // agree, and both are answered.
    let zip = match (
        r.raw("zip_code").is_some_and(|v| !v.is_null()),
        r.raw("zip").is_some_and(|v| !v.is_null()),
    ) {
        (true, _) => r.string("zip_code", true).map(|z| ("zip_code", z)),
        (false, true) => r.string("zip", true).map(|z| ("zip", z)),
        (false, false) => {
            r.string("zip_code", true);
            None
        }
    };
    if let Some((key, zip)) = zip {
        let other = if key == "zip_code" { "zip" } else { "zip_code" };
        if !is_valid_zip(zip) {
            r.fail(
                key,
                "value_error",
                format!("{key} must be five digits, optionally followed by - and four digits"),
            );
        } else if let Some(Value::String(second)) = r.raw(other)
            && second != zip
        {
            r.fail(
                other,
                "value_error",
                "zip and zip_code differ; send one of them",
            );
        } else {
            out.insert("zip_code".into(), Value::from(zip));
            out.insert("zip".into(), Value::from(zip));
        }
    }
    match r.string("country", false) {
        None => {
            out.insert("country".into(), Value::from("US"));
        }
        Some(c) if c.eq_ignore_ascii_case("US") => {
            out.insert("country".into(), Value::from("US"));
        }
        Some(_) => r.fail(
            "country",
            "value_error",
            "country must be \"US\": only US addresses are supported",
        ),
    }
    violations.append(&mut r.violations);
    Value::Object(out)
}

/// The medical proxy (the reference's `GuarantorDetails`): names, phone number and address as
/// for the patient, optional `email`, `household_income` and `household_size` (integers, 0 or
/// more) and this service's optional `relationship`.
fn medical_proxy(
    value: &Value,
    loc: Vec<Loc>,
    violations: &mut Vec<crate::validation::Violation>,
) -> Value {
    let mut r = ObjectReader::new(value, loc);
    r.deny_unknown(&[
        "first_name",
        "last_name",
        "address",
        "relationship",
        "phone_number",
        "email",
        "household_income",
        "household_size",
    ]);
    let mut out = Map::new();
    apply(
        &mut r,
        &mut out,
        &[
            Rule("first_name", true, is_valid_name, NAME_RULE),
            Rule("last_name", true, is_valid_name, NAME_RULE),
            Rule("relationship", false, short_text, "1-50 characters"),
            Rule("phone_number", true, is_valid_phone, PHONE_RULE),
            Rule("email", false, is_valid_email, EMAIL_RULE),
        ],
    );
    for key in ["household_income", "household_size"] {
        match r.raw(key) {
            None | Some(Value::Null) => {
                out.insert(key.into(), Value::Null);
            }
            Some(v) if v.as_u64().is_some() => {
                out.insert(key.into(), v.clone());
            }
            Some(_) => r.fail(
                key,
                "value_error",
                format!("{key} must be an integer, 0 or more"),
            ),
        }
    }
    let mut nested = Vec::new();
    match r.raw("address") {
        None | Some(Value::Null) => r.fail("address", "missing", "Field required"),
        Some(v) => {
            out.insert(
                "address".into(),
                address(v, r.loc_of("address"), &mut nested),
            );
        }
    }
    r.violations.append(&mut nested);
    violations.append(&mut r.violations);
    Value::Object(out)
}

/// Validates a user-info body; answers the document to store and echo.
pub fn parse_user_info(body: &Value, today: NaiveDate) -> Result<Value, Invalid> {
    let mut r = ObjectReader::new(body, vec![Loc::from("body")]);
    r.deny_unknown(&[
        "first_name",
        "last_name",
        "email",
        "phone_number",
        "gender",
        "dob",
        "address",
        "medical_proxy",
        "race",
        "ethnicity",
        "sexual_orientation",
        "gender_identity",
    ]);
    let mut out = Map::new();
    apply(
        &mut r,
        &mut out,
        &[
            Rule("first_name", true, is_valid_name, NAME_RULE),
            Rule("last_name", true, is_valid_name, NAME_RULE),
            Rule("email", true, is_valid_email, EMAIL_RULE),
            Rule("phone_number", true, is_valid_phone, PHONE_RULE),
            Rule("gender", true, short_text, "1-50 characters"),
        ],
    );
    match r.date("dob", true) {
        Some(d) if d < today && d >= NaiveDate::from_ymd_opt(1900, 1, 1).unwrap_or(d) => {
            out.insert("dob".into(), Value::from(d.to_string()));
        }
        Some(_) => r.fail(
            "dob",
            "value_error",
            "dob must be a past date, not before 1900-01-01",
        ),
        None => {}
    }
    let mut nested = Vec::new();
    match r.raw("address") {
        None | Some(Value::Null) => r.fail("address", "missing", "Field required"),
        Some(v) => {
            out.insert(
                "address".into(),
                address(v, r.loc_of("address"), &mut nested),
            );
        }
    }
    match r.raw("medical_proxy") {
        None | Some(Value::Null) => {
            out.insert("medical_proxy".into(), Value::Null);
        }
        Some(v) => {
            out.insert(
                "medical_proxy".into(),
                medical_proxy(v, r.loc_of("medical_proxy"), &mut nested),
            );
        }
    }
    enumerated(&mut r, &mut out, "race", RACE);
    enumerated(&mut r, &mut out, "ethnicity", ETHNICITY);
    enumerated(&mut r, &mut out, "sexual_orientation", SEXUAL_ORIENTATION);
    enumerated(&mut r, &mut out, "gender_identity", GENDER_IDENTITY);
    r.violations.append(&mut nested);
    r.finish().map(|()| Value::Object(out))
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
        let out = parse_user_info(&valid(), today).unwrap();
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
            let err = parse_user_info(&body, today).unwrap_err();
            assert_eq!(err.0.len(), 1, "{pointer}: {err:?}");
            let last = serde_json::to_value(&err.0[0].loc).unwrap();
            assert_eq!(last.as_array().unwrap().last().unwrap(), field, "{pointer}");
        }
        let mut body = valid();
        body.as_object_mut().unwrap().remove("address");
        assert_eq!(
            parse_user_info(&body, today).unwrap_err().0[0].kind,
            "missing"
        );
    }

    #[test]
    fn the_address_takes_zip_or_zip_code_answers_both_and_defaults_the_country() {
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        let mut body = valid();
        body["address"] = json!({"first_line": "1 Main St", "zip": "94107", "state": "CA",
            "city": "San Francisco"});
        let out = parse_user_info(&body, today).unwrap();
        assert_eq!(out["address"]["zip"], "94107");
        assert_eq!(out["address"]["zip_code"], "94107");
        assert_eq!(out["address"]["country"], "US");
        let typed = typed(out).unwrap();
        assert_eq!(typed.address.zip_code, "94107");

        body["address"]["zip_code"] = json!("10001");
        let err = parse_user_info(&body, today).unwrap_err();
        assert_eq!(
            serde_json::to_value(&err.0[0].loc).unwrap(),
            json!(["body", "address", "zip"])
        );
        body["address"]["zip_code"] = json!("94107");
        body["address"]["country"] = json!("DE");
        let err = parse_user_info(&body, today).unwrap_err();
        assert!(err.0[0].msg.contains("US"), "{err:?}");
    }

    #[test]
    fn details_stored_before_zip_and_country_read_with_them() {
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        let mut stored = parse_user_info(&valid(), today).unwrap();
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
        let out = parse_user_info(&body, today).unwrap();
        assert_eq!(out["medical_proxy"]["address"]["zip_code"], "94107");
        assert_eq!(out["medical_proxy"]["household_size"], 3);
        body["medical_proxy"]["household_income"] = json!(-1);
        body["medical_proxy"]
            .as_object_mut()
            .unwrap()
            .remove("address");
        let err = parse_user_info(&body, today).unwrap_err();
        assert_eq!(err.0.len(), 2, "{err:?}");
    }
}
