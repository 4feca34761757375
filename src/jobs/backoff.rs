//! Retry delays: exponential in the attempt number, capped, with "equal jitter" (half the
//! delay fixed, half random) so a burst of jobs failing together - a provider outage - does not
//! retry in lockstep, while every retry still waits at least half its nominal delay.

use std::time::Duration;

use rand::Rng;

/// Exponential backoff with jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Nominal delay after the first failed attempt.
    pub base: Duration,
    /// Upper bound of the nominal delay.
    pub max: Duration,
}

impl Default for Backoff {
    /// 5 s doubling up to 1 h: ten attempts span about 40 minutes.
    fn default() -> Self {
        Backoff {
            base: Duration::from_secs(5),
            max: Duration::from_secs(3600),
        }
    }
}

impl Backoff {
    /// The nominal delay after failed attempt `attempt` (1-based): `base * 2^(attempt-1)`, at
    /// most `max`.
    pub fn nominal(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(20);
        self.base.saturating_mul(factor).min(self.max)
    }

    /// The delay to wait after failed attempt `attempt`: uniform in `[nominal/2, nominal]`.
    pub fn delay(&self, attempt: u32, rng: &mut impl Rng) -> Duration {
        let nominal = self.nominal(attempt);
        let half = nominal / 2;
        let spread = u64::try_from((nominal - half).as_micros()).unwrap_or(u64::MAX);
        half + Duration::from_micros(rng.gen_range(0..=spread))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn delays_double_up_to_the_cap_and_jitter_stays_in_the_upper_half() {
        let b = Backoff {
            base: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        let nominal: Vec<u128> = (1..=6).map(|a| b.nominal(a).as_millis()).collect();
        assert_eq!(nominal, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(b.nominal(1000), Duration::from_secs(1), "no overflow");
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut seen = std::collections::HashSet::new();
        for attempt in 1..=6 {
            for _ in 0..200 {
                let d = b.delay(attempt, &mut rng);
                assert!(
                    d >= b.nominal(attempt) / 2 && d <= b.nominal(attempt),
                    "{d:?}"
                );
                seen.insert(d);
            }
        }
        assert!(seen.len() > 100, "jitter varies the delay");
    }
}
