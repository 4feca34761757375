//! The ALIGN clause of `analytics.md` §1: `"align": {"carry": C}` on a query, its typed form
//! ([`Align`]) and its rules. The planner's half is `plan/align/`.
//!
//! Rules (each a 422 located like the rest of the language): the query has a `date_trunc`
//! (located at `align`); no `date_part` next to it (at that `group_by` item); every group-by
//! column is selected (at `select`); `max_age`/`span` is at least one `date_trunc` period (at
//! the cap).
//!
//! Decision where the spec is silent: "at least one period" must hold for every bucket, so a
//! cap's shortest length is compared with the bucket's longest: minutes to weeks are fixed
//! lengths, a month is 28 to 31 days and a year 365 to 366; months against months (a year is
//! twelve) compare exactly. So `max_age` of 30 days is refused for monthly buckets (it could
//! not reach from 1 February to 1 March) and 1 month is accepted for 28-day buckets.

use serde_json::Value;

use crate::validation::read::{Collect, at, closed, keys_in, object_named, str_in};
use crate::validation::{Loc, Violation};

use super::request::{GroupBy, Period, SelectItem, SelectKind, Unit, parse_period};

/// A validated ALIGN clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Align {
    /// How empty buckets are filled.
    pub carry: Carry,
}

/// A carry operator and its cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Carry {
    /// Which neighbours a bucket may take a value from.
    pub mode: CarryMode,
    /// `max_age` (forward, backward) or `span` (nearest); `None` carries without limit.
    pub cap: Option<Period>,
}

/// The carry operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CarryMode {
    /// The most recent earlier non-empty bucket.
    Forward,
    /// The nearest later non-empty bucket.
    Backward,
    /// The nearest either way; a tie takes the past.
    Nearest,
}

impl CarryMode {
    /// Every mode with its wire name.
    pub const ALL: [(&'static str, CarryMode); 3] = [
        ("carry_forward", CarryMode::Forward),
        ("carry_backward", CarryMode::Backward),
        ("carry_nearest", CarryMode::Nearest),
    ];

    /// The name of its cap member.
    pub fn cap_name(self) -> &'static str {
        match self {
            CarryMode::Nearest => "span",
            CarryMode::Forward | CarryMode::Backward => "max_age",
        }
    }
}

/// Parses `align` (a strict object, `carry` required).
pub(crate) fn parse_align(v: &Value, loc: &[Loc], out: &mut Vec<Violation>) -> Option<Align> {
    let obj = object_named(v, loc, "align").keep(out)?;
    keys_in(obj, &["carry"], loc, out);
    let cloc = at(loc, "carry");
    let Some(carry) = obj.get("carry") else {
        out.push(Violation::new(
            cloc,
            "missing",
            "carry is required: {\"mode\": \"carry_forward\" | \"carry_backward\" | \"carry_nearest\", ...}",
        ));
        return None;
    };
    let carry = object_named(carry, &cloc, "carry").keep(out)?;
    let mode = str_in(carry, "mode", &cloc)
        .keep(out)
        .and_then(|m| closed(&CarryMode::ALL, "carry mode", m, at(&cloc, "mode")).keep(out))?;
    let cap_name = mode.cap_name();
    keys_in(carry, &["mode", cap_name], &cloc, out);
    let cap = match carry.get(cap_name) {
        None | Some(Value::Null) => None,
        Some(p) => Some(parse_period(p, &at(&cloc, cap_name), out)?),
    };
    Some(Align {
        carry: Carry { mode, cap },
    })
}

/// Checks the §1 rules of `align` against the query's group-by and select lists.
pub(crate) fn check_align(
    align: &Align,
    group_by: &[(GroupBy, Vec<Loc>)],
    select: &[SelectItem],
    query_loc: &[Loc],
    out: &mut Vec<Violation>,
) {
    let aloc = at(query_loc, "align");
    let trunc = group_by.iter().find_map(|(g, _)| match g {
        GroupBy::DateTrunc(p) => Some(*p),
        _ => None,
    });
    let Some(trunc) = trunc else {
        out.push(Violation::value(
            aloc,
            "align needs a date_trunc in group_by: it fills the empty buckets of that date_trunc",
        ));
        return;
    };
    for (g, loc) in group_by {
        if matches!(g, GroupBy::DatePart(_)) {
            out.push(Violation::value(
                loc.clone(),
                "align cannot be used with a date_part next to the date_trunc",
            ));
        }
    }
    let missing: Vec<String> = (0..group_by.len())
        .filter(|i| {
            !select
                .iter()
                .any(|s| matches!(s.kind, SelectKind::GroupKey(k) if k == *i))
        })
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        out.push(Violation::value(
            at(query_loc, "select"),
            format!(
                "align needs every group_by column selected; missing group_key {} (select {{\"group_key\": \"*\"}})",
                missing.join(", ")
            ),
        ));
    }
    if let Some(cap) = align.carry.cap
        && !reaches(cap, trunc)
    {
        let name = align.carry.mode.cap_name();
        out.push(Violation::value(
            at(&at(&aloc, "carry"), name),
            format!(
                "{name} must be at least one date_trunc period ({} {})",
                trunc.value,
                unit_name(trunc.unit)
            ),
        ));
    }
}

fn unit_name(u: Unit) -> &'static str {
    Unit::ALL
        .iter()
        .find(|(_, x)| *x == u)
        .map(|(n, _)| *n)
        .unwrap_or("")
}

/// Seconds of a fixed unit; `None` for months and years.
fn fixed_seconds(u: Unit) -> Option<u64> {
    match u {
        Unit::Minute => Some(60),
        Unit::Hour => Some(3_600),
        Unit::Day => Some(86_400),
        Unit::Week => Some(7 * 86_400),
        Unit::Month | Unit::Year => None,
    }
}

/// (shortest, longest) length of a period, in seconds.
fn bounds(p: Period) -> (u64, u64) {
    let n = u64::from(p.value);
    let day = 86_400;
    match (fixed_seconds(p.unit), p.unit) {
        (Some(s), _) => (n * s, n * s),
        (None, Unit::Year) => (n * 365 * day, n * 366 * day),
        (None, _) => (n * 28 * day, n * 31 * day),
    }
}

/// Whether a cap is at least one `trunc` period for every bucket.
pub(crate) fn reaches(cap: Period, trunc: Period) -> bool {
    let months = |p: Period| match p.unit {
        Unit::Month => Some(u64::from(p.value)),
        Unit::Year => Some(12 * u64::from(p.value)),
        _ => None,
    };
    if let (Some(c), Some(t)) = (months(cap), months(trunc)) {
        return c >= t;
    }
    bounds(cap).0 >= bounds(trunc).1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(value: u32, unit: Unit) -> Period {
        Period { value, unit }
    }

    #[test]
    fn caps_reach_a_period_for_every_bucket() {
        assert!(reaches(p(1, Unit::Day), p(1, Unit::Day)));
        assert!(reaches(p(24, Unit::Hour), p(1, Unit::Day)));
        assert!(!reaches(p(23, Unit::Hour), p(1, Unit::Day)));
        assert!(reaches(p(1, Unit::Week), p(7, Unit::Day)));
        assert!(!reaches(p(30, Unit::Day), p(1, Unit::Month)));
        assert!(reaches(p(31, Unit::Day), p(1, Unit::Month)));
        assert!(reaches(p(1, Unit::Month), p(28, Unit::Day)));
        assert!(!reaches(p(1, Unit::Month), p(29, Unit::Day)));
        assert!(reaches(p(1, Unit::Year), p(12, Unit::Month)));
        assert!(!reaches(p(11, Unit::Month), p(1, Unit::Year)));
        assert!(reaches(p(1, Unit::Year), p(52, Unit::Week)));
    }
}
