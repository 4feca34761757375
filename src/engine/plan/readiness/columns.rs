//! Reading the collected inputs of `derived_readiness`: typed columns by name, and each row's
//! source as a code ranked by §3.5's order, so every input keeps its best source per day.

use std::collections::BTreeMap;

use datafusion::arrow::array::PrimitiveArray;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, Date32Type, Float64Type, Int64Type, TimestampMicrosecondType,
};
use datafusion::common::{Result, internal_err};

use crate::engine::plan::priority::rank_key;

pub(super) fn col<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef> {
    match b.column_by_name(name) {
        Some(c) => Ok(c),
        None => internal_err!("readiness input lacks {name}"),
    }
}
pub(super) fn strs<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a StringArray> {
    match col(b, name)?.as_string_opt::<i32>() {
        Some(a) => Ok(a),
        None => internal_err!("readiness input {name} is not a string"),
    }
}
pub(super) fn ints<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a Int64Array> {
    match col(b, name)?.as_primitive_opt::<Int64Type>() {
        Some(a) => Ok(a),
        None => internal_err!("readiness input {name} is not an Int64"),
    }
}
pub(super) fn floats<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a Float64Array> {
    match col(b, name)?.as_primitive_opt::<Float64Type>() {
        Some(a) => Ok(a),
        None => internal_err!("readiness input {name} is not a Float64"),
    }
}
pub(super) fn times<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a TimestampMicrosecondArray> {
    match col(b, name)?.as_primitive_opt::<TimestampMicrosecondType>() {
        Some(a) => Ok(a),
        None => internal_err!("readiness input {name} is not a timestamp"),
    }
}
pub(super) fn dates<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a Date32Array> {
    match col(b, name)?.as_primitive_opt::<Date32Type>() {
        Some(a) => Ok(a),
        None => internal_err!("readiness input {name} is not a date"),
    }
}
pub(super) fn get<T: ArrowPrimitiveType>(a: &PrimitiveArray<T>, i: usize) -> Option<T::Native> {
    a.is_valid(i).then(|| a.value(i))
}
pub(super) fn text(a: &StringArray, i: usize) -> Option<&str> {
    a.is_valid(i).then(|| a.value(i))
}

/// The (provider, source type) pairs of one input, a code per row (runs of one source are
/// looked up once).
pub(super) struct Codes {
    pub(super) pairs: Vec<(String, String)>,
    pub(super) rows: Vec<usize>,
}

impl Codes {
    pub(super) fn of(b: &RecordBatch) -> Result<Codes> {
        let (p, t) = (strs(b, "source_provider")?, strs(b, "source_type")?);
        let mut codes = Codes {
            pairs: Vec::new(),
            rows: Vec::with_capacity(b.num_rows()),
        };
        let mut last: Option<(&str, &str, usize)> = None;
        for i in 0..b.num_rows() {
            let (pv, tv) = (text(p, i).unwrap_or(""), text(t, i).unwrap_or(""));
            let code = match last {
                Some((lp, lt, c)) if lp == pv && lt == tv => c,
                _ => {
                    let c = match codes.pairs.iter().position(|(a, b)| a == pv && b == tv) {
                        Some(c) => c,
                        None => {
                            codes.pairs.push((pv.to_owned(), tv.to_owned()));
                            codes.pairs.len() - 1
                        }
                    };
                    last = Some((pv, tv, c));
                    c
                }
            };
            codes.rows.push(code);
        }
        Ok(codes)
    }

    /// The best of `present` by §3.5's rank under `order`.
    pub(super) fn best(
        &self,
        present: impl IntoIterator<Item = usize>,
        order: &[String],
    ) -> Option<usize> {
        present
            .into_iter()
            .min_by_key(|&c| rank_key(order, &self.pairs[c].0, &self.pairs[c].1))
    }
}

/// The rows of each day, by source code.
pub(super) type ByDay = BTreeMap<i64, Vec<usize>>;

pub(super) fn best_rows(
    by_day: &ByDay,
    codes: &Codes,
    order: &[String],
) -> BTreeMap<i64, Vec<usize>> {
    by_day
        .iter()
        .filter_map(|(day, rows)| {
            let best = codes.best(rows.iter().map(|r| codes.rows[*r]), order)?;
            let kept = rows.iter().copied().filter(|r| codes.rows[*r] == best);
            Some((*day, kept.collect()))
        })
        .collect()
}
