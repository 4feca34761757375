//! The runner's notion of "now", injectable so tests can move time (lease expiry, due dates)
//! without sleeping. Sleeps themselves (poll interval, heartbeat) stay on tokio's timer.

use std::sync::Mutex;

use chrono::{DateTime, Utc};

/// A source of the current instant.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now, at the precision the database stores (microseconds).
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        crate::store::metadata::now()
    }
}

/// A clock that stands still until moved (for tests).
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    /// A clock showing `at`.
    pub fn new(at: DateTime<Utc>) -> Self {
        ManualClock(Mutex::new(at))
    }

    /// Moves the clock forward (or back, with a negative duration).
    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
