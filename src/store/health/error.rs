//! The store's one error type: every failure of the health-data store, named by cause.

use std::path::PathBuf;

use datafusion::arrow::error::ArrowError;
use datafusion::parquet::errors::ParquetError;

/// A failure of the health-data store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The location's scheme names no store this build can use.
    #[error(
        "unsupported store location {location:?}: use a directory path, a file:// URL, or an s3://, gs:// or az:// URL"
    )]
    UnsupportedLocation {
        /// The location as given.
        location: String,
    },
    /// The location is empty or not a usable directory.
    #[error("invalid store location {location:?}: {reason}")]
    InvalidLocation {
        /// The location as given.
        location: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A batch handed to `write` does not have the dataset's storage schema.
    #[error("batch does not match the schema of {dataset}")]
    SchemaMismatch {
        /// The dataset path (`sleep`, `timeseries/heartrate`).
        dataset: String,
        /// What Arrow reported.
        #[source]
        source: ArrowError,
    },
    /// A local file-system operation failed.
    #[error("i/o error on {path}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Listing or reading through the object store failed.
    #[error("object store error")]
    ObjectStore(#[from] object_store::Error),
    /// A segment could not be encoded or decoded.
    #[error("parquet error")]
    Parquet(#[from] ParquetError),
    /// An Arrow kernel failed (sorting, concatenation, ...).
    #[error("arrow error")]
    Arrow(#[from] ArrowError),
    /// The shared dataset versions (see `shared.rs`) could not be read or bumped.
    #[error("shared dataset versions unavailable")]
    Shared(#[source] super::shared::SharedError),
    /// A blocking task panicked or was cancelled.
    #[error("background task failed")]
    Task(#[from] tokio::task::JoinError),
    /// The write's [`Gate`](super::Gate) was dropped unopened: what had to be durable before
    /// the data failed, so the data was not made visible.
    #[error("write abandoned before it was made visible")]
    Abandoned,
    /// A raw-payload file could not be encoded or decoded, or named an unknown part (see
    /// `raw.rs`); what went wrong.
    #[error("raw payloads: {0}")]
    Raw(String),
}

impl StoreError {
    /// Wraps an i/o error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }

    /// Whether the error means a file vanished (a compaction elsewhere removed it).
    pub(crate) fn is_not_found(&self) -> bool {
        match self {
            StoreError::ObjectStore(object_store::Error::NotFound { .. }) => true,
            StoreError::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
            _ => false,
        }
    }
}
