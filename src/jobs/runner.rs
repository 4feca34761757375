//! The runner: claims due jobs under a lease, runs them on its own tasks, renews the lease while
//! they run, records how each run ended, and on shutdown finishes or releases what it holds.
//!
//! The loop claims as many jobs as it has free slots (`concurrency`), in one statement, then
//! waits; a finished job frees a slot and the loop claims again at once, so a busy queue is
//! worked without a poll-sleep per job. A wait ends early on the store's wake-up notification (a job enqueued in this process) or
//! a finished job, else after `poll_interval` (jobs enqueued by other processes, or coming due).

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::Instrument;

use super::backoff::Backoff;
use super::clock::{Clock, SystemClock};
use super::ends::Ends;
use super::handler::{JobContext, JobError, Outcome, Registry};
use crate::store::metadata::MetadataStore;
use crate::store::metadata::jobs::{self, Fence, Finish, Job};

/// Tuning of a runner.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// This runner's name in `lease_owner` (default: host, process id and a random suffix).
    pub owner: String,
    /// Jobs run at once (default 8).
    pub concurrency: usize,
    /// Longest wait before looking for due jobs again (default 1 s).
    pub poll_interval: Duration,
    /// A claim's lease; a runner that stops renewing loses its jobs after this (default 60 s).
    pub lease: Duration,
    /// How often a running job's lease is renewed (default 20 s, a third of the lease).
    pub heartbeat: Duration,
    /// How long shutdown waits for running jobs before releasing them (default 10 s).
    pub shutdown_grace: Duration,
    /// Delays between failed attempts.
    pub backoff: Backoff,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "wearhouse".to_owned());
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        RunnerConfig {
            owner: format!("{host}:{}:{}", std::process::id(), &suffix[..8]),
            concurrency: 8,
            poll_interval: Duration::from_secs(1),
            lease: Duration::from_secs(60),
            heartbeat: Duration::from_secs(20),
            shutdown_grace: Duration::from_secs(10),
            backoff: Backoff::default(),
        }
    }
}

/// A runner not yet started.
#[derive(Debug)]
pub struct Runner {
    meta: MetadataStore,
    registry: Registry,
    config: RunnerConfig,
    clock: Arc<dyn Clock>,
}

/// A started runner; [`RunnerHandle::shutdown`] stops it. Dropping the handle also stops it,
/// without the wait.
#[derive(Debug)]
pub struct RunnerHandle {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RunnerHandle {
    /// Stops claiming, lets running jobs finish for up to `shutdown_grace`, then releases the
    /// leases of those still running (back to `pending`, the attempt given back) and returns.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        if let Err(error) = self.task.await {
            tracing::error!(%error, "job runner task failed");
        }
    }
}

struct Shared {
    meta: MetadataStore,
    registry: Registry,
    config: RunnerConfig,
    clock: Arc<dyn Clock>,
    draining: watch::Receiver<bool>,
    abort: watch::Receiver<bool>,
    ends: Ends,
}

impl Runner {
    /// A runner over `meta` for the kinds in `registry`.
    pub fn new(meta: MetadataStore, registry: Registry, config: RunnerConfig) -> Self {
        Runner {
            meta,
            registry,
            config,
            clock: Arc::new(SystemClock),
        }
    }

    /// Replaces the clock (tests).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Starts the runner on the current tokio runtime.
    pub fn spawn(self) -> RunnerHandle {
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(run(self, stop_rx));
        RunnerHandle { stop, task }
    }
}

async fn run(runner: Runner, mut stop: watch::Receiver<bool>) {
    let (drain_tx, draining) = watch::channel(false);
    let (abort_tx, abort) = watch::channel(false);
    let (ends, writer) = Ends::spawn(runner.meta.clone(), Arc::clone(&runner.clock));
    let shared = Arc::new(Shared {
        meta: runner.meta,
        registry: runner.registry,
        config: runner.config,
        clock: runner.clock,
        draining,
        abort,
        ends,
    });
    let concurrency = shared.config.concurrency.max(1);
    let wake = Arc::clone(shared.meta.jobs_wake());
    let mut tasks = JoinSet::new();
    tracing::info!(owner = %shared.config.owner, "job runner started");
    while !*stop.borrow() {
        let notified = wake.notified();
        tokio::pin!(notified);
        // Registered before the claim, so an enqueue that commits meanwhile still wakes us.
        notified.as_mut().enable();
        let free = concurrency - tasks.len();
        if free > 0 {
            match claim(&shared, free).await {
                Ok(jobs) => {
                    for job in jobs {
                        let span = run_span(&job);
                        tasks.spawn(execute(Arc::clone(&shared), job).instrument(span));
                    }
                }
                Err(error) => tracing::warn!(%error, "claiming jobs failed"),
            }
        }
        tokio::select! {
            _ = stop.changed() => break,
            () = &mut notified => {}
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {
                // Collect every other finished task before claiming again.
                while tasks.try_join_next().is_some() {}
            }
            () = tokio::time::sleep(shared.config.poll_interval) => {}
        }
    }
    let _ = drain_tx.send(true);
    let grace = tokio::time::sleep(shared.config.shutdown_grace);
    tokio::pin!(grace);
    loop {
        tokio::select! {
            next = tasks.join_next() => if next.is_none() { break },
            () = &mut grace => {
                tracing::info!(running = tasks.len(), "releasing the jobs still running");
                let _ = abort_tx.send(true);
                while tasks.join_next().await.is_some() {}
                break;
            }
        }
    }
    tracing::info!(owner = %shared.config.owner, "job runner stopped");
    // Every task has recorded its end; dropping the last sender stops the writer.
    drop(shared);
    let _ = writer.await;
}

async fn claim(
    shared: &Shared,
    free: usize,
) -> Result<Vec<Job>, crate::store::metadata::MetadataError> {
    let now = shared.clock.now();
    let until = now + lease_span(shared.config.lease);
    let mut conn = shared.meta.writer().await?;
    let limit = u32::try_from(free).unwrap_or(u32::MAX);
    jobs::claim_jobs(&mut conn, &shared.config.owner, limit, now, until).await
}

fn lease_span(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

/// The span of one run, `job.run`: the root of a trace of its own (a run is not part of the
/// work that claimed it), with the job's id, kind and attempt, the id of the request that
/// enqueued it (which every span under it carries too, see `crate::telemetry`), and how the
/// run ended (`job.outcome`: succeeded, retry, pending, failed or lease_lost).
fn run_span(job: &Job) -> tracing::Span {
    use tracing::field::Empty;
    let span = tracing::info_span!(parent: None, "job.run", otel.kind = "consumer",
        job.id = %job.id, job.kind = %job.kind, job.attempt = job.attempts,
        request_id = job.request_id.as_deref(), job.outcome = Empty, otel.status_code = Empty);
    if let Some(request_id) = &job.request_id {
        crate::telemetry::request_id::scope(&span, request_id);
    }
    span
}

/// Records how the run of the current `job.run` span ended.
fn record_outcome(finish: Option<&Finish>) {
    let span = tracing::Span::current();
    let outcome = match finish {
        None => "lease_lost",
        Some(Finish::Succeeded) => "succeeded",
        Some(Finish::Pending { error: Some(_), .. }) => "retry",
        // Snoozed by its handler, or handed back at shutdown.
        Some(Finish::Pending { error: None, .. }) => "pending",
        Some(Finish::Failed { .. }) => {
            span.record("otel.status_code", "error");
            "failed"
        }
    };
    span.record("job.outcome", outcome);
}

/// Runs one claimed job to its recorded end (or drops it when the lease is lost).
async fn execute(shared: Arc<Shared>, job: Job) {
    let fence = job.fence();
    if job.attempts > job.max_attempts {
        // A takeover of the last attempt: its runner died holding it.
        let error = job
            .last_error
            .clone()
            .unwrap_or_else(|| "no attempts left".to_owned());
        record(&shared, &fence, Finish::Failed { error }).await;
        return;
    }
    let Some(handler) = shared.registry.get(&job.kind) else {
        // Maybe a newer process knows it (rolling deploy): retry, and fail in the end.
        let error = format!("no handler for job kind {:?} in this process", job.kind);
        let finish = decide(&shared, &job, Err(JobError::Retry(error)));
        record(&shared, &fence, finish).await;
        return;
    };
    let ctx = JobContext {
        id: job.id,
        team_id: job.team_id,
        attempt: job.attempts,
        max_attempts: job.max_attempts,
        meta: shared.meta.clone(),
        clock: Arc::clone(&shared.clock),
        draining: shared.draining.clone(),
    };
    let work =
        std::panic::AssertUnwindSafe(handler.run_stored(&ctx, job.payload.clone())).catch_unwind();
    let mut abort = shared.abort.clone();
    let finish = tokio::select! {
        biased;
        result = work => {
            let result = result.unwrap_or_else(|_| Err(JobError::Retry("the job handler panicked".to_owned())));
            decide(&shared, &job, result)
        }
        () = keep_lease(&shared, &fence) => {
            tracing::warn!(id = %job.id, kind = %job.kind, "lease lost; the run is abandoned");
            record_outcome(None);
            return;
        }
        _ = abort.wait_for(|a| *a) => Finish::Pending {
            at: shared.clock.now(),
            error: None,
            count_attempt: false,
        },
    };
    record(&shared, &fence, finish).await;
}

/// How a handler's answer ends the run.
fn decide(shared: &Shared, job: &Job, result: Result<Outcome, JobError>) -> Finish {
    match result {
        Ok(Outcome::Done) => Finish::Succeeded,
        Ok(Outcome::RetryAt(at)) => Finish::Pending {
            at,
            error: None,
            count_attempt: false,
        },
        Err(JobError::Permanent(error)) => Finish::Failed { error },
        Err(JobError::Retry(error)) if job.attempts >= job.max_attempts => Finish::Failed { error },
        Err(JobError::Retry(error)) => {
            let delay = shared
                .config
                .backoff
                .delay(job.attempts, &mut rand::thread_rng());
            Finish::Pending {
                at: shared.clock.now() + lease_span(delay),
                error: Some(error),
                count_attempt: true,
            }
        }
    }
}

/// Renews the lease every heartbeat; returns once it is lost, or could not be renewed for a
/// whole lease (the database unreachable: another runner may take the job over by now).
async fn keep_lease(shared: &Shared, fence: &Fence) {
    let mut renewed = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(shared.config.heartbeat).await;
        let now = shared.clock.now();
        let until = now + lease_span(shared.config.lease);
        let result = match shared.meta.writer().await {
            Ok(mut conn) => jobs::renew_lease(&mut conn, fence, until, now).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(true) => renewed = tokio::time::Instant::now(),
            Ok(false) => return,
            Err(error) => {
                tracing::warn!(%error, id = %fence.id, "renewing a job lease failed");
                if renewed.elapsed() >= shared.config.lease {
                    return;
                }
            }
        }
    }
}

/// Writes a run's end (batched with others, see `ends.rs`), then alone a few more times over
/// database errors; a run that cannot be recorded keeps its lease until it expires and is then
/// run again (at-least-once).
async fn record(shared: &Shared, fence: &Fence, finish: Finish) {
    record_outcome(Some(&finish));
    for attempt in 0..3u32 {
        let result = if attempt == 0 {
            shared.ends.record(fence, &finish).await.map_err(|()| None)
        } else {
            tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            match shared.meta.writer().await {
                Ok(mut conn) => jobs::finish_job(&mut conn, fence, &finish, shared.clock.now())
                    .await
                    .map_err(Some),
                Err(e) => Err(Some(e)),
            }
        };
        match result {
            Ok(true) => {
                match &finish {
                    Finish::Failed { error } => {
                        tracing::warn!(id = %fence.id, %error, "job failed for good");
                    }
                    Finish::Pending {
                        error: Some(error), ..
                    } => {
                        tracing::info!(id = %fence.id, %error, "job will be retried");
                    }
                    Finish::Succeeded | Finish::Pending { error: None, .. } => {}
                }
                return;
            }
            Ok(false) => {
                tracing::warn!(id = %fence.id, "job lease lost before its end was recorded");
                return;
            }
            Err(None) => {} // the batch's failure is logged by the writer
            Err(Some(error)) => {
                tracing::warn!(%error, id = %fence.id, "recording a job's end failed");
            }
        }
    }
}
