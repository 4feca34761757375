//! Commit records: how a push that spans several datasets becomes visible in one atomic step,
//! also across a crash.
//!
//! A push writes one segment per dataset, in as many folders; no file system or object store
//! can create them all at once. So (see `push.rs`):
//! 1. every segment of the push is written durably under its final name, marked `.c` and sharing
//!    the push's `seq` and `nonce` (its [`CommitId`]); a marked segment is invisible on its own;
//! 2. last, one small object is put: the commit record
//!    `team={team}/user={user}/_commits/{seq:020}-{nonce:08x}.commit`, JSON naming every
//!    segment of the push (`{"segments": ["dataset=sleep/….c.parquet",
//!    "dataset=timeseries/resource=heartrate/….c.parquet"]}`);
//! 3. only then is the push acknowledged and the cache invalidated.
//!
//! The rule every reader (read, compaction, `datasets`) applies: **a marked segment counts only
//! once its commit record exists.** A crash before 2 leaves marked segments without a record:
//! invisible, and removed by start-up recovery (`recover.rs`); a crash after 2 leaves the whole
//! push visible (committed, merely unacknowledged). A single-dataset write needs no record: its
//! one segment appears atomically (rename locally, a whole-object put on S3).
//!
//! Checking a record costs one `head` per push a reader has not seen committed yet; positive
//! answers are remembered (a record never disappears while a segment it names exists), and the
//! process that owns the store learns every record at start-up, so a read normally costs nothing
//! extra.
//!
//! Records are garbage: once compaction has merged away every segment a record names, it
//! removes the record (on object storage once the merged segments are removed after their
//! grace period: `retire.rs`); start-up recovery removes records whose segments are all gone.
//!
//! Object-store semantics (for the scale-out store, `spec/scale-out.md`): the protocol needs
//! only a whole-object put (atomic on S3, GCS, Azure) and `head`; no rename. On object storage
//! the segments are put directly under their final names, the record with
//! `PutMode::Create` (a conditional put that never overwrites). Locally, where a put is not
//! durable, both go through temp file, fsync, rename, directory fsync (`backend.rs`). The record is the seed of
//! the per-dataset manifest scale-out needs: a manifest version that lists segments by name
//! makes the `.c` mark and the `head` unnecessary (a segment counts when the manifest names it),
//! and a multi-dataset push becomes one compare-and-swap of the user's manifest (or one
//! PostgreSQL transaction over the datasets' manifest rows), written last like the record.

use std::collections::{BTreeSet, HashSet};

use object_store::ObjectStoreExt;
use object_store::path::Path as ObjectPath;
use uuid::Uuid;

use super::backend::Backend;
use super::layout::{self, CommitId};
use super::{HealthStore, StoreError, guard};

/// Remembered committed pushes beyond this many are forgotten (and looked up again if needed).
const KNOWN_COMMITS: usize = 1 << 18;

/// A remembered committed push.
pub(super) type KnownCommit = (Uuid, Uuid, CommitId);

/// The content of a commit record.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Record {
    /// Every segment of the push, relative to the user folder (`dataset=sleep/….c.parquet`;
    /// records written before Hive-style folders say `sleep/….c.parquet`).
    segments: Vec<String>,
}

impl HealthStore {
    /// The pushes among `ids` whose commit record does not exist (yet, or ever: a crashed
    /// push): their segments do not count.
    pub(super) async fn uncommitted(
        &self,
        team: Uuid,
        user: Uuid,
        ids: impl Iterator<Item = CommitId>,
    ) -> Result<HashSet<CommitId>, StoreError> {
        let unknown: BTreeSet<CommitId> = {
            let known = guard(&self.inner.commits);
            ids.filter(|id| !known.contains(&(team, user, *id)))
                .collect()
        };
        let mut missing = HashSet::new();
        for id in unknown {
            let path = ObjectPath::from(format!(
                "{}/{}",
                layout::commits_dir(team, user),
                id.record_name()
            ));
            match self.inner.objects.head(&path).await {
                Ok(_) => self.remember(team, user, id),
                Err(object_store::Error::NotFound { .. }) => {
                    missing.insert(id);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(missing)
    }

    /// Notes that `id`'s record exists.
    pub(super) fn remember(&self, team: Uuid, user: Uuid, id: CommitId) {
        let mut known = guard(&self.inner.commits);
        if known.len() >= KNOWN_COMMITS {
            known.clear();
        }
        known.insert((team, user, id));
    }

    /// Forgets records that were removed.
    pub(super) fn forget(&self, team: Uuid, user: Uuid, ids: &[CommitId]) {
        let mut known = guard(&self.inner.commits);
        for id in ids {
            known.remove(&(team, user, *id));
        }
    }
}

/// Writes `id`'s commit record naming `segments` (relative to the user folder), durably: the
/// push is committed when this returns. Blocking.
pub(super) fn write_record(
    backend: &Backend,
    team: Uuid,
    user: Uuid,
    id: CommitId,
    segments: Vec<String>,
) -> Result<(), StoreError> {
    let dir = layout::commits_dir(team, user);
    let bytes = serde_json::to_vec(&Record { segments })
        .map_err(|e| StoreError::io(&dir, std::io::Error::other(e)))?;
    backend.put_record(&dir, &id.record_name(), bytes)
}

/// Removes the records among `ids` none of whose segments exists any more (compaction merged
/// them all away). Returns the records removed. A record that cannot be read is kept.
/// Blocking.
pub(super) fn release(
    backend: &Backend,
    team: Uuid,
    user: Uuid,
    ids: &[CommitId],
) -> Result<Vec<CommitId>, StoreError> {
    let user_dir = layout::user_dir(team, user);
    let dir = layout::commits_dir(team, user);
    let mut released = Vec::new();
    'records: for id in ids {
        let Ok(Some(bytes)) = backend.read(&format!("{dir}/{}", id.record_name())) else {
            continue;
        };
        let Ok(record) = serde_json::from_slice::<Record>(&bytes) else {
            continue;
        };
        for segment in &record.segments {
            let segment = layout::current_relative(segment);
            if backend.exists(&format!("{user_dir}/{segment}"))? {
                continue 'records;
            }
        }
        released.push(*id);
    }
    if !released.is_empty() {
        let names: Vec<String> = released.iter().map(CommitId::record_name).collect();
        backend.remove(&dir, &names)?;
    }
    Ok(released)
}
