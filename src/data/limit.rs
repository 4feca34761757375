//! The getters' time limit: a getter answers within the time an aggregate query is given
//! (`engine::Limits::timeout`, 30 s by default) or is cancelled and answers as a query past its
//! limit does (504).
//!
//! Cancelling is dropping: the work is a future the getter owns, so at the deadline (or when
//! the client goes away and the server drops the request) it stops at its next await. The
//! store's blocking decodes it started finish their one slice and are discarded; nothing keeps
//! reading for an answer nobody will get.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::DataError;

/// When a getter must have answered, and the limit it was given.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Instant,
    limit: Duration,
}

impl Deadline {
    /// The deadline `limit` from now.
    pub fn after(limit: Duration) -> Deadline {
        let now = Instant::now();
        // A limit too far to represent is no limit: a century will do.
        let at = now
            .checked_add(limit)
            .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));
        Deadline { at, limit }
    }

    fn passed(&self) -> DataError {
        DataError::Timeout(self.limit)
    }
}

/// Runs `work` until `deadline`. Work still running then is dropped, which cancels it, and
/// answers [`DataError::Timeout`]; so does an answer completed past the deadline (work that
/// did not yield in time), so the limit holds whatever the shape of the work.
pub async fn within<T, E: From<DataError>>(
    deadline: Deadline,
    work: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let answer = tokio::time::timeout_at(deadline.at, work)
        .await
        .map_err(|_| deadline.passed())??;
    if Instant::now() > deadline.at {
        return Err(deadline.passed().into());
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_past_the_deadline_is_dropped_and_answers_timeout() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let work = async move {
            // Holds `tx` until dropped: the receiver sees the work end.
            let _held = tx;
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<_, DataError>(1)
        };
        let got = within(Deadline::after(Duration::from_millis(10)), work).await;
        assert!(matches!(got, Err(DataError::Timeout(d)) if d == Duration::from_millis(10)));
        assert!(rx.await.is_err(), "the work was dropped");
        let quick = within(Deadline::after(Duration::from_secs(60)), async {
            Ok::<_, DataError>(2)
        });
        assert_eq!(quick.await.ok(), Some(2));
    }

    #[tokio::test]
    async fn an_answer_completed_past_the_deadline_is_refused() {
        let deadline = Deadline::after(Duration::from_millis(1));
        let work = async {
            // Work that never yields: the deadline passes inside it.
            std::thread::sleep(Duration::from_millis(20));
            Ok::<_, DataError>(())
        };
        assert!(matches!(
            within(deadline, work).await,
            Err(DataError::Timeout(_))
        ));
    }
}
