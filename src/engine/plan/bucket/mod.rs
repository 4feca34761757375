//! The time-bucket aggregate: a plan node of our own for the shape most requests have, one
//! timeseries resource grouped by a single `date_trunc` of its index, with `mean`, `min`,
//! `max`, `sum`, `count`, `oldest` and `newest` of its fields, prioritised (§3.5).
//!
//! The general plan (`compile.rs`) spends per row: a floating-time kernel for the window filter
//! and again for the bucket, a `date_trunc` kernel, a source-code kernel, a two-column hash
//! lookup and one dynamic update per aggregate, then ranks the sub-groups with a window
//! function. Over 90 days of 1 Hz data that is most of a second. This operator does the same
//! work as one pass over runs of rows:
//!
//! - rows are mostly sorted by time and come in runs of one source, so a *run* (consecutive rows
//!   of one bucket and one source, inside the window) is found with one range check per row;
//!   the bucket and its group are looked up once per run;
//! - sources are interned per batch (a batch of one source is recognised with one `memcmp` of
//!   its string buffer, or none when it slices memory already proven constant in this query:
//!   `schema::rows_by_source`) and processed best first, so the first source to put a row in
//!   a bucket owns it (§3.5: the best source present in the group) and worse sources skip the
//!   bucket's rows; a whole batch whose bucket range is already owned is skipped without
//!   reading a row;
//! - aggregates update straight from the Arrow buffers, in row order; sums run in four lanes
//!   chosen by a value's place in its bucket, so a bucket's sum does not depend on how its rows
//!   are split into batches, runs or slices, and equals the general plan's within rounding (a
//!   test runs both plans on random queries and compares); `oldest`/`newest` find a run's
//!   extreme time over the times alone, then read the value of that row only;
//! - the bounds of each batch's floating times are found before the fold, so a slice skips the
//!   batches outside it; batches the caller declared the store's (`Inputs::stored`,
//!   see `engine::stored`: sorted by time, one source each) are bounded by their first and
//!   last rows, and their source is read off their first row;
//! - a big input is cut into slices of whole buckets with about as many rows each, folded on
//!   the engine's threads at once (one per core) and laid end to end: a bucket's rows are all
//!   in one slice, so the answer is the one a single pass gives.
//!
//! It is still a DataFusion plan: the compiler emits a [`BucketNode`] (a logical extension
//! node) over the scan, and WHERE, when present, stays a DataFusion filter below it; the
//! session's planner turns the node into a [`BucketExec`]. The compiler falls back to the
//! general plan for every other shape (other group keys, `median`, `stddev`, non-float
//! arguments, several resources, tables).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use chrono_tz::Tz;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::Session;
use datafusion::common::{DFSchema, DFSchemaRef, Result, internal_err};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{
    Expr, Extension, LogicalPlan, UserDefinedLogicalNode, UserDefinedLogicalNodeCore,
};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use datafusion::physical_planner::{ExtensionPlanner, PhysicalPlanner};
use futures::StreamExt;

use crate::schema::{INGESTED_AT, TIMEZONE_OFFSET};

use crate::engine::lang::request::{Func, Period};
use crate::engine::stored::StoredBatches;
use state::{Counters, State, StateOf};

/// The functions the operator computes (over Float64 arguments; `count` over any type).
pub fn supports(f: Func) -> bool {
    matches!(
        f,
        Func::Mean | Func::Min | Func::Max | Func::Sum | Func::Count | Func::Oldest | Func::Newest
    )
}

/// What one bucket aggregate computes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BucketSpec {
    /// The `date_trunc` period.
    pub period: Period,
    /// The user's fallback zone for rows without an offset.
    pub zone: Option<Tz>,
    /// The floating window `[start, end)` in microseconds; `None` selects nothing.
    pub window: Option<(i64, i64)>,
    /// Each aggregate and the input column it reads.
    pub aggs: Vec<(Func, String)>,
    /// The provider order (overrides, team, defaults) that ranks sources.
    pub providers: Vec<String>,
    /// Whether the input is filtered (its batches are new memory, counted in the pool).
    pub filtered: bool,
}

/// Output column of the bucket start.
pub const BUCKET: &str = "__k0";

/// Output column of aggregate `j` of the query's select list.
fn output_schema(spec: &BucketSpec, names: &[String]) -> Schema {
    let mut fields = vec![Field::new(
        BUCKET,
        DataType::Timestamp(TimeUnit::Microsecond, None),
        true,
    )];
    for ((f, _), name) in spec.aggs.iter().zip(names) {
        fields.push(match f {
            Func::Count => Field::new(name, DataType::Int64, false),
            _ => Field::new(name, DataType::Float64, true),
        });
    }
    Schema::new(fields)
}

/// The logical node: `input` is the resource's scan (optionally filtered by WHERE); the
/// output is `__k0` (the bucket) and one column per aggregate, sorted by bucket.
#[derive(Debug, Clone)]
pub struct BucketNode {
    input: LogicalPlan,
    spec: Arc<BucketSpec>,
    names: Vec<String>,
    schema: DFSchemaRef,
}

impl BucketNode {
    /// The node over `input`, naming aggregate `j`'s output `names[j]`.
    pub fn plan(input: LogicalPlan, spec: BucketSpec, names: Vec<String>) -> Result<LogicalPlan> {
        let schema = Arc::new(DFSchema::try_from(output_schema(&spec, &names))?);
        let node = BucketNode {
            input,
            spec: Arc::new(spec),
            names,
            schema,
        };
        Ok(LogicalPlan::Extension(Extension {
            node: Arc::new(node),
        }))
    }
}

impl PartialEq for BucketNode {
    fn eq(&self, other: &Self) -> bool {
        self.input == other.input && self.spec == other.spec && self.names == other.names
    }
}
impl Eq for BucketNode {}
impl Hash for BucketNode {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.input.hash(state);
        self.spec.hash(state);
        self.names.hash(state);
    }
}
impl PartialOrd for BucketNode {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        (self == other).then_some(std::cmp::Ordering::Equal)
    }
}

impl UserDefinedLogicalNodeCore for BucketNode {
    fn name(&self) -> &str {
        "BucketAggregate"
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
        write!(f, "BucketAggregate: {}", describe(&self.spec))
    }
    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, inputs: Vec<LogicalPlan>) -> Result<Self> {
        let Some(input) = inputs.into_iter().next() else {
            return internal_err!("BucketAggregate takes one input");
        };
        Ok(BucketNode {
            input,
            ..self.clone()
        })
    }
}

fn describe(spec: &BucketSpec) -> String {
    let aggs: Vec<String> = spec
        .aggs
        .iter()
        .map(|(f, c)| format!("{f:?}({c})"))
        .collect();
    format!(
        "date_trunc({} {:?}), window={:?}, [{}]",
        spec.period.value,
        spec.period.unit,
        spec.window,
        aggs.join(", ")
    )
}

/// How an operator cuts its input into slices folded at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slicing {
    /// The most slices (the engine's threads).
    pub most: usize,
    /// The fewest rows of a slice.
    pub min_rows: usize,
}

/// Plans [`BucketNode`]s as [`BucketExec`]s that cut their work by `slicing`.
#[derive(Debug)]
pub struct BucketPlanner {
    /// How the operators cut their work.
    pub slicing: Slicing,
}

#[async_trait]
impl ExtensionPlanner for BucketPlanner {
    async fn plan_extension(
        &self,
        _planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        _logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        _session: &dyn Session,
        _ctx: &PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(node) = node.as_any().downcast_ref::<BucketNode>() else {
            return Ok(None);
        };
        let [input] = physical_inputs else {
            return internal_err!("BucketAggregate takes one input");
        };
        let schema = Arc::new(node.schema.as_arrow().clone());
        Ok(Some(Arc::new(BucketExec::try_new(
            input.clone(),
            node.spec.clone(),
            schema,
            self.slicing,
        )?)))
    }
}

/// Input column positions.
#[derive(Debug, Clone)]
struct Columns {
    timestamp: usize,
    offset: usize,
    ingested: usize,
    provider: usize,
    source_type: usize,
    args: Vec<usize>,
}

/// The physical operator (one output partition, one input partition).
#[derive(Debug)]
pub struct BucketExec {
    input: Arc<dyn ExecutionPlan>,
    spec: Arc<BucketSpec>,
    slicing: Slicing,
    columns: Columns,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl BucketExec {
    fn try_new(
        input: Arc<dyn ExecutionPlan>,
        spec: Arc<BucketSpec>,
        schema: SchemaRef,
        slicing: Slicing,
    ) -> Result<Self> {
        let s = input.schema();
        let columns = Columns {
            timestamp: s.index_of("timestamp")?,
            offset: s.index_of(TIMEZONE_OFFSET)?,
            ingested: s.index_of(INGESTED_AT)?,
            provider: s.index_of("source_provider")?,
            source_type: s.index_of("source_type")?,
            args: spec
                .aggs
                .iter()
                .map(|(_, c)| s.index_of(c))
                .collect::<Result<_, _>>()?,
        };
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Ok(BucketExec {
            input,
            spec,
            slicing,
            columns,
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl DisplayAs for BucketExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "BucketAggregateExec: {}", describe(&self.spec))
    }
}

impl ExecutionPlan for BucketExec {
    crate::engine::plan::operator::single_partition_methods!("BucketAggregateExec", |this| vec![
        &this.input
    ]);
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(input) = children.into_iter().next() else {
            return internal_err!("BucketAggregateExec takes one input");
        };
        Ok(Arc::new(BucketExec::try_new(
            input,
            self.spec.clone(),
            self.schema.clone(),
            self.slicing,
        )?))
    }
    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("BucketAggregateExec has one partition, not {partition}");
        }
        let mut input = self.input.execute(0, context.clone())?;
        let reservation =
            MemoryConsumer::new("BucketAggregateExec").register(context.memory_pool());
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let counters = Counters {
            rows_scanned: MetricBuilder::new(&self.metrics).counter("rows_scanned", partition),
            parts_skipped: MetricBuilder::new(&self.metrics).counter("parts_skipped", partition),
            slices: MetricBuilder::new(&self.metrics).counter("slices", partition),
        };
        let mut state = State::new(StateOf {
            spec: self.spec.clone(),
            columns: self.columns.clone(),
            schema: self.schema.clone(),
            reservation,
            counters,
            slicing: self.slicing,
            stored: context.session_config().get_extension::<StoredBatches>(),
        });
        let output = futures::stream::once(async move {
            while let Some(batch) = input.next().await {
                let batch = batch?;
                let timer = baseline.elapsed_compute().timer();
                state.add(batch)?;
                timer.done();
                // In-memory input never waits, so without a yield point the whole input folds
                // in one poll and an aborted query (its deadline passed) runs on to the end.
                // One yield per input batch (65,536 rows) costs a reschedule, nothing more.
                tokio::task::yield_now().await;
            }
            // The fold's wall time, slices on other tasks included.
            let timer = baseline.elapsed_compute().timer();
            let result = state.finish().await;
            timer.done();
            if let Ok(batch) = &result {
                baseline.record_output(batch.num_rows());
            }
            result
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            output,
        )))
    }
}

mod slice;
mod state;
