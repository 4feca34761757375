//! ALIGN (`analytics.md` §1) in the reference evaluator, written from the spec with chrono and
//! the reference's own `trunc`, sharing nothing with the engine's operator: the grouped rows are
//! split by their non-date keys, each partition laid on its spine (the observed buckets, the cap's
//! extension inside the window, the forward one not past the bucket of now), and every select
//! column carried on its own, a step at a time.

use chrono::{Duration, Months, NaiveDateTime};
use wearhouse::engine::{CarryMode, GroupBy, Period, Query, SelectKind, Unit};

use super::calendar::trunc;
use super::reference::RV;

/// A grouped row: its group key and its select cells.
pub type Grouped = (Vec<RV>, Vec<RV>);

/// `t + p`, calendar months clamped.
fn add(t: NaiveDateTime, p: Period) -> NaiveDateTime {
    let n = i64::from(p.value);
    match p.unit {
        Unit::Minute => t + Duration::minutes(n),
        Unit::Hour => t + Duration::hours(n),
        Unit::Day => t + Duration::days(n),
        Unit::Week => t + Duration::weeks(n),
        Unit::Month => t.checked_add_months(Months::new(p.value)).unwrap(),
        Unit::Year => t.checked_add_months(Months::new(p.value * 12)).unwrap(),
    }
}

fn bucket(v: &RV) -> NaiveDateTime {
    match v {
        RV::Floating(t) => *t,
        other => panic!("date key {other:?}"),
    }
}

/// The rows `(group key, select cells)` of an aligned query, unsorted. `window` is the
/// floating `[start, end)`, `now` the floating instant of the request.
pub fn align(
    q: &Query,
    rows: Vec<Grouped>,
    window: (NaiveDateTime, NaiveDateTime),
    now: Option<NaiveDateTime>,
) -> Vec<Grouped> {
    let Some(carry) = q.align.map(|a| a.carry) else {
        return rows;
    };
    let (d, p) = q
        .group_by
        .iter()
        .enumerate()
        .find_map(|(i, g)| match g {
            GroupBy::DateTrunc(p) => Some((i, *p)),
            _ => None,
        })
        .unwrap();
    let tr = |t: NaiveDateTime| trunc(t, p.value, p.unit);
    let next = |b: NaiveDateTime| tr(add(b, p));
    let prev = |b: NaiveDateTime| tr(b - Duration::microseconds(1));
    let (win_lo, win_hi) = (tr(window.0), tr(window.1 - Duration::microseconds(1)));
    let others = |k: &[RV]| -> Vec<RV> {
        k.iter()
            .enumerate()
            .filter(|(i, _)| *i != d)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let mut parts: Vec<(Vec<RV>, Vec<Grouped>)> = Vec::new();
    for row in rows {
        let o = others(&row.0);
        match parts.iter_mut().find(|(k, _)| *k == o) {
            Some((_, members)) => members.push(row),
            None => parts.push((o, vec![row])),
        }
    }
    let within = |a: NaiveDateTime, b: NaiveDateTime| {
        carry.cap.is_none_or(|cap| {
            if a <= b {
                add(a, cap) >= b
            } else {
                add(b, cap) >= a
            }
        })
    };
    let mut out = Vec::new();
    for (_, mut members) in parts {
        members.sort_by_key(|(k, _)| bucket(&k[d]));
        let first = bucket(&members[0].0[d]);
        let last = bucket(&members[members.len() - 1].0[d]);
        let (mut lo, mut hi) = (first, last);
        if let Some(cap) = carry.cap {
            if carry.mode != CarryMode::Forward {
                while lo > win_lo && prev(lo) >= win_lo && add(prev(lo), cap) >= first {
                    lo = prev(lo);
                }
            }
            if carry.mode != CarryMode::Backward {
                let stop = now.map_or(win_hi, |n| tr(n).min(win_hi));
                while next(hi) <= stop && add(last, cap) >= next(hi) {
                    hi = next(hi);
                }
            }
        }
        let mut spine = vec![lo];
        while next(spine[spine.len() - 1]) <= hi {
            spine.push(next(spine[spine.len() - 1]));
        }
        let at: Vec<Option<&Grouped>> = spine
            .iter()
            .map(|b| members.iter().find(|(k, _)| bucket(&k[d]) == *b))
            .collect();
        let template = members[0].0.clone();
        for (j, b) in spine.iter().enumerate() {
            let mut key = template.clone();
            key[d] = RV::Floating(*b);
            let cells = q
                .select
                .iter()
                .enumerate()
                .map(|(c, item)| match item.kind {
                    SelectKind::GroupKey(n) => key[n].clone(),
                    _ => {
                        let has = |i: usize| at[i].is_some_and(|r| r.1[c] != RV::Null);
                        if has(j) {
                            return at[j].unwrap().1[c].clone();
                        }
                        let past = (0..j)
                            .rev()
                            .find(|i| has(*i))
                            .filter(|i| within(spine[*i], *b));
                        let future = (j + 1..spine.len())
                            .find(|i| has(*i))
                            .filter(|i| within(*b, spine[*i]));
                        let pick = match carry.mode {
                            CarryMode::Forward => past,
                            CarryMode::Backward => future,
                            CarryMode::Nearest => match (past, future) {
                                (Some(p), Some(f)) if f - j < j - p => Some(f),
                                (Some(p), _) => Some(p),
                                (None, f) => f,
                            },
                        };
                        pick.map_or(RV::Null, |i| at[i].unwrap().1[c].clone())
                    }
                })
                .collect();
            out.push((key, cells));
        }
    }
    out
}
