//! Spawned engine work that stops with its owner: the query's task (`execute`) and the
//! time-bucket operator's slices (`plan::bucket`) both hold their tasks through
//! [`AbortOnDrop`], so a cancelled or timed-out query leaves nothing running. Its own module
//! so that `plan` does not import `execute`, which imports `plan`.

/// A spawned task that is aborted when its handle is dropped (a query's task here, the
/// time-bucket operator's slices in `plan::bucket`).
pub struct AbortOnDrop<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> std::future::Future for AbortOnDrop<T> {
    type Output = Result<T, tokio::task::JoinError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}
