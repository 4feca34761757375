//! The one hand-written JSON reader, kept where it earns its place: the query language (whose
//! expressions are recognised by key, and every violation of which is located) and the push API
//! (whose bodies accept both wire names of a member, read `null` as absent, and are read in one
//! pass at ingest speed). Every other request body is a typed model decoded by serde
//! ([`super::decode`](mod@super::decode)).
//!
//! Each read fails with a [`Violation`] located at the member. A reader that reports every
//! problem at once collects them with `Collect::keep`.
//!
//! `null` reads as absent in the member reads, so a getter's output (which renders absent values
//! as `null`) can be pushed back unchanged.

// A `Violation` (136 bytes) is the error of every read; it is built once per rejected request,
// so boxing it would cost every caller a `Box` for no measurable gain.
#![allow(clippy::result_large_err)]

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Map, Value};

use super::{Loc, Violation};

/// A JSON object.
pub(crate) type Obj = Map<String, Value>;

/// `loc` extended by one segment.
pub(crate) fn at(loc: &[Loc], seg: impl Into<Loc>) -> Vec<Loc> {
    let mut out = loc.to_vec();
    out.push(seg.into());
    out
}

/// Collects a read's violation instead of stopping at it.
pub(crate) trait Collect<T> {
    /// The value, or `None` with the violation pushed to `out`.
    fn keep(self, out: &mut Vec<Violation>) -> Option<T>;
}

impl<T> Collect<T> for Result<T, Violation> {
    fn keep(self, out: &mut Vec<Violation>) -> Option<T> {
        self.map_err(|v| out.push(v)).ok()
    }
}

/// `a, b, c` for messages that list what is allowed.
pub(crate) fn names<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names.into_iter().collect::<Vec<_>>().join(", ")
}

fn type_error(loc: Vec<Loc>, expected: &str, input: &Value) -> Violation {
    Violation::new(loc, "type_error", format!("Input should be {expected}"))
        .with_input(input.clone())
}

/// The value as an object.
pub(crate) fn object<'a>(value: &'a Value, loc: &[Loc]) -> Result<&'a Obj, Violation> {
    value
        .as_object()
        .ok_or_else(|| type_error(loc.to_vec(), "an object", value))
}

/// The value as an object, or a `type_error` naming `what` ("period must be an object").
pub(crate) fn object_named<'a>(
    value: &'a Value,
    loc: &[Loc],
    what: &str,
) -> Result<&'a Obj, Violation> {
    value.as_object().ok_or_else(|| {
        Violation::new(
            loc.to_vec(),
            "type_error",
            format!("{what} must be an object"),
        )
        .with_input(value.clone())
    })
}

/// The value as an array.
pub(crate) fn array<'a>(value: &'a Value, loc: &[Loc]) -> Result<&'a [Value], Violation> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| type_error(loc.to_vec(), "an array", value))
}

/// Rejects members whose names `allowed` refuses (`extra_forbidden`).
pub(crate) fn forbid_extra(
    obj: &Obj,
    loc: &[Loc],
    allowed: impl Fn(&str) -> bool,
) -> Result<(), Violation> {
    match obj.keys().find(|k| !allowed(k)) {
        Some(key) => Err(Violation::new(
            at(loc, key.as_str()),
            "extra_forbidden",
            "Extra inputs are not permitted",
        )
        .with_input(obj.get(key).cloned().unwrap_or_default())),
        None => Ok(()),
    }
}

/// Records an `extra_forbidden` violation for every member of `obj` not in `allowed`, naming
/// the allowed set.
pub(crate) fn keys_in(obj: &Obj, allowed: &[&str], loc: &[Loc], out: &mut Vec<Violation>) {
    for k in obj.keys().filter(|k| !allowed.contains(&k.as_str())) {
        out.push(Violation::new(
            at(loc, k.as_str()),
            "extra_forbidden",
            format!(
                "unknown key \"{k}\"; expected one of: {}",
                names(allowed.iter().copied())
            ),
        ));
    }
}

/// A `missing` violation for a required member.
pub(crate) fn missing(loc: &[Loc], key: &str) -> Violation {
    Violation::new(at(loc, key), "missing", "Field required")
}

/// Requires a member read by one of the functions below.
pub(crate) fn required<T>(value: Option<T>, loc: &[Loc], key: &str) -> Result<T, Violation> {
    value.ok_or_else(|| missing(loc, key))
}

fn member<'a>(obj: &'a Obj, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// A string member.
pub(crate) fn string<'a>(
    obj: &'a Obj,
    key: &str,
    loc: &[Loc],
) -> Result<Option<&'a str>, Violation> {
    member(obj, key)
        .map(|v| {
            v.as_str()
                .ok_or_else(|| type_error(at(loc, key), "a valid string", v))
        })
        .transpose()
}

/// An integer member; a float with no fractional part is accepted.
pub(crate) fn int(obj: &Obj, key: &str, loc: &[Loc]) -> Result<Option<i64>, Violation> {
    member(obj, key)
        .map(|v| {
            v.as_i64()
                .or_else(|| {
                    v.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                        .map(|f| f as i64)
                })
                .ok_or_else(|| type_error(at(loc, key), "a valid integer", v))
        })
        .transpose()
}

/// A number member.
pub(crate) fn float(obj: &Obj, key: &str, loc: &[Loc]) -> Result<Option<f64>, Violation> {
    member(obj, key)
        .map(|v| {
            v.as_f64()
                .ok_or_else(|| type_error(at(loc, key), "a valid number", v))
        })
        .transpose()
}

/// A boolean member.
pub(crate) fn boolean(obj: &Obj, key: &str, loc: &[Loc]) -> Result<Option<bool>, Violation> {
    member(obj, key)
        .map(|v| {
            v.as_bool()
                .ok_or_else(|| type_error(at(loc, key), "a valid boolean", v))
        })
        .transpose()
}

/// A `YYYY-MM-DD` member; a date-time with an offset gives its own calendar day (the
/// reference renders days as `YYYY-MM-DDT00:00:00+00:00`).
pub(crate) fn date(obj: &Obj, key: &str, loc: &[Loc]) -> Result<Option<NaiveDate>, Violation> {
    string(obj, key, loc)?
        .map(|s| {
            NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .ok()
                .or_else(|| DateTime::parse_from_rfc3339(s).ok().map(|t| t.date_naive()))
                .ok_or_else(|| {
                    Violation::value(at(loc, key), "Input should be a valid date (YYYY-MM-DD)")
                        .with_input(Value::from(s))
                })
        })
        .transpose()
}

/// An ISO 8601 date-time member with an offset (`Z` or `±HH:MM`).
pub(crate) fn instant(
    obj: &Obj,
    key: &str,
    loc: &[Loc],
) -> Result<Option<DateTime<Utc>>, Violation> {
    string(obj, key, loc)?
        .map(|s| {
            DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| {
                    Violation::value(
                        at(loc, key),
                        "Input should be a valid date-time with an offset (e.g. 2025-01-31T23:00:00+01:00)",
                    )
                    .with_input(Value::from(s))
                })
        })
        .transpose()
}

/// Checks a number against an inclusive range.
pub(crate) fn in_range(
    value: f64,
    (lo, hi): (f64, f64),
    obj: &Obj,
    key: &str,
    loc: &[Loc],
) -> Result<(), Violation> {
    if value.is_finite() && value >= lo && value <= hi {
        return Ok(());
    }
    let msg = match (lo.is_finite(), hi.is_finite()) {
        (true, true) => format!("Input should be between {lo} and {hi}"),
        (true, false) => format!("Input should be greater than or equal to {lo}"),
        _ => format!("Input should be less than or equal to {hi}"),
    };
    Err(Violation::value(at(loc, key), msg)
        .with_input(obj.get(key).cloned().unwrap_or(Value::Null)))
}

/// Checks a string against a closed set of values.
pub(crate) fn one_of(
    value: &str,
    allowed: &[&str],
    key: &str,
    loc: &[Loc],
) -> Result<(), Violation> {
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(Violation::new(
        at(loc, key),
        "enum",
        format!("Input should be one of: {}", allowed.join(", ")),
    )
    .with_input(Value::from(value)))
}

/// `obj[key]` as a required string, `null` included in what is refused, with messages naming
/// the member (`"{key} must be a string"`, `"{key} is required"`).
pub(crate) fn str_in<'a>(obj: &'a Obj, key: &str, loc: &[Loc]) -> Result<&'a str, Violation> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(Violation::new(
            at(loc, key),
            "type_error",
            format!("{key} must be a string"),
        )
        .with_input(v.clone())),
        None => Err(Violation::new(
            at(loc, key),
            "missing",
            format!("{key} is required"),
        )),
    }
}

/// Looks `value` up in a closed set of names; an unknown one is a `value_error` listing them.
pub(crate) fn closed<T: Copy>(
    all: &[(&'static str, T)],
    what: &str,
    value: &str,
    loc: Vec<Loc>,
) -> Result<T, Violation> {
    all.iter()
        .find(|(n, _)| *n == value)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            Violation::value(
                loc,
                format!(
                    "unknown {what} \"{value}\"; expected one of: {}",
                    names(all.iter().map(|(n, _)| *n))
                ),
            )
            .with_input(Value::String(value.to_owned()))
        })
}
