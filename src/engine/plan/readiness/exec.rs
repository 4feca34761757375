//! The readiness node and its operator: [`ReadinessNode`] in the logical plan (six inputs, the
//! derived table's schema), [`ReadinessExec`] in the physical one, which collects each input
//! as one partition (each small input concatenated into one batch, the heart-rate batches kept
//! as the scan hands them) and answers one batch.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{DFSchemaRef, Result, internal_err};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNodeCore};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties, SendableRecordBatchStream,
};
use futures::TryStreamExt;

use super::Spec;
use super::days::{Inputs, compute};
use crate::engine::plan::operator::{NodePlanner, PlannedNode};
use crate::engine::stored::StoredBatches;

/// Inputs of the node, in order.
const INPUTS: [&str; 6] = [
    "sleep",
    "activity",
    "workout",
    "heartrate",
    "hrv",
    "profile",
];

/// The logical node: the derived rows of `spec`'s days from its six inputs.
#[derive(Debug, Clone)]
pub struct ReadinessNode {
    inputs: Vec<LogicalPlan>,
    spec: Spec,
    schema: DFSchemaRef,
}

impl ReadinessNode {
    /// The node over the inputs of `inputs::plans`.
    pub fn new(inputs: Vec<LogicalPlan>, spec: Spec, schema: DFSchemaRef) -> Self {
        ReadinessNode {
            inputs,
            spec,
            schema,
        }
    }
}

impl PartialEq for ReadinessNode {
    fn eq(&self, other: &Self) -> bool {
        self.inputs == other.inputs && self.spec == other.spec
    }
}
impl Eq for ReadinessNode {}
impl Hash for ReadinessNode {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.inputs.hash(state);
        self.spec.hash(state);
    }
}
impl PartialOrd for ReadinessNode {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        (self == other).then_some(std::cmp::Ordering::Equal)
    }
}

fn describe(spec: &Spec) -> String {
    match spec.bounds {
        Some(b) => format!(
            "days {}..{} (epoch days), baseline from {}",
            b.first_day, b.end_day, b.load_first_day
        ),
        None => "empty window".to_owned(),
    }
}

impl UserDefinedLogicalNodeCore for ReadinessNode {
    fn name(&self) -> &str {
        "DerivedReadiness"
    }
    fn inputs(&self) -> Vec<&LogicalPlan> {
        self.inputs.iter().collect()
    }
    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }
    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }
    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "DerivedReadiness: {}", describe(&self.spec))
    }
    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, inputs: Vec<LogicalPlan>) -> Result<Self> {
        if inputs.len() != INPUTS.len() {
            return internal_err!("DerivedReadiness takes {} inputs", INPUTS.len());
        }
        Ok(ReadinessNode {
            inputs,
            ..self.clone()
        })
    }
}

/// Plans [`ReadinessNode`]s as [`ReadinessExec`]s.
pub type ReadinessPlanner = NodePlanner<ReadinessNode>;

impl PlannedNode for ReadinessNode {
    fn physical(&self, inputs: &[Arc<dyn ExecutionPlan>]) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = Arc::new(self.schema.as_arrow().clone());
        Ok(Arc::new(ReadinessExec::new(
            inputs.to_vec(),
            self.spec.clone(),
            schema,
        )?))
    }
}

/// The physical operator: every input collected, one output batch.
#[derive(Debug)]
pub struct ReadinessExec {
    inputs: Vec<Arc<dyn ExecutionPlan>>,
    spec: Spec,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl ReadinessExec {
    fn new(inputs: Vec<Arc<dyn ExecutionPlan>>, spec: Spec, schema: SchemaRef) -> Result<Self> {
        if inputs.len() != INPUTS.len() {
            return internal_err!("ReadinessExec takes {} inputs", INPUTS.len());
        }
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Ok(ReadinessExec {
            inputs,
            spec,
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl DisplayAs for ReadinessExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ReadinessExec: {}", describe(&self.spec))
    }
}

/// Every partition of `input`, in order (the planner gives one partition, as required).
async fn batches(
    input: Arc<dyn ExecutionPlan>,
    context: Arc<TaskContext>,
) -> Result<Vec<RecordBatch>> {
    let mut batches: Vec<RecordBatch> = Vec::new();
    for p in 0..input.output_partitioning().partition_count() {
        let part: Vec<RecordBatch> = input.execute(p, context.clone())?.try_collect().await?;
        batches.extend(part);
    }
    Ok(batches)
}

impl ExecutionPlan for ReadinessExec {
    crate::engine::plan::operator::single_partition_methods!("ReadinessExec", |this| this
        .inputs
        .iter()
        .collect());
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(ReadinessExec::new(
            children,
            self.spec.clone(),
            self.schema.clone(),
        )?))
    }
    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("ReadinessExec has one partition, not {partition}");
        }
        let inputs = self.inputs.clone();
        let schemas: Vec<SchemaRef> = inputs.iter().map(|i| i.schema()).collect();
        let reservation = MemoryConsumer::new("ReadinessExec").register(context.memory_pool());
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let (spec, schema) = (self.spec.clone(), self.schema.clone());
        let output = futures::stream::once(async move {
            let mut got = Vec::with_capacity(inputs.len());
            for input in inputs {
                got.push(batches(input, context.clone()).await?);
            }
            let Ok([sleep, activity, workout, heartrate, hrv, profile]) =
                <[Vec<RecordBatch>; 6]>::try_from(got)
            else {
                return internal_err!("ReadinessExec collected the wrong number of inputs");
            };
            let timer = baseline.elapsed_compute().timer();
            let one = |batches: Vec<RecordBatch>, i: usize| concat_batches(&schemas[i], &batches);
            let inputs = Inputs {
                sleep: one(sleep, 0)?,
                activity: one(activity, 1)?,
                workout: one(workout, 2)?,
                heartrate,
                hrv: one(hrv, 4)?,
                profile: one(profile, 5)?,
            };
            let stored = context.session_config().get_extension::<StoredBatches>();
            let out = compute(&inputs, &spec, stored.as_deref(), schema)?;
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
