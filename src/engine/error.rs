//! The engine's error enum: one variant per cause, so the HTTP layer's exhaustive `match` decides
//! every status once (422 for `Invalid`, `ResultTooLarge` and `ResourcesExhausted`: the request
//! is too big for its limit, and narrowing it helps where retrying would not; 504 for
//! `Timeout`, 500 for `Planning`, `Execution` and `Internal`, whose causes go to the log).

use crate::validation::Invalid;

/// Everything that can go wrong between a decoded request body and an encoded result.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request breaks a rule of `aggregate-dsl.md` §1–§2 or a limit of §5 (422).
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The queries ran past the configured time limit and were cancelled (504).
    #[error("the queries did not finish within {seconds} s")]
    Timeout {
        /// The limit that was exceeded, in seconds.
        seconds: u64,
    },
    /// A JSON result would exceed the cell limit (422 advising the Parquet media type).
    #[error(
        "query {query} produces at least {cells} cells, more than the JSON limit of {limit}; \
         request application/vnd.service.tar+gzip+parquet instead"
    )]
    ResultTooLarge {
        /// The 0-based query index.
        query: usize,
        /// Rows times columns of its result, or of the part computed when the run stopped.
        cells: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The query needed more memory than the per-request pool allows (suggested status 503).
    #[error("the queries need more memory than the limit of {limit_bytes} bytes")]
    ResourcesExhausted {
        /// The configured pool size.
        limit_bytes: usize,
        /// DataFusion's description.
        #[source]
        source: datafusion::error::DataFusionError,
    },
    /// DataFusion could not build, optimise or physically plan a compiled query: a compiler bug
    /// (500), with DataFusion's error as the source.
    #[error("planning failed: {source}")]
    Planning {
        /// DataFusion's error.
        #[source]
        source: datafusion::error::DataFusionError,
    },
    /// A query failed while running, for a reason other than memory (500).
    #[error("execution failed: {source}")]
    Execution {
        /// DataFusion's error.
        #[source]
        source: datafusion::error::DataFusionError,
    },
    /// A bug or an inconsistent input (500); the detail belongs in the log, not the body.
    #[error("internal engine error: {0}")]
    Internal(String),
}

impl EngineError {
    /// Wraps an unexpected DataFusion failure.
    pub(crate) fn internal(context: &str, e: impl std::fmt::Display) -> Self {
        EngineError::Internal(format!("{context}: {e}"))
    }
}
