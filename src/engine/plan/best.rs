//! `best(value, source)`: the aggregate that keeps, per group, the value of the row whose source
//! ranks best (§3.5). The general plan's second aggregate: the first groups by (keys, source),
//! so each of its rows is one source's sub-group; this one groups those rows by the keys alone
//! and keeps, for every result column, the sub-group of the best source.
//!
//! Why an aggregate and not `row_number() OVER (PARTITION BY keys ORDER BY rank) = 1`: the
//! window makes the plan's correctness rest on an ordering requirement, and DataFusion's
//! physical optimiser can break that requirement's proof after placing the sort (a WHERE that
//! pins a group key makes the key constant, the sort leaves it out, then a projection pushed
//! into the filter forgets the constant: SanityCheckPlan refuses the plan). A hash aggregate
//! requires no input order at all, and is no slower than sorting every sub-group.
//!
//! Sources are compared by their §3.5 rank key (`priority::rank_key`), a total order that does
//! not depend on which sources were seen first, so the answer is the same however the rows are
//! batched. Nulls are values like any other here: the best source's result is kept even when
//! it is null (its own aggregate over all-null inputs), as §3.6 requires.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, new_empty_array, new_null_array,
};
use datafusion::arrow::compute::{interleave, nullif};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Int64Type};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};
use datafusion::prelude::Expr;

use super::priority::Sources;

/// The aggregate `best(value, source code)` of one query's sources.
#[derive(Debug)]
pub struct Best {
    sources: Sources,
    signature: Signature,
}

impl Best {
    /// `best(value, code)`: the value of the row whose source code ranks best.
    pub fn call(sources: &Sources, value: Expr, code: Expr) -> Expr {
        let udaf = Best {
            sources: sources.clone(),
            signature: Signature::any(2, Volatility::Immutable),
        };
        AggregateUDF::from(udaf).call(vec![value, code])
    }
}

impl PartialEq for Best {
    fn eq(&self, other: &Self) -> bool {
        self.sources.same(&other.sources)
    }
}
impl Eq for Best {}
impl Hash for Best {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.sources.hash_identity(state);
    }
}

impl AggregateUDFImpl for Best {
    fn name(&self) -> &str {
        "best_source"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(t) => Ok(t.clone()),
            None => exec_err!("best_source needs a value"),
        }
    }
    /// The value's field: a group's result is its best sub-group's, nullable only if the
    /// sub-groups' results are (every group has a best sub-group).
    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        match arg_fields.first() {
            Some(f) => Ok(Arc::new(Field::new(
                self.name(),
                f.data_type().clone(),
                f.is_nullable(),
            ))),
            None => exec_err!("best_source needs a value"),
        }
    }
    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(One(self.groups(&args))))
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(super::udaf::value_and_keys(&args, &["source"]))
    }
    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }
    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(self.groups(&args)))
    }
}

impl Best {
    fn groups(&self, args: &AccumulatorArgs) -> Groups {
        let data_type = args.return_field.data_type().clone();
        Groups {
            sources: self.sources.clone(),
            // Slot (0, 0) is the null of groups that saw no row (none do in practice).
            arrays: vec![new_null_array(&data_type, 1)],
            data_type,
            best: Vec::new(),
        }
    }
}

/// Per group: the best source code so far and where its value is (input array, row).
#[derive(Debug)]
struct Groups {
    sources: Sources,
    data_type: DataType,
    /// The value arrays of every batch seen, after the null slot.
    arrays: Vec<ArrayRef>,
    best: Vec<Option<(i64, usize, usize)>>,
}

impl Groups {
    fn update(
        &mut self,
        values: &[ArrayRef],
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        let [value, code] = values else {
            return exec_err!("best_source takes (value, source code)");
        };
        let Some(code) = code.as_primitive_opt::<Int64Type>() else {
            return exec_err!("best_source expects Int64 source codes");
        };
        if self.best.len() < total {
            self.best.resize(total, None);
        }
        // Every code of this batch is interned by now; earlier winners' codes too.
        let rank = self.sources.ranks()?;
        let rank_of = |c: i64| {
            usize::try_from(c)
                .ok()
                .and_then(|c| rank.get(c).copied())
                .unwrap_or(usize::MAX)
        };
        let slot = self.arrays.len();
        let mut used = false;
        for (row, &g) in groups.iter().enumerate() {
            let kept = filter.is_none_or(|f| f.is_valid(row) && f.value(row));
            if !kept || code.is_null(row) {
                continue;
            }
            let c = code.value(row);
            let better = match self.best[g] {
                None => true,
                Some((b, _, _)) => rank_of(c) < rank_of(b),
            };
            if better {
                self.best[g] = Some((c, slot, row));
                used = true;
            }
        }
        if used {
            self.arrays.push(value.clone());
        }
        Ok(())
    }

    fn take(&mut self, emit_to: EmitTo) -> Result<(ArrayRef, Int64Array)> {
        let best = emit_to.take_needed(&mut self.best);
        if best.is_empty() {
            return Ok((
                new_empty_array(&self.data_type),
                Int64Array::from(vec![0i64; 0]),
            ));
        }
        let at: Vec<(usize, usize)> = best
            .iter()
            .map(|b| b.map_or((0, 0), |b| (b.1, b.2)))
            .collect();
        let arrays: Vec<&dyn Array> = self.arrays.iter().map(|a| a.as_ref()).collect();
        let values = interleave(&arrays, &at)?;
        let codes: Int64Array = best.iter().map(|b| b.map(|b| b.0)).collect();
        if self.best.is_empty() {
            self.arrays.truncate(1);
        }
        Ok((values, codes))
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
        Ok(self.take(emit_to)?.0)
    }
    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let (values, codes) = self.take(emit_to)?;
        Ok(vec![values, Arc::new(codes)])
    }
    fn merge_batch(&mut self, values: &[ArrayRef], groups: &[usize], total: usize) -> Result<()> {
        self.update(values, groups, None, total)
    }
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let [value, code] = values else {
            return exec_err!("best_source takes (value, source code)");
        };
        let Some(f) = filter else {
            return Ok(vec![value.clone(), code.clone()]);
        };
        // A filtered-out row keeps its value but loses its code, so it never wins.
        let dropped: BooleanArray = (0..code.len())
            .map(|i| Some(!(f.is_valid(i) && f.value(i))))
            .collect();
        Ok(vec![value.clone(), nullif(code, &dropped)?])
    }
    fn size(&self) -> usize {
        let arrays: usize = self.arrays.iter().map(|a| a.get_array_memory_size()).sum();
        arrays + self.best.capacity() * std::mem::size_of::<Option<(i64, usize, usize)>>()
    }
}

/// The single-group form (DataFusion's fallback; the compiler always groups).
#[derive(Debug)]
struct One(Groups);

impl Accumulator for One {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let n = values.first().map_or(0, |v| v.len());
        self.0.update(values, &vec![0; n], None, 1)
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        match self.0.best.first().copied().flatten() {
            Some((_, a, r)) => match self.0.arrays.get(a) {
                Some(array) => ScalarValue::try_from_array(array, r),
                None => exec_err!("best_source lost its value array"),
            },
            None => ScalarValue::try_from(&self.0.data_type),
        }
    }
    fn size(&self) -> usize {
        std::mem::size_of::<Self>() + self.0.size()
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let code = self.0.best.first().copied().flatten().map(|b| b.0);
        Ok(vec![self.evaluate()?, ScalarValue::Int64(code)])
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }
}
