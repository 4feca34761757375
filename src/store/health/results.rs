//! Continuous-query result tables (`crate::continuous`) too large to travel inline with their
//! state in the metadata database (`crate::continuous::keep`): one Parquet file per (query,
//! user) version, kept in the user's folder so they live and die with the user's health data.
//!
//! Layout: `team=<id>/user=<id>/_cq/<query id>/{version:020}-{nonce:08x}.parquet`. The metadata
//! database names the current file (`continuous_query_users.result_file`); a file is written
//! under a name never used before (`Backend::put_record`: temp file, fsync, rename locally; a
//! create-only `put` on object storage) *before* the evaluation that made it commits, so the
//! named file always exists, and an evaluation cut short leaves only an unnamed file, removed
//! by the next evaluation that commits ([`HealthStore::remove_results`]). The leading `_` keeps
//! the segment listings and Hive-reading engines out of it; start-up recovery removes `_tmp-*`
//! files a crash left (`recover.rs`).

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use uuid::Uuid;

use super::error::StoreError;
use super::{HealthStore, layout};

/// The folder, in a user folder, holding continuous-query result tables.
pub(crate) const RESULTS_DIR: &str = "_cq";
const SUFFIX: &str = ".parquet";

fn query_dir(team: Uuid, user: Uuid, query: Uuid) -> String {
    format!("{}/{RESULTS_DIR}/{query}", layout::user_dir(team, user))
}

impl HealthStore {
    /// Keeps `bytes` (a Parquet file) as version `version` of (query, user)'s result table,
    /// durably, under a new name; answers the name.
    pub async fn write_result(
        &self,
        (team, user, query): (Uuid, Uuid, Uuid),
        version: i64,
        bytes: Vec<u8>,
    ) -> Result<String, StoreError> {
        let name = format!("{version:020}-{:08x}{SUFFIX}", layout::nonce());
        let dir = query_dir(team, user, query);
        let store = self.clone();
        let written = name.clone();
        crate::telemetry::spawn_blocking(move || {
            store.inner.backend.put_record(&dir, &written, bytes)
        })
        .await??;
        Ok(name)
    }

    /// The content of the result file `name` of (query, user), `None` when it is gone (the
    /// user's data was erased meanwhile).
    pub async fn read_result(
        &self,
        (team, user, query): (Uuid, Uuid, Uuid),
        name: &str,
    ) -> Result<Option<Bytes>, StoreError> {
        let path = format!("{}/{name}", query_dir(team, user, query));
        let store = self.clone();
        crate::telemetry::spawn_blocking(move || store.inner.backend.read(&path)).await?
    }

    /// Removes every result file of (query, user) but `keep`.
    pub async fn remove_results(
        &self,
        (team, user, query): (Uuid, Uuid, Uuid),
        keep: Option<&str>,
    ) -> Result<(), StoreError> {
        let dir = query_dir(team, user, query);
        let prefix = ObjectPath::from(dir.clone());
        let metas: Vec<_> = match self.inner.objects.list(Some(&prefix)).try_collect().await {
            Ok(metas) => metas,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let stale: Vec<String> = metas
            .into_iter()
            .filter_map(|m| m.location.filename().map(str::to_owned))
            .filter(|name| name.ends_with(SUFFIX) && Some(name.as_str()) != keep)
            .collect();
        if stale.is_empty() {
            return Ok(());
        }
        let store = self.clone();
        crate::telemetry::spawn_blocking(move || store.inner.backend.remove(&dir, &stale)).await?
    }
}
