//! Tuning knobs of the store and the small result types its operations return.

/// Options for [`HealthStore::open`](super::HealthStore::open).
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Upper bound, in bytes of decoded Arrow memory, of the read cache (default 512 MiB;
    /// `0` disables caching).
    pub cache_bytes: usize,
    /// Compaction output is split into segments of at most this many rows, and segments below it
    /// count as "small" (candidates for merging). Default 1,048,576.
    pub target_segment_rows: usize,
    /// `compact_due` (the `store.compact` job after writes) merges a dataset once it has a run of
    /// at least this many consecutive small segments (default 8). An explicit `compact` merges
    /// any run of two.
    pub compact_min_segments: usize,
    /// How long after a write the `store.compact` job merges its dataset: long enough to batch
    /// a burst of writes into one merge, short enough that reads rarely resolve many small
    /// segments (default 30 s).
    pub compaction_delay: std::time::Duration,
    /// Rows per Parquet row group, the unit of statistics pruning (default 65,536, so a one-day
    /// window of 1 Hz samples decodes two or three row groups).
    pub row_group_rows: usize,
    /// Temporary files, and segments of pushes that never committed, older than this are removed
    /// by compaction: a writer that crashed left them (default 10 minutes). Start-up recovery
    /// removes them at once when no other store is open on a local directory; this catches the
    /// rest, and is the only sweep on object storage. So that the sweep can never remove what
    /// is about to become visible, a push older than half of this when it would commit gives
    /// up instead ([`StoreError::Abandoned`](super::StoreError::Abandoned)).
    pub stale_temp_after: std::time::Duration,
    /// How long a compaction's inputs stay on object storage after it (hidden from every
    /// listing, still readable by a reader in any process that listed them before): default 5
    /// minutes. They are then removed by the dataset's next compaction (see `retire.rs`).
    /// Unused on a local directory, where compaction removes its inputs at once.
    pub retired_grace: std::time::Duration,
    /// Configuration of an object-store location (`s3://`, `gs://`, `az://`), as `object_store`
    /// config keys and values (`aws_endpoint`, `aws_allow_http`, `aws_access_key_id`, ...).
    /// Applied over the process environment's standard variables, which are read first; empty
    /// by default. Ignored for a local directory.
    pub object_store: Vec<(String, String)>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            cache_bytes: 512 * 1024 * 1024,
            target_segment_rows: 1 << 20,
            compact_min_segments: 8,
            compaction_delay: std::time::Duration::from_secs(30),
            row_group_rows: 1 << 16,
            stale_temp_after: std::time::Duration::from_secs(600),
            retired_grace: std::time::Duration::from_secs(300),
            object_store: Vec::new(),
        }
    }
}

/// What a durable write stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteReceipt {
    /// Rows stored (after dropping in-batch duplicates: newest `ingested_at` wins, ties to the
    /// later row).
    pub rows: usize,
    /// The file name of the new segment; `None` when the batch was empty and nothing was written.
    pub segment: Option<String>,
    /// Bytes of the new segment.
    pub bytes: u64,
}

/// What one compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionReport {
    /// Segments merged (and removed, or retired on object storage).
    pub segments_merged: usize,
    /// Segments written in their place.
    pub segments_written: usize,
    /// Rows read from the merged segments.
    pub rows_in: usize,
    /// Rows written (rows in minus replaced versions dropped).
    pub rows_out: usize,
    /// Stale temporary files removed.
    pub temp_files_removed: usize,
    /// Stale segments of pushes that never committed removed.
    pub uncommitted_removed: usize,
    /// Retired segments removed, their grace period over (object storage; see `retire.rs`).
    pub retired_removed: usize,
    /// Retirement records still in their grace period after this compaction, its own
    /// included: the `store.compact` job comes back for them.
    pub retirements_waiting: usize,
    /// Whether a due merge was put off because its caller said the dataset is busy
    /// ([`HealthStore::compact_due_unless`]).
    pub deferred: bool,
}
