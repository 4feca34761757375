//! `oldest` / `newest` (§3.6) as an aggregate UDF of our own: the non-null value at the
//! earliest / latest index time of the group, ties going to the most recently ingested row.
//!
//! DataFusion's `first_value(x ORDER BY t, i)` gives the same answer but keeps a sort key per
//! group and compares rows generically; this one takes `(value, time, ingested)` and, per
//! batch, finds each group's winning row with two integer comparisons, converting only the
//! winners to scalars. It is the difference between 8 ms and well under 1 ms on 130 000 rows.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array};
use datafusion::arrow::compute::{cast, nullif};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Int64Type};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};
use datafusion::prelude::Expr;

/// The aggregate: `pick(value, index_time, ingested_at)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Pick {
    newest: bool,
    signature: Signature,
}

impl Pick {
    /// `newest(value)` (or `oldest`) as an expression over the given time columns.
    pub fn call(newest: bool, value: Expr, time: Expr, ingested: Expr) -> Expr {
        let udaf = Pick {
            newest,
            signature: Signature::any(3, Volatility::Immutable),
        };
        AggregateUDF::from(udaf).call(vec![value, time, ingested])
    }
}

impl AggregateUDFImpl for Pick {
    fn name(&self) -> &str {
        if self.newest { "newest" } else { "oldest" }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(t) => Ok(t.clone()),
            None => exec_err!("{} needs a value", self.name()),
        }
    }
    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let dt = args.return_field.data_type().clone();
        Ok(Box::new(One {
            state: Groups::new(self.newest, dt),
        }))
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(value_and_keys(&args, &["time", "ingested"]))
    }
    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }
    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(Groups::new(
            self.newest,
            args.return_field.data_type().clone(),
        )))
    }
}

/// The state of an aggregate that keeps one winning value per group: the value, then the
/// `Int64` keys it won by (nullable: a group may have seen no row).
pub(super) fn value_and_keys(args: &StateFieldsArgs, keys: &[&str]) -> Vec<FieldRef> {
    let value = Field::new(
        format_state_name(args.name, "value"),
        args.return_type().clone(),
        true,
    );
    let keys = keys
        .iter()
        .map(|k| Field::new(format_state_name(args.name, k), DataType::Int64, true));
    std::iter::once(value).chain(keys).map(Arc::new).collect()
}

/// Per-group winners.
#[derive(Debug)]
struct Groups {
    newest: bool,
    data_type: DataType,
    /// (index time, ingestion time) of each group's winner so far.
    best: Vec<Option<(i64, i64)>>,
    values: Vec<ScalarValue>,
    /// Scratch: the winning row of the current batch per group, and the groups touched.
    pending: Vec<Option<u32>>,
    touched: Vec<usize>,
}

fn as_i64(a: &ArrayRef) -> Result<Int64Array> {
    Ok(cast(a, &DataType::Int64)?
        .as_primitive::<Int64Type>()
        .clone())
}

impl Groups {
    fn new(newest: bool, data_type: DataType) -> Self {
        Groups {
            newest,
            data_type,
            best: Vec::new(),
            values: Vec::new(),
            pending: Vec::new(),
            touched: Vec::new(),
        }
    }

    fn better(&self, a: (i64, i64), b: Option<(i64, i64)>) -> bool {
        match b {
            None => true,
            Some(b) if a.0 == b.0 => a.1 > b.1,
            Some(b) => (a.0 > b.0) == self.newest,
        }
    }

    fn update(
        &mut self,
        values: &[ArrayRef],
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        let [value, time, ingested] = values else {
            return exec_err!("oldest/newest take (value, time, ingested)");
        };
        let (time, ingested) = (as_i64(time)?, as_i64(ingested)?);
        if self.best.len() < total {
            self.best.resize(total, None);
            self.values
                .resize(total, ScalarValue::try_from(&self.data_type)?);
            self.pending.resize(total, None);
        }
        for (row, &g) in groups.iter().enumerate() {
            let skip = value.is_null(row)
                || time.is_null(row)
                || filter.is_some_and(|f| !f.is_valid(row) || !f.value(row));
            if skip {
                continue;
            }
            let key = (
                time.value(row),
                if ingested.is_null(row) {
                    i64::MIN
                } else {
                    ingested.value(row)
                },
            );
            let current = match self.pending[g] {
                Some(r) => Some((time.value(r as usize), ingested.value(r as usize))),
                None => self.best[g],
            };
            if self.better(key, current) {
                if self.pending[g].is_none() {
                    self.touched.push(g);
                }
                self.pending[g] = Some(row as u32);
            }
        }
        for g in std::mem::take(&mut self.touched) {
            if let Some(r) = self.pending[g].take() {
                let r = r as usize;
                self.best[g] = Some((time.value(r), ingested.value(r)));
                self.values[g] = ScalarValue::try_from_array(value, r)?;
            }
        }
        Ok(())
    }

    fn take(&mut self, emit_to: EmitTo) -> (Vec<ScalarValue>, Vec<Option<(i64, i64)>>) {
        let values = emit_to.take_needed(&mut self.values);
        let best = emit_to.take_needed(&mut self.best);
        let _ = emit_to.take_needed(&mut self.pending);
        (values, best)
    }

    fn to_array(&self, values: Vec<ScalarValue>) -> Result<ArrayRef> {
        if values.is_empty() {
            return Ok(datafusion::arrow::array::new_empty_array(&self.data_type));
        }
        ScalarValue::iter_to_array(values)
    }
}

impl GroupsAccumulator for Groups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        self.update(values, groups, filter, total)
    }
    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let (values, _) = self.take(emit_to);
        self.to_array(values)
    }
    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let (values, best) = self.take(emit_to);
        let times: Int64Array = best.iter().map(|b| b.map(|b| b.0)).collect();
        let ingested: Int64Array = best.iter().map(|b| b.map(|b| b.1)).collect();
        Ok(vec![
            self.to_array(values)?,
            Arc::new(times),
            Arc::new(ingested),
        ])
    }
    fn merge_batch(&mut self, values: &[ArrayRef], groups: &[usize], total: usize) -> Result<()> {
        self.update(values, groups, None, total)
    }
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let [value, time, ingested] = values else {
            return exec_err!("oldest/newest take (value, time, ingested)");
        };
        let drop: BooleanArray = (0..value.len())
            .map(|i| {
                let kept = filter.is_none_or(|f| f.is_valid(i) && f.value(i));
                Some(value.is_null(i) || time.is_null(i) || !kept)
            })
            .collect();
        let time: ArrayRef = Arc::new(as_i64(time)?);
        let ingested: ArrayRef = Arc::new(as_i64(ingested)?);
        Ok(vec![
            nullif(value, &drop)?,
            nullif(&time, &drop)?,
            nullif(&ingested, &drop)?,
        ])
    }
    fn size(&self) -> usize {
        self.best.capacity() * 24 + self.values.capacity() * 64 + self.pending.capacity() * 8
    }
}

/// The single-group form DataFusion uses without GROUP BY.
#[derive(Debug)]
struct One {
    state: Groups,
}

impl Accumulator for One {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let n = values.first().map_or(0, |v| v.len());
        self.state.update(values, &vec![0; n], None, 1)
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        match self.state.values.first() {
            Some(v) => Ok(v.clone()),
            None => ScalarValue::try_from(&self.state.data_type),
        }
    }
    fn size(&self) -> usize {
        std::mem::size_of::<Self>() + self.state.size()
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let value = self.evaluate()?;
        let best = self.state.best.first().copied().flatten();
        Ok(vec![
            value,
            ScalarValue::Int64(best.map(|b| b.0)),
            ScalarValue::Int64(best.map(|b| b.1)),
        ])
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }
}
