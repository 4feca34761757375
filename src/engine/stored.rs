//! What the caller of a request declared about its input batches: that they are the health
//! store's, each sorted by time without nulls and holding one source
//! ([`HealthStore::read`](crate::store::health::HealthStore::read)). The service says so by
//! calling [`Inputs::stored`](super::Inputs::stored), and the time-bucket
//! operator then
//! - bounds a batch by its first and last rows instead of a pass over all of them (at 1 Hz over
//!   90 days that pass reads 62 MB a source, a sixth of the whole query);
//! - takes a batch's source from its first row instead of proving its source columns constant
//!   (a pass over their bytes: 2 MB a query for 90 days of one Apple watch at 1/min).
//!
//! The declaration names the exact arrays, by the address and length of their buffers: an
//! operator sees a declared array only if it reads an input column as it is (a projection
//! keeps it; a filter, a `take` or a slice makes a new one, which is handled the slow way). The
//! addresses stay valid because the request holds its inputs until it ends. Debug builds check
//! every declared batch; release builds trust the caller.

use std::collections::HashSet;

use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::TimestampMicrosecondType;

use crate::schema::{Dataset, constant_str, source_columns};

/// A request's store batches, by the memory of their time and source columns: a session
/// config extension of the request's task context.
#[derive(Debug, Default)]
pub(crate) struct StoredBatches {
    /// Time columns sorted ascending without nulls.
    sorted: HashSet<(usize, usize)>,
    /// (provider, source type) column pairs that each repeat one value.
    one_source: HashSet<[(usize, usize); 2]>,
}

impl StoredBatches {
    /// The timeseries batches of `inputs`, which the caller guarantees are the store's.
    pub(crate) fn of<'a>(
        inputs: impl Iterator<Item = (&'a Dataset, &'a Vec<RecordBatch>)>,
    ) -> Self {
        let mut declared = StoredBatches::default();
        for (dataset, batches) in inputs {
            let Dataset::Timeseries(_) = dataset else {
                continue;
            };
            for batch in batches {
                if let Some(time) = batch
                    .column_by_name(dataset.time_column())
                    .and_then(|c| c.as_primitive_opt::<TimestampMicrosecondType>())
                {
                    debug_assert!(
                        time.null_count() == 0 && time.values().is_sorted(),
                        "a batch declared sorted by time is not"
                    );
                    declared.sorted.insert(time_key(time.values()));
                }
                if let Ok((provider, source_type)) = source_columns(batch) {
                    debug_assert!(
                        batch.num_rows() == 0
                            || (constant_str(provider).is_some()
                                && constant_str(source_type).is_some()),
                        "a batch declared of one source is not"
                    );
                    declared
                        .one_source
                        .insert([text_key(provider), text_key(source_type)]);
                }
            }
        }
        declared
    }

    /// Whether `values` are a declared time column: sorted ascending, no nulls.
    pub(crate) fn sorted(&self, values: &[i64]) -> bool {
        self.sorted.contains(&time_key(values))
    }

    /// The one source of a declared batch's source columns: its first row's (null as "").
    pub(crate) fn one_source<'a>(
        &self,
        provider: &'a StringArray,
        source_type: &'a StringArray,
    ) -> Option<(&'a str, &'a str)> {
        let declared = !provider.is_empty()
            && self
                .one_source
                .contains(&[text_key(provider), text_key(source_type)]);
        let first = |a: &'a StringArray| if a.is_valid(0) { a.value(0) } else { "" };
        declared.then(|| (first(provider), first(source_type)))
    }
}

fn time_key(values: &[i64]) -> (usize, usize) {
    (values.as_ptr() as usize, values.len())
}

fn text_key(a: &StringArray) -> (usize, usize) {
    let offsets = a.value_offsets();
    (offsets.as_ptr() as usize, offsets.len())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, Float64Array, TimestampMicrosecondArray};

    use super::*;
    use crate::schema::{repeated_str, resource};

    #[test]
    fn only_the_declared_arrays_themselves_are_declared() {
        let dataset = Dataset::Timeseries(resource("heartrate").unwrap());
        let time = TimestampMicrosecondArray::from(vec![1, 2, 3, 5]).with_timezone("UTC");
        let batch = RecordBatch::try_from_iter([
            ("timestamp", Arc::new(time) as ArrayRef),
            (
                "value",
                Arc::new(Float64Array::from(vec![1.0; 4])) as ArrayRef,
            ),
            (
                "source_provider",
                Arc::new(repeated_str("oura", 4)) as ArrayRef,
            ),
            (
                "source_type",
                Arc::new(StringArray::new_null(4)) as ArrayRef,
            ),
        ])
        .unwrap();
        let inputs = [(dataset, vec![batch.clone()])];
        let declared = StoredBatches::of(inputs.iter().map(|(d, b)| (d, b)));
        let time = batch.column(0).as_primitive::<TimestampMicrosecondType>();
        assert!(declared.sorted(time.values()));
        // A projection keeps the arrays; a slice of them, or an equal copy, is not declared.
        let projected = batch.project(&[0, 2, 3]).unwrap();
        let kept = projected
            .column(0)
            .as_primitive::<TimestampMicrosecondType>();
        assert!(declared.sorted(kept.values()));
        assert!(!declared.sorted(&time.values()[1..]));
        assert!(!declared.sorted(&[1, 2, 3, 5]));
        let (p, t) = source_columns(&projected).unwrap();
        assert_eq!(declared.one_source(p, t), Some(("oura", "")));
        let (p2, t2) = (p.slice(1, 2), t.slice(1, 2));
        assert_eq!(declared.one_source(&p2, &t2), None);
        assert_eq!(declared.one_source(&repeated_str("oura", 4), t), None);
    }
}
