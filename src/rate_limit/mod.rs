//! Request rate limits: token buckets per API key, per team, and per team for aggregate queries
//! (`serve --rate-limit-*`; see `config.rs`).
//!
//! The buckets live in this process's memory. With N processes behind a load balancer a team's
//! budget is N times the configured one; this is deliberate: a shared counter (the metadata
//! database, or a Redis) would put a network round trip and a point of failure in front of
//! every request, to enforce a limit whose job is to stop a runaway client, not to bill one.
//! Operators size the budget per process.
//!
//! A request passes only when every bucket that applies to it has a token, and then takes one
//! from each: a refused request costs nothing, so a client that waits as told gets through.
//! A bucket that has refilled completely is indistinguishable from one never used, so idle
//! buckets are forgotten (the map holds only clients seen within a bucket's refill time).

mod bucket;

pub use bucket::{Bucket, Budget};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use uuid::Uuid;

/// Defaults of `serve`: what one busy integration needs, well below what would let one team
/// take a node's cores from the others. Per API key: 100 requests per second, 200 at once.
pub const DEFAULT_KEY: Budget = Budget::new(100.0, 200);
/// Per team (all its keys together): 200 requests per second, 400 at once.
pub const DEFAULT_TEAM: Budget = Budget::new(200.0, 400);
/// Aggregate queries per team, on top of the above (each may hold a core and up to
/// `--query-memory-mb` for seconds): 10 per second, 20 at once.
pub const DEFAULT_QUERY: Budget = Budget::new(10.0, 20);

/// The budgets in force. The default limits nothing: tests, benches and embedders build their
/// own `HttpConfig`; `serve` applies [`DEFAULT_KEY`], [`DEFAULT_TEAM`] and [`DEFAULT_QUERY`]
/// unless told otherwise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimits {
    /// Every request made with one API key.
    pub key: Budget,
    /// Every request of one team, whichever of its keys it carries.
    pub team: Budget,
    /// Aggregate queries of one team (charged besides the two above).
    pub query: Budget,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            key: Budget::DISABLED,
            team: Budget::DISABLED,
            query: Budget::DISABLED,
        }
    }
}

/// Which budget a bucket spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// One API key's.
    Key,
    /// One team's.
    Team,
    /// One team's aggregate queries.
    Query,
}

impl Scope {
    /// The scope's name (a metric label).
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Key => "key",
            Scope::Team => "team",
            Scope::Query => "query",
        }
    }
}

/// A bucket's identity: a key is known by its SHA-256, never by its secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum BucketId {
    Key([u8; 32]),
    Team(Uuid),
    Query(Uuid),
}

impl BucketId {
    fn scope(&self) -> Scope {
        match self {
            BucketId::Key(_) => Scope::Key,
            BucketId::Team(_) => Scope::Team,
            BucketId::Query(_) => Scope::Query,
        }
    }
}

/// The answer for one request: the numbers of the bucket that decided it (the one that
/// refused, else the one with the fewest requests left), for the `x-ratelimit-*` headers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// The deciding bucket's budget.
    pub scope: Scope,
    /// Its capacity (`x-ratelimit-limit`).
    pub limit: u32,
    /// Requests left in it after this one (`x-ratelimit-remaining`).
    pub remaining: u32,
    /// How long until it is full again (`x-ratelimit-reset`).
    pub reset: Duration,
    /// When refused: how long until a request would pass (`Retry-After`).
    pub retry_after: Option<Duration>,
}

/// The buckets of one process. Cheap to clone (an `Arc` inside).
#[derive(Debug, Clone, Default)]
pub struct Limiter {
    limits: RateLimits,
    state: Arc<Mutex<Buckets>>,
}

#[derive(Debug)]
struct Buckets {
    map: HashMap<BucketId, Bucket>,
    /// When full buckets were last forgotten.
    swept: Instant,
    /// The map's size that triggers a sweep before [`SWEEP_EVERY`] has passed.
    high_water: usize,
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets {
            map: HashMap::new(),
            swept: Instant::now(),
            high_water: MIN_HIGH_WATER,
        }
    }
}

/// How often full buckets are forgotten.
const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// The smallest map that triggers a sweep early.
const MIN_HIGH_WATER: usize = 4096;

impl Limiter {
    /// Buckets for these budgets.
    pub fn new(limits: RateLimits) -> Limiter {
        Limiter {
            limits,
            state: Arc::default(),
        }
    }

    /// The budgets in force.
    pub fn limits(&self) -> &RateLimits {
        &self.limits
    }

    fn budget(&self, scope: Scope) -> &Budget {
        match scope {
            Scope::Key => &self.limits.key,
            Scope::Team => &self.limits.team,
            Scope::Query => &self.limits.query,
        }
    }

    /// Charges one request made with `key` (the secret as sent) for `team`, an aggregate query
    /// when `query`; `None` when no budget applies to it.
    pub fn check(&self, key: &str, team: Uuid, query: bool, now: Instant) -> Option<Verdict> {
        let mut ids = Vec::with_capacity(3);
        if self.limits.key.is_enabled() {
            ids.push(BucketId::Key(Sha256::digest(key.as_bytes()).into()));
        }
        if self.limits.team.is_enabled() {
            ids.push(BucketId::Team(team));
        }
        if query && self.limits.query.is_enabled() {
            ids.push(BucketId::Query(team));
        }
        if ids.is_empty() {
            return None;
        }
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.sweep(&mut state, now);
        let mut buckets: Vec<(BucketId, Bucket)> = ids
            .into_iter()
            .map(|id| {
                let budget = self.budget(id.scope());
                let mut b = state
                    .map
                    .get(&id)
                    .copied()
                    .unwrap_or_else(|| Bucket::full(budget, now));
                b.refill(budget, now);
                (id, b)
            })
            .collect();
        let refused = buckets
            .iter()
            .filter(|(_, b)| !b.has_token())
            .map(|(id, b)| (id.scope(), *b))
            .max_by_key(|(scope, b)| b.wait_for_token(self.budget(*scope)));
        if let Some((scope, b)) = refused {
            // Nothing is taken: the refusal is free, so the client's wait is the one announced.
            for (id, b) in buckets {
                state.map.insert(id, b);
            }
            let budget = self.budget(scope);
            return Some(Verdict {
                scope,
                limit: budget.burst,
                remaining: 0,
                reset: b.until_full(budget),
                retry_after: Some(b.wait_for_token(budget)),
            });
        }
        for (_, b) in &mut buckets {
            b.take();
        }
        let (scope, tightest) = buckets
            .iter()
            .map(|(id, b)| (id.scope(), *b))
            .min_by_key(|(_, b)| b.remaining())?;
        for (id, b) in buckets {
            state.map.insert(id, b);
        }
        let budget = self.budget(scope);
        Some(Verdict {
            scope,
            limit: budget.burst,
            remaining: tightest.remaining(),
            reset: tightest.until_full(budget),
            retry_after: None,
        })
    }

    /// Forgets full buckets every [`SWEEP_EVERY`], or sooner once the map has doubled.
    fn sweep(&self, state: &mut Buckets, now: Instant) {
        if now.saturating_duration_since(state.swept) < SWEEP_EVERY
            && state.map.len() < state.high_water
        {
            return;
        }
        state
            .map
            .retain(|id, b| !b.is_full_at(self.budget(id.scope()), now));
        state.swept = now;
        state.high_water = (state.map.len() * 2).max(MIN_HIGH_WATER);
    }

    /// Buckets held now (for tests and the metrics).
    pub fn tracked(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map
            .len()
    }
}

#[cfg(test)]
mod tests;
