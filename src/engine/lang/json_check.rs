//! Small helpers shared by the request validators: object and string checks that record a
//! [`Violation`] at an exact location, closed enumerations whose message names the allowed set,
//! and the `Period` object.

use serde_json::{Map, Value};

use crate::validation::{Loc, Violation};

use super::request::{Period, Unit};

/// Records an `extra_forbidden` violation for every key of `obj` not in `allowed`.
pub(crate) fn keys_in(
    obj: &Map<String, Value>,
    allowed: &[&str],
    loc: &[Loc],
    out: &mut Vec<Violation>,
) {
    for k in obj.keys().filter(|k| !allowed.contains(&k.as_str())) {
        out.push(Violation::new(
            at(loc, k.as_str()),
            "extra_forbidden",
            format!(
                "unknown key \"{k}\"; expected one of: {}",
                allowed.join(", ")
            ),
        ));
    }
}

/// The value as an object, or a `type_error` naming `what`.
pub(crate) fn object<'a>(
    v: &'a Value,
    loc: &[Loc],
    what: &str,
    out: &mut Vec<Violation>,
) -> Option<&'a Map<String, Value>> {
    let o = v.as_object();
    if o.is_none() {
        out.push(
            Violation::new(
                loc.to_vec(),
                "type_error",
                format!("{what} must be an object"),
            )
            .with_input(v.clone()),
        );
    }
    o
}

/// `a, b, c` for messages.
pub(crate) fn one_of<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names.into_iter().collect::<Vec<_>>().join(", ")
}

/// Appends a segment to a location.
pub(crate) fn at(loc: &[Loc], seg: impl Into<Loc>) -> Vec<Loc> {
    let mut l = loc.to_vec();
    l.push(seg.into());
    l
}

/// `obj[key]` as a string, or a `missing` / `type_error` violation at `loc.key`.
pub(crate) fn str_in<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    loc: &[Loc],
    out: &mut Vec<Violation>,
) -> Option<&'a str> {
    match obj.get(key) {
        Some(Value::String(s)) => Some(s),
        Some(v) => {
            out.push(
                Violation::new(
                    at(loc, key),
                    "type_error",
                    format!("{key} must be a string"),
                )
                .with_input(v.clone()),
            );
            None
        }
        None => {
            out.push(Violation::new(
                at(loc, key),
                "missing",
                format!("{key} is required"),
            ));
            None
        }
    }
}

/// Looks `value` up in a closed set; an unknown value is a 422 listing the allowed names.
pub(crate) fn closed<T: Copy>(
    all: &[(&'static str, T)],
    what: &str,
    value: &str,
    loc: Vec<Loc>,
    out: &mut Vec<Violation>,
) -> Option<T> {
    let found = all.iter().find(|(n, _)| *n == value).map(|(_, t)| *t);
    if found.is_none() {
        out.push(
            Violation::value(
                loc,
                format!(
                    "unknown {what} \"{value}\"; expected one of: {}",
                    one_of(all.iter().map(|(n, _)| *n))
                ),
            )
            .with_input(Value::String(value.to_owned())),
        );
    }
    found
}

/// Parses a `Period` object (`value` defaults to 1).
pub(crate) fn parse_period(v: &Value, loc: &[Loc], out: &mut Vec<Violation>) -> Option<Period> {
    let Some(obj) = v.as_object() else {
        out.push(Violation::new(
            loc.to_vec(),
            "type_error",
            "period must be an object {\"value\", \"unit\"}",
        ));
        return None;
    };
    let mut ok = true;
    for k in obj
        .keys()
        .filter(|k| !matches!(k.as_str(), "value" | "unit"))
    {
        out.push(Violation::new(
            at(loc, k.as_str()),
            "extra_forbidden",
            format!("unknown key \"{k}\"; expected value, unit"),
        ));
        ok = false;
    }
    let value = match obj.get("value") {
        None => Some(1),
        Some(n) => match n.as_u64().filter(|n| (1..=u64::from(u32::MAX)).contains(n)) {
            Some(n) => u32::try_from(n).ok(),
            None => {
                out.push(
                    Violation::value(at(loc, "value"), "value must be an integer ≥ 1")
                        .with_input(n.clone()),
                );
                None
            }
        },
    };
    let unit = str_in(obj, "unit", loc, out)
        .and_then(|u| closed(&Unit::ALL, "unit", u, at(loc, "unit"), out));
    match (value, unit, ok) {
        (Some(value), Some(unit), true) => Some(Period { value, unit }),
        _ => None,
    }
}
