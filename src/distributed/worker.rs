//! `wearhouse worker`: a stateless process that runs the stages API nodes send it (see the
//! module docs of [`crate::distributed`]). It holds no database and no cache: the store it
//! reads is the bucket the API nodes write, opened here without a read cache, so every read
//! lists the bucket and is exact.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion_distributed::{DistributedExt, Worker, WorkerQueryContext, WorkerSessionBuilder};
use subtle::ConstantTimeEq;

use super::{ScanCodec, TOKEN_HEADER};
use crate::store::health::HealthStore;

/// Builds each plan's session: refuses a plan without the shared token, decodes scans over
/// this worker's store.
struct Sessions {
    health: HealthStore,
    token: String,
}

#[async_trait]
impl WorkerSessionBuilder for Sessions {
    async fn build_session_state(&self, ctx: WorkerQueryContext) -> Result<SessionState> {
        let sent = ctx
            .headers
            .get(TOKEN_HEADER)
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        if !bool::from(sent.ct_eq(self.token.as_bytes())) {
            tracing::warn!("worker: a plan without the shared token was refused");
            return Err(DataFusionError::Execution(
                "this worker takes plans from wearhouse API nodes only (the shared token is \
                 missing or wrong)"
                    .to_owned(),
            ));
        }
        // Stages this task calls on other workers carry the token on.
        let mut headers = axum::http::HeaderMap::new();
        if let Some(token) = ctx.headers.get(TOKEN_HEADER) {
            headers.insert(TOKEN_HEADER, token.clone());
        }
        Ok(ctx
            .builder
            .with_distributed_user_codec(ScanCodec::new(self.health.clone()))
            .with_distributed_passthrough_headers(headers)?
            .build())
    }
}

/// Serves the worker on `listener` until `shutdown` resolves, its stages' memory bounded by
/// `memory_limit_bytes` (shared by every stage the worker runs at once).
pub async fn serve(
    listener: tokio::net::TcpListener,
    health: HealthStore,
    token: String,
    memory_limit_bytes: usize,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(memory_limit_bytes, 1.0)
        .build_arc()?;
    let worker = Worker::from_session_builder(Sessions { health, token })
        .with_runtime_env(Arc::clone(&runtime))
        .with_version(env!("CARGO_PKG_VERSION"));
    tonic::transport::Server::builder()
        .add_service(worker.into_worker_server())
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener),
            shutdown,
        )
        .await?;
    Ok(())
}
