//! The limiter's rules: which buckets a request spends, what a refusal costs, what the verdict
//! reports, and that idle buckets are forgotten.

use super::*;

const SECOND: Duration = Duration::from_secs(1);

fn limiter(key: Budget, team: Budget, query: Budget) -> Limiter {
    Limiter::new(RateLimits { key, team, query })
}

#[test]
fn no_budget_no_verdict() {
    let l = Limiter::new(RateLimits::default());
    assert_eq!(l.check("k", Uuid::new_v4(), true, Instant::now()), None);
    assert_eq!(l.tracked(), 0);
}

#[test]
fn keys_have_their_own_buckets_and_share_their_team_s() {
    let l = limiter(Budget::new(1.0, 2), Budget::new(1.0, 3), Budget::DISABLED);
    let (team, now) = (Uuid::new_v4(), Instant::now());
    let a1 = l.check("a", team, false, now).unwrap();
    assert_eq!((a1.scope, a1.remaining, a1.limit), (Scope::Key, 1, 2));
    let a2 = l.check("a", team, false, now).unwrap();
    assert_eq!((a2.remaining, a2.retry_after), (0, None));
    let a3 = l.check("a", team, false, now).unwrap();
    assert_eq!(a3.scope, Scope::Key, "a's own bucket is empty");
    assert_eq!(a3.retry_after, Some(SECOND));
    // The team's bucket has one token left: b gets it, then the team refuses b.
    let b1 = l.check("b", team, false, now).unwrap();
    assert_eq!((b1.scope, b1.remaining, b1.limit), (Scope::Team, 0, 3));
    let b2 = l.check("b", team, false, now).unwrap();
    assert_eq!(b2.scope, Scope::Team);
    assert_eq!(b2.retry_after, Some(SECOND));
    // Another team is untouched.
    assert_eq!(
        l.check("c", Uuid::new_v4(), false, now)
            .unwrap()
            .retry_after,
        None
    );
}

#[test]
fn a_refused_request_takes_no_token() {
    let l = limiter(Budget::new(1.0, 1), Budget::new(1.0, 3), Budget::DISABLED);
    let (team, t0) = (Uuid::new_v4(), Instant::now());
    assert!(l.check("a", team, false, t0).unwrap().retry_after.is_none());
    for _ in 0..10 {
        assert!(l.check("a", team, false, t0).unwrap().retry_after.is_some());
    }
    // The team's bucket paid for the one request that passed, not for the ten refused: two
    // more keys get its last two tokens, and only then does the team refuse.
    for key in ["b", "c"] {
        assert_eq!(l.check(key, team, false, t0).unwrap().retry_after, None);
    }
    assert_eq!(l.check("d", team, false, t0).unwrap().scope, Scope::Team);
    // After the announced wait the key passes again.
    let v = l.check("a", team, false, t0 + SECOND).unwrap();
    assert_eq!(v.retry_after, None);
}

#[test]
fn queries_spend_their_own_budget_besides_the_others() {
    let l = limiter(Budget::new(1.0, 10), Budget::DISABLED, Budget::new(0.5, 2));
    let (team, now) = (Uuid::new_v4(), Instant::now());
    for left in [1, 0] {
        let v = l.check("a", team, true, now).unwrap();
        assert_eq!((v.scope, v.remaining, v.limit), (Scope::Query, left, 2));
    }
    let refused = l.check("a", team, true, now).unwrap();
    assert_eq!(refused.scope, Scope::Query);
    assert_eq!(refused.retry_after, Some(2 * SECOND));
    assert_eq!(refused.reset, 4 * SECOND);
    // Other requests of the same key still pass: its bucket paid for the two queries only.
    let v = l.check("a", team, false, now).unwrap();
    assert_eq!((v.scope, v.remaining, v.retry_after), (Scope::Key, 7, None));
}

#[test]
fn the_longest_wait_is_announced_when_several_buckets_refuse() {
    let l = limiter(Budget::new(1.0, 1), Budget::new(0.25, 1), Budget::DISABLED);
    let (team, now) = (Uuid::new_v4(), Instant::now());
    assert!(
        l.check("a", team, false, now)
            .unwrap()
            .retry_after
            .is_none()
    );
    let v = l.check("a", team, false, now).unwrap();
    assert_eq!(v.scope, Scope::Team);
    assert_eq!(v.retry_after, Some(4 * SECOND));
}

#[test]
fn full_buckets_are_forgotten_and_the_map_stays_bounded() {
    let l = limiter(Budget::new(10.0, 10), Budget::DISABLED, Budget::DISABLED);
    let team = Uuid::new_v4();
    let t0 = Instant::now();
    for _ in 0..10 {
        l.check("busy", team, false, t0);
    }
    for i in 1..MIN_HIGH_WATER {
        l.check(&format!("key-{i}"), team, false, t0);
    }
    assert_eq!(l.tracked(), MIN_HIGH_WATER);
    // A tenth of a second later every bucket used once has its token back: the sweep the
    // high-water mark triggers forgets them, and keeps the busy one (one token of ten).
    let t1 = t0 + Duration::from_millis(100);
    l.check("new", team, false, t1);
    assert_eq!(l.tracked(), 2);
    // A minute later the periodic sweep forgets the rest.
    l.check("later", team, false, t1 + SWEEP_EVERY);
    assert_eq!(l.tracked(), 1);
}

#[test]
fn a_forgotten_bucket_answers_as_the_kept_one_would() {
    let budget = Budget::new(2.0, 4);
    let l = limiter(budget, Budget::DISABLED, Budget::DISABLED);
    let team = Uuid::new_v4();
    let t0 = Instant::now();
    for _ in 0..4 {
        l.check("a", team, false, t0);
    }
    // Two seconds later the bucket is full; after the sweep it is gone, and a new one is full.
    let later = t0 + 2 * SECOND + SWEEP_EVERY;
    l.check("b", team, false, later);
    assert_eq!(l.tracked(), 1, "a's full bucket was forgotten");
    let v = l.check("a", team, false, later).unwrap();
    assert_eq!((v.remaining, v.limit), (3, 4));
}
