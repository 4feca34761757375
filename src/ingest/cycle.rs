//! The `menstrual_cycle` record's own members (`analytics.md` §3): the cycle's dates and its
//! list-of-struct entries, parsed from a push and rendered back in the reference's
//! `ClientFacingMenstrualCycle` shape.
//!
//! Decisions where the spec is silent:
//! - `period_start` is required; `period_end` and `cycle_end` may not be before it.
//!   `is_predicted` defaults to `false` (the reference's default).
//! - The id is derived from (user, provider, source type, `period_start`) when not given, so
//!   re-pushing a cycle replaces it.
//! - Every entry needs its `date` and, except `sexual_activity.protection_used`, its value (the
//!   reference's required fields); enumerated values are the reference's closed sets; a basal
//!   body temperature is 30–45 °C. An entry's date is not required to fall inside the cycle
//!   (providers report entries logged a day late). An absent or null list is stored empty and
//!   renders as `[]`, as the reference's lists are never null.

use serde_json::Value;

use super::columns::{Cell, Row};
use super::context::Ctx;
use super::summary::{derive_id, epoch_days};
use super::zone::date_string;
use crate::schema::{Kind, ListColumn, Table, allowed_element_values};
use crate::validation::read::{self, Obj, at};
use crate::validation::{Loc, Violation};

/// The sane range of a basal body temperature, °C.
const BASAL_TEMPERATURE: (f64, f64) = (30.0, 45.0);

/// Whether `key` is a member the cycle code reads itself (its list columns).
pub(crate) fn own_member(key: &str) -> bool {
    Table::MenstrualCycle.list_column(key).is_some()
}

fn date_of(row: &Row, column: &str) -> Option<i32> {
    match row.get(column) {
        Some(Cell::Date(d)) => Some(*d),
        _ => None,
    }
}

/// Fills the cycle's derived cells and entries; the scalar columns are already in `row`.
pub(crate) fn parse(obj: &Obj, loc: &[Loc], ctx: &Ctx, row: &mut Row) -> Result<(), Violation> {
    let start = read::required(date_of(row, "period_start"), loc, "period_start")?;
    for end in ["period_end", "cycle_end"] {
        if date_of(row, end).is_some_and(|d| d < start) {
            return Err(Violation::value(
                at(loc, end),
                format!("{end} must not be before period_start"),
            )
            .with_input(obj.get(end).cloned().unwrap_or(Value::Null)));
        }
    }
    if row.get("is_predicted").is_none_or(|c| *c == Cell::Null) {
        row.set("is_predicted", Cell::Bool(false));
    }
    for list in Table::MenstrualCycle.list_columns() {
        row.set(list.name, Cell::Entries(entries(obj, list, loc)?));
    }
    let id = match read::string(obj, "id", loc)? {
        Some(id) if !id.is_empty() => id.to_owned(),
        Some(_) => return Err(Violation::value(at(loc, "id"), "id must not be empty")),
        None => derive_id(&[
            &ctx.user,
            ctx.provider,
            &ctx.source_type,
            "menstrual_cycle",
            &date_string(start),
        ]),
    };
    row.set("id", Cell::Str(id));
    Ok(())
}

fn entries(obj: &Obj, list: &ListColumn, loc: &[Loc]) -> Result<Vec<Vec<Cell>>, Violation> {
    let Some(raw) = obj.get(list.name).filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let here = at(loc, list.name);
    let mut out = Vec::new();
    for (i, item) in read::array(raw, &here)?.iter().enumerate() {
        let eloc = at(&here, i);
        let entry = read::object(item, &eloc)?;
        read::forbid_extra(entry, &eloc, |k| list.field(k).is_some())?;
        let mut cells = Vec::with_capacity(list.fields().len());
        for field in list.fields() {
            let optional = field.name == "protection_used";
            let cell = match field.kind {
                Kind::Date => {
                    read::date(entry, field.name, &eloc)?.map(|d| Cell::Date(epoch_days(d)))
                }
                Kind::Str => match read::string(entry, field.name, &eloc)? {
                    Some(s) => {
                        if let Some(allowed) = allowed_element_values(list.name, field.name) {
                            read::one_of(s, allowed, field.name, &eloc)?;
                        }
                        Some(Cell::Str(s.to_owned()))
                    }
                    None => None,
                },
                Kind::Bool => read::boolean(entry, field.name, &eloc)?.map(Cell::Bool),
                Kind::Float => match read::float(entry, field.name, &eloc)? {
                    Some(v) => {
                        read::in_range(v, BASAL_TEMPERATURE, entry, field.name, &eloc)?;
                        Some(Cell::Float(v))
                    }
                    None => None,
                },
                Kind::Int | Kind::Instant => None,
            };
            let cell = match cell {
                Some(c) => c,
                None if optional => Cell::Null,
                None => return Err(read::missing(&eloc, field.name)),
            };
            cells.push(cell);
        }
        out.push(cells);
    }
    Ok(out)
}
