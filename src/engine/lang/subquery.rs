//! Scalar-output subqueries over list columns (`analytics.md` §3): `{"select": {"func": F,
//! "arg": A}, "from": {"unnest": {"<table>": "<list column>"}}, "where": "<predicate>"}`
//! reduces one row's list to one value. `A` is `null` (count the elements; `count` only),
//! `{"<list column>": "<field>"}` (a struct field; the reference's optional `"field_for":
//! "<table>"` is accepted) or `{"element": true}` (the element itself; lists of scalars only).
//! The `where` is the WHERE language of `aggregate-dsl.md` §2.4 over the element's fields, or
//! over `element` for a list of scalars.
//!
//! Decisions where the spec is silent:
//! - Types: `count` is an integer, `mean`/`median`/`stddev` floats, `sum` keeps integer or float,
//!   `min`/`max`/`oldest`/`newest` the field's type; the functions accept the types of
//!   `aggregate-dsl.md` §2.5 rule 6 (a date field: `count`, `min`, `max`, `oldest`, `newest`).
//! - `oldest`/`newest` take the element with the earliest/latest `date` (a list of scalars: the
//!   first/last element); a tie goes to the element later in the list for `newest` and earlier
//!   for `oldest`.
//! - A null list reduces like an empty one: `count` is 0, every other function null; null field
//!   values are skipped, as in every aggregate.
//! - A subquery may appear where a per-row value may be selected, and as the `arg` of an
//!   aggregate (the outer aggregate of a grouped query); it is not a group-by key.

use serde_json::{Map, Value};

use crate::schema::{Column, Element, Kind, ListColumn, Table};
use crate::validation::read::{Collect, at, closed, names, str_in};
use crate::validation::{Loc, Violation};

use super::request::{Func, Operand, ValueType};
use super::where_clause::{Resolve, WhereExpr, parse_where};

/// One validated subquery.
#[derive(Debug, Clone, PartialEq)]
pub struct Subquery {
    /// The reducing function.
    pub func: Func,
    /// The table whose list column is unnested.
    pub table: Table,
    /// The list column.
    pub list: ListColumn,
    /// What is reduced.
    pub arg: SubArg,
    /// The element filter.
    pub filter: Option<WhereExpr>,
}

/// What a subquery reduces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SubArg {
    /// The elements themselves (`arg: null`, `count` only).
    Elements,
    /// A struct field of the elements.
    Field(Column),
    /// The scalar elements (`{"element": true}`).
    Element(Kind),
}

/// The name `element` takes in a where over a list of scalars.
pub const ELEMENT: &str = "element";

/// The language type of a list element's kind.
pub(crate) fn element_type(kind: Kind) -> ValueType {
    match kind {
        Kind::Str => ValueType::Str,
        Kind::Int => ValueType::Int,
        Kind::Float => ValueType::Float,
        Kind::Bool => ValueType::Bool,
        Kind::Date => ValueType::Date,
        Kind::Instant => ValueType::Floating,
    }
}

impl Subquery {
    /// The output name: `<func>.<list>`, `<func>.<list>.<field>` or `<func>.<list>.element`.
    pub fn name(&self) -> String {
        let (func, list) = (self.func.name(), self.list.name);
        match self.arg {
            SubArg::Elements => format!("{func}.{list}"),
            SubArg::Field(c) => format!("{func}.{list}.{}", c.name),
            SubArg::Element(_) => format!("{func}.{list}.{ELEMENT}"),
        }
    }

    /// The type of the reduced input, `None` for the elements themselves.
    pub fn input_type(&self) -> Option<ValueType> {
        match self.arg {
            SubArg::Elements => None,
            SubArg::Field(c) => Some(element_type(c.kind)),
            SubArg::Element(k) => Some(element_type(k)),
        }
    }

    /// The type of the subquery's value.
    pub fn output_type(&self) -> ValueType {
        match (self.func, self.input_type()) {
            (Func::Count, _) | (_, None) => ValueType::Int,
            (Func::Mean | Func::Median | Func::Stddev, _) => ValueType::Float,
            (_, Some(t)) => t,
        }
    }
}

/// Identifiers of a where over one list's elements: its struct fields, or `element`.
pub(crate) struct ElementScope(pub ListColumn);

impl Resolve for ElementScope {
    fn resolve(&self, ident: &str) -> Option<(Operand, ValueType)> {
        match self.0.element {
            Element::Scalar(k) if ident == ELEMENT => {
                Some((Operand::ElementField(ELEMENT, k), element_type(k)))
            }
            Element::Scalar(_) => None,
            Element::Struct(_) => self
                .0
                .field(ident)
                .map(|c| (Operand::ElementField(c.name, c.kind), element_type(c.kind))),
        }
    }

    fn names(&self) -> Vec<String> {
        match self.0.element {
            Element::Scalar(_) => vec![ELEMENT.to_owned()],
            Element::Struct(fields) => fields.iter().map(|c| c.name.to_owned()).collect(),
        }
    }
}

fn tables_with_lists() -> String {
    names(
        Table::ALL
            .iter()
            .filter(|t| !t.list_columns().is_empty())
            .map(|t| t.name()),
    )
}

/// Parses the subquery object `obj` (whose `select` key made it one) at `loc`.
pub(crate) fn parse_subquery(
    obj: &Map<String, Value>,
    loc: &[Loc],
    out: &mut Vec<Violation>,
) -> Option<Subquery> {
    let before = out.len();
    let (table, list) = parse_from(obj.get("from"), &at(loc, "from"), out)?;
    let sloc = at(loc, "select");
    let Some(select) = obj.get("select").and_then(Value::as_object) else {
        out.push(Violation::new(
            sloc,
            "type_error",
            "a subquery's select must be an object {\"func\", \"arg\"}",
        ));
        return None;
    };
    for k in select
        .keys()
        .filter(|k| !matches!(k.as_str(), "func" | "arg"))
    {
        out.push(Violation::new(
            at(&sloc, k.as_str()),
            "extra_forbidden",
            format!("unknown key \"{k}\" in a subquery's select; expected func, arg"),
        ));
    }
    let func = str_in(select, "func", &sloc)
        .keep(out)
        .and_then(|f| closed(&Func::ALL, "aggregate function", f, at(&sloc, "func")).keep(out));
    let arg = parse_arg(select.get("arg"), table, list, &at(&sloc, "arg"), out);
    let filter = match obj.get("where") {
        None | Some(Value::Null) => None,
        Some(Value::String(w)) => match parse_where(w, &ElementScope(list)) {
            Ok(f) => Some(f),
            Err(msg) => {
                let msg = format!("in the subquery over {}: {msg}", list.name);
                out.push(
                    Violation::value(at(loc, "where"), msg).with_input(Value::from(w.as_str())),
                );
                None
            }
        },
        Some(other) => {
            out.push(
                Violation::new(
                    at(loc, "where"),
                    "type_error",
                    "where must be a string or null",
                )
                .with_input(other.clone()),
            );
            None
        }
    };
    if out.len() > before {
        return None;
    }
    let sq = Subquery {
        func: func?,
        table,
        list,
        arg: arg?,
        filter,
    };
    match sq.input_type() {
        None if sq.func != Func::Count => {
            out.push(Violation::value(
                at(&sloc, "arg"),
                format!(
                    "arg null (the elements themselves) is only allowed with count, not {}; name a field {{\"{}\": \"<field>\"}} or, for a list of scalars, {{\"element\": true}}",
                    sq.func.name(),
                    list.name
                ),
            ));
            None
        }
        Some(t) if !sq.func.accepts(t) => {
            let allowed: Vec<&str> = Func::ALL
                .iter()
                .filter(|(_, g)| g.accepts(t))
                .map(|(n, _)| *n)
                .collect();
            out.push(Violation::value(
                at(&sloc, "func"),
                format!(
                    "{} cannot reduce {} ({}); allowed for this type: {}",
                    sq.func.name(),
                    sq.name().split_once('.').map_or("", |(_, n)| n),
                    t.describe(),
                    allowed.join(", ")
                ),
            ));
            None
        }
        _ => Some(sq),
    }
}

fn parse_from(
    from: Option<&Value>,
    loc: &[Loc],
    out: &mut Vec<Violation>,
) -> Option<(Table, ListColumn)> {
    let expected = "from must be {\"unnest\": {\"<table>\": \"<list column>\"}}";
    let Some(from) = from.and_then(Value::as_object) else {
        out.push(Violation::new(
            loc.to_vec(),
            "missing",
            format!("a subquery needs from; {expected}"),
        ));
        return None;
    };
    for k in from.keys().filter(|k| k.as_str() != "unnest") {
        out.push(Violation::new(
            at(loc, k.as_str()),
            "extra_forbidden",
            format!("unknown key \"{k}\" in from; {expected}"),
        ));
    }
    let uloc = at(loc, "unnest");
    let column = from.get("unnest").and_then(Value::as_object);
    let Some((key, name)) = column
        .filter(|c| c.len() == 1)
        .and_then(|c| c.iter().next())
    else {
        out.push(Violation::value(
            uloc,
            format!("{expected}: one table column"),
        ));
        return None;
    };
    let cloc = at(&uloc, key.as_str());
    let Some(table) = Table::from_name(key) else {
        out.push(Violation::value(
            cloc,
            format!(
                "unnest takes a table's list column, not a \"{key}\" expression; tables with list columns: {}",
                tables_with_lists()
            ),
        ));
        return None;
    };
    let Some(name) = name.as_str() else {
        out.push(Violation::new(
            cloc,
            "type_error",
            "the list column must be a string",
        ));
        return None;
    };
    let lists = || names(table.list_columns().iter().map(|l| l.name));
    if let Some(list) = table.list_column(name) {
        return Some((table, list));
    }
    let msg = match (table.column(name), table.list_columns().is_empty()) {
        (Some(_), true) => format!(
            "cannot unnest {key}.{name}: it is a scalar column and the {key} table has no list columns; tables with list columns: {}",
            tables_with_lists()
        ),
        (Some(_), false) => format!(
            "cannot unnest {key}.{name}: it is a scalar column, not a list; list columns of {key}: {}",
            lists()
        ),
        (None, true) => format!(
            "unknown list column \"{name}\": the {key} table has no list columns; tables with list columns: {}",
            tables_with_lists()
        ),
        (None, false) => format!(
            "unknown list column \"{name}\" of {key}; expected one of: {}",
            lists()
        ),
    };
    out.push(Violation::value(cloc, msg).with_input(Value::from(name)));
    None
}

fn parse_arg(
    arg: Option<&Value>,
    table: Table,
    list: ListColumn,
    loc: &[Loc],
    out: &mut Vec<Violation>,
) -> Option<SubArg> {
    let obj = match arg {
        None | Some(Value::Null) => return Some(SubArg::Elements),
        Some(Value::Object(o)) => o,
        Some(other) => {
            out.push(
                Violation::new(
                    loc.to_vec(),
                    "type_error",
                    format!(
                        "arg must be null, {{\"{}\": \"<field>\"}} or {{\"element\": true}}",
                        list.name
                    ),
                )
                .with_input(other.clone()),
            );
            return None;
        }
    };
    if let Some(flag) = obj.get(ELEMENT) {
        if obj.len() != 1 || flag != &Value::Bool(true) {
            out.push(Violation::value(
                loc.to_vec(),
                "the element arg is exactly {\"element\": true}",
            ));
            return None;
        }
        return match list.element {
            Element::Scalar(k) => Some(SubArg::Element(k)),
            Element::Struct(fields) => {
                out.push(Violation::value(
                    at(loc, ELEMENT),
                    format!(
                        "{{\"element\": true}} is only for lists of scalars; {} holds structs: name one of its fields, {{\"{}\": F}} with F one of: {}",
                        list.name,
                        list.name,
                        names(fields.iter().map(|c| c.name))
                    ),
                ));
                None
            }
        };
    }
    let mut named: Option<(&String, &Value)> = None;
    for (k, v) in obj {
        match k.as_str() {
            "field_for" if v.as_str() == Some(table.name()) => {}
            "field_for" => {
                out.push(Violation::value(
                    at(loc, "field_for"),
                    format!("field_for must be \"{}\", the unnested table", table.name()),
                ));
                return None;
            }
            _ if named.is_none() => named = Some((k, v)),
            _ => {
                out.push(Violation::value(
                    at(loc, k.as_str()),
                    format!(
                        "arg names one field of {}; found a second key \"{k}\"",
                        list.name
                    ),
                ));
                return None;
            }
        }
    }
    let Some((key, field)) = named else {
        out.push(Violation::value(
            loc.to_vec(),
            format!("arg must name a field: {{\"{}\": \"<field>\"}}", list.name),
        ));
        return None;
    };
    if key != list.name {
        out.push(Violation::value(
            at(loc, key.as_str()),
            format!(
                "arg names \"{key}\" but the subquery unnests {}; use {{\"{}\": \"<field>\"}}",
                list.name, list.name
            ),
        ));
        return None;
    }
    let Some(field) = field.as_str() else {
        out.push(Violation::new(
            at(loc, key.as_str()),
            "type_error",
            "the field must be a string",
        ));
        return None;
    };
    match list.element {
        Element::Scalar(_) => {
            out.push(Violation::value(
                at(loc, key.as_str()),
                format!(
                    "{} is a list of scalars with no fields; use {{\"element\": true}}",
                    list.name
                ),
            ));
            None
        }
        Element::Struct(fields) => match list.field(field) {
            Some(c) => Some(SubArg::Field(c)),
            None => {
                out.push(
                    Violation::value(
                        at(loc, key.as_str()),
                        format!(
                            "unknown field \"{field}\" of {}; expected one of: {}",
                            list.name,
                            names(fields.iter().map(|c| c.name))
                        ),
                    )
                    .with_input(Value::from(field)),
                );
                None
            }
        },
    }
}
