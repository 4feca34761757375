//! JSON expression objects (§1.3) to typed expressions: shape detection by distinguishing key,
//! closed enumerations with messages naming the allowed set, and exact locations.

use serde_json::{Map, Value};

use crate::schema::{Derived, QUERYABLE_SOURCES, Table, resource};
use crate::validation::{Loc, Violation};

use super::request::parse_period;
use super::request::{DatePart, Func, Operand, Period, UserKey, ValueMacro};
use crate::validation::read::{Collect, at, closed, names, str_in};

/// Where an expression appears; decides which shapes are allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Select,
    GroupBy,
    AggregateArg,
    IndexArg,
}

/// The index named by `{"index": T}`: a table, or the timeseries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexOf {
    Table(Table),
    Timeseries,
    Derived(Derived),
}

/// An expression before the query-level rules of §2.5 are applied.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawExpr {
    Operand(Operand, Option<IndexOf>),
    Aggregate(Func, Operand, Option<IndexOf>, Vec<Loc>),
    GroupKey(Option<usize>),
    /// `{"user": K}`: a team query's group key (`parse::Dialect::Team` only).
    User(UserKey),
    DateTrunc(Period, IndexOf, Vec<Loc>),
    DatePart(DatePart, IndexOf, Vec<Loc>),
}

const TABLE_KEYS: [&str; 7] = [
    "sleep",
    "activity",
    "workout",
    "body",
    "meal",
    "profile",
    "menstrual_cycle",
];
/// Derived tables (`analytics.md` §2): named like tables, in every place a table may be.
const DERIVED_KEYS: [&str; 1] = ["derived_readiness"];
const OTHER_KEYS: [&str; 9] = [
    "select",
    "timeseries",
    "index",
    "source",
    "value_macro",
    "func",
    "group_key",
    "date_trunc",
    "date_part",
];

fn shapes_for(place: Place) -> &'static str {
    match place {
        Place::Select => {
            "an aggregate {\"func\", \"arg\"}, a group key, a table column, a timeseries field, \
             an index, a source, a value macro or a subquery {\"select\", \"from\", \"where\"}"
        }
        Place::GroupBy => {
            "a date_trunc, a date_part, a table column, a timeseries field, a source or a value macro"
        }
        Place::AggregateArg => {
            "a table column, a timeseries field, an index, a source, a value macro or a subquery"
        }
        Place::IndexArg => "an index {\"index\": T}",
    }
}

fn allowed(place: Place, shape: &str) -> bool {
    let table = TABLE_KEYS.contains(&shape) || DERIVED_KEYS.contains(&shape);
    match place {
        Place::Select => shape != "date_trunc" && shape != "date_part",
        Place::GroupBy => {
            table
                || matches!(
                    shape,
                    "timeseries" | "source" | "value_macro" | "date_trunc" | "date_part"
                )
        }
        Place::AggregateArg => {
            table
                || matches!(
                    shape,
                    "timeseries" | "index" | "source" | "value_macro" | "select"
                )
        }
        Place::IndexArg => shape == "index",
    }
}

/// Parses one expression object at `loc`, appending violations to `out`.
pub(crate) fn parse_expr(
    v: &Value,
    loc: &[Loc],
    place: Place,
    out: &mut Vec<Violation>,
) -> Option<RawExpr> {
    let Some(obj) = v.as_object() else {
        out.push(
            Violation::new(
                loc.to_vec(),
                "type_error",
                format!("expected an object: {}", shapes_for(place)),
            )
            .with_input(v.clone()),
        );
        return None;
    };
    let shapes: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| TABLE_KEYS.contains(k) || DERIVED_KEYS.contains(k) || OTHER_KEYS.contains(k))
        .collect();
    let shape = match shapes.as_slice() {
        [one] => *one,
        [] => {
            out.push(
                Violation::value(
                    loc.to_vec(),
                    format!(
                        "matches no expression shape; expected {}",
                        shapes_for(place)
                    ),
                )
                .with_input(v.clone()),
            );
            return None;
        }
        many => {
            out.push(
                Violation::value(
                    loc.to_vec(),
                    format!(
                        "carries keys of several expression shapes ({}); use one of them",
                        names(many.iter().copied())
                    ),
                )
                .with_input(v.clone()),
            );
            return None;
        }
    };
    if !allowed(place, shape) {
        out.push(
            Violation::value(
                loc.to_vec(),
                format!(
                    "\"{shape}\" is not allowed here; expected {}",
                    shapes_for(place)
                ),
            )
            .with_input(v.clone()),
        );
        return None;
    }
    let extra: &[&str] = match shape {
        "timeseries" => &["field"],
        "value_macro" => &["version"],
        "func" | "date_trunc" | "date_part" => &["arg"],
        "select" => &["from", "where"],
        _ => &[],
    };
    let before = out.len();
    for k in obj
        .keys()
        .filter(|k| k.as_str() != shape && !extra.contains(&k.as_str()))
    {
        let expected = names(std::iter::once(shape).chain(extra.iter().copied()));
        out.push(Violation::new(
            at(loc, k.as_str()),
            "extra_forbidden",
            format!("unknown key \"{k}\" in a {shape} expression; expected {expected}"),
        ));
    }
    let parsed = parse_shape(obj, shape, loc, out);
    if out.len() > before { None } else { parsed }
}

fn parse_shape(
    obj: &Map<String, Value>,
    shape: &str,
    loc: &[Loc],
    out: &mut Vec<Violation>,
) -> Option<RawExpr> {
    if let Some(table) = Table::from_name(shape) {
        let name = str_in(obj, shape, loc).keep(out)?;
        if table.list_column(name).is_some() {
            out.push(
                Violation::value(
                    at(loc, shape),
                    format!(
                        "{shape}.{name} is a list column and cannot be selected directly; reduce it with a subquery {{\"select\": {{\"func\": F, \"arg\": ...}}, \"from\": {{\"unnest\": {{\"{shape}\": \"{name}\"}}}}}}"
                    ),
                )
                .with_input(Value::String(name.to_owned())),
            );
            return None;
        }
        let Some(col) = table.column(name) else {
            out.push(
                Violation::value(
                    at(loc, shape),
                    format!(
                        "unknown {shape} column \"{name}\"; expected one of: {}",
                        names(table.columns().iter().map(|c| c.name))
                    ),
                )
                .with_input(Value::String(name.to_owned())),
            );
            return None;
        };
        return Some(RawExpr::Operand(
            Operand::Column(table, col.name, col.kind),
            Some(IndexOf::Table(table)),
        ));
    }
    if let Some(derived) = Derived::from_name(shape) {
        let name = str_in(obj, shape, loc).keep(out)?;
        let Some(col) = derived.column(name) else {
            out.push(
                Violation::value(
                    at(loc, shape),
                    format!(
                        "unknown {shape} column \"{name}\"; expected one of: {}",
                        names(derived.columns().iter().map(|c| c.name))
                    ),
                )
                .with_input(Value::String(name.to_owned())),
            );
            return None;
        };
        return Some(RawExpr::Operand(
            Operand::Derived(derived, col.name, col.kind),
            Some(IndexOf::Derived(derived)),
        ));
    }
    match shape {
        "timeseries" => {
            let name = str_in(obj, "timeseries", loc).keep(out);
            let field = str_in(obj, "field", loc).keep(out);
            let r = name.and_then(|n| {
                let r = resource(n);
                if r.is_none() {
                    out.push(
                        Violation::value(
                            at(loc, "timeseries"),
                            format!(
                                "unknown timeseries resource \"{n}\"; expected one of: {}",
                                names(crate::schema::RESOURCES.iter().map(|r| r.name))
                            ),
                        )
                        .with_input(Value::String(n.to_owned())),
                    );
                }
                r
            })?;
            let field = field?;
            let Some(f) = r.family.fields().iter().copied().find(|f| *f == field) else {
                out.push(Violation::value(at(loc, "field"), format!("unknown field \"{field}\" of timeseries resource {}; expected one of: {}", r.name, names(r.family.fields().iter().copied()))).with_input(Value::String(field.to_owned())));
                return None;
            };
            Some(RawExpr::Operand(
                Operand::Field(r, f),
                Some(IndexOf::Timeseries),
            ))
        }
        "index" => {
            let t = parse_index(obj, loc, out)?;
            Some(RawExpr::Operand(Operand::Index, Some(t)))
        }
        "source" => {
            let s = str_in(obj, "source", loc).keep(out)?;
            let all: Vec<(&'static str, &'static str)> =
                QUERYABLE_SOURCES.iter().map(|s| (*s, *s)).collect();
            let s = closed(&all, "source", s, at(loc, "source")).keep(out)?;
            Some(RawExpr::Operand(Operand::Source(s), None))
        }
        "value_macro" => {
            let m = str_in(obj, "value_macro", loc).keep(out).and_then(|m| {
                closed(&ValueMacro::ALL, "value macro", m, at(loc, "value_macro")).keep(out)
            });
            if let Some(v) = obj
                .get("version")
                .filter(|v| v.as_str() != Some("automatic"))
            {
                out.push(
                    Violation::value(
                        at(loc, "version"),
                        "unknown value macro version; expected one of: automatic",
                    )
                    .with_input(v.clone()),
                );
                return None;
            }
            Some(RawExpr::Operand(
                Operand::Macro(m?),
                Some(IndexOf::Table(Table::Sleep)),
            ))
        }
        "func" => {
            let f = str_in(obj, "func", loc).keep(out).and_then(|f| {
                closed(&Func::ALL, "aggregate function", f, at(loc, "func")).keep(out)
            });
            let arg_loc = at(loc, "arg");
            let arg = match obj.get("arg") {
                Some(a) => parse_expr(a, &arg_loc, Place::AggregateArg, out),
                None => {
                    out.push(Violation::new(
                        arg_loc.clone(),
                        "missing",
                        "arg is required",
                    ));
                    None
                }
            };
            match (f?, arg?) {
                (f, RawExpr::Operand(op, idx)) => Some(RawExpr::Aggregate(f, op, idx, arg_loc)),
                _ => None,
            }
        }
        "select" => {
            let sq = super::subquery::parse_subquery(obj, loc, out)?;
            let table = sq.table;
            Some(RawExpr::Operand(
                Operand::Subquery(Box::new(sq)),
                Some(IndexOf::Table(table)),
            ))
        }
        "group_key" => match obj.get("group_key") {
            Some(Value::String(s)) if s == "*" => Some(RawExpr::GroupKey(None)),
            Some(n) if n.as_u64().is_some() => Some(RawExpr::GroupKey(
                n.as_u64().and_then(|n| usize::try_from(n).ok()),
            )),
            other => {
                out.push(
                    Violation::value(
                        at(loc, "group_key"),
                        "group_key must be a non-negative integer or \"*\"",
                    )
                    .with_input(other.cloned().unwrap_or(Value::Null)),
                );
                None
            }
        },
        "date_trunc" => {
            let p = parse_period(
                obj.get("date_trunc").unwrap_or(&Value::Null),
                &at(loc, "date_trunc"),
                out,
            );
            let (idx, arg_loc) = parse_index_arg(obj, loc, out)?;
            Some(RawExpr::DateTrunc(p?, idx, arg_loc))
        }
        "date_part" => {
            let p = str_in(obj, "date_part", loc).keep(out).and_then(|p| {
                closed(&DatePart::ALL, "date part", p, at(loc, "date_part")).keep(out)
            });
            let (idx, arg_loc) = parse_index_arg(obj, loc, out)?;
            Some(RawExpr::DatePart(p?, idx, arg_loc))
        }
        _ => None,
    }
}

fn parse_index(obj: &Map<String, Value>, loc: &[Loc], out: &mut Vec<Violation>) -> Option<IndexOf> {
    let t = str_in(obj, "index", loc).keep(out)?;
    if t == "timeseries" {
        return Some(IndexOf::Timeseries);
    }
    let found = Table::from_name(t)
        .map(IndexOf::Table)
        .or_else(|| Derived::from_name(t).map(IndexOf::Derived));
    if found.is_none() {
        out.push(
            Violation::value(
                at(loc, "index"),
                format!(
                    "unknown index \"{t}\"; expected one of: {}, timeseries",
                    names(TABLE_KEYS.into_iter().chain(DERIVED_KEYS))
                ),
            )
            .with_input(Value::String(t.to_owned())),
        );
    }
    found
}

fn parse_index_arg(
    obj: &Map<String, Value>,
    loc: &[Loc],
    out: &mut Vec<Violation>,
) -> Option<(IndexOf, Vec<Loc>)> {
    let arg_loc = at(loc, "arg");
    let Some(arg) = obj.get("arg") else {
        out.push(Violation::new(
            arg_loc,
            "missing",
            "arg is required: {\"index\": T}",
        ));
        return None;
    };
    match parse_expr(arg, &arg_loc, Place::IndexArg, out)? {
        RawExpr::Operand(Operand::Index, Some(idx)) => Some((idx, arg_loc)),
        _ => None,
    }
}
