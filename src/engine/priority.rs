//! Provider prioritisation (§3.5) as a plan shape: the first aggregate groups by (group keys,
//! provider, source type); this module ranks those sub-groups and keeps the best per group with
//! `row_number() OVER (PARTITION BY keys ORDER BY rank)`.
//!
//! Rank order: source type (`SOURCE_TYPE_PRIORITY`, others after and by name), then provider:
//! request overrides, then the team's order for the data type, then the default order and the
//! rest of the catalogue (`effective_priority`); an unlisted provider ranks last, by slug.
//! A rank is a small UDF (a position in a list) rather than a `CASE` with dozens of branches,
//! which keeps planning cheap.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result as DfResult, exec_err};
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{
    ColumnarValue, ExprFunctionExt, LogicalPlanBuilder, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, SortExpr, Volatility,
};
use datafusion::prelude::{Expr, lit};

use crate::providers::{SOURCE_TYPE_PRIORITY, effective_priority};

use super::expr::column;

/// Internal column names of the provider and source type of a sub-group.
pub const PROVIDER: &str = "__provider";
/// See [`PROVIDER`].
pub const SOURCE_TYPE: &str = "__source_type";
const ROW: &str = "__best";

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

/// `rank(s)`: the position of `s` in a list, or the list's length when absent.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Rank {
    name: String,
    order: Vec<String>,
    signature: Signature,
}

impl ScalarUDFImpl for Rank {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Int64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let Some(s) = arrays[0].as_string_opt::<i32>() else {
            return exec_err!("rank expects a string, got {}", arrays[0].data_type());
        };
        let last = self.order.len() as i64;
        let out: Int64Array = (0..s.len())
            .map(|i| {
                let pos = s
                    .is_valid(i)
                    .then(|| self.order.iter().position(|o| o == s.value(i)));
                Some(pos.flatten().map_or(last, |p| p as i64))
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

fn rank(col: &str, name: &str, order: Vec<String>) -> Expr {
    let udf = Rank {
        name: name.to_owned(),
        order,
        signature: Signature::any(1, Volatility::Immutable),
    };
    ScalarUDF::from(udf).call(vec![column(col)])
}

/// Keeps, per group of `keys`, the sub-group of the best (source type, provider).
pub fn keep_best(
    plan: LogicalPlanBuilder,
    keys: Vec<Expr>,
    providers: Vec<String>,
) -> DfResult<LogicalPlanBuilder> {
    let types = SOURCE_TYPE_PRIORITY
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let order: Vec<SortExpr> = vec![
        rank(SOURCE_TYPE, "source_type_rank", types).sort(true, true),
        column(SOURCE_TYPE).sort(true, true),
        rank(PROVIDER, "provider_rank", providers).sort(true, true),
        column(PROVIDER).sort(true, true),
    ];
    let best = row_number()
        .partition_by(keys)
        .order_by(order)
        .build()?
        .alias(ROW);
    plan.window(vec![best])?.filter(column(ROW).eq(lit(1u64)))
}
