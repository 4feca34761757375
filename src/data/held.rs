//! Recovery of held events (`events::outbox::Held`): a push writes its events held, then its
//! data, then releases them with its connection. A process that dies between the data's
//! commit and the release leaves them held; the `events.recover_held` job (enqueued with every
//! hold, due when it expires) resolves each expired hold by looking at the store:
//! - every data event's records are stored as the event describes them → the push committed:
//!   the hold is released (and the connection it made recorded), so the events go out late
//!   instead of never (the client's retry of the unacknowledged push, being identical, would
//!   emit nothing);
//! - otherwise the push never committed: the hold is dropped (its retry emits afresh).
//!
//! A later push may have changed the same records before recovery runs; the hold is then
//! dropped, and that later push announced its own change. Running at the hold's expiry, well
//! after any live writer's release, recovery never races a push in progress on any node (and
//! `outbox::release` copes if it does).

use serde_json::{Value, json};
use uuid::Uuid;

use super::DataError;
use super::changes::{fingerprint, key, stored};
use crate::events::EventType;
use crate::events::outbox::{EventRef, fan_out};
use crate::jobs::{JobContext, JobError, JobHandler, NewJob, Outcome};
use crate::schema::{Dataset, Table, resource};
use crate::store::health::HealthStore;
use crate::store::metadata::events::{StoredEvent, drop_hold, expired_holds, release_hold};
use crate::store::metadata::{self, ConnectionStatus, MetadataError, MetadataStore};

/// The kind's name.
pub const KIND: &str = "events.recover_held";

/// The recovery job, due at `at` (one pending at a time: its due time only moves earlier).
pub fn job(at: chrono::DateTime<chrono::Utc>) -> NewJob {
    NewJob {
        kind: KIND.to_owned(),
        team_id: None,
        payload: json!({}),
        run_at: at,
        unique_key: Some(KIND.to_owned()),
        max_attempts: 10,
    }
}

/// What a recovery pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Holds released (their push had committed).
    pub released: usize,
    /// Holds dropped (their push had not).
    pub dropped: usize,
    /// When the next unexpired hold expires.
    pub next: Option<chrono::DateTime<chrono::Utc>>,
}

fn dataset_of(resource_name: &str) -> Option<Dataset> {
    match resource_name {
        "workouts" => Some(Dataset::Table(Table::Workout)),
        name => Table::from_name(name)
            .map(Dataset::Table)
            .or_else(|| resource(name).map(Dataset::Timeseries)),
    }
}

/// Whether a held data event's records are stored as it describes them; `None` for events
/// that carry no records (the connection's).
async fn stored_as_described(
    meta: &MetadataStore,
    store: &HealthStore,
    event: &StoredEvent,
) -> Result<Option<bool>, DataError> {
    let resource = match EventType::parse(&event.event_type) {
        Some(EventType::DailyCreated(r) | EventType::DailyUpdated(r)) => r,
        _ => return Ok(None),
    };
    let body: Value = serde_json::from_str(&event.body).unwrap_or_default();
    let (Some(dataset), Some(user_id)) = (dataset_of(resource), event.user_id) else {
        return Ok(Some(false));
    };
    let Some(user) = meta.user(event.team_id, user_id).await? else {
        return Ok(Some(false)); // deleted since
    };
    let source = &body["data"]["source"];
    let (Some(provider), Some(source_type)) =
        (source["provider"].as_str(), source["type"].as_str())
    else {
        return Ok(Some(false));
    };
    let records = body["data"]["data"].as_array().cloned().unwrap_or_default();
    let now_stored = stored(store, &user, dataset, (provider, source_type), None).await?;
    Ok(Some(records.into_iter().all(|r| {
        now_stored.get(&key(dataset, &r)) == Some(&fingerprint(dataset, &r))
    })))
}

/// Resolves every hold expired at `now`.
pub async fn recover(
    meta: &MetadataStore,
    store: &HealthStore,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Recovered, DataError> {
    let (expired, next) = expired_holds(&mut *meta.reader().await?, now).await?;
    let mut out = Recovered {
        next,
        ..Recovered::default()
    };
    let mut deliveries = 0;
    for (token, events) in expired {
        let mut verdicts = Vec::new();
        for e in &events {
            verdicts.extend(stored_as_described(meta, store, e).await?);
        }
        let committed = !verdicts.is_empty() && verdicts.iter().all(|v| *v);
        let mut tx = meta.begin().await?;
        if committed {
            if release_hold(&mut tx, token).await? > 0 {
                connect(&mut tx, &events).await?;
                let team = events.first().map_or(Uuid::nil(), |e| e.team_id);
                let refs: Vec<EventRef> = events.iter().map(EventRef::from).collect();
                deliveries += fan_out(&mut tx, team, refs, now).await?.deliveries;
            }
            out.released += 1;
        } else {
            drop_hold(&mut tx, token).await?;
            out.dropped += 1;
        }
        tx.commit().await.map_err(MetadataError::from)?;
        tracing::info!(%token, committed, events = events.len(), "resolved held events");
    }
    if deliveries > 0 {
        meta.jobs_wake().notify_waiters();
    }
    Ok(out)
}

/// Records the connection a recovered push made (its release would have).
async fn connect(
    conn: &mut sqlx::AnyConnection,
    events: &[StoredEvent],
) -> Result<(), MetadataError> {
    for e in events {
        let body: Value = serde_json::from_str(&e.body).unwrap_or_default();
        let provider = body["data"]["source"]["provider"]
            .as_str()
            .or_else(|| body["data"]["provider"]["slug"].as_str());
        if let (Some(user), Some(provider)) = (e.user_id, provider) {
            metadata::connections::upsert_connection(
                &mut *conn,
                user,
                provider,
                ConnectionStatus::Connected,
            )
            .await?;
            return Ok(());
        }
    }
    Ok(())
}

/// The `events.recover_held` handler.
#[derive(Debug, Clone)]
pub struct HeldRecovery {
    health: HealthStore,
}

impl HeldRecovery {
    /// A handler checking holds against `health`.
    pub fn new(health: HealthStore) -> Self {
        HeldRecovery { health }
    }
}

#[async_trait::async_trait]
impl JobHandler for HeldRecovery {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn run(&self, ctx: &JobContext, _payload: Value) -> Result<Outcome, JobError> {
        let out = recover(&ctx.meta, &self.health, ctx.now())
            .await
            .map_err(|e| JobError::Retry(format!("recovering held events: {e}")))?;
        Ok(match out.next {
            Some(at) => Outcome::RetryAt(at),
            None => Outcome::Done,
        })
    }
}
