//! The write of one push: several datasets, committed all at once by a commit record (see
//! `commit.rs`).

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use uuid::Uuid;

use super::commit::write_record;
use super::gate::{Gate, pass};
use super::layout::{self, CommitId, SegmentName, next_seq, nonce};
use super::metrics::Metrics;
use super::rows::{TimeColumn, conform};
use super::segment_write::writer_properties;
use super::write::prepare;
use super::{HealthStore, StoreError, WriteReceipt};
use crate::schema::Dataset;

/// A push's batches, grouped by dataset in first-seen order.
type Grouped = Vec<(Dataset, Vec<RecordBatch>)>;

impl HealthStore {
    /// Stores every batch of one push and returns once all of them are durable and visible,
    /// all at once: a crash or an error at any point leaves either every dataset of the push
    /// stored or none (see `commit.rs`). Batches of the same dataset are stored as one segment
    /// (later rows win ties between equal keys and `ingested_at`); empty batches are skipped. A
    /// push touching a single dataset is a plain [`HealthStore::write`]. Returns one receipt per
    /// dataset written.
    pub async fn write_push(
        &self,
        team: Uuid,
        user: Uuid,
        batches: Vec<(Dataset, RecordBatch)>,
    ) -> Result<Vec<WriteReceipt>, StoreError> {
        self.write_push_gated(team, user, batches, None).await
    }

    /// [`HealthStore::write_push`], making the push visible only once `gate` is opened (see
    /// `gate.rs`): the encoding and the fsyncs of the segments happen before, the rename (one
    /// dataset) or the commit record (several) after. A push with no rows writes nothing and
    /// does not wait.
    #[tracing::instrument(name = "store.write_push", skip_all, fields(batches = batches.len()))]
    pub async fn write_push_gated(
        &self,
        team: Uuid,
        user: Uuid,
        batches: Vec<(Dataset, RecordBatch)>,
        gate: Option<Gate>,
    ) -> Result<Vec<WriteReceipt>, StoreError> {
        let mut grouped: Grouped = Vec::new();
        for (dataset, batch) in batches {
            let batch =
                conform(batch, &dataset.schema()).map_err(|source| StoreError::SchemaMismatch {
                    dataset: dataset.path(),
                    source,
                })?;
            if batch.num_rows() == 0 {
                continue;
            }
            match grouped.iter_mut().find(|(d, _)| *d == dataset) {
                Some((_, group)) => group.push(batch),
                None => grouped.push((dataset, vec![batch])),
            }
        }
        if grouped.len() <= 1 {
            let Some((dataset, group)) = grouped.pop() else {
                return Ok(Vec::new());
            };
            let batch = concat_batches(&dataset.schema(), &group)?;
            return Ok(vec![
                self.write_gated(team, user, dataset, batch, gate).await?,
            ]);
        }
        // One blocking task does the whole commit, so a caller that goes away (a client
        // disconnecting) cannot stop it half-way; not that it would matter for correctness.
        let datasets: Vec<Dataset> = grouped.iter().map(|(d, _)| *d).collect();
        let store = self.clone();
        let receipts =
            crate::telemetry::spawn_blocking(move || store.commit_push(team, user, grouped, gate))
                .await??;
        self.bump_shared(team, user, datasets).await?;
        Ok(receipts)
    }

    fn commit_push(
        &self,
        team: Uuid,
        user: Uuid,
        grouped: Grouped,
        gate: Option<Gate>,
    ) -> Result<Vec<WriteReceipt>, StoreError> {
        let id = CommitId {
            seq: next_seq(),
            nonce: nonce(),
        };
        let mut written = Vec::new();
        let result = self.write_segments(team, user, id, grouped, gate, &mut written);
        let receipts = match result {
            Ok(receipts) => receipts,
            Err(e) => {
                // Best effort: the segments are invisible without their record, and whatever
                // stays is removed at start-up (locally) or by compaction (`backend.rs`).
                for (dir, name) in written {
                    let _ = self.inner.backend.remove(&dir, &[name]);
                }
                return Err(e);
            }
        };
        self.remember(team, user, id);
        let m = &self.inner.metrics;
        for (dataset, receipt) in &receipts {
            self.inner.cache.invalidate(&(team, user, *dataset));
            Metrics::add(&m.segments_written, 1);
            Metrics::add(&m.rows_written, receipt.rows as u64);
            Metrics::add(&m.bytes_written, receipt.bytes);
        }
        Ok(receipts.into_iter().map(|(_, r)| r).collect())
    }

    /// Writes one marked segment per dataset, then, once `gate` opens, the commit record.
    /// `written` collects the segment files created, for cleaning up after an error.
    fn write_segments(
        &self,
        team: Uuid,
        user: Uuid,
        id: CommitId,
        grouped: Grouped,
        gate: Option<Gate>,
        written: &mut Vec<(String, String)>,
    ) -> Result<Vec<(Dataset, WriteReceipt)>, StoreError> {
        let mut receipts = Vec::with_capacity(grouped.len());
        let mut names = Vec::with_capacity(grouped.len());
        for (dataset, group) in grouped {
            let batch = concat_batches(&dataset.schema(), &group)?;
            let batch = prepare(batch, dataset)?;
            let name = SegmentName {
                seq: id.seq,
                generation: 0,
                part: 0,
                nonce: id.nonce,
                range: TimeColumn::of(&batch, dataset.time_column())?.sorted_range(),
                rows: batch.num_rows() as u64,
                committed_by_record: true,
            }
            .file_name();
            let dir = layout::dataset_dir(team, user, dataset);
            let props = writer_properties(dataset, self.inner.options.row_group_rows);
            let bytes = self
                .inner
                .backend
                .put_segment(&dir, &name, &batch, props, &mut None)?;
            written.push((dir, name.clone()));
            names.push(format!("{}/{name}", layout::dataset_folder(dataset)));
            receipts.push((
                dataset,
                WriteReceipt {
                    rows: batch.num_rows(),
                    segment: Some(name),
                    bytes,
                },
            ));
        }
        pass(gate)?;
        // Compaction sweeps uncommitted segments older than `stale_temp_after`: a push this
        // late gives up rather than commit segments that may be gone (see `compact.rs`).
        if layout::age(id.seq) > self.inner.options.stale_temp_after / 2 {
            return Err(StoreError::Abandoned);
        }
        write_record(&self.inner.backend, team, user, id, names)?;
        Ok(receipts)
    }
}
