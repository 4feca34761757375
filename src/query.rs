//! Running an aggregate request for one user: validate, load the datasets the queries read
//! from the health store, execute on the engine, encode. Shared by the HTTP endpoint and the
//! `wearhouse query` command so both answer identically.

use std::collections::HashMap;

use serde_json::Value;

use crate::data::fallback_zone;
use crate::engine::{self, EngineError, Limits, UserContext};
use crate::store::health::{HealthStore, StoreError};
use crate::store::metadata::{MetadataError, MetadataStore, User};

/// The two answer formats of `aggregate-dsl.md` §4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Column-major JSON (§4.2).
    Json,
    /// A gzipped tar of `N.parquet` (§4.3).
    ParquetTar,
}

/// The media type of the Parquet answer.
pub const PARQUET_TAR_MEDIA_TYPE: &str = "application/vnd.service.tar+gzip+parquet";

/// An encoded answer.
#[derive(Debug)]
pub enum QueryOutput {
    /// `{"results": [...]}`, serialised.
    Json(Vec<u8>),
    /// The gzipped tarball's bytes.
    ParquetTar(Vec<u8>),
}

/// Failures of a query run, by phase.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// Validation, execution or encoding in the engine.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Loading the user's data.
    #[error("health store: {0}")]
    Store(#[from] StoreError),
    /// Reading the team's priorities.
    #[error("metadata store: {0}")]
    Metadata(#[from] MetadataError),
}

/// Runs every query of `body` over `user`'s data within the limits' time limit, which covers
/// the whole request (loading, execution, encoding). Work still running at the limit is
/// cancelled; an answer completed past it (work that never yielded) is refused all the same, so
/// the limit holds whatever the shape of the work.
pub async fn run(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    body: &Value,
    format: Format,
    limits: &Limits,
) -> Result<QueryOutput, QueryError> {
    let started = std::time::Instant::now();
    let timeout = || {
        QueryError::Engine(EngineError::Timeout {
            seconds: limits.timeout.as_secs(),
        })
    };
    let output = tokio::time::timeout(
        limits.timeout,
        run_unbounded(meta, store, user, body, format, limits),
    )
    .await
    .map_err(|_| timeout())??;
    if started.elapsed() > limits.timeout {
        return Err(timeout());
    }
    Ok(output)
}

async fn run_unbounded(
    meta: &MetadataStore,
    store: &HealthStore,
    user: &User,
    body: &Value,
    format: Format,
    limits: &Limits,
) -> Result<QueryOutput, QueryError> {
    // Every rule is checked before any data is read.
    let request = engine::parse_request(body, limits).map_err(EngineError::from)?;
    let ctx = UserContext {
        fallback_time_zone: fallback_zone(user),
        ingestion_start: user.ingestion_start,
        ingestion_end: user.ingestion_end,
        team_priorities: meta.team_priorities(user.team_id).await?,
    };
    let mut inputs = HashMap::new();
    for (dataset, window) in engine::required_inputs(&request, &ctx) {
        let batches = store
            .read(user.team_id, user.id, dataset, Some(window))
            .await?;
        inputs.insert(dataset, batches);
    }
    let results = engine::execute(&request, &ctx, inputs, limits).await?;
    // Encoding large answers is CPU work: the engine does it on the blocking pool.
    let output = match format {
        Format::Json => {
            QueryOutput::Json(engine::encode_json_blocking(results, limits.clone()).await?)
        }
        Format::ParquetTar => {
            QueryOutput::ParquetTar(engine::encode_parquet_tar_blocking(results).await?)
        }
    };
    Ok(output)
}
