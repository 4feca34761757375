//! The health-data store: normalised records as immutable Parquet segments, one Hive-style
//! folder per team / user / dataset (`team=<id>/user=<id>/dataset=sleep/`,
//! `…/dataset=timeseries/resource=heartrate/`: see `layout.rs`), on a local directory or on
//! object storage (`backend.rs`), read through `object_store`.
//!
//! - **Writes** ([`HealthStore::write`]) sort a batch by the dataset's time column, resolve
//!   duplicate keys inside it, encode it (see `segment_write.rs`) and return only after the segment
//!   is durable. Every segment is therefore sorted and key-unique on its own.
//! - **Reads** ([`HealthStore::read`]) list segments, prune them by the time range in their
//!   names and row groups by Parquet statistics, decode off the async threads, resolve
//!   replacements (newest `ingested_at` per `Dataset::key_columns`, ties to the later segment),
//!   regroup a timeseries by source (each batch one provider and source type, sorted by time)
//!   and cache the result (see `cache.rs`). [`HealthStore::extents`] answers where a dataset
//!   has data from the segment names alone (see `extent.rs`).
//! - **Pushes** ([`HealthStore::write_push`]) spanning several datasets are all-or-nothing, also
//!   across a crash: their segments count only once the push's commit record exists (see
//!   `commit.rs`).
//! - **Compaction** ([`HealthStore::compact`], [`HealthStore::compact_due`]) merges runs of
//!   small segments, dropping replaced versions (see `compact.rs`).
//! - **Continuous-query result tables** ([`HealthStore::write_result`], `results.rs`): one
//!   Parquet file per (query, user) version in the user's `_cq/` folder.
//! - **Raw payloads** ([`HealthStore::write_raw`], [`HealthStore::read_raw`]): the documents
//!   behind summary records as received, gzip-compressed JSON Lines in the user's `_raw/`
//!   folder, written after the push's segments and removed with the user (see `raw.rs`).
//! - **Start-up recovery** ([`HealthStore::open`]) removes what a crash left: temp files,
//!   segments of uncommitted pushes, interrupted user deletions (see `recover.rs`).
//! - **Cold-read cost** is dominated by materialising string columns; columns whose Parquet
//!   statistics prove them constant or all-null (sources, unit, often `ingested_at`) are built
//!   once per read and sliced instead (see `constant.rs`). Measured on the shared 2-core VM
//!   (release, under load): 90 days of 1 Hz heart rate (7.8 M rows, 90 daily segments) cold
//!   ~100-150 ms, cached ~30 us, one day of it cold ~5 ms; pushing 1 M samples in batches of
//!   10,000 runs at 0.8-3.8 M samples/s one write at a time (bounded by two fsyncs per
//!   acknowledged write) and 2-5 M samples/s with 8 writes in flight.
//!
//! Decisions where the spec is silent:
//! - Only timeseries reads prune by window. A summary record is keyed by (provider, id), not by
//!   time, so a newer version may live at another time in a segment outside the window; pruning
//!   could then return a replaced version. Summary tables are small: their reads decode every
//!   segment, resolve replacements, then cut to the window (and cache the whole table).
//! - Reads return exactly the rows in the window (a zero-copy slice), rows with a null time
//!   only in window-less reads.
//! - `ingested_at` is taken from the batch as given (ingest stamps it); the store does not
//!   rewrite it.
//! - Compaction after writes is a durable `store.compact` job per written dataset (see
//!   `crate::jobs::compaction`), so it survives a restart and idle stores cost nothing; it calls
//!   `compact_due`. An explicit `compact` works on any dataset.
//! - `delete_user` renames the user folder to `_deleted-*` (atomic: readers see all or
//!   nothing), fsyncs, then removes it; leftovers of a crash are removed at start-up. Writes that
//!   race a delete of the same user may survive it: the caller deletes the user from the
//!   metadata first so no new write is accepted.
//! - On a local directory the reader/compactor protocol relies on one process owning it,
//!   through one `HealthStore` (per-dataset locks and the cache live in memory); a lock file
//!   decides which store recovers at start-up (see `recover.rs`). On object storage several
//!   processes share the bucket: dataset versions in the metadata database keep every cache
//!   exact (`shared.rs`), and a compaction's inputs are retired for a grace period rather than
//!   removed (`retire.rs`). Readers still re-list if a listed segment vanished.
//! - The cache accounts each Arrow buffer once (slices share buffers), so a cached 90-day
//!   heart-rate series costs ~200 MB against `cache_bytes`; an entry larger than the whole
//!   cache is not cached.
//! - Lock entries and cache versions are kept per dataset touched (small, never evicted, except
//!   on `delete_user`): bounded by the number of datasets the process has seen.

mod backend;
mod cache;
mod commit;
mod compact;
mod constant;
mod error;
mod extent;
mod gate;
mod layout;
mod metrics;
mod options;
mod push;
mod raw;
mod read;
mod recover;
mod results;
mod retire;
mod rows;
mod segment_read;
mod segment_write;
mod shared;
mod write;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use futures::TryStreamExt;
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;
use uuid::Uuid;

pub use error::StoreError;
pub use extent::Extent;
pub use gate::{Gate, Opener, gate};
pub use metrics::MetricsSnapshot;
pub use options::{CompactionReport, StoreOptions, WriteReceipt};
pub use raw::{RAW_PARTS, RawDocument};
pub use shared::{SharedError, SharedVersions};

use crate::schema::Dataset;
use backend::{Backend, Local, Location};
use cache::{Cache, Key};
use commit::KnownCommit;
use layout::{SegmentName, dataset_from_path, dataset_rank};
use metrics::Metrics;

/// The health-data store. Cheap to clone (an `Arc` inside); `Send + Sync`.
#[derive(Clone)]
pub struct HealthStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for HealthStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HealthStore")
            .field("location", &self.inner.backend.describe())
            .finish_non_exhaustive()
    }
}

struct Inner {
    /// Where the files live and how writes become durable there (see `backend.rs`).
    backend: Backend,
    /// Listings and reads, for every backend (the bucket narrowed to its prefix, or the local
    /// directory).
    objects: Arc<dyn ObjectStore>,
    options: StoreOptions,
    cache: Cache,
    metrics: Metrics,
    locks: Mutex<HashMap<Key, Arc<DatasetLocks>>>,
    /// Pushes whose commit record is known to exist (see `commit.rs`).
    commits: Mutex<HashSet<KnownCommit>>,
    /// Retirement records read so far (see `retire.rs`).
    retirements: Mutex<retire::KnownRetirements>,
    /// The dataset versions shared with other processes on the same store, once set (see
    /// `shared.rs`).
    shared: OnceLock<Arc<dyn SharedVersions>>,
}

/// Per-dataset coordination between readers and compaction (see `compact.rs`).
#[derive(Default)]
struct DatasetLocks {
    /// Readers hold it shared while listing and fetching; compaction holds it exclusively
    /// while removing merged inputs.
    swap: tokio::sync::RwLock<()>,
    /// Serialises compactions of one dataset.
    compact: tokio::sync::Mutex<()>,
}

/// Locks a std mutex, carrying on past poisoning: every guarded structure stays valid after a
/// panic elsewhere (sets and maps of plain values).
fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl HealthStore {
    /// Opens (creating if needed) a store at `location`: a plain directory path or a `file://`
    /// URL (the same), or an object-store URL, `s3://bucket/prefix`, `gs://...` or `az://...`
    /// (see `backend.rs` for their configuration); other schemes answer
    /// [`StoreError::UnsupportedLocation`].
    /// A local store opened while no other is open on the directory first removes what a crash
    /// left (temp files, segments of uncommitted pushes, interrupted user deletions); one
    /// opened next to another removes nothing (see `recover.rs`).
    pub fn open(location: &str, options: StoreOptions) -> Result<Self, StoreError> {
        let (backend, commits) = match Location::parse(location)? {
            Location::Directory(path) => Self::open_directory(&path)?,
            Location::Url(url) => {
                tracing::info!(location = %url, "health store on object storage");
                (
                    Backend::connect(&url, &options.object_store)?,
                    HashSet::new(),
                )
            }
        };
        Ok(HealthStore {
            inner: Arc::new(Inner {
                objects: backend.objects(),
                backend,
                cache: Cache::new(options.cache_bytes),
                options,
                metrics: Metrics::default(),
                locks: Mutex::default(),
                commits: Mutex::new(commits),
                retirements: Mutex::default(),
                shared: OnceLock::new(),
            }),
        })
    }

    /// How long after a write its dataset is compacted ([`StoreOptions::compaction_delay`]).
    pub fn compaction_delay(&self) -> std::time::Duration {
        self.inner.options.compaction_delay
    }

    /// How long a compaction's inputs stay on object storage after it
    /// ([`StoreOptions::retired_grace`]).
    pub fn retired_grace(&self) -> std::time::Duration {
        self.inner.options.retired_grace
    }

    /// Opens a local directory, recovering it first when no other store holds it.
    fn open_directory(path: &str) -> Result<(Backend, HashSet<KnownCommit>), StoreError> {
        std::fs::create_dir_all(path).map_err(|e| StoreError::io(path, e))?;
        let root = std::fs::canonicalize(path).map_err(|e| StoreError::io(path, e))?;
        let (lock, recovered) = recover::lock_and_recover(&root)?;
        let mut commits = HashSet::new();
        match recovered {
            Some(recovered) => {
                tracing::info!(root = %root.display(),
                    temp_files = recovered.temp_files,
                    uncommitted_segments = recovered.uncommitted_segments,
                    stale_commit_records = recovered.stale_records,
                    deleted_users = recovered.deleted_users,
                    renamed_folders = recovered.renamed_folders,
                    "health store recovered");
                commits.extend(recovered.commits);
            }
            None => tracing::info!(root = %root.display(),
                "health store open elsewhere too: no start-up recovery"),
        }
        Ok((Backend::Local(Local::new(root, lock)?), commits))
    }

    /// The datasets of a user that hold at least one segment, tables first (in `Table::ALL`
    /// order), then timeseries resources (in `RESOURCES` order).
    pub async fn datasets(&self, team: Uuid, user: Uuid) -> Result<Vec<Dataset>, StoreError> {
        let prefix = ObjectPath::from(layout::user_dir(team, user));
        let metas: Vec<_> = match self.inner.objects.list(Some(&prefix)).try_collect().await {
            Ok(metas) => metas,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let mut found = HashSet::new();
        let mut pending = Vec::new();
        for meta in metas {
            let Some(parts) = meta.location.prefix_match(&prefix) else {
                continue;
            };
            let parts: Vec<String> = parts.map(|p| p.as_ref().to_owned()).collect();
            let Some((file, dirs)) = parts.split_last() else {
                continue;
            };
            let Some(name) = SegmentName::parse(file) else {
                continue;
            };
            let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
            match (dataset_from_path(&dirs), name.commit()) {
                (Some(dataset), None) => {
                    found.insert(dataset);
                }
                (Some(dataset), Some(id)) => pending.push((dataset, id)),
                (None, _) => {}
            }
        }
        pending.retain(|(d, _)| !found.contains(d));
        if !pending.is_empty() {
            let missing = self
                .uncommitted(team, user, pending.iter().map(|(_, id)| *id))
                .await?;
            found.extend(
                pending
                    .into_iter()
                    .filter(|(_, id)| !missing.contains(id))
                    .map(|(d, _)| d),
            );
        }
        let mut out: Vec<Dataset> = found.into_iter().collect();
        out.sort_by_key(|d| dataset_rank(*d));
        Ok(out)
    }

    /// Removes every segment of a user, atomically for readers (see the module docs), and
    /// forgets the user's cache entries.
    pub async fn delete_user(&self, team: Uuid, user: Uuid) -> Result<(), StoreError> {
        // Hold every dataset's compaction lock: a compaction that fetched the user's segments
        // must not write its outputs into a folder recreated after the delete.
        let locks: Vec<Arc<DatasetLocks>> = layout::all_datasets()
            .map(|d| self.locks((team, user, d)))
            .collect();
        let mut held = Vec::with_capacity(locks.len());
        for l in &locks {
            held.push(l.compact.lock().await);
        }
        let store = self.clone();
        crate::telemetry::spawn_blocking(move || store.inner.backend.remove_user(team, user))
            .await??;
        guard(&self.inner.commits).retain(|(t, u, _)| (*t, *u) != (team, user));
        self.inner.cache.invalidate_user(team, user);
        self.bump_shared(team, user, layout::all_datasets().collect())
            .await?;
        drop(held);
        drop(locks);
        // Forget lock entries nobody holds; whoever needs one later creates a fresh one.
        guard(&self.inner.locks)
            .retain(|(t, u, _), l| (*t, *u) != (team, user) || Arc::strong_count(l) > 1);
        Ok(())
    }

    /// Shares the store with other processes: from now on every write, push and user deletion
    /// bumps `versions` once visible, and a cached read answers only at the current version
    /// (see `shared.rs`). Call once, right after opening, before serving; a later call changes
    /// nothing. `crate::app` does it for every store on object storage.
    pub fn share_versions(&self, versions: Arc<dyn SharedVersions>) {
        let _ = self.inner.shared.set(versions);
    }

    /// Whether the store checks shared versions (see [`HealthStore::share_versions`]).
    pub fn is_shared(&self) -> bool {
        self.inner.shared.get().is_some()
    }

    /// Bumps the shared versions of `datasets` of a user, when the store is shared.
    async fn bump_shared(
        &self,
        team: Uuid,
        user: Uuid,
        datasets: Vec<Dataset>,
    ) -> Result<(), StoreError> {
        match self.inner.shared.get() {
            Some(shared) if !datasets.is_empty() => shared
                .bump(team, user, datasets)
                .await
                .map_err(StoreError::Shared),
            _ => Ok(()),
        }
    }

    /// The dataset's shared version (0 when the store is not shared).
    async fn shared_version(&self, key: Key) -> Result<u64, StoreError> {
        match self.inner.shared.get() {
            Some(shared) => shared
                .current(key.0, key.1, key.2)
                .await
                .map_err(StoreError::Shared),
            None => Ok(0),
        }
    }

    /// Checks that the store answers: one listing of its root. A missing bucket, refused
    /// credentials or an unreachable endpoint fail here, naming the cause, rather than on the
    /// first request. `serve` calls it at start-up.
    pub async fn check(&self) -> Result<(), StoreError> {
        match self.inner.objects.list_with_delimiter(None).await {
            Ok(_) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// A copy of the store's counters.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.inner.metrics.snapshot()
    }

    /// Bytes of decoded batches currently held by the read cache.
    pub fn cache_bytes(&self) -> usize {
        self.inner.cache.bytes()
    }

    /// Bytes of Parquet a read of the user's dataset would fetch at most: the size of every
    /// segment in its folder, from one listing (segments of uncommitted pushes and retired ones
    /// included, so an estimate, never an undercount). What distributed planning weighs a
    /// scan by (`crate::distributed`).
    pub async fn stored_bytes(
        &self,
        team: Uuid,
        user: Uuid,
        dataset: Dataset,
    ) -> Result<u64, StoreError> {
        let prefix = ObjectPath::from(layout::dataset_dir(team, user, dataset));
        let listed = match self.inner.objects.list_with_delimiter(Some(&prefix)).await {
            Ok(listed) => listed.objects,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        Ok(listed
            .iter()
            .filter(|m| SegmentName::parse(m.location.filename().unwrap_or_default()).is_some())
            .map(|m| m.size)
            .sum())
    }

    /// The store's root directory, when it is a local one (`None` on object storage).
    pub fn root(&self) -> Option<&Path> {
        self.inner.backend.root()
    }

    fn locks(&self, key: Key) -> Arc<DatasetLocks> {
        Arc::clone(guard(&self.inner.locks).entry(key).or_default())
    }

    /// Lists a dataset's visible segments in creation order (those of uncommitted pushes left
    /// out), and its other files.
    async fn list(&self, key: Key) -> Result<Listing, StoreError> {
        let prefix = ObjectPath::from(layout::dataset_dir(key.0, key.1, key.2));
        let listed = match self.inner.objects.list_with_delimiter(Some(&prefix)).await {
            Ok(listed) => listed.objects,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let mut listing = Listing::default();
        let mut records = Vec::new();
        for meta in listed {
            let file = meta.location.filename().unwrap_or_default();
            match SegmentName::parse(file) {
                Some(name) => listing.segments.push(Listed {
                    name,
                    location: meta.location.clone(),
                }),
                None if retire::is_record(file) => records.push(meta),
                None => listing.others.push(meta),
            }
        }
        if !records.is_empty() {
            self.apply_retirements(&mut listing, records).await?;
        }
        if listing.segments.iter().any(|s| s.name.committed_by_record) {
            let ids = listing.segments.iter().filter_map(|s| s.name.commit());
            let missing = self.uncommitted(key.0, key.1, ids).await?;
            (listing.segments, listing.uncommitted) = std::mem::take(&mut listing.segments)
                .into_iter()
                .partition(|s| s.name.commit().is_none_or(|id| !missing.contains(&id)));
        }
        listing.segments.sort_by(|a, b| a.name.order(&b.name));
        Ok(listing)
    }
}

/// One listed segment.
#[derive(Debug, Clone)]
struct Listed {
    name: SegmentName,
    location: ObjectPath,
}

/// A dataset folder's content.
#[derive(Debug, Default)]
struct Listing {
    /// Segments in creation order.
    segments: Vec<Listed>,
    /// Segments of pushes whose commit record does not exist: not yet, or never (a crash).
    uncommitted: Vec<Listed>,
    /// Segments a compaction retired, kept for readers that listed them before (see
    /// `retire.rs`).
    retired: Vec<Listed>,
    /// The folder's retirement records, oldest first.
    retirements: Vec<retire::ListedRetirement>,
    /// Everything else (temporary files, strays).
    others: Vec<object_store::ObjectMeta>,
}
