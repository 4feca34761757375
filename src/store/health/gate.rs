//! A write that waits, just before it makes its data visible, for something its caller must
//! make durable first.
//!
//! A push writes the plan of its events to the metadata database before its data becomes
//! visible (`data::store_push`), so a crash can never leave data whose events nobody will
//! announce. Done one after the other, the plan's commit adds its fsync to the push; with a gate
//! it runs while the store encodes and fsyncs the segment, and the store only waits for it at
//! the rename (or the commit record) that publishes the data.

use tokio::sync::oneshot;

use super::StoreError;

/// Held by the write: [`Gate::wait`] blocks until the caller opens it.
#[derive(Debug)]
pub struct Gate(oneshot::Receiver<()>);

/// Held by the caller: [`Opener::open`] lets the write publish; dropping it unopened makes the
/// write fail with [`StoreError::Abandoned`] and leave nothing visible.
#[derive(Debug)]
pub struct Opener(oneshot::Sender<()>);

/// A closed gate and its opener.
pub fn gate() -> (Opener, Gate) {
    let (tx, rx) = oneshot::channel();
    (Opener(tx), Gate(rx))
}

impl Opener {
    /// Lets the write make its data visible.
    pub fn open(self) {
        // The write may have failed and gone already: nothing is waiting then.
        let _ = self.0.send(());
    }
}

impl Gate {
    /// Blocks (on a blocking thread) until the gate is opened, or fails if it never will be.
    pub(super) fn wait(self) -> Result<(), StoreError> {
        self.0.blocking_recv().map_err(|_| StoreError::Abandoned)
    }
}

/// Waits for the gate if there is one.
pub(super) fn pass(gate: Option<Gate>) -> Result<(), StoreError> {
    gate.map_or(Ok(()), Gate::wait)
}
