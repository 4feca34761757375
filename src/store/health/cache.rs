//! The read cache: decoded, deduplicated record batches per (team, user, dataset), bounded by
//! their Arrow memory size, evicting the least recently used entry first.
//!
//! An entry remembers the window it covers (`None`: the whole dataset); a read is a hit when the
//! entry covers its window, and is answered by zero-copy slices of the cached batches.
//!
//! Invalidation races: every key has a version, bumped by each write, compaction and delete
//! *after* the change is visible on disk. A read notes the version before it lists segments
//! and may only insert its result if the version is unchanged, so a read that raced a write can
//! never cache (and then serve forever) a result that misses the write.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use datafusion::arrow::array::ArrayData;
use datafusion::arrow::array::{Array, RecordBatch};
use uuid::Uuid;

use super::layout::all_datasets;
use crate::schema::Dataset;

/// Cache key: one dataset of one user.
pub(crate) type Key = (Uuid, Uuid, Dataset);

struct Entry {
    coverage: Option<(i64, i64)>,
    /// The shared version the entry was filled at (see `shared.rs`; 0 when unshared).
    shared: u64,
    batches: Vec<RecordBatch>,
    bytes: usize,
    last_used: u64,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<Key, Entry>,
    versions: HashMap<Key, u64>,
    total_bytes: usize,
    clock: u64,
}

/// The bounded LRU cache.
pub(crate) struct Cache {
    capacity: usize,
    inner: Mutex<Inner>,
}

fn covers(coverage: Option<(i64, i64)>, window: Option<(i64, i64)>) -> bool {
    match (coverage, window) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some((a, b)), Some((s, e))) => a <= s && e <= b,
    }
}

impl Cache {
    /// A cache holding at most `capacity` bytes of batches.
    pub(crate) fn new(capacity: usize) -> Self {
        Cache {
            capacity,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the maps half-updated in a way that
        // matters more than a stale entry; keep serving.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached batches for `key` if they cover `window` and were filled at the shared
    /// version `shared`. An entry of another shared version is dropped.
    pub(crate) fn get(
        &self,
        key: &Key,
        window: Option<(i64, i64)>,
        shared: u64,
    ) -> Option<Vec<RecordBatch>> {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        if inner.entries.get(key)?.shared != shared {
            if let Some(e) = inner.entries.remove(key) {
                inner.total_bytes -= e.bytes;
            }
            return None;
        }
        let entry = inner.entries.get_mut(key)?;
        if !covers(entry.coverage, window) {
            return None;
        }
        entry.last_used = now;
        Some(entry.batches.clone())
    }

    /// The current version of `key` (see the module docs).
    pub(crate) fn version(&self, key: &Key) -> u64 {
        self.lock().versions.get(key).copied().unwrap_or(0)
    }

    /// Caches `batches` covering `coverage`, read at `(version, shared)` (this process's
    /// version, and the shared one), unless `key` changed in this process since `version` was
    /// taken or a wider entry of the same or a newer shared version is already there. Returns
    /// the number of entries evicted.
    pub(crate) fn insert(
        &self,
        key: Key,
        (version, shared): (u64, u64),
        coverage: Option<(i64, i64)>,
        batches: Vec<RecordBatch>,
    ) -> usize {
        let bytes = memory_size(&batches);
        if bytes > self.capacity {
            return 0;
        }
        let mut inner = self.lock();
        if inner.versions.get(&key).copied().unwrap_or(0) != version {
            return 0;
        }
        if let Some(old) = inner.entries.get(&key) {
            if old.shared >= shared && covers(old.coverage, coverage) {
                return 0;
            }
            let old_bytes = old.bytes;
            inner.entries.remove(&key);
            inner.total_bytes -= old_bytes;
        }
        let mut evicted = 0;
        while inner.total_bytes + bytes > self.capacity {
            let Some(victim) = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| *k)
            else {
                break;
            };
            if let Some(e) = inner.entries.remove(&victim) {
                inner.total_bytes -= e.bytes;
                evicted += 1;
            }
        }
        inner.clock += 1;
        let last_used = inner.clock;
        inner.total_bytes += bytes;
        inner.entries.insert(
            key,
            Entry {
                coverage,
                shared,
                batches,
                bytes,
                last_used,
            },
        );
        evicted
    }

    /// Drops `key`'s entry and bumps its version.
    pub(crate) fn invalidate(&self, key: &Key) {
        let mut inner = self.lock();
        *inner.versions.entry(*key).or_insert(0) += 1;
        if let Some(e) = inner.entries.remove(key) {
            inner.total_bytes -= e.bytes;
        }
    }

    /// Invalidates every dataset of a user.
    pub(crate) fn invalidate_user(&self, team: Uuid, user: Uuid) {
        for dataset in all_datasets() {
            self.invalidate(&(team, user, dataset));
        }
    }

    /// Bytes currently cached.
    pub(crate) fn bytes(&self) -> usize {
        self.lock().total_bytes
    }
}

/// Bytes of memory the batches keep alive, counting each underlying allocation once: slices of
/// one decoded array (windows, constant columns shared by every batch of a segment) share
/// buffers, which `RecordBatch::get_array_memory_size` would count again for every slice.
pub(crate) fn memory_size(batches: &[RecordBatch]) -> usize {
    fn visit(data: &ArrayData, seen: &mut HashSet<usize>, total: &mut usize) {
        let nulls = data.nulls().map(|n| n.buffer());
        for buffer in data.buffers().iter().chain(nulls) {
            if seen.insert(buffer.data_ptr().as_ptr() as usize) {
                *total += buffer.capacity().max(buffer.len());
            }
        }
        for child in data.child_data() {
            visit(child, seen, total);
        }
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    for batch in batches {
        for column in batch.columns() {
            visit(&column.to_data(), &mut seen, &mut total);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;
    use crate::schema::Table;

    fn batch(rows: usize) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let col = Arc::new(Int64Array::from_iter_values(0..rows as i64));
        RecordBatch::try_new(schema, vec![col]).unwrap()
    }

    fn key(n: u128) -> Key {
        (
            Uuid::nil(),
            Uuid::from_u128(n),
            Dataset::Table(Table::Sleep),
        )
    }

    #[test]
    fn evicts_least_recently_used_to_stay_under_the_bound() {
        let one = memory_size(&[batch(1000)]);
        let cache = Cache::new(one * 2 + one / 2);
        cache.insert(key(1), (0, 0), None, vec![batch(1000)]);
        cache.insert(key(2), (0, 0), None, vec![batch(1000)]);
        assert!(cache.get(&key(1), None, 0).is_some()); // 1 is now the most recent
        assert_eq!(cache.insert(key(3), (0, 0), None, vec![batch(1000)]), 1);
        assert!(cache.get(&key(2), None, 0).is_none());
        assert!(cache.get(&key(1), None, 0).is_some());
        assert!(cache.get(&key(3), None, 0).is_some());
        assert!(cache.bytes() <= one * 2 + one / 2);
    }

    #[test]
    fn shared_buffers_are_counted_once() {
        let b = batch(1000);
        let whole = memory_size(std::slice::from_ref(&b));
        assert!(whole >= 8000);
        assert_eq!(
            memory_size(&[b.slice(0, 10), b.slice(10, 990), b.clone()]),
            whole
        );
        assert_eq!(memory_size(&[b, batch(1000)]), 2 * whole);
    }

    #[test]
    fn a_read_that_raced_a_write_is_not_cached() {
        let cache = Cache::new(1 << 20);
        let seen = cache.version(&key(1));
        cache.invalidate(&key(1));
        cache.insert(key(1), (seen, 0), None, vec![batch(10)]);
        assert!(cache.get(&key(1), None, 0).is_none());
    }

    #[test]
    fn coverage_decides_hits() {
        let cache = Cache::new(1 << 20);
        cache.insert(key(1), (0, 0), Some((10, 20)), vec![batch(10)]);
        assert!(cache.get(&key(1), Some((12, 20)), 0).is_some());
        assert!(cache.get(&key(1), Some((5, 20)), 0).is_none());
        assert!(cache.get(&key(1), None, 0).is_none());
        cache.insert(key(1), (0, 0), None, vec![batch(10)]);
        assert!(cache.get(&key(1), None, 0).is_some());
    }

    #[test]
    fn an_entry_answers_only_at_the_shared_version_it_was_filled_at() {
        let cache = Cache::new(1 << 20);
        cache.insert(key(1), (0, 3), None, vec![batch(10)]);
        assert!(cache.get(&key(1), None, 3).is_some());
        // Another process bumped the version: the entry is stale, and dropped.
        assert!(cache.get(&key(1), None, 4).is_none());
        assert_eq!(cache.bytes(), 0);
        // An entry read at an older shared version never replaces a newer one.
        cache.insert(key(1), (0, 4), None, vec![batch(10)]);
        cache.insert(key(1), (0, 3), None, vec![batch(20)]);
        assert_eq!(
            cache.get(&key(1), None, 4).map(|b| b[0].num_rows()),
            Some(10)
        );
    }
}
