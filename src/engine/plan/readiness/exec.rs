//! The readiness node and its operator: [`ReadinessNode`] in the logical plan (a leaf over six
//! stored inputs, the derived table's schema), [`ReadinessExec`] in the physical one, which
//! keeps each small input's rows and computes its columns over the stored batches with the
//! session's physical expressions (concatenated into one batch each), hands the heart-rate
//! batches on as they are stored, and answers one batch.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatchOptions};
use datafusion::arrow::compute::{concat_batches, filter_record_batch};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::Session;
use datafusion::common::{DFSchema, DFSchemaRef, Result, internal_err};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNodeCore};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PhysicalExpr, PlanProperties,
    SendableRecordBatchStream,
};

use super::Spec;
use super::days::{Inputs, compute};
use super::inputs::{Input, Select};
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

/// The logical node: the derived rows of `spec`'s days from its six stored inputs.
#[derive(Debug, Clone)]
pub struct ReadinessNode {
    inputs: Vec<Input>,
    spec: Spec,
    schema: DFSchemaRef,
}

impl ReadinessNode {
    /// The node over the inputs of `inputs::inputs`.
    pub fn new(inputs: Vec<Input>, spec: Spec, schema: DFSchemaRef) -> Self {
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
        Vec::new()
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
        if !inputs.is_empty() {
            return internal_err!("DerivedReadiness takes no plan inputs");
        }
        Ok(self.clone())
    }
}

/// Plans [`ReadinessNode`]s as [`ReadinessExec`]s.
pub type ReadinessPlanner = NodePlanner<ReadinessNode>;

impl PlannedNode for ReadinessNode {
    fn physical(
        &self,
        inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !inputs.is_empty() {
            return internal_err!("DerivedReadiness takes no plan inputs");
        }
        let schema = Arc::new(self.schema.as_arrow().clone());
        let stored = self
            .inputs
            .iter()
            .map(|i| Stored::plan(i, session))
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(ReadinessExec::new(
            stored,
            self.spec.clone(),
            schema,
        )?))
    }
}

/// One input as the operator reads it: its batches, and the physical filter and columns of its
/// selection (none: the batches as they are).
#[derive(Debug, Clone)]
struct Stored {
    batches: Vec<RecordBatch>,
    select: Option<Physical>,
}

#[derive(Debug, Clone)]
struct Physical {
    filter: Arc<dyn PhysicalExpr>,
    columns: Vec<Arc<dyn PhysicalExpr>>,
    schema: SchemaRef,
}

impl Stored {
    fn plan(input: &Input, session: &dyn Session) -> Result<Stored> {
        let Some(Select { filter, columns }) = &input.select else {
            return Ok(Stored {
                batches: input.batches.clone(),
                select: None,
            });
        };
        let storage = input.dataset.schema();
        let df = DFSchema::try_from(storage.as_ref().clone())?;
        let filter = session.create_physical_expr(filter.clone(), &df)?;
        let (mut fields, mut exprs) = (Vec::new(), Vec::new());
        for (name, e) in columns {
            let e = session.create_physical_expr(e.clone(), &df)?;
            fields.push(Field::new(name, e.data_type(&storage)?, true));
            exprs.push(e);
        }
        Ok(Stored {
            batches: input.batches.clone(),
            select: Some(Physical {
                filter,
                columns: exprs,
                schema: Arc::new(Schema::new(fields)),
            }),
        })
    }

    /// The selected rows and columns, one batch (a filter, then a projection).
    fn one(&self) -> Result<RecordBatch> {
        let Some(p) = &self.select else {
            return internal_err!("a raw readiness input read as one batch");
        };
        let mut out = Vec::with_capacity(self.batches.len());
        for b in &self.batches {
            let keep = p.filter.evaluate(b)?.into_array(b.num_rows())?;
            let Some(keep) = keep.as_boolean_opt() else {
                return internal_err!("a readiness filter is not a boolean");
            };
            let kept = filter_record_batch(b, keep)?;
            let n = kept.num_rows();
            if n == 0 {
                continue;
            }
            let columns = p
                .columns
                .iter()
                .map(|e| e.evaluate(&kept)?.into_array(n))
                .collect::<Result<Vec<_>>>()?;
            let options = RecordBatchOptions::new().with_row_count(Some(n));
            out.push(RecordBatch::try_new_with_options(
                p.schema.clone(),
                columns,
                &options,
            )?);
        }
        Ok(concat_batches(&p.schema, &out)?)
    }
}

/// The physical operator: every input read, one output batch.
#[derive(Debug)]
pub struct ReadinessExec {
    inputs: Vec<Stored>,
    spec: Spec,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl ReadinessExec {
    fn new(inputs: Vec<Stored>, spec: Spec, schema: SchemaRef) -> Result<Self> {
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

impl ExecutionPlan for ReadinessExec {
    crate::engine::plan::operator::single_partition_methods!("ReadinessExec", |_this| Vec::new());
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !children.is_empty() {
            return internal_err!("ReadinessExec takes no children");
        }
        Ok(self)
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
        let reservation = MemoryConsumer::new("ReadinessExec").register(context.memory_pool());
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let (spec, schema) = (self.spec.clone(), self.schema.clone());
        let output = futures::stream::once(async move {
            let Ok([sleep, activity, workout, heartrate, hrv, profile]) =
                <[Stored; 6]>::try_from(inputs)
            else {
                return internal_err!("ReadinessExec has the wrong number of inputs");
            };
            let timer = baseline.elapsed_compute().timer();
            let inputs = Inputs {
                sleep: sleep.one()?,
                activity: activity.one()?,
                workout: workout.one()?,
                heartrate: heartrate.batches,
                hrv: hrv.one()?,
                profile: profile.one()?,
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
