//! What a request holds outside DataFusion's operators, charged to the request's memory pool:
//! the input batches it was handed (every dataset its queries read) and the result tables it
//! keeps until encoding. DataFusion only accounts its operators' state (hash tables,
//! accumulators, sorts); without this, a request over a large window answered 200 under any
//! `--query-memory-mb` while holding far more (issue 13, item 4).
//!
//! Sizes count each Arrow buffer once, by address, whatever the number of arrays or slices
//! sharing it: a cached batch cut to the window is a slice of the cached buffers, which the
//! request keeps alive whole. Counted batches must stay alive while counted (a freed buffer's
//! address could be reused by a new one); the request holds them until it answers.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayData};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::Result;
use datafusion::error::DataFusionError;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};

use super::{EngineError, Limits};

/// The request's own holdings, registered with its pool; released when dropped.
#[derive(Debug)]
pub struct Budget {
    reservation: MemoryReservation,
    seen: HashSet<usize>,
}

impl Budget {
    /// A budget drawing on `pool`.
    pub fn new(pool: &Arc<dyn MemoryPool>) -> Self {
        Budget {
            reservation: MemoryConsumer::new("request inputs and results").register(pool),
            seen: HashSet::new(),
        }
    }

    /// Charges the buffers of `batches` not charged yet; fails (ResourcesExhausted) when the
    /// pool cannot hold them.
    pub fn charge<'a>(&mut self, batches: impl IntoIterator<Item = &'a RecordBatch>) -> Result<()> {
        let mut bytes = 0;
        for b in batches {
            for c in b.columns() {
                bytes += new_bytes(&c.to_data(), &mut self.seen);
            }
        }
        self.reservation.try_grow(bytes)
    }

    /// Bytes charged so far.
    pub fn size(&self) -> usize {
        self.reservation.size()
    }
}

/// The memory a request's inputs hold, counted as the caller loads them (before the engine's
/// pool exists), so that a request whose data alone exceeds the memory limit is refused after
/// the dataset that crosses it instead of after loading every dataset. [`execute`] charges the
/// same batches to the request's pool again.
///
/// [`execute`]: super::execute
#[derive(Debug, Default)]
pub struct InputSize {
    seen: HashSet<usize>,
    bytes: usize,
}

impl InputSize {
    /// Counts `batches`; [`EngineError::ResourcesExhausted`] once the inputs exceed the limit.
    pub fn add(&mut self, batches: &[RecordBatch], limits: &Limits) -> Result<(), EngineError> {
        for b in batches {
            for c in b.columns() {
                self.bytes += new_bytes(&c.to_data(), &mut self.seen);
            }
        }
        if self.bytes > limits.memory_limit_bytes {
            return Err(EngineError::ResourcesExhausted {
                limit_bytes: limits.memory_limit_bytes,
                source: DataFusionError::ResourcesExhausted(format!(
                    "the request's input batches hold at least {} bytes",
                    self.bytes
                )),
            });
        }
        Ok(())
    }

    /// Bytes counted so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// The capacity of the buffers of `data` (children and null masks included) whose address is
/// not in `seen` yet; adds them.
fn new_bytes(data: &ArrayData, seen: &mut HashSet<usize>) -> usize {
    let mut bytes = 0;
    let nulls = data.nulls().map(|n| n.buffer());
    for buffer in data.buffers().iter().chain(nulls) {
        if seen.insert(buffer.data_ptr().as_ptr() as usize) {
            bytes += buffer.capacity();
        }
    }
    for child in data.child_data() {
        bytes += new_bytes(child, seen);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;
    use datafusion::execution::memory_pool::GreedyMemoryPool;

    fn batch(n: i64) -> RecordBatch {
        let a: Arc<dyn Array> = Arc::new(Int64Array::from_iter_values(0..n));
        RecordBatch::try_from_iter([("a", a.clone()), ("b", a)]).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn shared_buffers_and_slices_are_charged_once_and_the_limit_refuses() {
        let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(12_000));
        let mut budget = Budget::new(&pool);
        let b = batch(1000);
        budget
            .charge([&b, &b.slice(10, 20)])
            .unwrap_or_else(|e| panic!("{e}"));
        assert!((8000..8200).contains(&budget.size()), "{}", budget.size());
        assert_eq!(pool.reserved(), budget.size());
        assert!(budget.charge([&batch(1000)]).is_err());
        drop(budget);
        assert_eq!(pool.reserved(), 0);
    }

    #[test]
    fn input_size_refuses_past_the_limit_with_resources_exhausted() {
        let limits = Limits {
            memory_limit_bytes: 12_000,
            ..Limits::default()
        };
        let mut size = InputSize::default();
        let b = batch(1000);
        size.add(&[b.clone(), b.slice(0, 5)], &limits)
            .unwrap_or_else(|e| panic!("{e}"));
        size.add(std::slice::from_ref(&b), &limits)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!((8000..8200).contains(&size.bytes()), "{}", size.bytes());
        let err = size.add(&[batch(1000)], &limits);
        assert!(
            matches!(
                err,
                Err(EngineError::ResourcesExhausted {
                    limit_bytes: 12_000,
                    ..
                })
            ),
            "{err:?}"
        );
    }
}
