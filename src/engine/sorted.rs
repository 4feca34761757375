//! Which input time columns a request's caller declared sorted, so the time-bucket operator
//! can take a part's time bounds from its first and last rows instead of a pass over all of
//! them (at 1 Hz over 90 days that pass reads 62 MB a source, a sixth of the whole query).
//!
//! The health store's reads answer every timeseries batch sorted by time, without nulls
//! ([`HealthStore::read`](crate::store::health::HealthStore::read)); the service says so by
//! calling [`Engine::execute_stored`](super::Engine::execute_stored). The declaration names the
//! exact arrays, by the address and length of their values: an operator sees a declared array
//! only if it reads an input column as it is (a projection keeps it; a filter, a `take` or a
//! slice makes a new one, which is bounded the slow way). The addresses stay valid because the
//! request holds its inputs until it ends.

use std::collections::HashSet;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::TimestampMicrosecondType;

use crate::schema::Dataset;

/// The time columns of a request's inputs declared sorted ascending without nulls: a session
/// config extension of the request's task context.
#[derive(Debug, Default)]
pub(crate) struct SortedTimes {
    arrays: HashSet<(usize, usize)>,
}

impl SortedTimes {
    /// The time columns of every timeseries batch of `inputs`, which the caller guarantees
    /// sorted by time without nulls (checked in debug builds).
    pub(crate) fn of<'a>(
        inputs: impl Iterator<Item = (&'a Dataset, &'a Vec<RecordBatch>)>,
    ) -> Self {
        let mut arrays = HashSet::new();
        for (dataset, batches) in inputs {
            let Dataset::Timeseries(_) = dataset else {
                continue;
            };
            for batch in batches {
                let Some(time) = batch
                    .column_by_name(dataset.time_column())
                    .and_then(|c| c.as_primitive_opt::<TimestampMicrosecondType>())
                else {
                    continue;
                };
                debug_assert!(
                    time.null_count() == 0 && time.values().is_sorted(),
                    "a batch declared sorted by time is not"
                );
                arrays.insert(key(time.values()));
            }
        }
        SortedTimes { arrays }
    }

    /// Whether `values` are a declared time column: sorted ascending, no nulls.
    pub(crate) fn contains(&self, values: &[i64]) -> bool {
        self.arrays.contains(&key(values))
    }
}

fn key(values: &[i64]) -> (usize, usize) {
    (values.as_ptr() as usize, values.len())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, Float64Array, TimestampMicrosecondArray};

    use super::*;
    use crate::schema::resource;

    #[test]
    fn only_the_declared_arrays_themselves_are_sorted() {
        let dataset = Dataset::Timeseries(resource("heartrate").unwrap());
        let time = TimestampMicrosecondArray::from(vec![1, 2, 3, 5]).with_timezone("UTC");
        let batch = RecordBatch::try_from_iter([
            ("timestamp", Arc::new(time) as ArrayRef),
            (
                "value",
                Arc::new(Float64Array::from(vec![1.0; 4])) as ArrayRef,
            ),
        ])
        .unwrap();
        let inputs = [(dataset, vec![batch.clone()])];
        let sorted = SortedTimes::of(inputs.iter().map(|(d, b)| (d, b)));
        let time = batch.column(0).as_primitive::<TimestampMicrosecondType>();
        assert!(sorted.contains(time.values()));
        // A projection keeps the array; a slice of it, or an equal copy, is not declared.
        let projected = batch.project(&[0]).unwrap();
        let kept = projected
            .column(0)
            .as_primitive::<TimestampMicrosecondType>();
        assert!(sorted.contains(kept.values()));
        assert!(!sorted.contains(&time.values()[1..]));
        assert!(!sorted.contains(&[1, 2, 3, 5]));
    }
}
