//! Compaction: merging runs of small segments into few large ones and dropping replaced
//! versions, without a reader ever double counting or missing a row.
//!
//! Choice of inputs: the longest run of consecutive (in creation order) segments that are each
//! smaller than `target_segment_rows`, if it has at least two segments (`compact`) or
//! `compact_min_segments` (`compact_due`, run by the `store.compact` job after writes). Runs are consecutive so the "ties go to
//! the later segment" rule means the same before and after: the outputs take the newest input's
//! `seq` with a higher `gen`, so they sort after every input and before every later segment.
//! Replaced versions living in a large segment stay until a read resolves them (always correct,
//! merely not reclaimed).
//!
//! Protocol, per dataset (one compaction at a time, by a mutex):
//! 1. list and fetch the inputs; merge them (newest per key, sorted by time, or one sorted run
//!    per source when sources overlap in time: `read.rs`) off the async threads; split each
//!    run into parts of at most `target_segment_rows`;
//! 2. write every output durably (locally temp, fsync, rename, fsync dir; a whole-object put
//!    on object storage: `backend.rs`). Readers listing now see
//!    inputs *and* outputs: the same keys twice with equal `ingested_at`, resolved by
//!    replacement at read time (overlapping ranges disable the no-dedup fast path) - no double
//!    count;
//! 3. take the dataset's swap lock exclusively, remove the inputs (and fsync the dir), release.
//!    Readers hold that lock shared from listing until their bytes are fetched, so a listed
//!    segment is never removed under them; they see either all inputs or none, and in the
//!    second case all outputs - no missed row. On object storage, where readers in other
//!    processes hold no such lock, the inputs are retired instead: one record hides them from
//!    every listing that also sees the outputs, and they are removed after a grace period
//!    (`retire.rs`);
//! 4. keep the cache entry: a compaction changes files, not content (the outputs hold exactly
//!    the rows a read of the inputs answers), so a cached result stays exact and the next query
//!    after the `store.compact` job is as warm as the one before it. For the same reason a
//!    read racing the compaction may cache what it read from inputs, outputs or both;
//! 5. remove the commit records (see `commit.rs`) none of whose segments exists any more: the
//!    outputs are unmarked segments, which count by existing.
//!
//! Only visible segments are merged, so an uncommitted push's segments never are; once older
//! than `stale_temp_after` they are swept as a crash's leftovers. A crash
//! after 2 leaves inputs and outputs: correct (step 2's state), and merged again later. A crash
//! during 1 or 2 leaves `_tmp-*` files, removed at start-up (see `recover.rs`; a store that
//! crashed while another stayed open leaves them to the next compaction, once older than
//! `stale_temp_after`).

use std::time::SystemTime;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStoreExt;
use uuid::Uuid;

use super::commit::release;
use super::layout::{self, CommitId, SegmentName, TEMP_PREFIX, nonce};
use super::metrics::Metrics;
use super::read::assemble;
use super::segment_write::writer_properties;
use super::{CompactionReport, HealthStore, Key, Listed, StoreError};
use crate::schema::Dataset;

impl HealthStore {
    /// Merges the dataset's longest run of at least two consecutive small segments (see the
    /// module docs), dropping replaced versions. Does nothing when there is no such run.
    pub async fn compact(
        &self,
        team: Uuid,
        user: Uuid,
        dataset: Dataset,
    ) -> Result<CompactionReport, StoreError> {
        self.compact_run((team, user, dataset), 2, std::future::ready(false))
            .await
    }

    /// Merges the dataset's longest run of small segments if it has at least
    /// `compact_min_segments` of them: what the `store.compact` job runs after writes, so a
    /// dataset is rewritten once per that many pushes rather than after every one. Does
    /// nothing otherwise.
    pub async fn compact_due(
        &self,
        team: Uuid,
        user: Uuid,
        dataset: Dataset,
    ) -> Result<CompactionReport, StoreError> {
        self.compact_due_unless(team, user, dataset, std::future::ready(false))
            .await
    }

    /// [`HealthStore::compact_due`], unless `busy`, awaited once the merge's inputs are chosen,
    /// says the dataset is busy: then nothing is merged and the report says `deferred`. A merge drops
    /// replaced versions, and a push's events are made from its own rows after it
    /// (`data::announce`), so the `store.compact` job asks whether the user has pushes not yet
    /// announced. Asked after the listing, the question covers every segment listed: a push's
    /// segment is visible only after its plan is recorded.
    pub async fn compact_due_unless(
        &self,
        team: Uuid,
        user: Uuid,
        dataset: Dataset,
        busy: impl Future<Output = bool>,
    ) -> Result<CompactionReport, StoreError> {
        let min_run = self.inner.options.compact_min_segments.max(2);
        self.compact_run((team, user, dataset), min_run, busy).await
    }

    async fn compact_run(
        &self,
        key: Key,
        min_run: usize,
        busy: impl Future<Output = bool>,
    ) -> Result<CompactionReport, StoreError> {
        let locks = self.locks(key);
        let _serial = locks.compact.lock().await;
        let listing = self.list(key).await?;
        let (retired_removed, retirements_waiting) = self.sweep_retired(key, &listing).await?;
        let mut report = CompactionReport {
            temp_files_removed: self.sweep_temps(key, &listing.others).await?,
            uncommitted_removed: self.sweep_uncommitted(key, &listing.uncommitted).await?,
            retired_removed,
            retirements_waiting,
            ..CompactionReport::default()
        };
        let target = self.inner.options.target_segment_rows.max(1);
        let run = choose_run(&listing.segments, target as u64);
        if run.len() < min_run {
            return Ok(report);
        }
        if busy.await {
            report.deferred = true;
            return Ok(report);
        }
        let fetched: Vec<_> = futures::stream::iter(run.iter().cloned())
            .map(|s| async move {
                let bytes = self.inner.objects.get(&s.location).await?.bytes().await?;
                Ok::<_, StoreError>((s.name, bytes))
            })
            .buffered(4)
            .try_collect()
            .await?;
        let Some(newest) = run.last().map(|s| s.name) else {
            return Ok(report);
        };
        let dir = layout::dataset_dir(key.0, key.1, key.2);
        let dataset = key.2;
        let props = writer_properties(dataset, self.inner.options.row_group_rows);
        let batch_size = self.inner.options.row_group_rows;
        let write_dir = dir.clone();
        let store = self.clone();
        let (rows_in, rows_out, written) = crate::telemetry::spawn_blocking(move || {
            let merged = assemble(fetched, dataset, None, batch_size)?;
            let schema = dataset.schema();
            let mut written = Vec::new();
            let mut part = 0;
            let mut rows_out = 0;
            // Each time-sorted run (one per source when sources overlap in time, see
            // `read.rs`) is cut into its own parts, so every output stays sorted by time and
            // one source's segments stay apart from another's.
            let runs = match merged.runs.as_slice() {
                [] => vec![merged.batches.len()],
                runs => runs.to_vec(),
            };
            let mut batches = merged.batches.as_slice();
            for run in runs {
                let (this, rest) = batches.split_at(run);
                batches = rest;
                let all = concat_batches(&schema, this)?;
                let mut offset = 0;
                while offset < all.num_rows() {
                    let len = target.min(all.num_rows() - offset);
                    let batch = all.slice(offset, len);
                    let name = output_name(&newest, part, &batch, dataset)?;
                    let bytes = store.inner.backend.put_segment(
                        &write_dir,
                        &name,
                        &batch,
                        props.clone(),
                        &mut None,
                    )?;
                    written.push((name, bytes));
                    offset += len;
                    part += 1;
                }
                rows_out += all.num_rows();
            }
            Ok::<_, StoreError>((merged.rows, rows_out, written))
        })
        .await??;

        let inputs: Vec<String> = run.iter().map(|s| s.name.file_name()).collect();
        if self.inner.backend.root().is_none() {
            // Object storage: readers in other processes may hold the inputs (`retire.rs`).
            let outputs = written.iter().map(|(name, _)| name.clone()).collect();
            let store = self.clone();
            crate::telemetry::spawn_blocking(move || store.retire(key, &newest, inputs, outputs))
                .await??;
            // With no grace period the inputs go now; otherwise this counts what waits.
            let (removed, waiting) = self.sweep_retired(key, &self.list(key).await?).await?;
            report.retired_removed += removed;
            report.retirements_waiting = waiting;
            return Ok(self.merged(report, &run, &written, rows_in, rows_out));
        }
        let exclusive = locks.swap.write().await;
        let store = self.clone();
        crate::telemetry::spawn_blocking(move || store.inner.backend.remove(&dir, &inputs))
            .await??;
        drop(exclusive);
        let mut commits: Vec<CommitId> = run.iter().filter_map(|s| s.name.commit()).collect();
        commits.sort_unstable();
        commits.dedup();
        if !commits.is_empty() {
            let store = self.clone();
            let (team, user) = (key.0, key.1);
            let released = crate::telemetry::spawn_blocking(move || {
                release(&store.inner.backend, team, user, &commits)
            })
            .await??;
            self.forget(team, user, &released);
        }

        Ok(self.merged(report, &run, &written, rows_in, rows_out))
    }

    /// Counts a finished merge in the metrics and its report.
    fn merged(
        &self,
        mut report: CompactionReport,
        run: &[Listed],
        written: &[(String, u64)],
        rows_in: usize,
        rows_out: usize,
    ) -> CompactionReport {
        let m = &self.inner.metrics;
        Metrics::add(&m.compactions, 1);
        Metrics::add(&m.segments_compacted, run.len() as u64);
        Metrics::add(&m.segments_written, written.len() as u64);
        Metrics::add(
            &m.bytes_written,
            written.iter().map(|(_, bytes)| bytes).sum(),
        );
        report.segments_merged = run.len();
        report.segments_written = written.len();
        report.rows_in = rows_in;
        report.rows_out = rows_out;
        report
    }

    /// Removes temporary files older than `stale_temp_after` (left by crashed writers).
    async fn sweep_temps(
        &self,
        key: Key,
        others: &[object_store::ObjectMeta],
    ) -> Result<usize, StoreError> {
        let cutoff = SystemTime::now() - self.inner.options.stale_temp_after;
        let stale: Vec<String> = others
            .iter()
            .filter(|m| SystemTime::from(m.last_modified) < cutoff)
            .filter_map(|m| m.location.filename())
            .filter(|name| name.starts_with(TEMP_PREFIX))
            .map(str::to_owned)
            .collect();
        let count = stale.len();
        if count > 0 {
            let dir = layout::dataset_dir(key.0, key.1, key.2);
            let store = self.clone();
            // Best effort: a temp file that resists is retried next time.
            let _ =
                crate::telemetry::spawn_blocking(move || store.inner.backend.remove(&dir, &stale))
                    .await?;
        }
        Ok(count)
    }

    /// Removes segments of pushes that never committed once they are older (by their `seq`,
    /// their creation time) than `stale_temp_after`: a crashed push left them. A push still
    /// running that late gives up before its commit record (`push.rs`), so none of them can
    /// become visible afterwards. Start-up recovery removes them at once on a local directory;
    /// on object storage this is the only sweep.
    async fn sweep_uncommitted(
        &self,
        key: Key,
        uncommitted: &[Listed],
    ) -> Result<usize, StoreError> {
        let stale: Vec<String> = uncommitted
            .iter()
            .filter(|s| layout::age(s.name.seq) > self.inner.options.stale_temp_after)
            .map(|s| s.name.file_name())
            .collect();
        let count = stale.len();
        if count > 0 {
            let dir = layout::dataset_dir(key.0, key.1, key.2);
            let store = self.clone();
            crate::telemetry::spawn_blocking(move || store.inner.backend.remove(&dir, &stale))
                .await??;
        }
        Ok(count)
    }
}

/// The longest run of consecutive segments each below `target` rows (earliest on ties).
fn choose_run(segments: &[Listed], target: u64) -> Vec<Listed> {
    let mut best: &[Listed] = &[];
    let mut start = 0;
    for i in 0..=segments.len() {
        let small = segments.get(i).is_some_and(|s| s.name.rows < target);
        if !small {
            if i - start > best.len() {
                best = &segments[start..i];
            }
            start = i + 1;
        }
    }
    best.to_vec()
}

/// The name of output `part`: the newest input's `seq`, one generation up.
fn output_name(
    newest: &SegmentName,
    part: u32,
    batch: &RecordBatch,
    dataset: Dataset,
) -> Result<String, StoreError> {
    let range = super::rows::TimeColumn::of(batch, dataset.time_column())?.sorted_range();
    Ok(SegmentName {
        seq: newest.seq,
        generation: newest.generation + 1,
        part,
        nonce: nonce(),
        range,
        rows: batch.num_rows() as u64,
        committed_by_record: false,
    }
    .file_name())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(seq: u64, rows: u64) -> Listed {
        let name = SegmentName {
            seq,
            generation: 0,
            part: 0,
            nonce: 0,
            range: Some((0, 1)),
            rows,
            committed_by_record: false,
        };
        Listed {
            location: object_store::path::Path::from(name.file_name()),
            name,
        }
    }

    #[test]
    fn the_longest_run_of_consecutive_small_segments_is_chosen() {
        let segs = [
            listed(1, 5),
            listed(2, 500),
            listed(3, 5),
            listed(4, 5),
            listed(5, 5),
            listed(6, 500),
            listed(7, 5),
            listed(8, 5),
        ];
        let run: Vec<u64> = choose_run(&segs, 100).iter().map(|s| s.name.seq).collect();
        assert_eq!(run, vec![3, 4, 5]);
        assert!(choose_run(&segs[1..2], 100).is_empty());
        let tail: Vec<u64> = choose_run(&segs[5..], 100)
            .iter()
            .map(|s| s.name.seq)
            .collect();
        assert_eq!(tail, vec![7, 8]);
    }
}
