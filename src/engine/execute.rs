//! [`execute`]: compiles and runs every query of a request over the batches handed in, under
//! the time limit (the whole batch of queries is cancelled on expiry) and a per-request
//! DataFusion memory pool. Also [`required_inputs`]: what the caller must load.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Duration, Utc};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::Session;
use datafusion::error::DataFusionError;
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::common_subexpr_eliminate::CommonSubexprEliminate;
use datafusion::optimizer::optimize_projections::OptimizeProjections;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::schema::Dataset;

use super::bucket::BucketPlanner;
use super::catalog::{Catalog, UserContext};
use super::request::{QuerySource, ValidRequest};
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
        let datasets: Vec<Dataset> = match &q.source {
            QuerySource::Table(t) => vec![Dataset::Table(*t)],
            QuerySource::Timeseries(rs) => rs.iter().map(|r| Dataset::Timeseries(*r)).collect(),
        };
        for d in datasets {
            if !out.iter().any(|(e, _)| *e == d) {
                out.push((d, range.clone()));
            }
        }
    }
    out
}

fn session(limits: &Limits) -> Result<SessionContext, EngineError> {
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(limits.memory_limit_bytes, 1.0)
        .build_arc()
        .map_err(|e| EngineError::internal("runtime", e))?;
    let config = SessionConfig::new()
        .with_target_partitions(limits.target_partitions.max(1))
        .with_information_schema(false);
    // Building a state registers every built-in function; do that once and give each request
    // a copy with its own config and memory pool.
    static BASE: OnceLock<SessionState> = OnceLock::new();
    // The compiler emits lean plans (no subqueries, joins or redundant filters), so the logical
    // optimiser only prunes columns and shares the floating-time expression: the full rule set
    // costs milliseconds per query, more than executing a small one.
    let base = BASE.get_or_init(|| {
        SessionStateBuilder::new()
            .with_default_features()
            .with_optimizer_rules(vec![
                Arc::new(OptimizeProjections::new()),
                Arc::new(CommonSubexprEliminate::new()),
                Arc::new(OptimizeProjections::new()),
            ])
            .with_query_planner(Arc::new(Planner))
            .build()
    });
    let state = SessionStateBuilder::new_from_existing(base.clone())
        .with_config(config)
        .with_runtime_env(runtime)
        .build();
    Ok(SessionContext::new_with_state(state))
}

/// The default physical planner plus the time-bucket operator.
#[derive(Debug)]
struct Planner;

#[async_trait::async_trait]
impl QueryPlanner for Planner {
    async fn create_physical_plan(
        &self,
        plan: &LogicalPlan,
        session: &dyn Session,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(BucketPlanner)])
            .create_physical_plan(plan, session)
            .await
    }
}

fn classify(e: DataFusionError, limits: &Limits) -> EngineError {
    if matches!(e.find_root(), DataFusionError::ResourcesExhausted(_)) {
        EngineError::ResourcesExhausted {
            limit_bytes: limits.memory_limit_bytes,
            source: e,
        }
    } else {
        EngineError::internal("execution", e)
    }
}

/// Runs one compiled query.
async fn run_one(
    ctx: &SessionContext,
    req: &ValidRequest,
    i: usize,
    catalog: &Catalog,
    limits: &Limits,
) -> Result<QueryResult, EngineError> {
    let plan = compile(req, i, catalog)?;
    let schema = Arc::new(plan.schema().as_arrow().clone());
    let df = ctx
        .execute_logical_plan(plan)
        .await
        .map_err(|e| classify(e, limits))?;
    let batches = df.collect().await.map_err(|e| classify(e, limits))?;
    let batches = batches
        .into_iter()
        .filter(|b| b.num_rows() > 0)
        .map(|b| b.with_schema(schema.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| EngineError::internal("result schema", e))?;
    Ok(QueryResult { schema, batches })
}

/// EXPLAIN ANALYZE of every query of `req`, for diagnostics (benches, debugging a slow
/// request): each phase's wall time (catalog and session set-up, compile, logical optimise,
/// physical planning, execution) and the physical plan with its metrics. Runs on the caller's
/// runtime, without the time limit.
pub async fn explain_analyze(
    req: &ValidRequest,
    ctx: &UserContext,
    inputs: HashMap<Dataset, Vec<RecordBatch>>,
    limits: &Limits,
) -> Result<String, EngineError> {
    use datafusion::physical_plan::{collect, display::DisplayableExecutionPlan};
    use std::fmt::Write;
    let t = std::time::Instant::now();
    let mut catalog = Catalog::new(ctx.clone(), inputs)?;
    catalog.bucket_operator = limits.bucket_operator;
    let session = session(limits)?;
    let mut out = format!("set-up {:?}\n", t.elapsed());
    for i in 0..req.queries.len() {
        let t = std::time::Instant::now();
        let plan = compile(req, i, &catalog)?;
        let compiled = t.elapsed();
        let state = session.state();
        let optimised = state.optimize(&plan).map_err(|e| classify(e, limits))?;
        let optimised_at = t.elapsed();
        let physical = state
            .create_physical_plan(&optimised)
            .await
            .map_err(|e| classify(e, limits))?;
        let planned = t.elapsed();
        collect(physical.clone(), session.task_ctx())
            .await
            .map_err(|e| classify(e, limits))?;
        let ran = t.elapsed();
        let _ = writeln!(
            out,
            "query {i}: compile {compiled:?}, optimise {:?}, physical planning {:?}, run {:?}\n{}",
            optimised_at - compiled,
            planned - optimised_at,
            ran - planned,
            DisplayableExecutionPlan::with_metrics(physical.as_ref()).indent(true)
        );
    }
    Ok(out)
}

/// The engine's CPU runtime, separate from the one serving requests (DataFusion's advice for
/// mixing CPU-bound plans with I/O): one worker per core.
fn cpu_runtime() -> Result<&'static tokio::runtime::Runtime, EngineError> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    let rt = RUNTIME.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, usize::from);
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("wearhouse-engine")
            .enable_time()
            .build()
            .map_err(|e| e.to_string())
    });
    rt.as_ref()
        .map_err(|e| EngineError::Internal(format!("engine runtime: {e}")))
}

/// Runs every query of `req` over `inputs` with the limits' time and memory bounds.
///
/// The work runs on the engine's own runtime: the caller's runtime stays responsive (its
/// timer answers the timeout on time even while every engine thread is busy), and aborting
/// the task drops, and so cancels, every DataFusion stream at its next yield point.
pub async fn execute(
    req: &ValidRequest,
    ctx: &UserContext,
    inputs: HashMap<Dataset, Vec<RecordBatch>>,
    limits: &Limits,
) -> Result<Vec<QueryResult>, EngineError> {
    let mut catalog = Catalog::new(ctx.clone(), inputs)?;
    catalog.bucket_operator = limits.bucket_operator;
    let session = session(limits)?;
    let (req, lim) = (req.clone(), limits.clone());
    let mut work = cpu_runtime()?.spawn(async move {
        let mut results = Vec::with_capacity(req.queries.len());
        for i in 0..req.queries.len() {
            results.push(run_one(&session, &req, i, &catalog, &lim).await?);
        }
        Ok(results)
    });
    match tokio::time::timeout(limits.timeout, &mut work).await {
        Ok(Ok(r)) => r,
        Ok(Err(join)) => Err(EngineError::internal("query task", join)),
        Err(_) => {
            work.abort();
            Err(EngineError::Timeout {
                seconds: limits.timeout.as_secs(),
            })
        }
    }
}
