//! ALIGN (`analytics.md` §1) as a plan node: after grouping and aggregation (and the
//! best-source step), [`AlignNode`] lays every partition (the rows sharing the non-date group
//! keys) on its bucket spine and fills each output column independently from the neighbouring
//! non-empty buckets within the cap; a bucket with no source within the cap is an explicit
//! null. The compiler's sort by the group keys runs above it, and the output projection above
//! that, so the JSON and Parquet answers are encoded from the same batches, and a plan that
//! reuses the compiled query (a continuous query) gets the aligned table too.
//!
//! The spine (`spine.rs`) is the partition's observed bucket range extended by the cap:
//! carry_forward forwards, carry_backward backwards, carry_nearest both ways; without a cap,
//! no extension. Decisions where the spec is silent:
//! - The spine stays inside the query's window (its first to last bucket): a carry never
//!   invents rows for times the request did not ask about, and the data a cap could reach
//!   past the window is not loaded anyway.
//! - "Now" is the request's instant ([`crate::engine::UserContext::now`]) in the user's
//!   floating time (UTC for the profile table); no forward extension passes its bucket, for
//!   carry_nearest as for carry_forward (neither fabricates the future). Without an instant,
//!   the window's end alone bounds the spine.
//! - A null cell of a non-empty bucket carries like a missing bucket (each column carries on
//!   its own, as pandas' `ffill` does); a value, `0` counts included, is never replaced.
//! - The operator collects its input: it is the aggregated table, one row per group.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::{Field, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::{DFSchema, DFSchemaRef, Result, internal_err};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::logical_expr::{Expr, Extension, LogicalPlan, UserDefinedLogicalNodeCore};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use futures::TryStreamExt;

use crate::engine::lang::align::Carry;
use crate::engine::lang::request::Period;
use crate::engine::plan::operator::{NodePlanner, PlannedNode};

pub(crate) use spine::Reach;
pub(crate) use wrap::wrap;

mod fill;
mod spine;
mod wrap;

/// What one ALIGN computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AlignSpec {
    /// The carry and its cap.
    pub carry: Carry,
    /// The `date_trunc` period the spine steps by.
    pub period: Period,
    /// The window's buckets and the bucket of "now".
    pub reach: Reach,
}

/// The logical node: `input` holds one row per group, the `date` column its bucket and the
/// `partition` columns the other group keys; every other column is filled.
#[derive(Debug, Clone)]
pub struct AlignNode {
    input: LogicalPlan,
    spec: AlignSpec,
    date: String,
    partition: Vec<String>,
    schema: DFSchemaRef,
}

impl AlignNode {
    /// The node over `input`, whose column `date` is the bucket and `partition` the other
    /// group keys.
    pub fn plan(
        input: LogicalPlan,
        spec: AlignSpec,
        date: String,
        partition: Vec<String>,
    ) -> Result<LogicalPlan> {
        // Every column but the bucket may be null now (an explicit null, or a count that had
        // no row): the same names and types, all nullable.
        let fields: Vec<Field> = input
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        let qualified = input.schema().iter().map(|(q, _)| q.cloned());
        let schema = DFSchema::new_with_metadata(
            qualified.zip(fields.into_iter().map(Arc::new)).collect(),
            input.schema().metadata().clone(),
        )?;
        let node = AlignNode {
            input,
            spec,
            date,
            partition,
            schema: Arc::new(schema),
        };
        Ok(LogicalPlan::Extension(Extension {
            node: Arc::new(node),
        }))
    }
}

impl PartialEq for AlignNode {
    fn eq(&self, other: &Self) -> bool {
        self.input == other.input
            && self.spec == other.spec
            && self.date == other.date
            && self.partition == other.partition
    }
}
impl Eq for AlignNode {}
impl Hash for AlignNode {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.input.hash(state);
        self.spec.hash(state);
        self.date.hash(state);
        self.partition.hash(state);
    }
}
impl PartialOrd for AlignNode {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        (self == other).then_some(std::cmp::Ordering::Equal)
    }
}

fn describe(spec: &AlignSpec) -> String {
    let cap = spec
        .carry
        .cap
        .map_or("none".to_owned(), |p| format!("{} {:?}", p.value, p.unit));
    format!(
        "{:?}, cap={cap}, date_trunc({} {:?}), reach={:?}",
        spec.carry.mode, spec.period.value, spec.period.unit, spec.reach
    )
}

impl UserDefinedLogicalNodeCore for AlignNode {
    fn name(&self) -> &str {
        "Align"
    }
    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }
    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }
    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }
    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Align: {}", describe(&self.spec))
    }
    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, inputs: Vec<LogicalPlan>) -> Result<Self> {
        let Some(input) = inputs.into_iter().next() else {
            return internal_err!("Align takes one input");
        };
        Ok(AlignNode {
            input,
            ..self.clone()
        })
    }
}

/// Plans [`AlignNode`]s as [`AlignExec`]s.
pub type AlignPlanner = NodePlanner<AlignNode>;

impl PlannedNode for AlignNode {
    fn physical(
        &self,
        inputs: &[Arc<dyn ExecutionPlan>],
        _session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [input] = inputs else {
            return internal_err!("Align takes one input");
        };
        let s = input.schema();
        let roles = fill::Roles {
            date: s.index_of(&self.date)?,
            partition: self
                .partition
                .iter()
                .map(|p| s.index_of(p))
                .collect::<Result<_, _>>()?,
        };
        let schema = Arc::new(self.schema.as_arrow().clone());
        Ok(Arc::new(AlignExec::new(
            input.clone(),
            self.spec,
            roles,
            schema,
        )))
    }
}

/// The physical operator: one input partition collected, one output batch.
#[derive(Debug)]
pub struct AlignExec {
    input: Arc<dyn ExecutionPlan>,
    spec: AlignSpec,
    roles: fill::Roles,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl AlignExec {
    fn new(
        input: Arc<dyn ExecutionPlan>,
        spec: AlignSpec,
        roles: fill::Roles,
        schema: SchemaRef,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        AlignExec {
            input,
            spec,
            roles,
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for AlignExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "AlignExec: {}", describe(&self.spec))
    }
}

impl ExecutionPlan for AlignExec {
    crate::engine::plan::operator::single_partition_methods!("AlignExec", |this| vec![&this.input]);
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(input) = children.into_iter().next() else {
            return internal_err!("AlignExec takes one input");
        };
        Ok(Arc::new(AlignExec::new(
            input,
            self.spec,
            self.roles.clone(),
            self.schema.clone(),
        )))
    }
    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("AlignExec has one partition, not {partition}");
        }
        let input = self.input.execute(0, context.clone())?;
        let input_schema = self.input.schema();
        let reservation = MemoryConsumer::new("AlignExec").register(context.memory_pool());
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let (spec, roles, schema) = (self.spec, self.roles.clone(), self.schema.clone());
        let output = futures::stream::once(async move {
            let batches: Vec<_> = input.try_collect().await?;
            let timer = baseline.elapsed_compute().timer();
            let batch = concat_batches(&input_schema, &batches)?;
            drop(batches);
            let out = fill::align(&batch, &roles, &spec, &schema)?;
            reservation.try_grow(out.get_array_memory_size())?;
            timer.done();
            baseline.record_output(out.num_rows());
            Ok(out)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            output,
        )))
    }
}
