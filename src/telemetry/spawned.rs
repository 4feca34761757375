//! Spawned work in the trace of the request (or job) that spawns it.
//!
//! The crate's own spawns go through [`spawn_blocking`] and [`spawn`], which run the work in
//! the span current where it is spawned, under the same subscriber, so what it logs and the
//! spans it opens belong to the request that asked for it (issue 36).
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

/// `tokio::task::spawn_blocking`, in the caller's span and subscriber.
pub fn spawn_blocking<F, R>(f: F) -> tokio::task::JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let span = tracing::Span::current();
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    tokio::task::spawn_blocking(move || {
        tracing::dispatcher::with_default(&dispatch, || span.in_scope(f))
    })
}

/// `tokio::spawn`, in the caller's span and subscriber.
pub fn spawn<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(
        tracing::instrument::WithSubscriber::with_current_subscriber(future.in_current_span()),
    )
}

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

#[cfg(test)]
mod tests {
    use tracing::Instrument as _;

    /// The name of the span current where `f` runs.
    fn current() -> Option<&'static str> {
        tracing::Span::current().metadata().map(|m| m.name())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn spawned_work_runs_in_the_callers_span() {
        let _default = tracing::subscriber::set_default(tracing_subscriber::registry());
        let caller = tracing::info_span!("caller");
        let (blocking, task) = async {
            let blocking = super::spawn_blocking(current).await.unwrap();
            let task = super::spawn(async { current() }).await.unwrap();
            (blocking, task)
        }
        .instrument(caller)
        .await;
        assert_eq!(blocking, Some("caller"));
        assert_eq!(task, Some("caller"));
        // Without it, the blocking pool's thread knows no span: what the test tells apart.
        let bare = tokio::task::spawn_blocking(current).await.unwrap();
        assert_eq!(bare, None);
    }
}
