//! [`parse_request`]: the request body (already JSON-decoded) to a [`ValidRequest`], checking
//! every rule of §1–§2 and the limits of §5 before any data is read. Violations are collected
//! (not just the first) with locations starting at `body`.
//!
//! Decisions where the spec is silent: `queries` and `instructions` together is a 422;
//! `group_by: null` means `[]`; provider slugs in overrides are not checked against the
//! catalogue (an unknown slug simply never matches).

use serde_json::Value;

use crate::loc;
use crate::validation::{Invalid, Loc, Violation};

use super::align::{check_align, parse_align};
use super::envelope::{parse_config, parse_timeframe};
use super::parse_expr::{IndexOf, Place, RawExpr, parse_expr};
use super::request::{
    GroupBy, Period, Query, QuerySource, SelectItem, SelectKind, Unit, UserKey, ValidRequest,
};
use super::rules::{WhereScope, check_aggregate, check_select, item_name, resolve_source};
use super::where_clause::parse_where;
use crate::engine::Limits;
use crate::validation::read::{Collect, at, closed, keys_in, object_named, str_in};

/// The two bodies the language is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// One user's query (`aggregate-dsl.md`).
    User,
    /// A team query (`analytics.md` §5): also a top-level `users` selector (read by
    /// `crate::team`) and `{"user": "user_id" | "client_user_id"}` group keys.
    Team,
}

/// Parses and validates a request body against §1–§2 and the limits of §5.
pub fn parse_request(body: &Value, limits: &Limits) -> Result<ValidRequest, Invalid> {
    parse_in(body, limits, Dialect::User)
}

/// [`parse_request`] for a team query's body (`analytics.md` §5): the same language, plus a
/// `users` member (left to the caller) and `{"user": ...}` group-by items, which are
/// [`GroupBy::User`](super::request::GroupBy::User) keys.
pub fn parse_team_request(body: &Value, limits: &Limits) -> Result<ValidRequest, Invalid> {
    parse_in(body, limits, Dialect::Team)
}

fn parse_in(body: &Value, limits: &Limits, dialect: Dialect) -> Result<ValidRequest, Invalid> {
    let mut out = Vec::new();
    let parsed = parse_body(body, limits, dialect, &mut out);
    match parsed {
        Some(req) if out.is_empty() => Ok(req),
        _ if out.is_empty() => Err(Invalid(vec![Violation::value(
            loc!["body"],
            "invalid request",
        )])),
        _ => Err(Invalid(out)),
    }
}

fn parse_body(
    body: &Value,
    limits: &Limits,
    dialect: Dialect,
    out: &mut Vec<Violation>,
) -> Option<ValidRequest> {
    let root = loc!["body"];
    let obj = object_named(body, &root, "the request body").keep(out)?;
    let keys: &[&str] = match dialect {
        Dialect::User => &["timeframe", "queries", "instructions", "config"],
        Dialect::Team => &["timeframe", "queries", "instructions", "config", "users"],
    };
    keys_in(obj, keys, &root, out);
    let timeframe = match obj.get("timeframe") {
        Some(t) => parse_timeframe(t, &at(&root, "timeframe"), out),
        None => {
            out.push(Violation::new(
                loc!["body", "timeframe"],
                "missing",
                "timeframe is required",
            ));
            None
        }
    };
    let (key, queries) = match (obj.get("queries"), obj.get("instructions")) {
        (Some(_), Some(_)) => {
            out.push(Violation::value(
                loc!["body", "instructions"],
                "give either queries or its alias instructions, not both",
            ));
            return None;
        }
        (Some(q), None) => ("queries", q),
        (None, Some(q)) => ("instructions", q),
        (None, None) => {
            out.push(Violation::new(
                loc!["body", "queries"],
                "missing",
                "queries is required",
            ));
            return None;
        }
    };
    let qloc = at(&root, key);
    let Some(list) = queries.as_array() else {
        out.push(Violation::new(
            qloc,
            "type_error",
            "queries must be an array of query objects",
        ));
        return None;
    };
    if list.is_empty() || list.len() > limits.max_queries {
        out.push(Violation::value(
            qloc.clone(),
            format!(
                "queries must hold 1 to {} queries, found {}",
                limits.max_queries,
                list.len()
            ),
        ));
        return None;
    }
    let queries: Vec<Option<Query>> = list
        .iter()
        .enumerate()
        .map(|(i, q)| parse_query(q, &at(&qloc, i), limits, dialect, out))
        .collect();
    let priority_overrides = obj
        .get("config")
        .and_then(|c| parse_config(c, out))
        .unwrap_or_default();
    Some(ValidRequest {
        timeframe: timeframe?,
        queries: queries.into_iter().collect::<Option<_>>()?,
        priority_overrides,
    })
}

fn period_ok(p: Period) -> Result<(), &'static str> {
    let ok = match p.unit {
        Unit::Minute => (1..=59).contains(&p.value),
        Unit::Hour => (1..=23).contains(&p.value),
        Unit::Day => (1..=30).contains(&p.value),
        Unit::Week => (1..=12).contains(&p.value),
        Unit::Month => [1, 2, 3, 4, 6].contains(&p.value),
        Unit::Year => p.value >= 1,
    };
    if ok {
        Ok(())
    } else {
        Err(
            "date_trunc period out of range; allowed: minute 1–59, hour 1–23, day 1–30, week 1–12, month 1, 2, 3, 4 or 6, year ≥ 1",
        )
    }
}

fn parse_query(
    v: &Value,
    loc: &[Loc],
    limits: &Limits,
    dialect: Dialect,
    out: &mut Vec<Violation>,
) -> Option<Query> {
    let before = out.len();
    let obj = object_named(v, loc, "a query").keep(out)?;
    keys_in(obj, &["select", "group_by", "where", "align"], loc, out);
    let align = match obj.get("align") {
        None | Some(Value::Null) => None,
        Some(a) => parse_align(a, &at(loc, "align"), out),
    };
    let sloc = at(loc, "select");
    let select_raw: Vec<(RawExpr, Vec<Loc>)> = match obj.get("select") {
        Some(Value::Array(items)) if (1..=limits.max_select).contains(&items.len()) => items
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let l = at(&sloc, i);
                parse_expr(e, &l, Place::Select, out).map(|x| (x, l))
            })
            .collect(),
        Some(Value::Array(items)) => {
            out.push(Violation::value(
                sloc,
                format!(
                    "select must hold 1 to {} items, found {}",
                    limits.max_select,
                    items.len()
                ),
            ));
            return None;
        }
        other => {
            out.push(Violation::new(
                sloc,
                if other.is_none() {
                    "missing"
                } else {
                    "type_error"
                },
                "select is required: an array of select expressions",
            ));
            return None;
        }
    };
    let gloc = at(loc, "group_by");
    let group_raw: Vec<(RawExpr, Vec<Loc>)> = match obj.get("group_by") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let l = at(&gloc, i);
                let user = e.as_object().filter(|o| o.contains_key("user"));
                match user {
                    Some(o) if dialect == Dialect::Team => parse_user_key(o, &l, out),
                    _ => parse_expr(e, &l, Place::GroupBy, out),
                }
                .map(|x| (x, l))
            })
            .collect(),
        Some(other) => {
            out.push(
                Violation::new(
                    gloc,
                    "type_error",
                    "group_by must be an array of group-by expressions",
                )
                .with_input(other.clone()),
            );
            return None;
        }
    };
    let wloc = at(loc, "where");
    let where_text = match obj.get("where") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.chars().count() > limits.max_where_chars => {
            out.push(Violation::value(
                wloc.clone(),
                format!("where is longer than {} characters", limits.max_where_chars),
            ));
            None
        }
        Some(Value::String(s)) => Some(s.as_str()),
        Some(other) => {
            out.push(
                Violation::new(wloc.clone(), "type_error", "where must be a string or null")
                    .with_input(other.clone()),
            );
            None
        }
    };
    if out.len() > before {
        return None;
    }
    let all: Vec<(RawExpr, Vec<Loc>)> =
        select_raw.iter().chain(group_raw.iter()).cloned().collect();
    let source = resolve_source(&all, loc, out)?;
    let group_by = build_group_by(&group_raw, &source, out);
    let select = build_select(&select_raw, &group_by, &source, out);
    check_select(&select, &group_by, out);
    let filter = where_text.and_then(|w| match parse_where(w, &WhereScope(&source)) {
        Ok(f) => Some(f),
        Err(msg) => {
            out.push(Violation::value(wloc, msg).with_input(Value::String(w.to_owned())));
            None
        }
    });
    if out.len() > before {
        return None;
    }
    let select: Vec<SelectItem> = select.into_iter().map(|(s, _)| s).collect();
    if let Some(a) = &align {
        let located: Vec<(GroupBy, Vec<Loc>)> = group_by
            .iter()
            .cloned()
            .zip(group_raw.iter().map(|(_, l)| l.clone()))
            .collect();
        check_align(a, &located, &select, loc, out);
        if out.len() > before {
            return None;
        }
    }
    Some(Query {
        source,
        select,
        group_by,
        filter,
        align,
    })
}

/// `{"user": "user_id" | "client_user_id"}`, a team query's group key.
fn parse_user_key(
    obj: &serde_json::Map<String, Value>,
    loc: &[Loc],
    out: &mut Vec<Violation>,
) -> Option<RawExpr> {
    keys_in(obj, &["user"], loc, out);
    let name = str_in(obj, "user", loc).keep(out)?;
    closed(&UserKey::ALL, "user key", name, at(loc, "user"))
        .keep(out)
        .map(RawExpr::User)
}

fn index_matches(idx: IndexOf, source: &QuerySource) -> bool {
    match (idx, source) {
        (IndexOf::Table(t), QuerySource::Table(s)) => t == *s,
        (IndexOf::Timeseries, QuerySource::Timeseries(_)) => true,
        (IndexOf::Derived(d), QuerySource::Derived(s)) => d == *s,
        _ => false,
    }
}

fn build_group_by(
    raw: &[(RawExpr, Vec<Loc>)],
    source: &QuerySource,
    out: &mut Vec<Violation>,
) -> Vec<GroupBy> {
    let mut truncs = 0;
    let mut groups = Vec::new();
    for (e, loc) in raw {
        let idx = match e {
            RawExpr::DateTrunc(_, idx, arg_loc) | RawExpr::DatePart(_, idx, arg_loc) => {
                Some((*idx, arg_loc))
            }
            _ => None,
        };
        if let Some((idx, arg_loc)) = idx.filter(|(idx, _)| !index_matches(*idx, source)) {
            let _ = idx;
            out.push(Violation::value(
                at(arg_loc, "index"),
                "date_trunc and date_part must use the query's own index",
            ));
            continue;
        }
        match e {
            RawExpr::DateTrunc(p, ..) => {
                truncs += 1;
                if truncs > 1 {
                    out.push(Violation::value(
                        loc.clone(),
                        "at most one date_trunc per query",
                    ));
                } else if let Err(msg) = period_ok(*p) {
                    out.push(Violation::value(at(loc, "date_trunc"), msg));
                }
                groups.push(GroupBy::DateTrunc(*p));
            }
            RawExpr::DatePart(p, ..) => groups.push(GroupBy::DatePart(*p)),
            RawExpr::Operand(op, _) => groups.push(GroupBy::Value(op.clone())),
            RawExpr::User(k) => groups.push(GroupBy::User(*k)),
            _ => {}
        }
    }
    groups
}

fn build_select(
    raw: &[(RawExpr, Vec<Loc>)],
    group_by: &[GroupBy],
    source: &QuerySource,
    out: &mut Vec<Violation>,
) -> Vec<(SelectItem, Vec<Loc>)> {
    let mut items = Vec::new();
    for (e, loc) in raw {
        let kinds = match e {
            RawExpr::Operand(op, _) => vec![SelectKind::Value(op.clone())],
            RawExpr::Aggregate(f, op, _, arg_loc) => {
                let _ = arg_loc;
                if !check_aggregate(*f, op, source, loc, out) {
                    continue;
                }
                vec![SelectKind::Aggregate(*f, op.clone())]
            }
            RawExpr::GroupKey(_) if group_by.is_empty() => {
                out.push(Violation::value(
                    at(loc, "group_key"),
                    "group keys need a non-empty group_by",
                ));
                continue;
            }
            RawExpr::GroupKey(None) => (0..group_by.len()).map(SelectKind::GroupKey).collect(),
            RawExpr::GroupKey(Some(n)) if *n < group_by.len() => vec![SelectKind::GroupKey(*n)],
            RawExpr::GroupKey(Some(n)) => {
                out.push(Violation::value(
                    at(loc, "group_key"),
                    format!(
                        "group_key {n} is out of range; expected 0 to {} or \"*\"",
                        group_by.len() - 1
                    ),
                ));
                continue;
            }
            _ => continue,
        };
        items.extend(kinds.into_iter().map(|kind| {
            (
                SelectItem {
                    name: item_name(&kind),
                    kind,
                },
                loc.clone(),
            )
        }));
    }
    items
}
