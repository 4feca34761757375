//! Retiring a compaction's inputs on object storage: hidden at once, removed after a grace
//! period, so that no segment is deleted while another process may still be reading it
//! (`spec/scale-out.md`).
//!
//! Locally, one process owns the directory and its readers hold the dataset's swap lock from
//! listing to fetching, so compaction removes its inputs at once under that lock
//! (`compact.rs`). Several processes on one bucket share no lock: a reader in one process may
//! have listed an input just before another process's compaction finished. So on object
//! storage compaction does not delete its inputs; it puts one small record in the dataset
//! folder,
//! `_retired-{seq:020}-{gen:04}-{nonce:08x}.json`, `{"inputs": [...], "outputs": [...]}`
//! (file names in that folder), after its outputs are durable. Then:
//!
//! - **Readers** (every listing: reads, compaction, `datasets`) hide a record's inputs once
//!   they also list every one of its outputs. The outputs hold exactly the rows a read of the
//!   inputs answers, so a reader sees the inputs alone (listed before the outputs), inputs and
//!   outputs (listed between: duplicate keys with equal `ingested_at`, resolved at read time),
//!   or the outputs alone: never a missed or double-counted row. Requiring the outputs makes
//!   a listing that saw the record but not yet an output (a paged listing racing the
//!   compaction) fall back to the inputs instead of losing rows.
//! - **The sweep** (at the start of every compaction of the dataset, in any process, and after
//!   its merge) removes the
//!   inputs of records older than [`StoreOptions::retired_grace`](super::StoreOptions), then
//!   releases their pushes' commit records (`commit.rs`), then removes the record: oldest
//!   record first, stopping at the first failure. So a record whose outputs are gone (retired
//!   by a later compaction, and removed) had its own inputs removed before them, and is never
//!   left hiding nothing while its inputs reappear. A reader that listed an input fetches it
//!   within the grace period unless it stalls for that long; it then re-lists (`read.rs`).
//! - **The `store.compact` job** comes back after the grace period while records wait
//!   (`crate::jobs::compaction`), so retired segments are removed even if the user writes
//!   nothing more.
//!
//! Records are immutable, so each process keeps the ones it has read (bounded) and reads a
//! listed record once. A record that cannot be read or parsed hides nothing (its inputs and
//! outputs both count, which is correct, merely slower) and is never swept.
//!
//! Engines reading the bucket in place see a dataset's retired inputs beside its outputs for
//! the grace period, as they see replaced versions until compaction: the README's query keeps
//! the newest version per key.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::SystemTime;

use object_store::ObjectMeta;
use object_store::ObjectStoreExt;
use object_store::path::Path as ObjectPath;

use super::commit::release;
use super::layout::{self, CommitId, RETIRED_PREFIX, SegmentName, nonce};
use super::{HealthStore, Key, Listed, Listing, StoreError, guard};

const RECORD_SUFFIX: &str = ".json";

/// Records remembered per process beyond this many are forgotten (and read again if listed).
const KNOWN_RECORDS: usize = 1 << 16;

/// The content of a retirement record: file names in the dataset folder.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct Retirement {
    /// The compaction's inputs, hidden once every output is listed.
    pub(super) inputs: Vec<String>,
    /// The compaction's outputs.
    pub(super) outputs: Vec<String>,
}

/// A listed retirement record.
#[derive(Debug, Clone)]
pub(super) struct ListedRetirement {
    pub(super) meta: ObjectMeta,
    pub(super) retirement: Arc<Retirement>,
}

/// The name of the record retiring a run whose outputs are `generation` of `newest`'s `seq`.
fn record_name(newest: &SegmentName) -> String {
    format!(
        "{RETIRED_PREFIX}{:020}-{:04}-{:08x}{RECORD_SUFFIX}",
        newest.seq,
        newest.generation + 1,
        nonce()
    )
}

/// Whether a file name in a dataset folder is a retirement record.
pub(super) fn is_record(file: &str) -> bool {
    file.starts_with(RETIRED_PREFIX) && file.ends_with(RECORD_SUFFIX)
}

/// The inputs the records hide, given every segment file name listed (`present`): those of
/// each record whose outputs are all present.
pub(super) fn hidden<'a>(
    records: impl IntoIterator<Item = &'a Retirement>,
    present: &HashSet<String>,
) -> HashSet<String> {
    records
        .into_iter()
        .filter(|r| r.outputs.iter().all(|o| present.contains(o)))
        .flat_map(|r| r.inputs.iter().cloned())
        .collect()
}

impl HealthStore {
    /// Moves the segments `records` retire out of `listing.segments` into `listing.retired`,
    /// and keeps the records in `listing.retirements` (oldest first) for the sweep.
    pub(super) async fn apply_retirements(
        &self,
        listing: &mut Listing,
        records: Vec<ObjectMeta>,
    ) -> Result<(), StoreError> {
        let mut retirements = Vec::with_capacity(records.len());
        for meta in records {
            if let Some(retirement) = self.retirement(&meta.location).await? {
                retirements.push(ListedRetirement { meta, retirement });
            }
        }
        let present: HashSet<String> = listing
            .segments
            .iter()
            .map(|s| s.name.file_name())
            .collect();
        let hidden = hidden(retirements.iter().map(|r| &*r.retirement), &present);
        if !hidden.is_empty() {
            let (retired, visible): (Vec<Listed>, Vec<Listed>) =
                std::mem::take(&mut listing.segments)
                    .into_iter()
                    .partition(|s| hidden.contains(&s.name.file_name()));
            listing.segments = visible;
            listing.retired = retired;
        }
        retirements.sort_by(|a, b| {
            (a.meta.last_modified, &a.meta.location).cmp(&(b.meta.last_modified, &b.meta.location))
        });
        listing.retirements = retirements;
        Ok(())
    }

    /// A record's content: remembered, or read (`None` when it vanished or is unreadable).
    async fn retirement(&self, path: &ObjectPath) -> Result<Option<Arc<Retirement>>, StoreError> {
        if let Some(known) = guard(&self.inner.retirements).get(path) {
            return Ok(Some(known.clone()));
        }
        let bytes = match self.inner.objects.get(path).await {
            Ok(got) => got.bytes().await?,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let Ok(retirement) = serde_json::from_slice::<Retirement>(&bytes) else {
            tracing::warn!(record = %path, "unreadable retirement record: it hides nothing");
            return Ok(None);
        };
        let retirement = Arc::new(retirement);
        self.remember_retirement(path.clone(), retirement.clone());
        Ok(Some(retirement))
    }

    /// Keeps a record's content (records are immutable), within [`KNOWN_RECORDS`].
    fn remember_retirement(&self, path: ObjectPath, retirement: Arc<Retirement>) {
        let mut known = guard(&self.inner.retirements);
        if known.len() >= KNOWN_RECORDS {
            known.clear();
        }
        known.insert(path, retirement);
    }

    /// Retires a compaction's `inputs` in favour of its durable `outputs` (file names in the
    /// dataset folder). Blocking.
    pub(super) fn retire(
        &self,
        key: Key,
        newest: &SegmentName,
        inputs: Vec<String>,
        outputs: Vec<String>,
    ) -> Result<(), StoreError> {
        let dir = layout::dataset_dir(key.0, key.1, key.2);
        let retirement = Retirement { inputs, outputs };
        let bytes = serde_json::to_vec(&retirement)
            .map_err(|e| StoreError::io(&dir, std::io::Error::other(e)))?;
        let name = record_name(newest);
        self.inner.backend.put_record(&dir, &name, bytes)?;
        // Known here already: the listing that follows the merge need not read it back.
        self.remember_retirement(
            ObjectPath::from(format!("{dir}/{name}")),
            Arc::new(retirement),
        );
        Ok(())
    }

    /// Removes what the listing's records older than the grace period retire (see the module
    /// docs). Answers (segments removed, records still waiting).
    pub(super) async fn sweep_retired(
        &self,
        key: Key,
        listing: &Listing,
    ) -> Result<(usize, usize), StoreError> {
        let cutoff = SystemTime::now() - self.inner.options.retired_grace;
        let due: Vec<ListedRetirement> = listing
            .retirements
            .iter()
            .take_while(|r| SystemTime::from(r.meta.last_modified) <= cutoff)
            .cloned()
            .collect();
        let waiting = listing.retirements.len() - due.len();
        if due.is_empty() {
            return Ok((0, waiting));
        }
        // Readers in this process hold the lock shared from listing to fetching: none of them
        // sees a segment vanish.
        let locks = self.locks(key);
        let exclusive = locks.swap.write().await;
        let store = self.clone();
        let removed = crate::telemetry::spawn_blocking(move || {
            let dir = layout::dataset_dir(key.0, key.1, key.2);
            let mut removed = 0;
            for record in due {
                let inputs = &record.retirement.inputs;
                store.inner.backend.remove(&dir, inputs)?;
                let mut commits: Vec<CommitId> = inputs
                    .iter()
                    .filter_map(|name| SegmentName::parse(name)?.commit())
                    .collect();
                commits.sort_unstable();
                commits.dedup();
                if !commits.is_empty() {
                    let released = release(&store.inner.backend, key.0, key.1, &commits)?;
                    store.forget(key.0, key.1, &released);
                }
                let file = record.meta.location.filename().unwrap_or_default();
                store.inner.backend.remove(&dir, &[file.to_owned()])?;
                guard(&store.inner.retirements).remove(&record.meta.location);
                removed += inputs.len();
            }
            Ok::<_, StoreError>(removed)
        })
        .await??;
        drop(exclusive);
        Ok((removed, waiting))
    }
}

/// Records remembered by path.
pub(super) type KnownRetirements = HashMap<ObjectPath, Arc<Retirement>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn retirement(inputs: &[&str], outputs: &[&str]) -> Retirement {
        Retirement {
            inputs: inputs.iter().map(|s| (*s).to_owned()).collect(),
            outputs: outputs.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn present(names: &[&str]) -> HashSet<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn inputs_are_hidden_only_once_every_output_is_listed() {
        let r = retirement(&["a", "b"], &["o1", "o2"]);
        assert_eq!(
            hidden([&r], &present(&["a", "b", "o1", "o2"])),
            present(&["a", "b"])
        );
        // A listing that saw the record but not yet every output keeps the inputs.
        assert!(hidden([&r], &present(&["a", "b", "o1"])).is_empty());
        // A chain: the second compaction merged the first's output; both hide.
        let later = retirement(&["o1", "o2", "c"], &["p"]);
        assert_eq!(
            hidden([&r, &later], &present(&["a", "b", "o1", "o2", "c", "p"])),
            present(&["a", "b", "o1", "o2", "c"])
        );
    }

    #[test]
    fn record_names_are_recognised_and_sort_after_their_inputs_generation() {
        let newest = SegmentName {
            seq: 42,
            generation: 0,
            part: 3,
            nonce: 7,
            range: Some((1, 2)),
            rows: 10,
            committed_by_record: false,
        };
        let name = record_name(&newest);
        assert!(is_record(&name), "{name}");
        assert!(name.starts_with("_retired-00000000000000000042-0001-"));
        assert!(SegmentName::parse(&name).is_none());
        assert!(!is_record("_tmp-abc.partial"));
        assert!(!is_record(&newest.file_name()));
        let round: Retirement =
            serde_json::from_slice(&serde_json::to_vec(&retirement(&["a"], &["b"])).unwrap())
                .unwrap();
        assert_eq!(round, retirement(&["a"], &["b"]));
    }
}
