//! [`Engine`]: the query engine as a value, built once at start-up and held in the
//! application state: its limits, the DataFusion planning state every request shares, and the
//! CPU runtime queries run on. Nothing of it is process-wide, so two engines (tests, a CLI run
//! beside a server) never share limits or threads.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::session_state::SessionState;
use tokio::runtime::Runtime;
use tokio::time::Instant;

use super::execute::{self, Inputs, QueryResult};
use super::lang::request::ValidRequest;
use super::plan::bucket::Slicing;
use super::plan::catalog::UserContext;
use super::task::AbortOnDrop;
use super::team::{TeamRequest, TeamRun};
use super::{EngineError, Limits, OutputFormat};
use crate::schema::Dataset;

/// The query engine; cheap to clone (one shared inner value).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    limits: Limits,
    state: Arc<SessionState>,
    /// The handle queries are spawned with; the runtime itself lives in `_runtime`.
    handle: tokio::runtime::Handle,
    _runtime: CpuRuntime,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

/// The engine's own multi-threaded runtime, one worker per core, separate from the one serving
/// requests (DataFusion's advice for mixing CPU-bound plans with I/O): the caller's timer answers
/// the deadline on time even while every engine thread is busy. Its I/O driver is on: a Flight
/// SQL plan reads the store and calls workers from inside its operators
/// (`distributed::StoreScanExec`, the distributed stages). Shut down in the background when the
/// engine goes, so an engine may be dropped inside async code.
struct CpuRuntime(Option<Runtime>);

impl Drop for CpuRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl Engine {
    /// Builds an engine with these limits: the planning state and the CPU runtime.
    pub fn new(limits: Limits) -> Result<Engine, EngineError> {
        let threads = std::thread::available_parallelism().map_or(2, usize::from);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("wearhouse-engine")
            .enable_all()
            .build()
            .map_err(|e| EngineError::internal("engine runtime", e))?;
        let slicing = Slicing {
            most: match limits.bucket_slices {
                0 => threads,
                n => n,
            },
            min_rows: limits.bucket_slice_rows.max(1),
        };
        let state = Arc::new(execute::planning_state(
            limits.target_partitions.max(1),
            slicing,
        ));
        Ok(Engine {
            inner: Arc::new(Inner {
                limits,
                state,
                handle: runtime.handle().clone(),
                _runtime: CpuRuntime(Some(runtime)),
            }),
        })
    }

    /// The limits every request of this engine runs under.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The deadline of a request starting now: one instant, passed down through loading,
    /// execution and encoding, so no phase restarts the clock.
    pub fn deadline(&self) -> Instant {
        Instant::now() + self.inner.limits.timeout
    }

    /// Runs every query of `req` over `inputs` within the memory limit, until `deadline`, for
    /// an answer in `format`: for JSON, a query stops as soon as its output passes
    /// `max_json_cells` ([`EngineError::ResultTooLarge`]) instead of running to the end for the
    /// encoder to refuse it; a Parquet answer has no cell limit. The work stops when the
    /// deadline passes or when this future is dropped.
    pub async fn execute(
        &self,
        req: &ValidRequest,
        ctx: &UserContext,
        inputs: Inputs,
        deadline: Instant,
        format: OutputFormat,
    ) -> Result<Vec<QueryResult>, EngineError> {
        // Only a JSON answer has a cell limit; the run stops at it.
        let limits = match format {
            OutputFormat::Json => self.inner.limits.clone(),
            OutputFormat::ParquetTar => Limits {
                max_json_cells: usize::MAX,
                ..self.inner.limits.clone()
            },
        };
        execute::execute_on(
            &self.inner.handle,
            &self.inner.state,
            req,
            ctx,
            inputs,
            &limits,
            deadline,
        )
        .await
    }

    /// Starts a team request (`team.rs`): its parts are added user by user, then combined.
    pub fn team_run(
        &self,
        request: &TeamRequest,
        format: OutputFormat,
    ) -> Result<TeamRun, EngineError> {
        TeamRun::new(
            self.inner.state.clone(),
            self.inner.handle.clone(),
            self.inner.limits.clone(),
            request,
            format,
        )
    }

    /// EXPLAIN ANALYZE of every query of `req` (phase times and the physical plans with their
    /// metrics), on the caller's runtime and without a deadline: diagnostics only.
    pub async fn explain_analyze(
        &self,
        req: &ValidRequest,
        ctx: &UserContext,
        inputs: Inputs,
    ) -> Result<String, EngineError> {
        execute::explain_analyze(&self.inner.state, req, ctx, inputs, &self.inner.limits).await
    }

    /// Runs `work` on the engine's CPU runtime (Flight SQL's statements, `crate::flight`), in
    /// the caller's span; dropping the answer aborts it.
    pub fn spawn<F>(&self, work: F) -> AbortOnDrop<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        AbortOnDrop(
            self.inner
                .handle
                .spawn(tracing::Instrument::in_current_span(work)),
        )
    }

    /// Tasks alive on the engine's runtime: the queries running now and the tasks they spawned.
    /// Zero when the engine is idle (after a cancelled query, within one batch of work).
    pub fn running_tasks(&self) -> usize {
        self.inner.handle.metrics().num_alive_tasks()
    }
}

/// Runs `req` over batches of any shape on a one-off engine built from `limits`, with
/// `limits.timeout` from now and no cell limit: for tests and one-shot tools. A server holds one [`Engine`] instead.
pub async fn execute(
    req: &ValidRequest,
    ctx: &UserContext,
    inputs: HashMap<Dataset, Vec<RecordBatch>>,
    limits: &Limits,
) -> Result<Vec<QueryResult>, EngineError> {
    let engine = Engine::new(limits.clone())?;
    let deadline = engine.deadline();
    let inputs = Inputs::new(inputs);
    engine
        .execute(req, ctx, inputs, deadline, OutputFormat::ParquetTar)
        .await
}

/// [`Engine::explain_analyze`] on a one-off engine built from `limits`.
pub async fn explain_analyze(
    req: &ValidRequest,
    ctx: &UserContext,
    inputs: HashMap<Dataset, Vec<RecordBatch>>,
    limits: &Limits,
) -> Result<String, EngineError> {
    Engine::new(limits.clone())?
        .explain_analyze(req, ctx, Inputs::new(inputs))
        .await
}
