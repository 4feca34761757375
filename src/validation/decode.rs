//! Typed request bodies: a serde model decoded from a JSON value, its mistakes answered as the
//! 422 of `rest-conventions.md`, each at the member's own location.
//!
//! A body is read in two steps, so that a client sees as many of its mistakes at once as can
//! be told apart:
//! 1. **Structure.** serde decodes the model. Every member the model does not know is
//!    collected as `extra_forbidden` at its own location, and decoding goes on (the members are
//!    seen through `serde_ignored`, so no model needs `deny_unknown_fields`). A member of the
//!    wrong type, a missing one, or a value its type refuses (an unknown enum variant, a date
//!    that is not one) stops decoding there: serde cannot go on past it.
//! 2. **Rules.** The handler's own checks over the typed model, collected in the [`Checks`]
//!    [`decode`] hands back with the unknown members, and all reported together.
//!
//! serde reads a struct from an array by position as well as from an object; a body that is not
//! an object is refused before decoding, members nested in it are not checked for it.
//!
//! A violation's `input` echoes the offending member when there is one, read from the body at
//! the violation's location.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Invalid, Loc, Violation};

/// The violations found in one body so far, located under the body's own location.
#[derive(Debug)]
#[must_use = "a body's checks reject it only when finished"]
pub struct Checks {
    loc: Vec<Loc>,
    violations: Vec<Violation>,
}

impl Checks {
    /// No violations yet, for a body at `loc` (`["body"]`, or a recipe's `["body",
    /// "connections", 3]`).
    pub fn new(loc: Vec<Loc>) -> Checks {
        Checks {
            loc,
            violations: Vec::new(),
        }
    }

    /// Records a violation at `member`, a location relative to the body (`loc!["address",
    /// "zip"]`).
    pub fn fail(&mut self, member: Vec<Loc>, kind: &'static str, msg: impl Into<String>) {
        let loc = self.loc.iter().cloned().chain(member).collect();
        self.violations.push(Violation::new(loc, kind, msg));
    }

    /// Records a `value_error` at `member` with the offending value.
    pub fn refuse(&mut self, member: Vec<Loc>, input: impl Serialize, msg: impl Into<String>) {
        self.fail(member, "value_error", msg);
        if let Some(last) = self.violations.last_mut() {
            last.input = serde_json::to_value(input).ok();
        }
    }

    /// Whether nothing was found.
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    /// Takes in another body's violations (a list item read on its own).
    pub fn absorb(&mut self, other: Checks) {
        self.violations.extend(other.violations);
    }

    /// The violations, if any, as one rejection.
    pub fn finish(self) -> Result<(), Invalid> {
        if self.violations.is_empty() {
            Ok(())
        } else {
            Err(Invalid(self.violations))
        }
    }

    /// `value` when nothing was found, else the rejection.
    pub fn finish_with<T>(self, value: T) -> Result<T, Invalid> {
        self.finish().map(|()| value)
    }
}

/// Decodes `body`, located at `loc`, into `T`. Answers the model with the [`Checks`] holding
/// its unknown members (so the caller's rules add to them), or the rejection when the body's
/// structure does not decode.
pub fn decode<T: DeserializeOwned>(body: &Value, loc: Vec<Loc>) -> Result<(T, Checks), Invalid> {
    // Every request body is an object; serde would read a struct from an array by position.
    if !body.is_object() {
        return Err(Invalid(vec![
            Violation::new(loc, "type_error", "Input should be a JSON object")
                .with_input(body.clone()),
        ]));
    }
    let normalised = integral_numbers(body);
    let body = normalised.as_ref().unwrap_or(body);
    let mut unknown = Vec::new();
    let mut note = |path: serde_ignored::Path<'_>| {
        let mut at = Vec::new();
        member_path(&path, &mut at);
        unknown.push(at);
    };
    let decoded =
        serde_path_to_error::deserialize::<_, T>(serde_ignored::Deserializer::new(body, &mut note));
    let mut checks = Checks::new(loc);
    for member in unknown {
        let input = find(body, &member).cloned();
        let name = match member.last() {
            Some(Loc::Key(key)) => key.clone(),
            _ => String::new(),
        };
        checks.fail(
            member,
            "extra_forbidden",
            format!("Extra inputs are not permitted: unknown member {name:?}"),
        );
        if let Some(last) = checks.violations.last_mut() {
            last.input = input;
        }
    }
    match decoded {
        Ok(value) => Ok((value, checks)),
        Err(e) => {
            checks.violations.push(structural(body, &checks.loc, &e));
            Err(Invalid(checks.violations))
        }
    }
}

/// `body` with every number written with a zero fraction (`8.0`) that fits an `i64` read as
/// that integer, or `None` when it has none. JSON Schema counts `8.0` as an integer, and so do
/// clients that write every number as a float (JavaScript, pandas): a member typed as an
/// integer accepts it. (A member typed as a float reads the integer just the same.)
fn integral_numbers(body: &Value) -> Option<Value> {
    fn integral(n: &serde_json::Number) -> Option<i64> {
        let f = n.as_f64().filter(|_| n.is_f64())?;
        // The range an `i64` holds exactly as an `f64` at both ends.
        (f.fract() == 0.0 && (-9.2e18..=9.2e18).contains(&f)).then_some(f as i64)
    }
    fn any(value: &Value) -> bool {
        match value {
            Value::Number(n) => integral(n).is_some(),
            Value::Array(items) => items.iter().any(any),
            Value::Object(members) => members.values().any(any),
            _ => false,
        }
    }
    fn rewrite(value: &mut Value) {
        match value {
            Value::Number(n) => {
                if let Some(i) = integral(n) {
                    *value = Value::from(i);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(rewrite),
            Value::Object(members) => members.values_mut().for_each(rewrite),
            _ => {}
        }
    }
    any(body).then(|| {
        let mut copy = body.clone();
        rewrite(&mut copy);
        copy
    })
}

/// Decodes `body` at `loc` into `T`, with no rules of the caller's: unknown members and
/// structure both reject it.
pub fn decode_strict<T: DeserializeOwned>(body: &Value, loc: Vec<Loc>) -> Result<T, Invalid> {
    let (value, checks) = decode(body, loc)?;
    checks.finish_with(value)
}

/// Decodes `body` at `loc` into `T`, ignoring members the model does not know (unless the
/// model itself refuses them with `deny_unknown_fields`): for bodies a third party sends
/// (a provider's change notification, which may grow members) and for models that choose
/// member by member.
pub fn decode_lenient<T: DeserializeOwned>(body: &Value, loc: Vec<Loc>) -> Result<T, Invalid> {
    let (value, _unknown_members_ignored) = decode(body, loc)?;
    Ok(value)
}

/// The violation of a body whose structure does not decode, at the failing member.
fn structural(
    body: &Value,
    base: &[Loc],
    e: &serde_path_to_error::Error<serde_json::Error>,
) -> Violation {
    let mut member = Vec::new();
    for segment in e.path().iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => member.push(Loc::Index(*index)),
            serde_path_to_error::Segment::Map { key } => member.push(Loc::Key(key.clone())),
            serde_path_to_error::Segment::Enum { variant } => {
                member.push(Loc::Key(variant.clone()))
            }
            serde_path_to_error::Segment::Unknown => {}
        }
    }
    let msg = e.inner().to_string();
    // serde names a missing member at its parent: point at the member itself.
    let (kind, msg) = if let Some(rest) = msg.strip_prefix("missing field `") {
        if let Some(field) = rest.split('`').next() {
            member.push(Loc::Key(field.to_owned()));
        }
        ("missing", "Field required".to_owned())
    } else if msg.starts_with("invalid type: null") {
        (
            "missing",
            "Field required (null is not a value for it)".to_owned(),
        )
    } else if msg.starts_with("unknown field") {
        ("extra_forbidden", msg)
    } else if msg.starts_with("unknown variant") {
        ("enum", msg)
    } else if let Some(rest) = msg.strip_prefix("invalid type: ") {
        ("type_error", expectation(rest))
    } else if let Some(rest) = msg.strip_prefix("invalid value: ") {
        ("value_error", expectation(rest))
    } else if let Some(rest) = msg.strip_prefix("invalid length ") {
        ("value_error", expectation(rest))
    } else {
        ("value_error", msg)
    };
    let input = find(body, &member).filter(|v| !v.is_null()).cloned();
    let loc = base.iter().cloned().chain(member).collect();
    Violation {
        input,
        ..Violation::new(loc, kind, msg)
    }
}

/// serde's "<what was found>, expected <what>" as "Input should be <what> (got <kind>)": the
/// found value itself is left out (the input is echoed separately, where it may be), and
/// Rust's names for the expectation become JSON's.
fn expectation(rest: &str) -> String {
    let Some((found, expected)) = rest.rsplit_once(", expected ") else {
        return "Input is not valid here".to_owned();
    };
    let found = found.split([' ', '`']).next().unwrap_or("value");
    let found = match found {
        "map" => "an object",
        "sequence" => "a list",
        "string" => "a string",
        "integer" => "a number",
        "floating" => "a number",
        "boolean" => "a boolean",
        _ => "another type",
    };
    let expected = match expected {
        e if e.starts_with("struct ") || e == "a map" => "an object",
        "a sequence" => "a list",
        "a borrowed string" => "a string",
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => {
            "a whole number in range"
        }
        "f32" | "f64" => "a number",
        e => e,
    };
    format!("Input should be {expected} (got {found})")
}

/// The location of an ignored member, from the body's root.
fn member_path(path: &serde_ignored::Path<'_>, out: &mut Vec<Loc>) {
    use serde_ignored::Path;
    match path {
        Path::Root => {}
        Path::Seq { parent, index } => {
            member_path(parent, out);
            out.push(Loc::Index(*index));
        }
        Path::Map { parent, key } => {
            member_path(parent, out);
            out.push(Loc::Key(key.clone()));
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => member_path(parent, out),
    }
}

/// The value at `member` in `body`, if there is one.
fn find<'a>(body: &'a Value, member: &[Loc]) -> Option<&'a Value> {
    member.iter().try_fold(body, |v, seg| match seg {
        Loc::Key(k) => v.get(k),
        Loc::Index(i) => v.get(i),
    })
}

/// serde helpers for request members, for `#[serde(deserialize_with = "...")]`.
pub mod member {
    use chrono::{DateTime, NaiveDate, Utc};
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer};

    fn parse_day<E: serde::de::Error>(s: &str) -> Result<NaiveDate, E> {
        NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .filter(|_| s.len() == 10)
            .ok_or_else(|| {
                E::custom(format!(
                    "Input should be a valid date in the format YYYY-MM-DD, got {s:?}"
                ))
            })
    }

    /// A `YYYY-MM-DD` calendar date that exists (`2025-02-30` is refused, by name).
    pub fn date<'de, D: Deserializer<'de>>(d: D) -> Result<NaiveDate, D::Error> {
        parse_day(&String::deserialize(d)?)
    }

    /// An optional [`date`]: absent or `null` is `None` (with `#[serde(default)]`).
    pub fn optional_date<'de, D: Deserializer<'de>>(d: D) -> Result<Option<NaiveDate>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| parse_day(&s))
            .transpose()
    }

    /// A member of a partial update (with `#[serde(default)]`): absent is `None` (left alone),
    /// `null` is `Some(None)` (cleared), a value is `Some(Some(value))`.
    pub fn patched<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }

    /// A [`patched`] [`date`].
    pub fn patched_date<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<NaiveDate>>, D::Error> {
        optional_date(d).map(Some)
    }

    fn parse_instant<E: serde::de::Error>(s: &str) -> Result<DateTime<Utc>, E> {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| {
                E::custom(format!(
                    "Input should be an ISO 8601 date-time with offset (e.g. 2025-01-31T23:00:00+01:00), got {s:?}"
                ))
            })
    }

    /// An ISO 8601 date-time with an offset (`Z` or `±HH:MM`), in UTC.
    pub fn instant<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        parse_instant(&String::deserialize(d)?)
    }

    /// An optional [`instant`]: absent or `null` is `None` (with `#[serde(default)]`).
    pub fn optional_instant<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| parse_instant(&s))
            .transpose()
    }

    /// Refuses anything but a whole number of at least zero, in words.
    pub fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        match Option::<serde_json::Value>::deserialize(d)? {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                D::Error::custom(format!("Input should be an integer, 0 or more; got {v}"))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loc;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Address {
        zip: String,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Body {
        name: String,
        size: Option<u32>,
        kind: Option<Kind>,
        addresses: Vec<Address>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Small,
        Large,
    }

    fn kinds_and_locs(err: &Invalid) -> Vec<(&'static str, String)> {
        err.0
            .iter()
            .map(|v| (v.kind, serde_json::to_string(&v.loc).unwrap_or_default()))
            .collect()
    }

    #[test]
    fn every_unknown_member_is_reported_at_its_location_and_rules_add_to_them() {
        let body = json!({"name": "a", "colour": 1, "addresses": [{"zip": "1", "street": "x"}]});
        let (decoded, mut checks) = decode::<Body>(&body, loc!["body"]).unwrap();
        assert_eq!(decoded.addresses, vec![Address { zip: "1".into() }]);
        checks.refuse(loc!["addresses", 0, "zip"], "1", "zip must be five digits");
        let err = checks.finish().unwrap_err();
        assert_eq!(
            kinds_and_locs(&err),
            vec![
                ("extra_forbidden", r#"["body","colour"]"#.to_owned()),
                (
                    "extra_forbidden",
                    r#"["body","addresses",0,"street"]"#.to_owned()
                ),
                ("value_error", r#"["body","addresses",0,"zip"]"#.to_owned()),
            ]
        );
        assert_eq!(err.0[0].input, Some(json!(1)));
        assert_eq!(err.0[2].input, Some(json!("1")));
    }

    #[test]
    fn a_structural_mistake_is_located_at_the_member_and_named() {
        let cases = [
            (
                json!({"addresses": []}),
                "missing",
                r#"["body","name"]"#,
                None,
            ),
            (
                json!({"name": null, "addresses": []}),
                "missing",
                r#"["body","name"]"#,
                None,
            ),
            (
                json!({"name": "a", "size": "big", "addresses": []}),
                "type_error",
                r#"["body","size"]"#,
                Some(json!("big")),
            ),
            (
                json!({"name": "a", "kind": "huge", "addresses": []}),
                "enum",
                r#"["body","kind"]"#,
                Some(json!("huge")),
            ),
            (
                json!({"name": "a", "addresses": [{"zip": 5}]}),
                "type_error",
                r#"["body","addresses",0,"zip"]"#,
                Some(json!(5)),
            ),
            (json!([1]), "type_error", r#"["body"]"#, Some(json!([1]))),
        ];
        for (body, kind, loc, input) in cases {
            let err = decode::<Body>(&body, loc!["body"]).unwrap_err();
            let got = err.0.last().unwrap();
            assert_eq!(
                (got.kind, serde_json::to_string(&got.loc).unwrap()),
                (kind, loc.to_owned()),
                "{body}: {}",
                got.msg
            );
            assert_eq!(got.input, input, "{body}");
        }
    }

    #[test]
    fn a_message_names_the_expected_type_but_never_repeats_the_value() {
        let body = json!({"name": "a", "addresses": "secret-token-value"});
        let err = decode::<Body>(&body, loc!["body"]).unwrap_err();
        let msg = &err.0[0].msg;
        assert_eq!(msg, "Input should be a list (got a string)");
        let body = json!({"name": "a", "size": -4, "addresses": []});
        let err = decode::<Body>(&body, loc!["body"]).unwrap_err();
        assert!(!err.0[0].msg.contains("-4"), "{}", err.0[0].msg);
        assert!(err.0[0].msg.contains("whole number"), "{}", err.0[0].msg);
    }

    #[test]
    fn a_clean_body_decodes() {
        let body = json!({"name": "a", "size": 3, "kind": "large", "addresses": []});
        let got = decode_strict::<Body>(&body, loc!["body"]).unwrap();
        assert_eq!(got.kind, Some(Kind::Large));
        assert_eq!(got.size, Some(3));
    }

    #[test]
    fn a_whole_number_written_as_a_float_reads_as_an_integer() {
        #[derive(serde::Deserialize)]
        struct Counts {
            size: i64,
            ratio: f64,
        }
        let body = serde_json::json!({"size": 8714994866.0, "ratio": 2.0});
        let (counts, checks) = decode::<Counts>(&body, crate::loc!["body"]).unwrap();
        assert_eq!((counts.size, counts.ratio), (8_714_994_866, 2.0));
        assert!(checks.violations.is_empty());
        let fraction = serde_json::json!({"size": 8.5, "ratio": 1});
        assert!(decode::<Counts>(&fraction, crate::loc!["body"]).is_err());
    }
}
