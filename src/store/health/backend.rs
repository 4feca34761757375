//! Where the store's files live, and how each change to them becomes durable there.
//!
//! Reads and listings go through `object_store` for every location (`Inner::objects`). What
//! differs between a local directory and object storage is how a write is made durable and
//! atomic, and this module holds those differences:
//!
//! | | local directory (a path, `file://`) | object storage (`s3://`, `gs://`, `az://`) |
//! |---|---|---|
//! | a segment appears | temp file, fsync, rename, folder fsync (`segment_write.rs`) | encoded in memory, one whole-object `put` under its final name |
//! | a commit record | the same as a segment | a `put` with `PutMode::Create` (never overwrites) |
//! | removing files | `remove_file`, then a folder fsync | `delete` |
//! | a compaction's inputs | removed at once, under the dataset's swap lock | retired by a record, removed after a grace period (`retire.rs`) |
//! | deleting a user | rename the folder away (atomic for readers), then remove it | delete the commit records, then every other object of the user |
//! | crash leftovers | start-up recovery under a lock file (`recover.rs`), then compaction's sweep | compaction's sweep, once older than `stale_temp_after` (`compact.rs`) |
//!
//! A put acknowledged by S3, GCS or Azure is durable and appears whole, which is what the
//! rename gives locally; nothing else of the protocols (`commit.rs`, `compact.rs`) changes.
//!
//! Decisions where the spec is silent:
//! - Object-store URLs are read by `object_store`'s own `parse_url_opts`, configured from the
//!   process environment (`AWS_ENDPOINT`, `AWS_ACCESS_KEY_ID`, `AWS_ALLOW_HTTP`,
//!   `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_NAME`, ...: the variables each builder's
//!   `from_env` reads) and then from [`StoreOptions::object_store`](super::StoreOptions), which
//!   wins. The URL's path is the store's prefix inside the bucket.
//! - `memory://` is refused: nothing in it survives the process, and the store's contract is
//!   that an acknowledged write does.
//! - The bucket is not probed at open (opening is synchronous and may run on an async thread):
//!   `HealthStore::check` does it, and `serve` calls it before it listens, so a missing bucket
//!   or refused credentials stop the start with an error that names the cause.
//! - Deleting a user on object storage is not atomic for readers: a read racing the delete may
//!   see part of the user's data. The API hides the user in the metadata first (a soft delete,
//!   undoable for a window), so no request reaches the data while it is being removed, and the
//!   removal is a `store.delete_user` job due when the window ends, retried until it is done
//!   (`crate::jobs::erasure`).
//! - The write paths run on blocking threads (encoding is CPU-bound, and locally every step is
//!   a blocking system call); there an object-store request is driven with the runtime's
//!   `Handle::block_on`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::parquet::file::properties::WriterProperties;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use uuid::Uuid;

use super::error::StoreError;
use super::gate::{Gate, pass};
use super::guard;
use super::layout::{self, COMMITS_DIR, DELETED_PREFIX};
use super::segment_write::{
    encode, ensure_dir, fsync_dir, write_durable_file, write_segment_gated,
};

/// How many deletions run at once when a user is removed from object storage.
const DELETE_CONCURRENCY: usize = 16;

/// The store's location and its way of making writes durable (see the module docs).
pub(super) enum Backend {
    /// A local directory.
    Local(Local),
    /// A bucket (and prefix) on object storage; every path is relative to the prefix.
    Objects {
        /// The location as configured (for logs and `Debug`).
        url: String,
        /// The bucket, already narrowed to the prefix.
        objects: Arc<dyn ObjectStore>,
    },
}

/// A local store directory.
pub(super) struct Local {
    /// The canonical root directory.
    pub(super) root: PathBuf,
    /// The directory through `object_store`, for listings and reads.
    objects: Arc<dyn ObjectStore>,
    /// Folders known to exist (created or written by this store), so a write skips the check.
    known_dirs: Mutex<HashSet<PathBuf>>,
    /// The shared lock on the directory (see `recover.rs`). Held open, never read.
    _lock: std::fs::File,
}

impl Local {
    pub(super) fn new(root: PathBuf, lock: std::fs::File) -> Result<Self, StoreError> {
        let objects = Arc::new(object_store::local::LocalFileSystem::new_with_prefix(
            &root,
        )?);
        Ok(Local {
            root,
            objects,
            known_dirs: Mutex::default(),
            _lock: lock,
        })
    }
}

/// What a location names.
pub(super) enum Location {
    /// A local directory path.
    Directory(String),
    /// An object-store URL (scheme and bucket checked).
    Url(url::Url),
}

impl Location {
    /// Parses a store location: a plain path, `file://path`, or an object-store URL.
    pub(super) fn parse(location: &str) -> Result<Location, StoreError> {
        let invalid = |reason: &str| StoreError::InvalidLocation {
            location: location.to_owned(),
            reason: reason.to_owned(),
        };
        let Some((scheme, rest)) = location.split_once("://") else {
            return match location {
                "" => Err(invalid("empty path")),
                path => Ok(Location::Directory(path.to_owned())),
            };
        };
        match scheme.to_ascii_lowercase().as_str() {
            "file" if rest.is_empty() => Err(invalid("empty path")),
            "file" => Ok(Location::Directory(rest.to_owned())),
            "s3" | "s3a" | "gs" | "az" | "azure" | "abfs" | "abfss" | "adl" => {
                let url = url::Url::parse(location).map_err(|e| invalid(&e.to_string()))?;
                if url.host_str().is_none_or(str::is_empty) {
                    return Err(invalid("the URL names no bucket or container"));
                }
                Ok(Location::Url(url))
            }
            _ => Err(StoreError::UnsupportedLocation {
                location: location.to_owned(),
            }),
        }
    }
}

impl Backend {
    /// Connects to the bucket an object-store URL names (see the module docs for where the
    /// configuration comes from).
    pub(super) fn connect(
        url: &url::Url,
        options: &[(String, String)],
    ) -> Result<Self, StoreError> {
        let config = std::env::vars().chain(options.iter().cloned());
        let (store, prefix) = object_store::parse_url_opts(url, config)?;
        let objects: Arc<dyn ObjectStore> = if prefix.as_ref().is_empty() {
            Arc::from(store)
        } else {
            Arc::new(object_store::prefix::PrefixStore::new(store, prefix))
        };
        Ok(Backend::Objects {
            url: url.to_string(),
            objects,
        })
    }

    /// The store's files through `object_store`, for listings and reads.
    pub(super) fn objects(&self) -> Arc<dyn ObjectStore> {
        match self {
            Backend::Local(local) => Arc::clone(&local.objects),
            Backend::Objects { objects, .. } => Arc::clone(objects),
        }
    }

    /// The local root directory, if the store is local.
    pub(super) fn root(&self) -> Option<&Path> {
        match self {
            Backend::Local(local) => Some(&local.root),
            Backend::Objects { .. } => None,
        }
    }

    /// The location, for logs.
    pub(super) fn describe(&self) -> String {
        match self {
            Backend::Local(local) => local.root.display().to_string(),
            Backend::Objects { url, .. } => url.clone(),
        }
    }

    /// Writes `batch` as the segment `name` in the folder `dir` (relative to the store),
    /// durably, waiting for `gate` (when given) just before the segment becomes visible.
    /// Returns its size in bytes. Blocking: call on a blocking thread.
    pub(super) fn put_segment(
        &self,
        dir: &str,
        name: &str,
        batch: &RecordBatch,
        props: WriterProperties,
        gate: &mut Option<Gate>,
    ) -> Result<u64, StoreError> {
        match self {
            Backend::Local(local) => {
                let path = local.root.join(dir);
                let known = guard(&local.known_dirs).contains(&path);
                if !known {
                    ensure_dir(&local.root, &path)?;
                }
                let size = match write_segment_gated(&path, name, batch, props.clone(), gate) {
                    // The folder was removed behind the store's back (a user deletion).
                    Err(e) if known && e.is_not_found() => {
                        ensure_dir(&local.root, &path)?;
                        write_segment_gated(&path, name, batch, props, gate)?
                    }
                    other => other?,
                };
                guard(&local.known_dirs).insert(path);
                Ok(size)
            }
            Backend::Objects { objects, .. } => {
                let bytes = encode(batch, props)?;
                let size = bytes.len() as u64;
                pass(gate.take())?;
                let path = ObjectPath::from(format!("{dir}/{name}"));
                block_on(objects.put(&path, PutPayload::from(bytes)))?;
                Ok(size)
            }
        }
    }

    /// Writes a small file (a commit record) durably under a name never used before.
    /// Blocking.
    pub(super) fn put_record(
        &self,
        dir: &str,
        name: &str,
        bytes: Vec<u8>,
    ) -> Result<(), StoreError> {
        match self {
            Backend::Local(local) => {
                let path = local.root.join(dir);
                ensure_dir(&local.root, &path)?;
                write_durable_file(&path, name, &bytes)
            }
            Backend::Objects { objects, .. } => {
                let path = ObjectPath::from(format!("{dir}/{name}"));
                let create = PutOptions {
                    mode: PutMode::Create,
                    ..PutOptions::default()
                };
                block_on(objects.put_opts(&path, PutPayload::from(bytes), create))?;
                Ok(())
            }
        }
    }

    /// Removes the files `names` of the folder `dir`; one already gone counts as removed.
    /// Durable when it returns. Blocking.
    pub(super) fn remove(&self, dir: &str, names: &[String]) -> Result<(), StoreError> {
        match self {
            Backend::Local(local) => {
                let folder = local.root.join(dir);
                for name in names {
                    let path = folder.join(name);
                    match std::fs::remove_file(&path) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(StoreError::io(&path, e)),
                    }
                }
                fsync_dir(&folder)
            }
            Backend::Objects { objects, .. } => block_on(async {
                for name in names {
                    match objects
                        .delete(&ObjectPath::from(format!("{dir}/{name}")))
                        .await
                    {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                        Err(e) => return Err(StoreError::from(e)),
                    }
                }
                Ok(())
            }),
        }
    }

    /// The content of the file at `path` (relative to the store), `None` if it does not exist.
    /// Blocking.
    pub(super) fn read(&self, path: &str) -> Result<Option<Bytes>, StoreError> {
        match self {
            Backend::Local(local) => {
                let path = local.root.join(path);
                match std::fs::read(&path) {
                    Ok(bytes) => Ok(Some(Bytes::from(bytes))),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(StoreError::io(&path, e)),
                }
            }
            Backend::Objects { objects, .. } => {
                match block_on(async { objects.get(&ObjectPath::from(path)).await?.bytes().await })
                {
                    Ok(bytes) => Ok(Some(bytes)),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(e.into()),
                }
            }
        }
    }

    /// Whether a file exists at `path` (relative to the store). Blocking.
    pub(super) fn exists(&self, path: &str) -> Result<bool, StoreError> {
        match self {
            Backend::Local(local) => Ok(local.root.join(path).exists()),
            Backend::Objects { objects, .. } => {
                match block_on(objects.head(&ObjectPath::from(path))) {
                    Ok(_) => Ok(true),
                    Err(object_store::Error::NotFound { .. }) => Ok(false),
                    Err(e) => Err(e.into()),
                }
            }
        }
    }

    /// Removes every file of a user (see the module docs for what readers see meanwhile).
    /// Blocking.
    pub(super) fn remove_user(&self, team: Uuid, user: Uuid) -> Result<(), StoreError> {
        match self {
            Backend::Local(local) => {
                let dir = local.root.join(layout::user_dir(team, user));
                if !dir.exists() {
                    return Ok(());
                }
                let team_dir = local.root.join(layout::team_folder(team));
                let grave = team_dir.join(format!("{DELETED_PREFIX}{user}-{}", Uuid::new_v4()));
                std::fs::rename(&dir, &grave).map_err(|e| StoreError::io(&dir, e))?;
                fsync_dir(&team_dir)?;
                std::fs::remove_dir_all(&grave).map_err(|e| StoreError::io(&grave, e))?;
                guard(&local.known_dirs).retain(|d| !d.starts_with(&dir));
                Ok(())
            }
            Backend::Objects { objects, .. } => block_on(async {
                let prefix = ObjectPath::from(layout::user_dir(team, user));
                let paths: Vec<ObjectPath> = objects
                    .list(Some(&prefix))
                    .map_ok(|meta| meta.location)
                    .try_collect()
                    .await?;
                // Commit records first: the segments of multi-dataset pushes are invisible from
                // then on, so a reader never sees half of one push.
                let is_record = |p: &ObjectPath| p.parts().any(|part| part.as_ref() == COMMITS_DIR);
                let (records, rest): (Vec<_>, Vec<_>) = paths.into_iter().partition(is_record);
                for batch in [records, rest] {
                    futures::stream::iter(batch)
                        .map(|path| async move {
                            match objects.delete(&path).await {
                                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                                Err(e) => Err(StoreError::from(e)),
                            }
                        })
                        .buffer_unordered(DELETE_CONCURRENCY)
                        .try_collect::<()>()
                        .await?;
                }
                Ok(())
            }),
        }
    }
}

/// Drives an object-store request to completion from a blocking thread.
fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Handle::current().block_on(future)
}
