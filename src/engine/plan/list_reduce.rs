//! `list_reduce`: the scalar UDF a scalar-output subquery (`analytics.md` §3) compiles to. It
//! takes the row's list column and reduces every row's list to one value in one pass over the
//! list's flattened elements:
//!
//! 1. the elements (a list of structs: its struct's fields; a list of scalars: one column
//!    `element`, widened to its kind's type) form one record batch;
//! 2. the subquery's `where`, translated to a DataFusion expression by the same code as a
//!    query's WHERE (`expr.rs`) and planned into a physical expression with DataFusion's type
//!    coercion, is evaluated once over that batch: a mask over every element of every row;
//! 3. each row's slice of the offsets is reduced under the mask by the function.
//!
//! Why a UDF and not `unnest` + aggregate + join back: the reduction is per row, so it stays a
//! projection; several subqueries in one query cost one pass each over the elements, the row
//! order and provider prioritisation of the outer query are untouched, and an outer aggregate
//! takes the UDF's column like any other per-row value. The JSON and Parquet answers are the
//! same plan's batches.
//!
//! Function semantics follow the outer aggregates (`aggregate-dsl.md` §3.6): nulls skipped,
//! `mean` a float sum over the count, `median` the mean of the two middle values for an even
//! count, `stddev` the sample deviation (Welford's update, as DataFusion's) and null under two
//! values; `oldest`/`newest` by element `date` (see `lang/subquery.rs`).

use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, new_empty_array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Date32Type, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{DFSchema, Result, ScalarValue, exec_err};
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::prelude::Expr;

use crate::engine::lang::request::Func;
use crate::engine::lang::subquery::{ELEMENT, SubArg, Subquery};
use crate::schema::{Element, Kind};

/// The planned element filter, for the element schema it was planned against.
type Planned = (SchemaRef, Arc<dyn PhysicalExpr>);

/// One subquery as a scalar UDF over its list column.
#[derive(Debug)]
pub struct ListReduce {
    name: String,
    key: String,
    func: Func,
    arg: SubArg,
    scalar: Option<Kind>,
    predicate: Option<Expr>,
    planned: Mutex<Option<Planned>>,
    signature: Signature,
}

impl PartialEq for ListReduce {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for ListReduce {}
impl std::hash::Hash for ListReduce {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

impl ListReduce {
    /// The UDF of `sq`, its element filter already translated (`predicate`, over the element's
    /// field names or `element`).
    pub fn new(sq: &Subquery, predicate: Option<Expr>) -> Self {
        // Equality (and so common-subexpression elimination) must tell two filters apart.
        let key = format!("{sq:?}");
        let name = match &sq.filter {
            None => format!("list_reduce[{}]", sq.name()),
            Some(_) => {
                use sha2::{Digest, Sha256};
                let digest = Sha256::digest(key.as_bytes());
                format!(
                    "list_reduce[{} where#{:02x}{:02x}{:02x}{:02x}]",
                    sq.name(),
                    digest[0],
                    digest[1],
                    digest[2],
                    digest[3]
                )
            }
        };
        let scalar = match sq.list.element {
            Element::Scalar(k) => Some(k),
            Element::Struct(_) => None,
        };
        ListReduce {
            name,
            key,
            func: sq.func,
            arg: sq.arg,
            scalar,
            predicate,
            planned: Mutex::new(None),
            signature: Signature::any(1, Volatility::Immutable),
        }
    }

    /// `list_reduce(list)` as an expression.
    pub fn call(sq: &Subquery, predicate: Option<Expr>, list: Expr) -> Expr {
        ScalarUDF::from(ListReduce::new(sq, predicate)).call(vec![list])
    }

    /// The type the reduced input has in the element batch.
    fn input_type(&self, list: &DataType) -> Option<DataType> {
        match (self.arg, list) {
            (SubArg::Elements, _) => None,
            (SubArg::Element(k), _) => Some(kind_type(k)),
            (SubArg::Field(c), DataType::List(item)) => match item.data_type() {
                DataType::Struct(fields) => fields
                    .iter()
                    .find(|f| f.name() == c.name)
                    .map(|f| f.data_type().clone()),
                _ => None,
            },
            (SubArg::Field(c), _) => Some(kind_type(c.kind)),
        }
    }

    /// The element batch: the struct's fields, or the scalars as `element`.
    fn elements(&self, values: &ArrayRef) -> Result<RecordBatch> {
        match self.scalar {
            Some(k) => {
                let widened = cast(values, &kind_type(k))?;
                let schema = Schema::new(vec![Field::new(ELEMENT, kind_type(k), true)]);
                Ok(RecordBatch::try_new(Arc::new(schema), vec![widened])?)
            }
            None => {
                let Some(s) = values.as_struct_opt() else {
                    return exec_err!(
                        "list_reduce: expected a list of structs, got {}",
                        values.data_type()
                    );
                };
                let fields: Vec<Field> = s
                    .fields()
                    .iter()
                    .map(|f| f.as_ref().clone().with_nullable(true))
                    .collect();
                Ok(RecordBatch::try_new(
                    Arc::new(Schema::new(fields)),
                    s.columns().to_vec(),
                )?)
            }
        }
    }

    /// The element mask of the `where` (none without one).
    fn mask(&self, batch: &RecordBatch) -> Result<Option<BooleanArray>> {
        let Some(predicate) = &self.predicate else {
            return Ok(None);
        };
        let mut planned = self.planned.lock().map_err(|_| {
            datafusion::error::DataFusionError::Execution("list_reduce: poisoned".into())
        })?;
        let cached = planned
            .as_ref()
            .filter(|(schema, _)| *schema == batch.schema())
            .map(|(_, p)| Arc::clone(p));
        let physical = match cached {
            Some(p) => p,
            None => {
                let df_schema = DFSchema::try_from(batch.schema().as_ref().clone())?;
                let state = SessionStateBuilder::new().build();
                let p = state.create_physical_expr(predicate.clone(), &df_schema)?;
                *planned = Some((batch.schema(), Arc::clone(&p)));
                p
            }
        };
        drop(planned);
        let mask = physical.evaluate(batch)?.into_array(batch.num_rows())?;
        match mask.as_boolean_opt() {
            Some(m) => Ok(Some(m.clone())),
            None => exec_err!("list_reduce: the where is not boolean"),
        }
    }

    fn reduce(
        &self,
        picked: &[usize],
        target: Option<&ArrayRef>,
        dates: Option<&ArrayRef>,
        out_type: &DataType,
    ) -> Result<ScalarValue> {
        let null = || ScalarValue::try_from(out_type);
        let Some(target) = target else {
            return Ok(ScalarValue::Int64(Some(picked.len() as i64)));
        };
        if self.func == Func::Count {
            return Ok(ScalarValue::Int64(Some(picked.len() as i64)));
        }
        if picked.is_empty() {
            return null();
        }
        let floats = || -> Result<Vec<f64>> {
            let f = cast(target, &DataType::Float64)?;
            let f = f.as_primitive::<datafusion::arrow::datatypes::Float64Type>();
            Ok(picked.iter().map(|&j| f.value(j)).collect())
        };
        Ok(match self.func {
            Func::Count => ScalarValue::Int64(Some(picked.len() as i64)),
            Func::Mean => {
                let v = floats()?;
                ScalarValue::Float64(Some(v.iter().sum::<f64>() / v.len() as f64))
            }
            Func::Median => {
                let mut v = floats()?;
                v.sort_by(f64::total_cmp);
                let n = v.len();
                let m = if n % 2 == 1 {
                    v[n / 2]
                } else {
                    (v[n / 2 - 1] + v[n / 2]) / 2.0
                };
                ScalarValue::Float64(Some(m))
            }
            Func::Stddev => {
                let (mut count, mut mean, mut m2) = (0u64, 0.0f64, 0.0f64);
                for x in floats()? {
                    count += 1;
                    let delta = x - mean;
                    mean += delta / count as f64;
                    m2 += delta * (x - mean);
                }
                match count {
                    0 | 1 => ScalarValue::Float64(None),
                    n => ScalarValue::Float64(Some((m2 / (n - 1) as f64).sqrt())),
                }
            }
            Func::Sum if target.data_type() == &DataType::Int64 => {
                let a = target.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
                ScalarValue::Int64(Some(
                    picked.iter().fold(0i64, |s, &j| s.wrapping_add(a.value(j))),
                ))
            }
            Func::Sum => ScalarValue::Float64(Some(floats()?.iter().sum())),
            Func::Min | Func::Max => {
                let mut best = ScalarValue::try_from_array(target, picked[0])?;
                for &j in &picked[1..] {
                    let v = ScalarValue::try_from_array(target, j)?;
                    let better = match v.partial_cmp(&best) {
                        Some(std::cmp::Ordering::Less) => self.func == Func::Min,
                        Some(std::cmp::Ordering::Greater) => self.func == Func::Max,
                        _ => false,
                    };
                    if better {
                        best = v;
                    }
                }
                best
            }
            Func::Oldest | Func::Newest => {
                let day = |j: usize| match dates {
                    Some(d) if d.is_valid(j) => d.as_primitive::<Date32Type>().value(j),
                    _ => 0,
                };
                let newest = self.func == Func::Newest;
                let mut at = picked[0];
                for &j in &picked[1..] {
                    // Later in the list wins a tie for newest; earlier for oldest.
                    if (newest && day(j) >= day(at)) || (!newest && day(j) < day(at)) {
                        at = j;
                    }
                }
                ScalarValue::try_from_array(target, at)?
            }
        })
    }
}

fn kind_type(kind: Kind) -> DataType {
    match kind {
        Kind::Str => DataType::Utf8,
        Kind::Int => DataType::Int64,
        Kind::Float => DataType::Float64,
        Kind::Bool => DataType::Boolean,
        Kind::Date => DataType::Date32,
        Kind::Instant => crate::schema::utc_timestamp(),
    }
}

impl ScalarUDFImpl for ListReduce {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let list = args.first().cloned().unwrap_or(DataType::Null);
        let input = self.input_type(&list);
        Ok(match (self.func, input) {
            (Func::Count, _) | (_, None) => DataType::Int64,
            (Func::Mean | Func::Median | Func::Stddev, _) => DataType::Float64,
            (Func::Sum, Some(DataType::Int64)) => DataType::Int64,
            (Func::Sum, Some(_)) => DataType::Float64,
            (_, Some(t)) => t,
        })
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let out_type = args.return_field.data_type().clone();
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let Some(list) = arrays.first().and_then(|a| a.as_list_opt::<i32>()) else {
            return exec_err!("list_reduce: expected a list column");
        };
        if list.is_empty() {
            return Ok(ColumnarValue::Array(new_empty_array(&out_type)));
        }
        let batch = self.elements(list.values())?;
        let mask = self.mask(&batch)?;
        let target = match self.arg {
            SubArg::Elements => None,
            SubArg::Field(c) => batch.column_by_name(c.name).cloned(),
            SubArg::Element(_) => batch.column_by_name(ELEMENT).cloned(),
        };
        if self.arg != SubArg::Elements && target.is_none() {
            return exec_err!("list_reduce: the list has no such field");
        }
        let dates = batch.column_by_name("date").cloned();
        let offsets = list.value_offsets();
        let mut out = Vec::with_capacity(list.len());
        let mut picked = Vec::new();
        for i in 0..list.len() {
            picked.clear();
            if list.is_valid(i) {
                let (s, e) = (offsets[i] as usize, offsets[i + 1] as usize);
                picked.extend((s..e).filter(|&j| {
                    mask.as_ref().is_none_or(|m| m.is_valid(j) && m.value(j))
                        && target.as_ref().is_none_or(|t| t.is_valid(j))
                }));
            }
            out.push(self.reduce(&picked, target.as_ref(), dates.as_ref(), &out_type)?);
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}
