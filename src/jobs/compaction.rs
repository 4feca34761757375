//! Store compaction as a job (`store.compact`): one system job per dataset written, unique
//! per dataset, due `delay` after the first write that asked for it (the store's
//! [`HealthStore::compaction_delay`], 30 s by default).
//!
//! Writes that arrive while the job is pending fold into it (its `run_at` never moves later,
//! so a steady stream of writes cannot postpone compaction forever); a write that arrives while
//! it runs marks it to run again, so no write is left uncompacted because it raced a run. The
//! job merges the dataset's longest run of small segments once it holds
//! `compact_min_segments` of them ([`HealthStore::compact_due`]); a failure is retried with backoff. Being rows in the metadata
//! database, pending compactions survive a restart, unlike the former in-memory dirty set.
//! On object storage a merge retires its inputs for a grace period instead of removing them
//! (`store::health`'s `retire.rs`); while retired segments wait, the job runs again once the
//! grace period is over and its sweep removes them.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

use super::handler::{JobContext, JobError, JobHandler, Outcome};
use crate::schema::Dataset;
use crate::store::health::HealthStore;
use crate::store::metadata::jobs::{Enqueued, NewJob, enqueue_job};
use crate::store::metadata::{MetadataError, MetadataStore};

/// The kind's name.
pub const KIND: &str = "store.compact";

/// The job compacting one dataset, due at `run_at`.
pub fn job(team: Uuid, user: Uuid, dataset: Dataset, run_at: DateTime<Utc>) -> NewJob {
    let path = dataset.path();
    NewJob::typed(
        KIND,
        &Payload {
            team,
            user,
            dataset,
        },
    )
    .unique(format!("{KIND}:{team}:{user}:{path}"))
    .at(run_at)
    .max_attempts(5)
}

/// The job's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {
    /// The user's team.
    pub team: Uuid,
    /// The user.
    pub user: Uuid,
    /// The dataset, stored as its path (`sleep`, `timeseries/heartrate`).
    #[serde(serialize_with = "to_path", deserialize_with = "from_path")]
    pub dataset: Dataset,
}

fn to_path<S: Serializer>(dataset: &Dataset, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&dataset.path())
}

fn from_path<'de, D: Deserializer<'de>>(d: D) -> Result<Dataset, D::Error> {
    let path = String::deserialize(d)?;
    Dataset::from_path(&path)
        .ok_or_else(|| serde::de::Error::custom(format!("no dataset {path:?}")))
}

/// Asks for the compaction of each dataset, `delay` from now, in one transaction.
pub async fn schedule(
    meta: &MetadataStore,
    team: Uuid,
    user: Uuid,
    datasets: &[Dataset],
    delay: Duration,
) -> Result<Vec<Enqueued>, MetadataError> {
    let mut tx = meta.begin().await?;
    let out = schedule_on(&mut tx, team, user, datasets, delay).await?;
    tx.commit().await?;
    Ok(out)
}

/// Asks for the compaction of each dataset, `delay` from now, on `conn` (the caller's
/// transaction).
pub async fn schedule_on(
    conn: &mut sqlx::AnyConnection,
    team: Uuid,
    user: Uuid,
    datasets: &[Dataset],
    delay: Duration,
) -> Result<Vec<Enqueued>, MetadataError> {
    let now = crate::store::metadata::now();
    let run_at = now + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX);
    let mut out = Vec::new();
    for dataset in datasets {
        out.push(enqueue_job(&mut *conn, &job(team, user, *dataset, run_at), now).await?);
    }
    Ok(out)
}

/// A compaction put off by unannounced pushes looks again this often, this many times (their
/// announcing takes milliseconds), then is retried [`DEFERRED`] later (a push whose writer died
/// is announced only at its `announce::LEASE` expiry).
const DEFER_POLL: Duration = Duration::from_millis(100);
const DEFER_POLLS: usize = 10;
const DEFERRED: chrono::Duration = chrono::Duration::seconds(5);

/// Whether the user has pushes not yet announced (if that cannot be told: yes).
async fn unannounced(meta: &MetadataStore, user: Uuid) -> bool {
    let pending = async {
        let mut conn = meta.reader().await?;
        crate::store::metadata::push_events::oldest_pending(&mut conn, user).await
    };
    match pending.await {
        Ok(pending) => pending.is_some(),
        Err(error) => {
            tracing::warn!(%error, %user, "could not look for unannounced pushes");
            true
        }
    }
}

/// The `store.compact` handler.
#[derive(Debug, Clone)]
pub struct Compaction {
    health: HealthStore,
}

impl Compaction {
    /// A handler compacting datasets of `health`.
    pub fn new(health: HealthStore) -> Self {
        Compaction { health }
    }
}

#[async_trait::async_trait]
impl JobHandler for Compaction {
    fn kind(&self) -> &'static str {
        KIND
    }

    type Payload = Payload;

    async fn run(&self, ctx: &JobContext, payload: Payload) -> Result<Outcome, JobError> {
        let Payload {
            team,
            user,
            dataset,
        } = payload;
        for _ in 0..DEFER_POLLS {
            let report = self
                .health
                // A push not yet announced still needs its own rows, which a merge may drop.
                .compact_due_unless(team, user, dataset, unannounced(&ctx.meta, user))
                .await
                .map_err(|e| JobError::Retry(format!("compaction failed: {e}")))?;
            if !report.deferred {
                tracing::debug!(%team, %user, dataset = %dataset.path(), ?report, "compacted");
                if report.retirements_waiting > 0 {
                    // Retired segments wait out their grace period; the next run removes them.
                    let grace = chrono::Duration::from_std(self.health.retired_grace())
                        .unwrap_or(chrono::Duration::MAX);
                    return Ok(Outcome::RetryAt(ctx.now() + grace));
                }
                return Ok(Outcome::Done);
            }
            tokio::time::sleep(DEFER_POLL).await;
        }
        Ok(Outcome::RetryAt(ctx.now() + DEFERRED))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::schema::Table;

    fn parse_payload(payload: &Value) -> Option<(Uuid, Uuid, Dataset)> {
        let p = Payload::deserialize(payload).ok()?;
        Some((p.team, p.user, p.dataset))
    }

    #[test]
    fn payloads_round_trip_and_bad_ones_are_refused() {
        let (team, user) = (Uuid::new_v4(), Uuid::new_v4());
        for dataset in [
            Dataset::Table(Table::ALL[0]),
            Dataset::Timeseries(crate::schema::RESOURCES[0]),
        ] {
            let job = job(team, user, dataset, Utc::now());
            assert_eq!(parse_payload(&job.payload), Some((team, user, dataset)));
            assert_eq!(
                job.payload,
                json!({ "team": team, "user": user, "dataset": dataset.path() }),
                "the stored JSON of before payloads were typed"
            );
        }
        assert_eq!(
            parse_payload(&json!({"team": team, "user": user, "dataset": "nope"})),
            None
        );
        assert_eq!(parse_payload(&json!({"dataset": "sleep"})), None);
    }
}
