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
//! Recovery first renames the folders of a store written before Hive-style folder names (see
//! `layout.rs`), then walks every team / user / dataset folder once and removes
//! - `_deleted-*` user folders (a `delete_user` interrupted by the crash);
//! - `_tmp-*` files in dataset, `_commits` and `_raw` folders (a write interrupted before its
//!   rename);
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
    self, COMMITS_DIR, CommitId, DATASET_KEY, DELETED_PREFIX, RESOURCE_KEY, SegmentName, TEAM_KEY,
    TEMP_PREFIX, TIMESERIES, USER_KEY, dataset_from_path,
};
use super::segment_write::fsync_dir;

/// The lock file in the store root.
const OWNER_LOCK: &str = "_owner.lock";

/// What start-up recovery removed, and the commit records it found.
#[derive(Debug, Default)]
pub(super) struct Recovered {
    pub(super) deleted_users: usize,
    pub(super) temp_files: usize,
    pub(super) uncommitted_segments: usize,
    pub(super) stale_records: usize,
    /// Folders renamed from the layout before Hive-style names.
    pub(super) renamed_folders: usize,
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
    let mut out = Recovered {
        renamed_folders: rename_old_layout(root)?,
        ..Recovered::default()
    };
    for team in read_dir(root)? {
        let Some(team_id) = id_dir(&team, TEAM_KEY) else {
            continue;
        };
        for user in read_dir(&team)? {
            let name = file_name(&user);
            if name.starts_with(DELETED_PREFIX) {
                std::fs::remove_dir_all(&user).map_err(|e| StoreError::io(&user, e))?;
                out.deleted_users += 1;
            } else if let Some(user_id) = id_dir(&user, USER_KEY) {
                recover_user(&user, team_id, user_id, &mut out)?;
            }
        }
    }
    Ok(out)
}

/// Renames the folders of a store written before Hive-style names (`<team>/<user>/sleep`,
/// `…/timeseries/heartrate`) to today's (`team=…/user=…/dataset=sleep`,
/// `…/dataset=timeseries/resource=heartrate`), fsyncing each renamed folder's parent. Commit
/// records keep their old relative paths; `commit.rs` reads both. Returns the folders renamed.
fn rename_old_layout(root: &Path) -> Result<usize, StoreError> {
    let mut renamed = 0;
    let mut rename = |from: &Path, to: &str| -> Result<std::path::PathBuf, StoreError> {
        let parent = from.parent().unwrap_or(root);
        let target = parent.join(to);
        if target.exists() {
            // Both layouts side by side: leave the old folder for a human to look at.
            tracing::warn!(from = %from.display(), "old-layout folder left: its new name exists");
            return Ok(from.to_path_buf());
        }
        std::fs::rename(from, &target).map_err(|e| StoreError::io(from, e))?;
        fsync_dir(parent)?;
        renamed += 1;
        Ok(target)
    };
    for team in read_dir(root)? {
        let Some(team_id) = id_dir(&team, "") else {
            continue;
        };
        let team = rename(&team, &layout::team_folder(team_id))?;
        for user in read_dir(&team)? {
            let Some(user_id) = id_dir(&user, "") else {
                continue;
            };
            let user = rename(&user, &format!("{USER_KEY}={user_id}"))?;
            for entry in read_dir(&user)? {
                let name = file_name(&entry);
                if !entry.is_dir() {
                    continue;
                }
                if name == TIMESERIES {
                    for series in read_dir(&entry)? {
                        let series_name = file_name(&series);
                        if series.is_dir() && crate::schema::resource(&series_name).is_some() {
                            rename(&series, &format!("{RESOURCE_KEY}={series_name}"))?;
                        }
                    }
                    rename(&entry, &format!("{DATASET_KEY}={TIMESERIES}"))?;
                } else if crate::schema::Table::from_name(&name).is_some() {
                    rename(&entry, &format!("{DATASET_KEY}={name}"))?;
                }
            }
        }
    }
    Ok(renamed)
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
        if name == super::raw::RAW_DIR || name == super::results::RESULTS_DIR {
            for part in read_dir(&entry)?.into_iter().filter(|p| p.is_dir()) {
                for path in read_dir(&part)? {
                    if file_name(&path).starts_with(TEMP_PREFIX) {
                        remove(&path)?;
                        out.temp_files += 1;
                    }
                }
            }
            continue;
        }
        if dataset_from_path(&[&name]).is_some() {
            recover_dataset(&entry, &records, &mut referenced, out)?;
        } else {
            for series in read_dir(&entry)? {
                let series_name = file_name(&series);
                if series.is_dir() && dataset_from_path(&[&name, &series_name]).is_some() {
                    recover_dataset(&series, &records, &mut referenced, out)?;
                }
            }
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

/// The id a folder named `key=<uuid>` carries (a bare `<uuid>` when `key` is empty).
fn id_dir(path: &Path, key: &str) -> Option<Uuid> {
    if !path.is_dir() {
        return None;
    }
    let name = file_name(path);
    match key {
        "" => Uuid::parse_str(&name).ok(),
        key => layout::folder_id(&name, key),
    }
}

fn remove(path: &Path) -> Result<(), StoreError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(path, e)),
    }
}
