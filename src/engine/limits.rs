//! Configurable limits of `aggregate-dsl.md` §5, with the spec's defaults.

use std::time::Duration;

/// Limits applied while validating, executing and encoding a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Maximum request body size in bytes (checked by the HTTP layer; carried here for one
    /// place of configuration).
    pub max_body_bytes: usize,
    /// Maximum number of queries per request.
    pub max_queries: usize,
    /// Maximum number of select items per query.
    pub max_select: usize,
    /// Maximum length of a `where` string, in characters.
    pub max_where_chars: usize,
    /// Time allowed for executing all queries of a request.
    pub timeout: Duration,
    /// Maximum cells (rows × columns) of one query's JSON result.
    pub max_json_cells: usize,
    /// Size of the DataFusion memory pool of one request, in bytes.
    pub memory_limit_bytes: usize,
    /// DataFusion partitions per query (parallelism); 1 keeps small per-user queries cheap.
    pub target_partitions: usize,
    /// Whether queries of the time-bucket shape run on the engine's own operator
    /// (`bucket.rs`, the default) or on the general plan; off only to compare the two.
    pub bucket_operator: bool,
    /// The most slices one time-bucket aggregate is cut into, each folded on a task of its
    /// own; 0 means one per engine thread (a thread per core).
    pub bucket_slices: usize,
    /// The fewest rows a slice is given: a query of fewer than twice as many is folded whole.
    pub bucket_slice_rows: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 1 << 20,
            max_queries: 32,
            max_select: 64,
            max_where_chars: 4096,
            timeout: Duration::from_secs(30),
            max_json_cells: 1_000_000,
            memory_limit_bytes: 1 << 30,
            target_partitions: 1,
            bucket_operator: true,
            bucket_slices: 0,
            bucket_slice_rows: 1 << 15,
        }
    }
}
