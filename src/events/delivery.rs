//! The delivery worker: the `webhook.deliver` job kind on the durable job runner.
//!
//! One job per (endpoint, user) stream (unique key), so a stream's deliveries are sent one
//! after another in creation order while streams run concurrently, bounded by the runner's
//! slots; an endpoint has at most [`STREAMS_PER_ENDPOINT`] streams in flight per process (the
//! others wait their turn), so a slow endpoint cannot take every slot from the others. A run sends the stream's due
//! deliveries in order; the first that fails is scheduled again (`schedule.rs`) and, being the
//! head, holds the ones behind it until it succeeds or fails for good, so a receiver sees a
//! user's events in order. The outcomes of a run's attempts are written in one transaction per
//! batch. The job itself answers `RetryAt(next attempt)`, so a delivery's retries never use the
//! job's attempts; a crash between a send and its record re-sends it (at least once, same
//! `webhook-id`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

use super::schedule::{self, ATTEMPT_TIMEOUT, DISABLE_AFTER, MAX_ATTEMPTS};
use super::signing;
use super::url_rules::UrlRules;
use crate::jobs::{JobContext, JobError, JobHandler, NewJob, Outcome};
use crate::store::metadata::deliveries::{
    AttemptRecord, Delivery, DeliveryStatus, delete_deliveries, fail_pending, record_attempt,
    stream_head,
};
use crate::store::metadata::webhooks::{Endpoint, endpoint_by_id, set_health};
use crate::store::metadata::{MetadataError, MetadataStore};

/// The kind's name.
pub const KIND: &str = "webhook.deliver";

/// Deliveries read (and their outcomes written) per batch.
const BATCH: i64 = 64;

/// The job sending one stream, due at `at` (the team sees it under `GET /v2/team/jobs`; the
/// payload holds ids only, never a secret).
pub fn job(endpoint: &Endpoint, user_key: &str, at: DateTime<Utc>) -> NewJob {
    let payload = Payload {
        endpoint_id: endpoint.id,
        user_key: user_key.to_owned(),
    };
    NewJob::typed(KIND, &payload)
        .for_team(endpoint.team_id)
        .at(at)
        .unique(format!("{KIND}:{}:{user_key}", endpoint.id))
        .max_attempts(20)
}

/// The job's payload: one endpoint's stream of one user.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Payload {
    /// The endpoint.
    pub endpoint_id: Uuid,
    /// The stream's user, as deliveries store it (the user's id, empty for team events).
    pub user_key: String,
}

/// Streams of one endpoint sent at once by one process: a slow endpoint holds at most this
/// many of the runner's slots (8 by default), so the others keep serving every other endpoint.
pub const STREAMS_PER_ENDPOINT: usize = 2;

/// How long a stream waits in its slot for one of its endpoint's places: long enough that a
/// fast endpoint's places turn over meanwhile, short enough that a slow endpoint's waiters give
/// their slots back quickly.
const PLACE_WAIT: Duration = Duration::from_millis(50);

/// When a stream that found no place runs again.
const BUSY_RETRY: Duration = Duration::from_millis(200);

/// The `webhook.deliver` handler.
#[derive(Debug, Clone)]
pub struct Deliverer {
    client: reqwest::Client,
    rules: UrlRules,
    /// Each endpoint's places (one entry per endpoint this process has sent to).
    places: Arc<Mutex<HashMap<Uuid, Arc<Semaphore>>>>,
    /// Where attempts are counted (`wearhouse_webhook_*`).
    metrics: crate::metrics::Metrics,
    /// Where the records of events stored by reference are read (`events::records`).
    health: Option<crate::store::health::HealthStore>,
}

impl Deliverer {
    /// A handler posting with its own HTTP client (15 s per attempt, no redirects followed:
    /// a redirect could lead inside the network).
    pub fn new(rules: UrlRules) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(ATTEMPT_TIMEOUT)
            .connect_timeout(ATTEMPT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("wearhouse-webhooks/", env!("CARGO_PKG_VERSION")))
            .pool_max_idle_per_host(4)
            .dns_resolver(std::sync::Arc::new(super::url_rules::PinnedResolver(rules)))
            .build()?;
        Ok(Deliverer {
            client,
            rules,
            places: Arc::default(),
            metrics: crate::metrics::Metrics::default(),
            health: None,
        })
    }

    /// The same handler rendering the events stored by reference to their records from
    /// `health` (without it, their deliveries fail).
    pub fn with_store(mut self, health: crate::store::health::HealthStore) -> Self {
        self.health = Some(health);
        self
    }

    /// The same handler counting its attempts, and the lag of successful ones, in `metrics`.
    pub fn with_metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// One of the endpoint's [`STREAMS_PER_ENDPOINT`] places, if one frees within
    /// [`PLACE_WAIT`].
    async fn place(&self, endpoint: Uuid) -> Option<OwnedSemaphorePermit> {
        let places = {
            let mut map = self.places.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(endpoint)
                .or_insert_with(|| Arc::new(Semaphore::new(STREAMS_PER_ENDPOINT)))
                .clone()
        };
        tokio::time::timeout(PLACE_WAIT, places.acquire_owned())
            .await
            .ok()?
            .ok()
    }
}

fn retry(e: MetadataError) -> JobError {
    JobError::Retry(format!("metadata store: {e}"))
}

/// The result of one attempt.
struct Attempt {
    status_code: Option<i64>,
    error: Option<String>,
    duration_ms: i64,
}

impl Deliverer {
    async fn attempt(
        &self,
        endpoint: &Endpoint,
        d: &Delivery,
        body: &str,
        now: DateTime<Utc>,
    ) -> Attempt {
        let started = Instant::now();
        let result = self.send(endpoint, d, body, now).await;
        let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        match result {
            Ok(code) if (200..300).contains(&code) => Attempt {
                status_code: Some(i64::from(code)),
                error: None,
                duration_ms,
            },
            Ok(code) => Attempt {
                status_code: Some(i64::from(code)),
                error: Some(format!("the endpoint answered {code}")),
                duration_ms,
            },
            Err(error) => Attempt {
                status_code: None,
                error: Some(error),
                duration_ms,
            },
        }
    }

    async fn send(
        &self,
        endpoint: &Endpoint,
        d: &Delivery,
        body: &str,
        now: DateTime<Utc>,
    ) -> Result<u16, String> {
        let url = self.rules.check(&endpoint.url)?;
        let mut secrets = vec![endpoint.secret.as_str()];
        if let (Some(old), Some(until)) = (&endpoint.previous_secret, endpoint.previous_expires_at)
            && until > now
        {
            secrets.push(old.as_str());
        }
        let id = d.event_id.to_string();
        let headers = signing::headers(&secrets, &id, now.timestamp(), body.as_bytes());
        let mut request = self
            .client
            .post(url)
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = request
            .body(body.to_owned())
            .send()
            .await
            .map_err(|e| describe(&e))?;
        Ok(response.status().as_u16())
    }
}

impl Deliverer {
    /// The delivery's body: the event's own, or rendered from the store for an event stored
    /// by reference to its records.
    async fn body(&self, d: &Delivery) -> Result<String, Unrendered> {
        if d.records_ref.is_none() {
            return Ok(d.body.clone());
        }
        let Some(health) = &self.health else {
            return Err(Unrendered::Unavailable(
                "the event's records cannot be read by this process".to_owned(),
            ));
        };
        let user = d.user_key.parse().ok();
        super::records::body(health, d.team_id, user, &d.body, d.records_ref.as_deref())
            .await
            .map_err(|error| {
                tracing::error!(%error, event = %d.event_id, "could not render an event's body");
                match error {
                    super::records::RecordsError::Broken(_) => Unrendered::Gone(
                        "the event's records are no longer stored (the user's data was erased or replaced)"
                            .to_owned(),
                    ),
                    _ => Unrendered::Unavailable("the event's records could not be read".to_owned()),
                }
            })
    }
}

/// Why a delivery's body could not be had.
enum Unrendered {
    /// The records are gone for good: the delivery fails without a retry.
    Gone(String),
    /// The store could not be read now: retried like a failed send.
    Unavailable(String),
}

/// A transport failure as a sentence (never the URL's query, which may carry a token).
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs())
    } else if e.is_connect() {
        // The innermost cause says why (a refused address names itself; see `url_rules`).
        let mut cause: &dyn std::error::Error = e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        format!("could not connect to the endpoint: {cause}")
    } else {
        "the request failed before an answer".to_owned()
    }
}

fn span(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

#[async_trait::async_trait]
impl JobHandler for Deliverer {
    fn kind(&self) -> &'static str {
        KIND
    }

    type Payload = Payload;

    async fn run(&self, ctx: &JobContext, payload: Payload) -> Result<Outcome, JobError> {
        let Payload {
            endpoint_id,
            user_key,
        } = payload;
        let Some(_place) = self.place(endpoint_id).await else {
            return Ok(Outcome::RetryAt(ctx.now() + span(BUSY_RETRY)));
        };
        let meta = &ctx.meta;
        let endpoint = {
            let mut conn = meta.reader().await.map_err(retry)?;
            endpoint_by_id(&mut conn, endpoint_id)
                .await
                .map_err(retry)?
        };
        let Some(mut endpoint) = endpoint else {
            // Deleted with its deliveries; a fan-out racing the delete may have added some.
            let mut conn = meta.writer().await.map_err(retry)?;
            delete_deliveries(&mut conn, endpoint_id)
                .await
                .map_err(retry)?;
            return Ok(Outcome::Done);
        };
        loop {
            if endpoint.disabled_at.is_some() {
                let reason = endpoint.disabled_reason.clone().unwrap_or_default();
                let mut conn = meta.writer().await.map_err(retry)?;
                fail_pending(&mut conn, endpoint.id, &reason)
                    .await
                    .map_err(retry)?;
                return Ok(Outcome::Done);
            }
            if ctx.is_draining() {
                return Ok(Outcome::RetryAt(ctx.now()));
            }
            let head = {
                let mut conn = meta.reader().await.map_err(retry)?;
                stream_head(&mut conn, endpoint.id, &user_key, BATCH)
                    .await
                    .map_err(retry)?
            };
            if head.is_empty() {
                return Ok(Outcome::Done);
            }
            let (records, wait) = self.send_batch(ctx, &mut endpoint, &head).await;
            save(meta, &endpoint, &records).await.map_err(retry)?;
            if let Some(at) = wait {
                return Ok(Outcome::RetryAt(at));
            }
        }
    }
}

impl Deliverer {
    /// Sends the due deliveries of `head` in order until one fails (it becomes the head) or one
    /// is not due; answers their records and when to run again, if the stream must wait.
    async fn send_batch(
        &self,
        ctx: &JobContext,
        endpoint: &mut Endpoint,
        head: &[Delivery],
    ) -> (Vec<AttemptRecord>, Option<DateTime<Utc>>) {
        let mut records = Vec::with_capacity(head.len());
        for d in head {
            let now = ctx.now();
            if let Some(next) = d.next_attempt_at.filter(|t| *t > now) {
                return (records, Some(next));
            }
            let attempts = d.attempts + 1;
            let attempt = match self.body(d).await {
                Ok(body) => self.attempt(endpoint, d, &body, now).await,
                // No retry brings the records back and the endpoint is not at fault: this
                // delivery fails alone, without holding up the ones behind it or counting
                // against the endpoint's health.
                Err(Unrendered::Gone(error)) => {
                    self.metrics.webhook_attempt("failed", None);
                    records.push(AttemptRecord {
                        delivery: d.id,
                        status: DeliveryStatus::Failed,
                        attempts,
                        next_attempt_at: None,
                        attempted_at: now,
                        status_code: None,
                        duration_ms: 0,
                        error: Some(error),
                    });
                    continue;
                }
                Err(Unrendered::Unavailable(error)) => Attempt {
                    status_code: None,
                    error: Some(error),
                    duration_ms: 0,
                },
            };
            let mut record = AttemptRecord {
                delivery: d.id,
                status: DeliveryStatus::Succeeded,
                attempts,
                next_attempt_at: None,
                attempted_at: now,
                status_code: attempt.status_code,
                duration_ms: attempt.duration_ms,
                error: attempt.error.clone(),
            };
            if attempt.error.is_none() {
                let lag = (now - d.created_at).to_std().unwrap_or_default();
                self.metrics.webhook_attempt("succeeded", Some(lag));
                endpoint.failing_since = None;
                records.push(record);
                continue;
            }
            let since = *endpoint.failing_since.get_or_insert(now);
            if now - since >= span(DISABLE_AFTER) {
                endpoint.disabled_at = Some(now);
                endpoint.disabled_reason = Some(format!(
                    "every delivery failed since {since}; disabled after {} days",
                    DISABLE_AFTER.as_secs() / 86_400
                ));
            }
            let wait = (attempts < MAX_ATTEMPTS)
                .then(|| schedule::retry_after(attempts, &mut rand::thread_rng()))
                .flatten();
            match wait {
                Some(wait) if endpoint.disabled_at.is_none() => {
                    self.metrics.webhook_attempt("retrying", None);
                    let at = now + span(wait);
                    record.status = DeliveryStatus::Pending;
                    record.next_attempt_at = Some(at);
                    records.push(record);
                    return (records, Some(at));
                }
                _ => {
                    self.metrics.webhook_attempt("failed", None);
                    record.status = DeliveryStatus::Failed;
                    records.push(record);
                    if endpoint.disabled_at.is_some() {
                        return (records, None);
                    }
                }
            }
        }
        (records, None)
    }
}

/// Writes a batch's attempt records and the endpoint's health in one transaction.
async fn save(
    meta: &MetadataStore,
    endpoint: &Endpoint,
    records: &[AttemptRecord],
) -> Result<(), MetadataError> {
    let mut tx = meta.begin().await?;
    for record in records {
        record_attempt(&mut tx, record).await?;
    }
    let disabled = endpoint
        .disabled_at
        .map(|at| (at, endpoint.disabled_reason.as_deref().unwrap_or("")));
    set_health(&mut tx, endpoint.id, endpoint.failing_since, disabled).await?;
    tx.commit().await?;
    Ok(())
}
