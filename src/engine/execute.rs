//! Compiling and running every query of a request over the batches handed in, under a deadline
//! (the whole batch of queries is cancelled at it) and a per-request DataFusion memory pool, on
//! the state and runtime an [`Engine`](super::Engine) owns. Also [`required_inputs`]: what the
//! caller must load.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::Session;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::memory_pool::{GreedyMemoryPool, MemoryPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::common_subexpr_eliminate::CommonSubexprEliminate;
use datafusion::optimizer::optimize_projections::OptimizeProjections;
use datafusion::physical_plan::{ExecutionPlan, execute_stream};
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use datafusion::prelude::SessionConfig;
use futures::TryStreamExt;

use crate::schema::Dataset;

use super::budget::Budget;
use super::lang::request::{QuerySource, ValidRequest};
use super::plan::align::AlignPlanner;
use super::plan::bucket::{BucketPlanner, Slicing};
use super::plan::catalog::{Catalog, UserContext};
use super::plan::ordered::presorted;
use super::plan::readiness::{self, ReadinessPlanner};
use super::stored::StoredBatches;
use super::task::AbortOnDrop;
use super::{EngineError, Limits, compile, time};

/// One query's result table: its output schema (§4.1 names, §4.3 types) and rows.
#[derive(Debug, Clone)]
pub struct QueryResult {
    /// Column names and types.
    pub schema: SchemaRef,
    /// The rows, in output order.
    pub batches: Vec<RecordBatch>,
}

impl QueryResult {
    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

/// Margin around the floating window when mapping it to UTC: offsets are within ±18 h.
const OFFSET_MARGIN_HOURS: i64 = 18;

/// Every dataset the queries read, with a UTC range that contains every row whose floating
/// index falls in the window (the floating window widened by 18 h each side).
pub fn required_inputs(
    req: &ValidRequest,
    ctx: &UserContext,
) -> Vec<(Dataset, Range<DateTime<Utc>>)> {
    let window = time::window(&req.timeframe, ctx.ingestion_start, ctx.ingestion_end);
    let margin = Duration::hours(OFFSET_MARGIN_HOURS);
    let range = match window {
        Some((s, e)) => (s - margin).and_utc()..(e + margin).and_utc(),
        None => {
            let t = req
                .timeframe
                .anchor
                .and_time(chrono::NaiveTime::MIN)
                .and_utc();
            t..t
        }
    };
    let mut out: Vec<(Dataset, Range<DateTime<Utc>>)> = Vec::new();
    for q in &req.queries {
        let datasets: Vec<(Dataset, Range<DateTime<Utc>>)> = match &q.source {
            QuerySource::Table(t) => vec![(Dataset::Table(*t), range.clone())],
            QuerySource::Timeseries(rs) => rs
                .iter()
                .map(|r| (Dataset::Timeseries(*r), range.clone()))
                .collect(),
            QuerySource::Derived(_) => derived_inputs(req, ctx),
        };
        for (d, r) in datasets {
            match out.iter_mut().find(|(e, _)| *e == d) {
                // Two queries reading one dataset over different days read the union.
                Some((_, have)) => *have = have.start.min(r.start)..have.end.max(r.end),
                None => out.push((d, r)),
            }
        }
    }
    out
}

/// The stored inputs of a derived table with the UTC ranges its days need (its baseline
/// reaches back before the window), each widened by the offset margin.
fn derived_inputs(req: &ValidRequest, ctx: &UserContext) -> Vec<(Dataset, Range<DateTime<Utc>>)> {
    let margin = Duration::hours(OFFSET_MARGIN_HOURS);
    let Some(bounds) = readiness::Bounds::of(&req.timeframe, ctx) else {
        return Vec::new();
    };
    let at = |day: i64| {
        DateTime::<Utc>::from_timestamp(day.saturating_mul(86_400), 0)
            .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
    };
    readiness::input_days(&bounds)
        .into_iter()
        .map(|(d, first, end)| {
            let start = if first == i64::MIN {
                DateTime::<Utc>::UNIX_EPOCH
            } else {
                at(first) - margin
            };
            (d, start..at(end) + margin)
        })
        .collect()
}

/// Rows per batch in execution (DataFusion's default is 8,192).
const SCAN_BATCH_ROWS: usize = 1 << 16;

/// Most memory consumers an exhaustion error names.
const NAMED_CONSUMERS: NonZeroUsize = match NonZeroUsize::new(5) {
    Some(n) => n,
    None => NonZeroUsize::MIN,
};

/// The planning state every request of an engine shares: DataFusion's built-in functions, the
/// lean optimiser and the planner with the time-bucket operator, cut into slices by
/// `slicing`. Building one registers every built-in function (~150 us), so
/// [`Engine`](super::Engine) builds it once, at start-up.
pub(super) fn planning_state(partitions: usize, slicing: Slicing) -> SessionState {
    // Batches as large as the store's row groups: a user's data is small, and the scan then
    // hands each cached batch on whole instead of cutting it in eight (every batch costs the
    // operators above it a fixed amount of work).
    let config = SessionConfig::new()
        .with_target_partitions(partitions)
        .with_batch_size(SCAN_BATCH_ROWS)
        .with_information_schema(false);
    // The compiler emits lean plans (no subqueries, joins or redundant filters), so the logical
    // optimiser only prunes columns and shares the floating-time expression: the full rule set
    // costs milliseconds per query, more than executing a small one.
    SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_optimizer_rules(vec![
            Arc::new(OptimizeProjections::new()),
            Arc::new(CommonSubexprEliminate::new()),
            Arc::new(OptimizeProjections::new()),
        ])
        .with_query_planner(Arc::new(Planner { slicing }))
        .build()
}

/// One request's session: the shared planning state, and a task context of its own whose
/// memory pool bounds this request alone: its operators, and (through [`Budget`]) the input
/// batches and result tables it holds.
pub(super) struct RequestSession {
    state: Arc<SessionState>,
    task: Arc<TaskContext>,
    pool: Arc<dyn MemoryPool>,
}

/// A request's input batches by dataset, and whether their caller declared them the health
/// store's.
pub struct Inputs {
    pub(super) batches: HashMap<Dataset, Vec<RecordBatch>>,
    pub(super) from_store: bool,
}

impl Inputs {
    /// Batches of any shape: any order, any mix of sources in a batch.
    pub fn new(batches: HashMap<Dataset, Vec<RecordBatch>>) -> Self {
        Inputs {
            batches,
            from_store: false,
        }
    }

    /// Batches as the health store's reads answer them: every timeseries batch sorted by its
    /// time column, without nulls, and of one source
    /// ([`HealthStore::read`](crate::store::health::HealthStore::read)). The time-bucket
    /// operator then bounds each batch by its first and last rows and reads its source off its
    /// first row, instead of passes over all of them (`engine::stored`). Debug builds check
    /// the promise; release builds trust it, and a batch that breaks it may lose rows from the
    /// answer or count them under the wrong source.
    pub fn stored(batches: HashMap<Dataset, Vec<RecordBatch>>) -> Self {
        Inputs {
            batches,
            from_store: true,
        }
    }
}

/// A request's memory pool: `limits.memory_limit_bytes`, naming its largest consumers when
/// exhausted.
pub(super) fn request_pool(limits: &Limits) -> Arc<dyn MemoryPool> {
    Arc::new(TrackConsumersPool::new(
        GreedyMemoryPool::new(limits.memory_limit_bytes),
        NAMED_CONSUMERS,
    ))
}

impl RequestSession {
    /// A session drawing on `pool` (the request's own; a team request's sessions, one per
    /// user, share the request's).
    pub(super) fn new(
        state: &Arc<SessionState>,
        stored: StoredBatches,
        pool: Arc<dyn MemoryPool>,
    ) -> Self {
        let state = state.clone();
        let runtime = RuntimeEnv {
            memory_pool: pool.clone(),
            ..state.runtime_env().as_ref().clone()
        };
        let config = state.config().clone().with_extension(Arc::new(stored));
        let task = TaskContext::from(state.as_ref())
            .with_runtime(Arc::new(runtime))
            .with_session_config(config);
        RequestSession {
            state,
            task: Arc::new(task),
            pool,
        }
    }

    /// Optimises, plans and runs one compiled query; a failure says in which phase. With
    /// `max_cells` (a JSON answer), the run stops as soon as its output passes that many
    /// cells, so an answer too large for JSON is refused without computing all of it.
    pub(super) async fn run(
        &self,
        plan: &LogicalPlan,
        limits: &Limits,
        max_cells: Option<CellCap>,
    ) -> Result<Run, EngineError> {
        let planning = |source| EngineError::Planning { source };
        let t = std::time::Instant::now();
        let optimised = self.state.optimize(plan).map_err(planning)?;
        let optimised_at = t.elapsed();
        let physical = self
            .state
            .create_physical_plan(&optimised)
            .await
            .map_err(planning)?;
        let planned_at = t.elapsed();
        let mut stream =
            execute_stream(physical.clone(), self.task.clone()).map_err(|e| classify(e, limits))?;
        let columns = physical.schema().fields().len();
        let (mut batches, mut cells) = (Vec::new(), 0usize);
        while let Some(batch) = stream.try_next().await.map_err(|e| classify(e, limits))? {
            cells += batch.num_rows() * columns;
            if let Some(cap) = max_cells
                && cells > cap.limit
            {
                return Err(EngineError::ResultTooLarge {
                    query: cap.query,
                    cells,
                    limit: cap.limit,
                });
            }
            batches.push(batch);
        }
        Ok(Run {
            phases: [
                optimised_at,
                planned_at - optimised_at,
                t.elapsed() - planned_at,
            ],
            physical,
            batches,
        })
    }
}

/// The JSON cell limit as one query's run checks it.
#[derive(Debug, Clone, Copy)]
pub(super) struct CellCap {
    pub(super) query: usize,
    pub(super) limit: usize,
}

/// One query's run: its physical plan (with metrics), its batches, and the time spent
/// optimising, planning and executing it.
pub(super) struct Run {
    phases: [std::time::Duration; 3],
    physical: Arc<dyn ExecutionPlan>,
    pub(super) batches: Vec<RecordBatch>,
}

/// The default physical planner plus the time-bucket operator.
#[derive(Debug)]
struct Planner {
    /// How a time-bucket operator cuts its work.
    slicing: Slicing,
}

#[async_trait::async_trait]
impl QueryPlanner for Planner {
    async fn create_physical_plan(
        &self,
        plan: &LogicalPlan,
        session: &dyn Session,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        let plan = DefaultPhysicalPlanner::with_extension_planners(vec![
            Arc::new(BucketPlanner {
                slicing: self.slicing,
            }),
            Arc::new(AlignPlanner::new()),
            Arc::new(ReadinessPlanner::new()),
        ])
        .create_physical_plan(plan, session)
        .await?;
        // Rows already in order are answered without sorting them (`ordered.rs`).
        presorted(plan)
    }
}

/// An error of the execution phase: memory exhaustion (the request is too big for its limit)
/// or anything else, with DataFusion's error kept as the source.
pub(super) fn classify(e: DataFusionError, limits: &Limits) -> EngineError {
    if matches!(e.find_root(), DataFusionError::ResourcesExhausted(_)) {
        EngineError::ResourcesExhausted {
            limit_bytes: limits.memory_limit_bytes,
            source: e,
        }
    } else {
        EngineError::Execution { source: e }
    }
}

/// Runs one compiled query.
async fn run_one(
    session: &RequestSession,
    req: &ValidRequest,
    i: usize,
    catalog: &Catalog,
    limits: &Limits,
) -> Result<QueryResult, EngineError> {
    let plan =
        tracing::info_span!("query.plan", query = i).in_scope(|| compile(req, i, catalog))?;
    let schema = Arc::new(plan.schema().as_arrow().clone());
    let cap = CellCap {
        query: i,
        limit: limits.max_json_cells,
    };
    let run = session.run(&plan, limits, Some(cap)).await?;
    let batches = run
        .batches
        .into_iter()
        .filter(|b| b.num_rows() > 0)
        .map(|b| b.with_schema(schema.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| EngineError::internal("result schema", e))?;
    Ok(QueryResult { schema, batches })
}

/// The user's tables and a session for one request, the input batches charged to its pool
/// first: a request whose data alone exceeds the memory limit is refused before any planning.
fn prepare(
    state: &Arc<SessionState>,
    ctx: &UserContext,
    inputs: Inputs,
    limits: &Limits,
) -> Result<(Catalog, RequestSession, Budget), EngineError> {
    prepare_in(state, ctx, inputs, limits, request_pool(limits))
}

/// [`prepare`] drawing on `pool`.
pub(super) fn prepare_in(
    state: &Arc<SessionState>,
    ctx: &UserContext,
    inputs: Inputs,
    limits: &Limits,
    pool: Arc<dyn MemoryPool>,
) -> Result<(Catalog, RequestSession, Budget), EngineError> {
    let Inputs {
        batches: inputs,
        from_store,
    } = inputs;
    let stored = match from_store {
        true => StoredBatches::of(inputs.iter()),
        false => StoredBatches::default(),
    };
    let session = RequestSession::new(state, stored, pool);
    let mut budget = Budget::new(&session.pool);
    budget
        .charge(inputs.values().flatten())
        .map_err(|e| classify(e, limits))?;
    let mut catalog = Catalog::new(ctx.clone(), inputs)?;
    catalog.bucket_operator = limits.bucket_operator;
    Ok((catalog, session, budget))
}

/// EXPLAIN ANALYZE of every query of `req`, for diagnostics (benches, debugging a slow
/// request): each phase's wall time (catalog and session set-up, compile, logical optimise,
/// physical planning, execution) and the physical plan with its metrics. Runs on the caller's
/// runtime, without the time limit.
pub(super) async fn explain_analyze(
    state: &Arc<SessionState>,
    req: &ValidRequest,
    ctx: &UserContext,
    inputs: Inputs,
    limits: &Limits,
) -> Result<String, EngineError> {
    use datafusion::physical_plan::display::DisplayableExecutionPlan;
    use std::fmt::Write;
    let t = std::time::Instant::now();
    let (catalog, session, budget) = prepare(state, ctx, inputs, limits)?;
    let mut out = format!("set-up {:?}, inputs {} bytes\n", t.elapsed(), budget.size());
    for i in 0..req.queries.len() {
        let t = std::time::Instant::now();
        let plan = compile(req, i, &catalog)?;
        let compiled = t.elapsed();
        let run = session.run(&plan, limits, None).await?;
        let [optimise, planning, execution] = run.phases;
        let _ = writeln!(
            out,
            "query {i}: compile {compiled:?}, optimise {optimise:?}, physical planning {planning:?}, run {execution:?}\n{}",
            DisplayableExecutionPlan::with_metrics(run.physical.as_ref()).indent(true)
        );
    }
    Ok(out)
}

/// Runs every query of `req` over `inputs` on `runtime` until `deadline`; a query whose output
/// passes `limits.max_json_cells` stops there (callers answering Parquet lift that limit).
///
/// The returned future owns the work: when it is dropped (the deadline passed here, an outer
/// deadline, a client that went away), the task is aborted, which drops, and so cancels, every
/// DataFusion stream at its next yield point. A detached task would keep burning CPU after its
/// 504.
pub(super) async fn execute_on(
    runtime: &tokio::runtime::Handle,
    state: &Arc<SessionState>,
    req: &ValidRequest,
    ctx: &UserContext,
    inputs: Inputs,
    limits: &Limits,
    deadline: tokio::time::Instant,
) -> Result<Vec<QueryResult>, EngineError> {
    let (catalog, session, mut budget) = prepare(state, ctx, inputs, limits)?;
    let (req, lim) = (req.clone(), limits.clone());
    // The task runs on the engine's runtime: its span keeps it in the request's trace.
    let span = tracing::info_span!("query.execute", queries = req.queries.len());
    let task = async move {
        let mut results = Vec::with_capacity(req.queries.len());
        for i in 0..req.queries.len() {
            let result = run_one(&session, &req, i, &catalog, &lim).await?;
            // Results wait for the last query (and the encoder): they hold memory meanwhile.
            budget
                .charge(&result.batches)
                .map_err(|e| classify(e, &lim))?;
            results.push(result);
            // In-memory plans rarely wait, and DataFusion's sources yield only once a task's
            // budget is spent (128 batches): yield between queries, so an abort lands within
            // one query's work.
            tokio::task::yield_now().await;
        }
        Ok(results)
    };
    let work = AbortOnDrop(runtime.spawn(tracing::Instrument::instrument(task, span)));
    match tokio::time::timeout_at(deadline, work).await {
        Ok(Ok(r)) => r,
        Ok(Err(join)) => Err(EngineError::internal("query task", join)),
        Err(_) => Err(EngineError::Timeout {
            seconds: limits.timeout.as_secs(),
        }),
    }
}
