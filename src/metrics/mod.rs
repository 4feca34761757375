//! The service's Prometheus metrics (`GET /metrics`), on the Prometheus org's own Rust client,
//! `prometheus-client`.
//!
//! [`Metrics`] owns a registry and the live counters and histograms that the HTTP layer, the
//! query path, pushes, webhook deliveries and provider pulls record into; what is cheaper to
//! read than to count (the health store's counters, the job queue, the rate limiter's buckets)
//! is read when scraped (`scrape.rs`). One [`Metrics`] per [`crate::http::AppState`], so two
//! services in one process (tests) count apart.
//!
//! Labels are bounded: route templates (never raw paths), a fixed set of methods, status codes,
//! provider slugs from the catalogue, job kinds; never a team, user or key, whose numbers grow
//! with tenants and which would tell one tenant's activity to whoever scrapes.

mod scrape;

pub use scrape::QueueStat;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

/// The media type of the exposition (OpenMetrics text, which Prometheus asks for first).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Labels of one HTTP answer.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: String,
    status: u16,
}

/// One label: the body kind of a push.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Kind {
    kind: &'static str,
}

/// One label: a rate limit's budget.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScopeLabel {
    scope: &'static str,
}

/// One label: an outcome.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: &'static str,
}

/// Labels of one provider pull run.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PullLabels {
    provider: &'static str,
    kind: &'static str,
    outcome: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Seconds from 1 ms to about 65 s.
fn seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// Webhook lag, from 10 ms to about a day (retries wait hours).
fn lag() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 4.0, 13))
}

/// Bytes from 1 KiB to 4 GiB.
fn bytes() -> Histogram {
    Histogram::new(exponential_buckets(1024.0, 4.0, 12))
}

struct Inner {
    registry: Mutex<Registry>,
    requests: Family<RequestLabels, Counter>,
    latency: Histograms<RequestLabels>,
    queries: Histograms<Outcome>,
    query_input: Histogram,
    query_answer: Histogram,
    pushes: Family<Kind, Counter>,
    push_samples: Family<Kind, Counter>,
    push_records: Family<Kind, Counter>,
    push_bytes: Family<Kind, Counter>,
    deliveries: Family<Outcome, Counter>,
    delivery_lag: Histogram,
    pulls: Family<PullLabels, Counter>,
    rate_limited: Family<ScopeLabel, Counter>,
    queue: Arc<Mutex<Vec<QueueStat>>>,
}

/// The metrics of one service. Cheap to clone (an `Arc` inside); a default one records into a
/// registry nobody scrapes (handlers built without a service, in tests and benches).
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A registry with every live metric registered, under the prefix `wearhouse_`.
    pub fn new() -> Metrics {
        let mut r = Registry::with_prefix("wearhouse");
        let requests = Family::default();
        r.register(
            "http_requests",
            "HTTP requests answered, by method, route template and status",
            Family::clone(&requests),
        );
        let latency: Histograms<RequestLabels> = Family::new_with_constructor(seconds);
        r.register_with_unit(
            "http_request_duration",
            "Time from a request's arrival to its answer's head, by method, route template and status",
            Unit::Seconds,
            latency.clone(),
        );
        let queries: Histograms<Outcome> = Family::new_with_constructor(seconds);
        r.register_with_unit(
            "query_duration",
            "Aggregate query requests (loading, execution, encoding), by outcome",
            Unit::Seconds,
            queries.clone(),
        );
        let query_input = bytes();
        r.register_with_unit(
            "query_input",
            "Stored data an aggregate request loaded, counted against its memory limit",
            Unit::Bytes,
            query_input.clone(),
        );
        let query_answer = bytes();
        r.register_with_unit(
            "query_answer",
            "Encoded answers of aggregate requests",
            Unit::Bytes,
            query_answer.clone(),
        );
        let [pushes, push_samples, push_records, push_bytes] = [(); 4].map(|()| Family::default());
        r.register(
            "pushes",
            "Pushes stored, by body kind (json, arrow, parquet)",
            Family::clone(&pushes),
        );
        r.register(
            "push_samples",
            "Timeseries samples stored by pushes, by body kind",
            Family::clone(&push_samples),
        );
        r.register(
            "push_records",
            "Summary records (sleep, activity, workouts, ...) stored by pushes, by body kind",
            Family::clone(&push_records),
        );
        r.register_with_unit(
            "push",
            "Request bodies of pushes stored, by body kind",
            Unit::Bytes,
            Family::clone(&push_bytes),
        );
        let deliveries = Family::default();
        r.register(
            "webhook_attempts",
            "Webhook delivery attempts, by outcome (succeeded; failed, to be retried; failed for good)",
            Family::clone(&deliveries),
        );
        let delivery_lag = lag();
        r.register_with_unit(
            "webhook_delivery_lag",
            "Time from an event's delivery being created to its successful attempt",
            Unit::Seconds,
            delivery_lag.clone(),
        );
        let pulls = Family::default();
        r.register(
            "provider_pulls",
            "Runs of provider pulls, by provider, kind (historical, incremental) and outcome",
            Family::clone(&pulls),
        );
        let rate_limited = Family::default();
        r.register(
            "rate_limited",
            "Requests refused by a rate limit, by the budget that refused (key, team, query)",
            Family::clone(&rate_limited),
        );
        let queue = Arc::default();
        r.register_collector(Box::new(scrape::Queue(Arc::clone(&queue))));
        Metrics {
            inner: Arc::new(Inner {
                registry: Mutex::new(r),
                requests,
                latency,
                queries,
                query_input,
                query_answer,
                pushes,
                push_samples,
                push_records,
                push_bytes,
                deliveries,
                delivery_lag,
                pulls,
                rate_limited,
                queue,
            }),
        }
    }

    /// Adds what is read at each scrape of this service: the health store's counters and the
    /// rate limiter's buckets.
    pub fn watch(
        &self,
        health: crate::store::health::HealthStore,
        limiter: crate::rate_limit::Limiter,
    ) {
        let mut registry = self.registry();
        registry.register_collector(Box::new(scrape::Store(health)));
        registry.register_collector(Box::new(scrape::Buckets(limiter)));
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.inner
            .registry
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The exposition, with the job queue as read just now from the metadata database.
    pub fn encode(&self, queue: Vec<QueueStat>) -> Result<String, std::fmt::Error> {
        *self.inner.queue.lock().unwrap_or_else(|p| p.into_inner()) = queue;
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry())?;
        Ok(out)
    }

    /// One HTTP answer: `route` is the matched route's template.
    pub fn request(&self, method: &axum::http::Method, route: &str, status: u16, took: Duration) {
        let labels = RequestLabels {
            method: method_label(method),
            route: route.to_owned(),
            status,
        };
        self.inner.requests.get_or_create(&labels).inc();
        self.inner
            .latency
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// One aggregate request: its outcome (`ok`, `invalid`, `timeout`, `error`), its time, and
    /// (when it got that far) the bytes it loaded and answered.
    pub fn query(
        &self,
        outcome: &'static str,
        took: Duration,
        input: Option<u64>,
        answer: Option<u64>,
    ) {
        self.inner
            .queries
            .get_or_create(&Outcome { outcome })
            .observe(took.as_secs_f64());
        if let Some(input) = input {
            self.inner.query_input.observe(input as f64);
        }
        if let Some(answer) = answer {
            self.inner.query_answer.observe(answer as f64);
        }
    }

    /// One push stored: its body kind, timeseries samples, summary records and body bytes.
    pub fn push(&self, kind: &'static str, samples: u64, records: u64, body_bytes: u64) {
        let k = Kind { kind };
        self.inner.pushes.get_or_create(&k).inc();
        self.inner.push_samples.get_or_create(&k).inc_by(samples);
        self.inner.push_records.get_or_create(&k).inc_by(records);
        self.inner.push_bytes.get_or_create(&k).inc_by(body_bytes);
    }

    /// One webhook attempt: `succeeded`, `retrying` or `failed`, and for a success the time
    /// since its delivery was created.
    pub fn webhook_attempt(&self, outcome: &'static str, lag: Option<Duration>) {
        self.inner
            .deliveries
            .get_or_create(&Outcome { outcome })
            .inc();
        if let Some(lag) = lag {
            self.inner.delivery_lag.observe(lag.as_secs_f64());
        }
    }

    /// One run of a provider pull. `provider` is looked up in the catalogue (a slug it does
    /// not know counts as `other`, so a malformed job cannot mint label values).
    pub fn pull(&self, provider: &str, kind: &'static str, outcome: &'static str) {
        let provider = crate::providers::CATALOGUE
            .iter()
            .find(|p| p.slug == provider)
            .map_or("other", |p| p.slug);
        self.inner
            .pulls
            .get_or_create(&PullLabels {
                provider,
                kind,
                outcome,
            })
            .inc();
    }

    /// One request refused by the budget `scope`.
    pub fn rate_limited(&self, scope: crate::rate_limit::Scope) {
        self.inner
            .rate_limited
            .get_or_create(&ScopeLabel {
                scope: scope.as_str(),
            })
            .inc();
    }
}

/// The method as a label: the standard ones by name, any other as `other` (a client may send
/// any token as a method).
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}
