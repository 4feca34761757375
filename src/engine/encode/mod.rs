//! Result encoders: column-major JSON (§4.2) and a gzipped tar of Parquet files (§4.3). Both
//! are CPU-bound: async callers use the `*_blocking` wrappers, which run them on tokio's
//! blocking pool instead of an async worker.

pub mod json;
pub mod parquet_tar;

use super::{EngineError, Limits, QueryResult};

/// The two answer formats of `aggregate-dsl.md` §4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Column-major JSON (§4.2).
    Json,
    /// A gzipped tar of `N.parquet` (§4.3).
    ParquetTar,
}

/// The media type of the JSON answer.
pub const JSON_MEDIA_TYPE: &str = "application/json";

/// The media type of the Parquet answer.
pub const PARQUET_TAR_MEDIA_TYPE: &str = "application/vnd.service.tar+gzip+parquet";

impl OutputFormat {
    /// The media type answers in this format carry.
    pub const fn media_type(self) -> &'static str {
        match self {
            OutputFormat::Json => JSON_MEDIA_TYPE,
            OutputFormat::ParquetTar => PARQUET_TAR_MEDIA_TYPE,
        }
    }
}

/// Encodes `results` in `format` on the blocking pool.
pub async fn encode_blocking(
    results: Vec<QueryResult>,
    format: OutputFormat,
    limits: &Limits,
) -> Result<Vec<u8>, EngineError> {
    match format {
        OutputFormat::Json => encode_json_blocking(results, limits.clone()).await,
        OutputFormat::ParquetTar => encode_parquet_tar_blocking(results).await,
    }
}

/// [`json::encode_json_bytes`] on the blocking pool.
pub async fn encode_json_blocking(
    results: Vec<QueryResult>,
    limits: Limits,
) -> Result<Vec<u8>, EngineError> {
    crate::telemetry::spawn_blocking(move || json::encode_json_bytes(&results, &limits))
        .await
        .map_err(|e| EngineError::internal("json task", e))?
}

/// [`parquet_tar::encode_parquet_tar`] on the blocking pool.
pub async fn encode_parquet_tar_blocking(
    results: Vec<QueryResult>,
) -> Result<Vec<u8>, EngineError> {
    crate::telemetry::spawn_blocking(move || parquet_tar::encode_parquet_tar(&results))
        .await
        .map_err(|e| EngineError::internal("parquet task", e))?
}
