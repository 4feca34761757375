//! Provider prioritisation (§3.5) as a plan shape: the first aggregate groups by (group keys,
//! source), where a source is one (provider, source type) pair; this module ranks those
//! sub-groups and keeps the best per group with a second aggregate by the keys alone, whose
//! `best_source` function (`best.rs`) keeps each result of the best-ranked sub-group. No step
//! requires an input order, so no optimiser rewrite of sorts can invalidate the plan.
//!
//! Rank order: source type (`SOURCE_TYPE_PRIORITY`, others after and by name), then provider:
//! request overrides, then the team's order for the data type, then the default order and the
//! rest of the catalogue (`effective_priority`); an unlisted provider ranks last, by slug.
//!
//! Performance: grouping by two strings makes DataFusion convert every row to its row format;
//! instead each pair is interned to an integer code once per run of equal pairs (rows of one
//! source come together), the aggregate groups by that integer, and `best_source` compares codes
//! by their source's position in the order above ([`Sources::ranks`]). The interner is shared
//! by the encoding UDF and the `best_source` aggregate of one query only.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{Array, AsArray, Int64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result as DfResult, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, LogicalPlanBuilder, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::Expr;

use crate::providers::{SOURCE_TYPE_PRIORITY, effective_priority};

use super::best::Best;
use super::expr::column;

/// Internal column names of the provider and source type (row-level ordering).
pub const PROVIDER: &str = "__provider";
/// See [`PROVIDER`].
pub const SOURCE_TYPE: &str = "__source_type";
/// Internal column of the interned (provider, source type) code.
pub const SOURCE: &str = "__source";

/// The provider order for one query: overrides, then the team's order, then the defaults.
pub fn provider_order(overrides: &[String], team: &[String]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for s in overrides.iter().cloned().chain(effective_priority(team)) {
        if !order.contains(&s) {
            order.push(s);
        }
    }
    order
}

/// The (provider, source type) pairs seen by one query, in first-seen order; a pair's code is
/// its position.
#[derive(Debug, Default)]
pub struct Interner {
    /// Every pair seen, in first-seen order.
    pub pairs: Vec<(String, String)>,
}

impl Interner {
    /// The code of a pair, adding it when new.
    pub fn code(&mut self, provider: &str, source_type: &str) -> usize {
        let found = self
            .pairs
            .iter()
            .position(|(p, t)| p == provider && t == source_type);
        found.unwrap_or_else(|| {
            self.pairs
                .push((provider.to_owned(), source_type.to_owned()));
            self.pairs.len() - 1
        })
    }
}

/// The sources of one query: the interner and the provider order.
#[derive(Debug, Clone)]
pub struct Sources {
    interner: Arc<Mutex<Interner>>,
    providers: Arc<Vec<String>>,
}

impl Sources {
    /// Sources ranked by this provider order.
    pub fn new(providers: Vec<String>) -> Self {
        Sources {
            interner: Arc::default(),
            providers: Arc::new(providers),
        }
    }

    /// `code(provider, source_type)`: the interned pair as Int64.
    pub fn code(&self, provider: Expr, source_type: Expr) -> Expr {
        let udf = SourceUdf {
            sources: self.clone(),
            signature: Signature::any(2, Volatility::Immutable),
        };
        ScalarUDF::from(udf).call(vec![provider, source_type])
    }

    /// The rank of every code interned so far (index: code; 0 is the best source). Ranks
    /// compare consistently across calls: a pair interned later takes its place in the same
    /// total order (`rank_key`), so two codes compare alike before and after.
    pub fn ranks(&self) -> DfResult<Vec<usize>> {
        let Ok(interner) = self.interner.lock() else {
            return exec_err!("source interner poisoned");
        };
        let mut rank = vec![0; interner.pairs.len()];
        for (r, code) in ranking(&interner.pairs, &self.providers)
            .into_iter()
            .enumerate()
        {
            rank[code] = r;
        }
        Ok(rank)
    }

    /// Whether both are the sources of one query (functions over them are then equal).
    pub fn same(&self, other: &Sources) -> bool {
        Arc::ptr_eq(&self.interner, &other.interner)
    }

    /// Hashes the query's identity, consistently with [`Sources::same`].
    pub fn hash_identity<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.interner) as usize).hash(state);
    }
}

/// `source_code(provider, source_type)`: interns each pair of one query.
#[derive(Debug)]
struct SourceUdf {
    sources: Sources,
    signature: Signature,
}

impl PartialEq for SourceUdf {
    fn eq(&self, other: &Self) -> bool {
        self.sources.same(&other.sources)
    }
}
impl Eq for SourceUdf {}
impl Hash for SourceUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.sources.hash_identity(state);
    }
}

fn rank_of(list: impl Iterator<Item = impl AsRef<str>>, s: &str, len: usize) -> i64 {
    list.into_iter()
        .position(|x| x.as_ref() == s)
        .unwrap_or(len) as i64
}

/// The sort key of one source (§3.5): source type rank and name, provider rank and name;
/// smaller is better. The plan's ranking columns sort by the same four values.
pub fn rank_key(
    providers: &[String],
    provider: &str,
    source_type: &str,
) -> (i64, String, i64, String) {
    (
        rank_of(
            SOURCE_TYPE_PRIORITY.iter(),
            source_type,
            SOURCE_TYPE_PRIORITY.len(),
        ),
        source_type.to_owned(),
        rank_of(providers.iter(), provider, providers.len()),
        provider.to_owned(),
    )
}

/// The codes of `pairs` (positions), best source first (§3.5).
pub fn ranking(pairs: &[(String, String)], providers: &[String]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by_cached_key(|&i| rank_key(providers, &pairs[i].0, &pairs[i].1));
    order
}

impl ScalarUDFImpl for SourceUdf {
    fn name(&self) -> &str {
        "source_code"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Int64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let a = ColumnarValue::values_to_arrays(&args.args)?;
        let Ok(mut interner) = self.sources.interner.lock() else {
            return exec_err!("source interner poisoned");
        };
        let (Some(p), Some(t)) = (a[0].as_string_opt::<i32>(), a[1].as_string_opt::<i32>()) else {
            return exec_err!("source code expects two strings");
        };
        let mut last: Option<(&str, &str, i64)> = None;
        let out: Int64Array = (0..p.len())
            .map(|i| {
                let (pv, tv) = (
                    if p.is_valid(i) { p.value(i) } else { "" },
                    if t.is_valid(i) { t.value(i) } else { "" },
                );
                match last {
                    Some((lp, lt, c)) if lp == pv && lt == tv => Some(c),
                    _ => {
                        let c = interner.code(pv, tv) as i64;
                        last = Some((pv, tv, c));
                        Some(c)
                    }
                }
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

/// Keeps, per group of `keys`, the sub-group of the best (source type, provider): the input
/// holds one row per (keys, [`SOURCE`]); each of `results` becomes its best-source value.
pub fn keep_best(
    plan: LogicalPlanBuilder,
    keys: Vec<Expr>,
    results: &[String],
    sources: &Sources,
) -> DfResult<LogicalPlanBuilder> {
    let best = results
        .iter()
        .map(|r| Best::call(sources, column(r), column(SOURCE)).alias(r.as_str()))
        .collect::<Vec<_>>();
    plan.aggregate(keys, best)
}
