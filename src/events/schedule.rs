//! When a failed delivery is tried again (`events.md`): after 5 s, 5 min, 30 min, 2 h, 5 h,
//! 10 h and 10 h, each stretched by a random 0-20 % so endpoints that failed together do not
//! retry in lockstep; after the eighth attempt the delivery has failed. An endpoint whose
//! deliveries keep failing for [`DISABLE_AFTER`] is disabled.

use std::time::Duration;

use rand::Rng;

/// The nominal waits after failed attempts 1, 2, ...
pub const RETRY_DELAYS: [Duration; 7] = [
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3600),
    Duration::from_secs(5 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(10 * 3600),
];

/// Attempts a delivery gets: the first, then one per retry delay.
pub const MAX_ATTEMPTS: u32 = RETRY_DELAYS.len() as u32 + 1;

/// How long an endpoint may fail continuously before it is disabled.
pub const DISABLE_AFTER: Duration = Duration::from_secs(5 * 24 * 3600);

/// How long an attempt may take: success is a 2xx within this.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(15);

/// The wait after failed attempt `attempt` (1-based), or `None` when it was the last.
pub fn retry_after(attempt: u32, rng: &mut impl Rng) -> Option<Duration> {
    let index = usize::try_from(attempt.checked_sub(1)?).ok()?;
    let nominal = *RETRY_DELAYS.get(index)?;
    let jitter = nominal.mul_f64(rng.gen_range(0.0..=0.2));
    Some(nominal + jitter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn follows_the_spec_schedule_with_bounded_jitter_then_gives_up() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let expected = [5u64, 300, 1800, 7200, 18_000, 36_000, 36_000];
        for (i, nominal) in expected.iter().enumerate() {
            let attempt = u32::try_from(i).unwrap_or(0) + 1;
            let mut seen = std::collections::HashSet::new();
            for _ in 0..100 {
                let d = retry_after(attempt, &mut rng).unwrap_or_default();
                let n = Duration::from_secs(*nominal);
                assert!(d >= n && d <= n.mul_f64(1.2), "attempt {attempt}: {d:?}");
                seen.insert(d);
            }
            assert!(seen.len() > 50, "jitter varies attempt {attempt}'s wait");
        }
        assert_eq!(MAX_ATTEMPTS, 8);
        assert_eq!(retry_after(8, &mut rng), None);
        assert_eq!(retry_after(0, &mut rng), None);
    }
}
