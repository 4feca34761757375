//! Several processes on one bucket: the shared dataset versions that keep every process's read
//! cache honest (`spec/scale-out.md`).
//!
//! Each process caches decoded datasets in memory (`cache.rs`), and its in-process versions see
//! only its own writes. When the store is shared, every change that adds or removes content (a
//! write, a push, a user deletion) also bumps the dataset's version in a place every process
//! reaches, **after** the change is visible in the bucket and before it is acknowledged; a read
//! takes the shared version **before** it lists segments, answers from the cache only when the
//! entry was filled at that same version, and stamps what it caches with it. So:
//! - a read that starts after a write was acknowledged on any process sees a newer version than
//!   any entry filled before the write, misses, and lists the bucket, which holds the write;
//! - a read racing a write may cache what it saw at the old version, but the bump that follows
//!   makes the next read miss.
//!
//! Compaction bumps nothing: it changes files, not content (see `compact.rs`), so entries stay
//! exact. Its cross-process safety comes from the file protocol itself: a reader whose listed
//! segment was removed by another process's compaction lists again (`read.rs`), and two
//! processes merging the same run leave duplicates that reads resolve as replacements (equal
//! keys and `ingested_at`) until the next compaction.
//!
//! The versions live in the metadata database (`dataset_versions`, one row per dataset,
//! [`crate::store::metadata::MetadataStore`] implements [`SharedVersions`]): one indexed
//! single-row lookup per cached read. A store on a local directory is owned by one process and
//! does without them.

use futures::future::BoxFuture;
use uuid::Uuid;

use crate::schema::Dataset;

/// A failure reaching the shared versions.
pub type SharedError = Box<dyn std::error::Error + Send + Sync>;

/// Where the processes sharing a store keep its dataset versions (see the module docs).
pub trait SharedVersions: Send + Sync {
    /// The dataset's current version; 0 for one never changed.
    fn current(
        &self,
        team: Uuid,
        user: Uuid,
        dataset: Dataset,
    ) -> BoxFuture<'_, Result<u64, SharedError>>;

    /// Bumps the versions of `datasets` of a user, once their change is visible in the store.
    fn bump(
        &self,
        team: Uuid,
        user: Uuid,
        datasets: Vec<Dataset>,
    ) -> BoxFuture<'_, Result<(), SharedError>>;
}
