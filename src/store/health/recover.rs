//! Start-up recovery: the first process to open a store directory removes what crashed writers
//! left, before anything is served.
//!
//! Every open store holds a shared advisory lock (`flock`) on `{root}/_owner.lock`, released by
//! the kernel when its process dies (SIGKILL included). `open` first tries the lock exclusively:
//! it succeeds only when no other store is open on the directory, in this process or another,
//! and then recovers before it turns the lock shared. A store opened next to a running one (a CLI
//! `query` or `import` beside a server, a second `HealthStore` in one process) recovers nothing,
//! since the others' writes in flight look exactly like a crash's leftovers; it waits only while
//! another store recovers. Stores opened that way stay correct regardless: readers ignore temp
//! files and check commit records themselves, and compaction still sweeps temp files older than
//! `stale_temp_after`.
//!
//! Recovery walks every team / user / dataset folder once and removes
//! - `_deleted-*` user folders (a `delete_user` interrupted by the crash);
//! - `_tmp-*` files in dataset and `_commits` folders (a write interrupted before its rename);
//! - marked segments whose commit record does not exist (a push interrupted before its commit;
//!   see `commit.rs`);
//! - commit records none of whose segments exists any more (compaction merged them away).
//!
//! It costs one directory listing per dataset folder in the store. Removals are not fsynced: if
//! a power loss undoes one, the next start-up removes the file again (commit ids never repeat,
//! so an orphan never gains a record later).

use std::collections::HashSet;
use std::fs::File;
use std::path::Path;

use uuid::Uuid;

use super::StoreError;
use super::commit::KnownCommit;
use super::layout::{
    COMMITS_DIR, CommitId, DELETED_PREFIX, SegmentName, TEMP_PREFIX, dataset_from_path,
};

/// The lock file in the store root.
const OWNER_LOCK: &str = "_owner.lock";

/// What start-up recovery removed, and the commit records it found.
#[derive(Debug, Default)]
pub(super) struct Recovered {
    pub(super) deleted_users: usize,
    pub(super) temp_files: usize,
    pub(super) uncommitted_segments: usize,
    pub(super) stale_records: usize,
    /// Every commit record that stays (so reads need not look them up).
    pub(super) commits: Vec<KnownCommit>,
}

/// Opens the lock file and takes the lock (see the module docs): exclusively, running
/// `recover` meanwhile, when no other store holds it; then shared, for the store's lifetime.
/// Returns the open lock file (keep it) and what `recover` returned, if it ran.
pub(super) fn lock_and_recover(root: &Path) -> Result<(File, Option<Recovered>), StoreError> {
    let path = root.join(OWNER_LOCK);
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StoreError::io(&path, e))?;
    let recovered = match file.try_lock() {
        Ok(()) => {
            let recovered = recover(root);
            file.unlock().map_err(|e| StoreError::io(&path, e))?;
            Some(recovered?)
        }
        Err(std::fs::TryLockError::WouldBlock) => None,
        Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io(&path, e)),
    };
    file.lock_shared().map_err(|e| StoreError::io(&path, e))?;
    Ok((file, recovered))
}

/// Recovers the whole store (see the module docs). Call only under the exclusive lock.
fn recover(root: &Path) -> Result<Recovered, StoreError> {
    let mut out = Recovered::default();
    for team in read_dir(root)? {
        let Some(team_id) = uuid_dir(&team) else {
            continue;
        };
        for user in read_dir(&team)? {
            let name = file_name(&user);
            if name.starts_with(DELETED_PREFIX) {
                std::fs::remove_dir_all(&user).map_err(|e| StoreError::io(&user, e))?;
                out.deleted_users += 1;
            } else if let Some(user_id) = uuid_dir(&user) {
                recover_user(&user, team_id, user_id, &mut out)?;
            }
        }
    }
    Ok(out)
}

fn recover_user(dir: &Path, team: Uuid, user: Uuid, out: &mut Recovered) -> Result<(), StoreError> {
    let commits_dir = dir.join(COMMITS_DIR);
    let mut records = HashSet::new();
    if commits_dir.is_dir() {
        for path in read_dir(&commits_dir)? {
            let name = file_name(&path);
            if name.starts_with(TEMP_PREFIX) {
                remove(&path)?;
                out.temp_files += 1;
            } else if let Some(id) = CommitId::parse_record(&name) {
                records.insert(id);
            }
        }
    }
    let mut referenced = HashSet::new();
    for entry in read_dir(dir)? {
        let name = file_name(&entry);
        if !entry.is_dir() || name == COMMITS_DIR {
            continue;
        }
        if name == "timeseries" {
            for series in read_dir(&entry)? {
                let series_name = file_name(&series);
                if series.is_dir() && dataset_from_path(&["timeseries", &series_name]).is_some() {
                    recover_dataset(&series, &records, &mut referenced, out)?;
                }
            }
        } else if dataset_from_path(&[&name]).is_some() {
            recover_dataset(&entry, &records, &mut referenced, out)?;
        }
    }
    for id in records {
        if referenced.contains(&id) {
            out.commits.push((team, user, id));
        } else {
            remove(&commits_dir.join(id.record_name()))?;
            out.stale_records += 1;
        }
    }
    Ok(())
}

fn recover_dataset(
    dir: &Path,
    records: &HashSet<CommitId>,
    referenced: &mut HashSet<CommitId>,
    out: &mut Recovered,
) -> Result<(), StoreError> {
    for path in read_dir(dir)? {
        let name = file_name(&path);
        if name.starts_with(TEMP_PREFIX) {
            remove(&path)?;
            out.temp_files += 1;
            continue;
        }
        let Some(id) = SegmentName::parse(&name).and_then(|s| s.commit()) else {
            continue;
        };
        if records.contains(&id) {
            referenced.insert(id);
        } else {
            remove(&path)?;
            out.uncommitted_segments += 1;
        }
    }
    Ok(())
}

fn read_dir(dir: &Path) -> Result<Vec<std::path::PathBuf>, StoreError> {
    let entries = std::fs::read_dir(dir).map_err(|e| StoreError::io(dir, e))?;
    let mut out = Vec::new();
    for entry in entries {
        out.push(entry.map_err(|e| StoreError::io(dir, e))?.path());
    }
    Ok(out)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The folder's name as a UUID, if it is a folder named so.
fn uuid_dir(path: &Path) -> Option<Uuid> {
    if !path.is_dir() {
        return None;
    }
    Uuid::parse_str(&file_name(path)).ok()
}

fn remove(path: &Path) -> Result<(), StoreError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(path, e)),
    }
}
