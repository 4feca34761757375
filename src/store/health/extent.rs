//! Where a dataset holds data, read from its segment names alone: one listing, no segment
//! opened. The timeseries getters plan their reads with it (`data::pages`): they skip where
//! there is no data and read sparse stretches in one go, so a window reaching back to year 0,
//! or years between two recordings, cost what the data costs.

use uuid::Uuid;

use super::{HealthStore, StoreError};
use crate::schema::Dataset;

/// One visible segment's time range and row count, as its name gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Its earliest time, in microseconds.
    pub start: i64,
    /// Just after its latest time (a half-open end), in microseconds.
    pub end: i64,
    /// Its rows, replaced ones included: at most what a read of any part of it decodes.
    pub rows: u64,
}

impl HealthStore {
    /// The extents of the dataset's visible segments with a time, sorted by start (empty when
    /// the user has none). Outside them the dataset has no row with a time; inside, a
    /// segment's range also covers rows a later write replaced. Not cached: a listing is what
    /// a cold read pays first anyway, and the answer changes with every write.
    pub async fn extents(
        &self,
        team: Uuid,
        user: Uuid,
        dataset: Dataset,
    ) -> Result<Vec<Extent>, StoreError> {
        let listing = self.list((team, user, dataset)).await?;
        let mut extents: Vec<Extent> = listing
            .segments
            .iter()
            .filter_map(|s| {
                s.name.range.map(|(min, max)| Extent {
                    start: min,
                    end: max.saturating_add(1),
                    rows: s.name.rows,
                })
            })
            .collect();
        extents.sort_unstable_by_key(|e| (e.start, e.end));
        Ok(extents)
    }
}
