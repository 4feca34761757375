//! One token bucket: the arithmetic of a budget of `burst` requests refilled at `per_second`.
//! Time is passed in (never read here), so the arithmetic is tested with made-up instants.

use std::time::{Duration, Instant};

/// A request budget: at most `burst` requests at once, refilled at `per_second` requests per
/// second. A rate of 0 disables it (every request passes, no headers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Tokens added per second (fractions allowed: 0.5 is one request every two seconds).
    pub per_second: f64,
    /// The bucket's capacity: how many requests may arrive back to back.
    pub burst: u32,
}

impl Budget {
    /// No limit.
    pub const DISABLED: Budget = Budget {
        per_second: 0.0,
        burst: 0,
    };

    /// `burst` requests at once, refilled at `per_second`.
    pub const fn new(per_second: f64, burst: u32) -> Budget {
        Budget { per_second, burst }
    }

    /// Whether the budget limits anything (a positive, finite rate and a capacity of at least one).
    pub fn is_enabled(&self) -> bool {
        self.per_second > 0.0 && self.per_second.is_finite() && self.burst > 0
    }

    fn capacity(&self) -> f64 {
        f64::from(self.burst)
    }

    /// How long refilling `tokens` takes.
    fn refill_time(&self, tokens: f64) -> Duration {
        if tokens <= 0.0 {
            return Duration::ZERO;
        }
        Duration::try_from_secs_f64(tokens / self.per_second).unwrap_or(Duration::MAX)
    }
}

/// A bucket's tokens as of an instant. A fresh bucket is full.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl Bucket {
    /// A full bucket.
    pub fn full(budget: &Budget, now: Instant) -> Bucket {
        Bucket {
            tokens: budget.capacity(),
            updated: now,
        }
    }

    /// Adds the tokens earned since the last update, up to the capacity. An instant earlier
    /// than the last update (callers racing on the clock) earns nothing.
    pub fn refill(&mut self, budget: &Budget, now: Instant) {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * budget.per_second).min(budget.capacity());
        self.updated = self.updated.max(now);
    }

    /// Whether a request may take a token now (call [`Bucket::refill`] first).
    pub fn has_token(&self) -> bool {
        self.tokens >= 1.0
    }

    /// Takes one token; the caller checked [`Bucket::has_token`].
    pub fn take(&mut self) {
        self.tokens = (self.tokens - 1.0).max(0.0);
    }

    /// Whole requests left.
    pub fn remaining(&self) -> u32 {
        // Never above the capacity (a u32), never below zero: the cast is exact.
        self.tokens.floor().clamp(0.0, f64::from(u32::MAX)) as u32
    }

    /// How long until one token is there (zero when one is).
    pub fn wait_for_token(&self, budget: &Budget) -> Duration {
        budget.refill_time(1.0 - self.tokens)
    }

    /// How long until the bucket is full again.
    pub fn until_full(&self, budget: &Budget) -> Duration {
        budget.refill_time(budget.capacity() - self.tokens)
    }

    /// Whether the bucket would be full at `now`: it is then indistinguishable from a fresh one,
    /// so forgetting it changes nothing.
    pub fn is_full_at(&self, budget: &Budget, now: Instant) -> bool {
        let mut later = *self;
        later.refill(budget, now);
        later.tokens >= budget.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn a_fresh_bucket_allows_its_burst_then_refuses() {
        let budget = Budget::new(2.0, 3);
        let t0 = Instant::now();
        let mut b = Bucket::full(&budget, t0);
        for left in (0..3).rev() {
            b.refill(&budget, t0);
            assert!(b.has_token());
            b.take();
            assert_eq!(b.remaining(), left);
        }
        b.refill(&budget, t0);
        assert!(!b.has_token());
        assert_eq!(b.wait_for_token(&budget), Duration::from_millis(500));
        assert_eq!(b.until_full(&budget), Duration::from_millis(1500));
    }

    #[test]
    fn tokens_come_back_at_the_rate_and_stop_at_the_capacity() {
        let budget = Budget::new(4.0, 10);
        let t0 = Instant::now();
        let mut b = Bucket::full(&budget, t0);
        for _ in 0..10 {
            b.take();
        }
        b.refill(&budget, t0 + Duration::from_millis(250));
        assert_eq!(b.remaining(), 1);
        b.refill(&budget, t0 + Duration::from_millis(1000));
        assert_eq!(b.remaining(), 4);
        assert!(!b.is_full_at(&budget, t0 + SECOND));
        assert!(b.is_full_at(&budget, t0 + Duration::from_millis(2500)));
        b.refill(&budget, t0 + 60 * SECOND);
        assert_eq!(b.remaining(), 10, "never above the burst");
        assert_eq!(b.until_full(&budget), Duration::ZERO);
    }

    #[test]
    fn a_fractional_rate_waits_whole_periods() {
        let budget = Budget::new(0.5, 1);
        let t0 = Instant::now();
        let mut b = Bucket::full(&budget, t0);
        b.take();
        b.refill(&budget, t0 + SECOND);
        assert!(!b.has_token());
        assert_eq!(b.wait_for_token(&budget), SECOND);
        b.refill(&budget, t0 + 2 * SECOND);
        assert!(b.has_token());
    }

    #[test]
    fn an_earlier_instant_earns_nothing_and_does_not_move_the_clock_back() {
        let budget = Budget::new(1.0, 2);
        let t0 = Instant::now() + SECOND;
        let mut b = Bucket::full(&budget, t0);
        b.take();
        b.take();
        b.refill(&budget, t0 - SECOND);
        assert_eq!(b.remaining(), 0);
        b.refill(&budget, t0 + SECOND);
        assert_eq!(b.remaining(), 1, "one second after t0, not two");
    }

    #[test]
    fn a_zero_rate_or_capacity_disables_the_budget() {
        assert!(!Budget::DISABLED.is_enabled());
        assert!(!Budget::new(0.0, 5).is_enabled());
        assert!(!Budget::new(5.0, 0).is_enabled());
        assert!(!Budget::new(f64::INFINITY, 5).is_enabled());
        assert!(Budget::new(0.1, 1).is_enabled());
    }
}
