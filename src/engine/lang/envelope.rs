//! The request envelope around the queries: the timeframe (§1.1) and `config` (§1).
//!
//! Decision: provider slugs in `provider_priority_overrides` are not checked against the
//! catalogue (an unknown slug simply never matches a row).

use chrono::NaiveDate;
use serde_json::Value;

use crate::loc;
use crate::validation::{Loc, Violation};

use super::request::Timeframe;
use super::request::parse_period;
use crate::validation::read::{Collect, at, keys_in, object_named};

/// Validates `timeframe` (§1.1): a relative timeframe, or the unexecutable placeholder.
pub(crate) fn parse_timeframe(
    v: &Value,
    loc: &[Loc],
    out: &mut Vec<Violation>,
) -> Option<Timeframe> {
    let obj = object_named(v, loc, "timeframe").keep(out)?;
    if obj.contains_key("placeholder") {
        keys_in(obj, &["placeholder"], loc, out);
        out.push(Violation::value(
            at(loc, "placeholder"),
            "placeholder timeframe cannot be executed",
        ));
        return None;
    }
    keys_in(obj, &["type", "anchor", "past"], loc, out);
    if let Some(t) = obj.get("type").filter(|t| t.as_str() != Some("relative")) {
        out.push(
            Violation::value(
                at(loc, "type"),
                "unknown timeframe type; expected one of: relative",
            )
            .with_input(t.clone()),
        );
    }
    let anchor = match obj.get("anchor") {
        Some(Value::String(s)) => {
            let d = NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .ok()
                .filter(|_| s.len() == 10);
            if d.is_none() {
                out.push(
                    Violation::value(at(loc, "anchor"), "anchor must be a date YYYY-MM-DD")
                        .with_input(Value::String(s.clone())),
                );
            }
            d
        }
        other => {
            out.push(Violation::new(
                at(loc, "anchor"),
                if other.is_none() {
                    "missing"
                } else {
                    "type_error"
                },
                "anchor must be a date YYYY-MM-DD",
            ));
            None
        }
    };
    let past = match obj.get("past") {
        Some(p) => parse_period(p, &at(loc, "past"), out),
        None => {
            out.push(Violation::new(
                at(loc, "past"),
                "missing",
                "past is required: {\"value\", \"unit\"}",
            ));
            None
        }
    };
    let (anchor, past) = (anchor?, past?);
    if crate::engine::time::window_start(anchor, past).is_none() {
        out.push(Violation::value(
            at(loc, "past"),
            "past reaches before the supported calendar range",
        ));
        return None;
    }
    Some(Timeframe { anchor, past })
}

/// Validates `config`; returns the provider priority overrides, best first.
pub(crate) fn parse_config(v: &Value, out: &mut Vec<Violation>) -> Option<Vec<String>> {
    let loc = loc!["body", "config"];
    if v.is_null() {
        return None;
    }
    let obj = object_named(v, &loc, "config").keep(out)?;
    keys_in(obj, &["provider_priority_overrides"], &loc, out);
    let ploc = at(&loc, "provider_priority_overrides");
    match obj.get("provider_priority_overrides") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            let mut slugs = Vec::new();
            for (i, s) in items.iter().enumerate() {
                match s.as_str() {
                    Some(s) => slugs.push(s.to_owned()),
                    None => out.push(
                        Violation::new(
                            at(&ploc, i),
                            "type_error",
                            "a provider slug must be a string",
                        )
                        .with_input(s.clone()),
                    ),
                }
            }
            Some(slugs)
        }
        Some(other) => {
            out.push(
                Violation::new(
                    ploc,
                    "type_error",
                    "provider_priority_overrides must be an array of provider slugs or null",
                )
                .with_input(other.clone()),
            );
            None
        }
    }
}
