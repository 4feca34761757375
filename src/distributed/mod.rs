//! Distributed execution past one machine (`analytics.md` §6): Flight SQL statements over a
//! team's views whose input is large run on `wearhouse worker` processes, planned and executed
//! by `datafusion-distributed`, with the API node as the coordinator.
//!
//! **Why `datafusion-distributed` (and not Ballista).** Both track DataFusion 55. Ballista brings
//! a scheduler process of its own, its own executor registration and a shuffle written to the
//! executors' local disks; `datafusion-distributed` is a query planner added to an ordinary
//! DataFusion session plus a gRPC worker service, with stages streamed worker to worker over
//! Arrow Flight data and nothing written to disk. That fits a service whose workers must be
//! stateless (they may join or leave: nothing to drain, nothing to re-register), whose plans
//! start with its own scan node (one codec and two planner hooks, below), and which already
//! speaks tonic 0.14 and arrow-flight 59 (the same crates, no second copy).
//!
//! **How a statement runs.**
//! - The views' scans are [`StoreScanExec`] nodes: a dataset of a list of the team's users, read
//!   through the store's own read path on whatever process runs the node. Workers read the
//!   bucket themselves; the coordinator ships the node (team, dataset, projection, user ids),
//!   never rows.
//! - With workers configured (`serve --workers`), the session gets the distributed planner. A
//!   scan whose users' stored bytes reach `--distribute-above-mb` asks for one task per user
//!   (capped at two per live worker); below it, it asks for one task, the planner leaves the plan
//!   whole and it runs on the API node as without workers.
//! - A distributed scan's users are split between tasks balanced by stored bytes; partial
//!   aggregates run beside the scans, shuffles between workers, the final stage on the API node.
//!
//! **Failures.** A worker lost mid-query fails that query (the engine does not retry a stage:
//! its docs say so), and the client gets the error, never a partial or wrong answer: Flight SQL
//! answers `UNAVAILABLE` ("run it again") when a worker the statement was planned on no longer
//! answers a probe after the failure (`flight::failure`). Before
//! planning each statement the coordinator probes its workers (a TCP connect, half a second at
//! most), so the next statement is planned on the survivors; with none left it runs on the API
//! node.
//!
//! **Trust.** A worker executes the plans it is sent, over any team's folders, so it must only
//! take them from the API nodes: every plan carries a shared token
//! (`WEARHOUSE_WORKER_TOKEN`, required on both sides, compared in constant time), checked when
//! the worker builds the plan's session; worker-to-worker calls carry it too. Run workers on a
//! private network all the same: the token guards the plans, not the wire (no TLS here).
//!
//! Decisions where the spec is silent: only Flight SQL statements are distributed; the team
//! query endpoint (`POST /aggregate/v1/team/query`) plans each user's query with the per-user
//! engine (priority, floating time, ALIGN, readiness) and stays on the API node. Workers have no
//! read cache (reads list the bucket, exact without the shared versions) and no metadata
//! database.

pub mod scan;
pub mod worker;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::session_state::SessionState;
use datafusion::prelude::SessionConfig;
use datafusion_distributed::{DistributedExt, SessionStateBuilderExt, WorkerResolver};
use url::Url;

use crate::schema::Dataset;
use crate::store::health::HealthStore;

pub use scan::{ScanCodec, ScanUser, StoreScanExec};

/// The header carrying the workers' shared token on every plan.
pub const TOKEN_HEADER: &str = "x-wearhouse-worker-token";

/// Tasks of one stage a worker runs at once (each one partition): two keep a worker's cores
/// busy, and let a lone survivor still take a stage.
const TASKS_PER_WORKER: usize = 2;

/// How long a worker probe waits for a connection.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// A dataset's storage schema with the user's two ids first: the rows of a team view.
pub fn view_schema(d: Dataset) -> SchemaRef {
    let ids = [
        Field::new("user_id", DataType::Utf8, false),
        Field::new("client_user_id", DataType::Utf8, false),
    ];
    let fields: Vec<Arc<Field>> = ids
        .into_iter()
        .map(Arc::new)
        .chain(d.schema().fields().iter().cloned())
        .collect();
    Arc::new(Schema::new(fields))
}

/// The workers an API node plans on (see the module docs).
#[derive(Clone)]
pub struct Cluster {
    workers: Arc<Vec<(Url, String)>>,
    live: Arc<RwLock<Vec<Url>>>,
    distribute_above: u64,
    token: HeaderValue,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("workers", &self.workers)
            .field("distribute_above", &self.distribute_above)
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// Workers at `addrs` (`host:port`), sent plans whose scans store at least
    /// `distribute_above` bytes, with `token`.
    pub fn new(addrs: &[String], distribute_above: u64, token: &str) -> anyhow::Result<Cluster> {
        let workers = addrs
            .iter()
            .map(|addr| {
                let url = Url::parse(&format!("http://{addr}"))
                    .map_err(|e| anyhow::anyhow!("worker address {addr:?}: {e}"))?;
                let probe = match (url.host_str(), url.port()) {
                    (Some(host), Some(port)) => format!("{host}:{port}"),
                    _ => anyhow::bail!("worker address {addr:?}: expected host:port"),
                };
                Ok((url, probe))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let token = HeaderValue::from_str(token)
            .map_err(|_| anyhow::anyhow!("WEARHOUSE_WORKER_TOKEN must be printable ASCII"))?;
        Ok(Cluster {
            live: Arc::new(RwLock::new(
                workers.iter().map(|(u, _)| u.clone()).collect(),
            )),
            workers: Arc::new(workers),
            distribute_above,
            token,
        })
    }

    /// Probes every worker and keeps the ones that answer for the next plans.
    pub async fn refresh(&self) {
        let probes = self.workers.iter().map(|(url, addr)| async move {
            let reached = tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect(addr))
                .await
                .is_ok_and(|c| c.is_ok());
            reached.then(|| url.clone())
        });
        let live: Vec<Url> = futures::future::join_all(probes)
            .await
            .into_iter()
            .flatten()
            .collect();
        if live.len() < self.workers.len() {
            tracing::warn!(
                live = live.len(),
                configured = self.workers.len(),
                "some workers do not answer; planning on the others"
            );
        }
        *self.live.write().unwrap_or_else(|e| e.into_inner()) = live;
    }

    /// How many workers answered the last probe.
    pub fn live(&self) -> usize {
        self.live.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Stored bytes from which a scan is distributed.
    pub fn distribute_above(&self) -> u64 {
        self.distribute_above
    }

    /// A session state that plans across the live workers, its scans decoded over `health`.
    pub fn session_state(
        &self,
        config: SessionConfig,
        runtime: Arc<RuntimeEnv>,
        health: &HealthStore,
    ) -> Result<SessionState> {
        let mut headers = HeaderMap::new();
        headers.insert(TOKEN_HEADER, self.token.clone());
        Ok(SessionStateBuilder::new()
            .with_default_features()
            .with_config(config)
            .with_runtime_env(runtime)
            .with_distributed_worker_resolver(LiveWorkers(self.live.clone()))
            .with_distributed_planner()
            .with_distributed_user_codec(ScanCodec::new(health.clone()))
            .with_distributed_desired_task_count_handler(scan::desired_tasks)
            .with_distributed_scale_up_leaf_node_handler(scan::scale_up)
            .with_distributed_passthrough_headers(headers)?
            .with_distributed_max_tasks_per_stage(TASKS_PER_WORKER * self.live().max(1))?
            .build())
    }
}

/// The workers that answered the last probe.
struct LiveWorkers(Arc<RwLock<Vec<Url>>>);

impl WorkerResolver for LiveWorkers {
    fn get_urls(&self) -> Result<Vec<Url>, DataFusionError> {
        Ok(self.0.read().unwrap_or_else(|e| e.into_inner()).clone())
    }
}
