//! DataFusion's own tasks in the trace of the request that runs them.
//!
//! A query's plan runs partly on tasks DataFusion spawns itself (one per input partition when
//! partitions are merged, blocking work); a span opened in them (the time-bucket operator's
//! `query.slice`) would start a trace of its own, without the request id. DataFusion lets the
//! process wrap every task it spawns ([`JoinSetTracer`]): each is instrumented with the span
//! current where it is spawned, as this crate's own spawns are.

use std::any::Any;

use datafusion::common::runtime::{JoinSetTracer, set_join_set_tracer};
use futures::FutureExt as _;
use futures::future::BoxFuture;
use tracing::Instrument as _;

/// Instruments DataFusion's spawned tasks with the span current at their spawn.
struct CurrentSpan;

impl JoinSetTracer for CurrentSpan {
    fn trace_future(
        &self,
        fut: BoxFuture<'static, Box<dyn Any + Send>>,
    ) -> BoxFuture<'static, Box<dyn Any + Send>> {
        fut.in_current_span().boxed()
    }

    fn trace_block(
        &self,
        f: Box<dyn FnOnce() -> Box<dyn Any + Send> + Send>,
    ) -> Box<dyn FnOnce() -> Box<dyn Any + Send> + Send> {
        let span = tracing::Span::current();
        Box::new(move || span.in_scope(f))
    }
}

/// Installs [`CurrentSpan`] for the process (once; a second call changes nothing).
pub(super) fn follow_datafusion_tasks() {
    // Already set: by an earlier call, which installed the same tracer.
    let _ = set_join_set_tracer(&CurrentSpan);
}
