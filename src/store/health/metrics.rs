//! Counters the store keeps so tests and operators can see what a read touched: segments and
//! row groups considered, pruned and decoded, cache hits and misses, bytes moved.

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// Live counters (relaxed atomics; monotonic since the store was opened).
        #[derive(Debug, Default)]
        pub(crate) struct Metrics {
            $(pub(crate) $name: AtomicU64,)*
        }

        /// A point-in-time copy of the store's counters (monotonic since open).
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct MetricsSnapshot {
            $($(#[$doc])* pub $name: u64,)*
        }

        impl Metrics {
            pub(crate) fn snapshot(&self) -> MetricsSnapshot {
                MetricsSnapshot {
                    $($name: self.$name.load(Ordering::Relaxed),)*
                }
            }
        }
    };
}

counters! {
    /// Segments listed for a read (before pruning).
    segments_considered,
    /// Segments skipped because their time range misses the window.
    segments_pruned,
    /// Segments fetched and decoded.
    segments_read,
    /// Row groups decoded.
    row_groups_read,
    /// Row groups skipped by their time statistics.
    row_groups_pruned,
    /// Rows decoded from Parquet.
    rows_read,
    /// Rows that went through replacement resolution (sorted by key) at read time: zero when
    /// every source's segments are disjoint in time.
    rows_resolved,
    /// Rows dropped at read time because a newer version of their key exists.
    rows_replaced,
    /// Reads answered from the cache.
    cache_hits,
    /// Reads that had to go to Parquet.
    cache_misses,
    /// Cache entries evicted to stay under the byte bound.
    cache_evictions,
    /// Segments written (by writes and compactions).
    segments_written,
    /// Rows written by `write`.
    rows_written,
    /// Bytes of segments written (by writes and compactions).
    bytes_written,
    /// Bytes of segments fetched by reads and compactions.
    bytes_read,
    /// Compactions that merged something.
    compactions,
    /// Segments removed by compactions.
    segments_compacted,
}

impl Metrics {
    /// Adds `n` to a counter.
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}
