//! The write path: conform, sort, resolve in-batch duplicates, encode and make durable.

use datafusion::arrow::array::RecordBatch;
use uuid::Uuid;

use super::gate::Gate;
use super::layout::{self, SegmentName, next_seq, nonce};
use super::metrics::Metrics;
use super::rows::{TimeColumn, conform, newest_per_key, sort_by_time};
use super::segment_write::writer_properties;
use super::{HealthStore, StoreError, WriteReceipt};
use crate::schema::Dataset;

impl HealthStore {
    /// Stores `batch` (with `dataset.schema()`) as one new segment and returns once it is
    /// durable (locally: written to a temporary name, fsynced, renamed, and the folder fsynced;
    /// on object storage: one whole-object put; see `backend.rs`). Rows
    /// sharing a record key inside the batch keep only the newest (`ingested_at`, then the later
    /// row). An empty batch writes nothing.
    pub async fn write(
        &self,
        team: Uuid,
        user: Uuid,
        dataset: Dataset,
        batch: RecordBatch,
    ) -> Result<WriteReceipt, StoreError> {
        self.write_gated(team, user, dataset, batch, None).await
    }

    /// [`HealthStore::write`], making the segment visible only once `gate` is opened (see
    /// `gate.rs`).
    pub(super) async fn write_gated(
        &self,
        team: Uuid,
        user: Uuid,
        dataset: Dataset,
        batch: RecordBatch,
        gate: Option<Gate>,
    ) -> Result<WriteReceipt, StoreError> {
        let batch =
            conform(batch, &dataset.schema()).map_err(|source| StoreError::SchemaMismatch {
                dataset: dataset.path(),
                source,
            })?;
        if batch.num_rows() == 0 {
            return Ok(WriteReceipt {
                rows: 0,
                segment: None,
                bytes: 0,
            });
        }
        let key = (team, user, dataset);
        let props = writer_properties(dataset, self.inner.options.row_group_rows);
        let store = self.clone();
        let (name, rows, bytes) = crate::telemetry::spawn_blocking(move || {
            let batch = prepare(batch, dataset)?;
            let range = TimeColumn::of(&batch, dataset.time_column())?.sorted_range();
            let name = SegmentName {
                seq: next_seq(),
                generation: 0,
                part: 0,
                nonce: nonce(),
                range,
                rows: batch.num_rows() as u64,
                committed_by_record: false,
            }
            .file_name();
            let dir = layout::dataset_dir(team, user, dataset);
            let mut gate = gate;
            let bytes = store
                .inner
                .backend
                .put_segment(&dir, &name, &batch, props, &mut gate)?;
            Ok::<_, StoreError>((name, batch.num_rows(), bytes))
        })
        .await??;
        self.inner.cache.invalidate(&key);
        self.bump_shared(team, user, vec![dataset]).await?;
        let m = &self.inner.metrics;
        Metrics::add(&m.segments_written, 1);
        Metrics::add(&m.rows_written, rows as u64);
        Metrics::add(&m.bytes_written, bytes);
        Ok(WriteReceipt {
            rows,
            segment: Some(name),
            bytes,
        })
    }
}

/// Makes a durable write known: its folder exists and the cache no longer answers from before
/// it. (Its compaction is a `store.compact` job the writer's caller schedules.)
pub(crate) fn prepare(batch: RecordBatch, dataset: Dataset) -> Result<RecordBatch, StoreError> {
    let time = dataset.time_column();
    let batch = sort_by_time(batch, time)?;
    if matches!(dataset, Dataset::Timeseries(_)) && TimeColumn::of(&batch, time)?.is_sorted(true) {
        return Ok(batch);
    }
    Ok(newest_per_key(&[batch], dataset)?.0)
}
