//! Removing a deleted user's health data as a job (`store.delete_user`), so that it happens
//! even when the process that deleted the user dies first.
//!
//! `DELETE /v2/user/{id}` deletes the user's metadata and enqueues this job in one
//! transaction, then removes the data itself before it answers ([`crate::data::delete_user`]).
//! The job is due [`SAFETY_DELAY`] later: normally it finds nothing left and succeeds at
//! once; after a crash (or a failing store) between the commit and the removal, it removes
//! what the request could not, and retries with backoff until it has. Without it, a user gone
//! from the metadata would leave health data nobody can reach or delete any more: a retried
//! `DELETE` answers 404.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use super::handler::{JobContext, JobError, JobHandler, Outcome};
use crate::store::health::HealthStore;
use crate::store::metadata::jobs::NewJob;

/// The kind's name.
pub const KIND: &str = "store.delete_user";

/// How long after the user's deletion the job checks that the data is gone.
pub const SAFETY_DELAY: Duration = Duration::from_secs(60);

/// The job removing `user`'s health data, due at `run_at`.
pub fn job(team: Uuid, user: Uuid, run_at: DateTime<Utc>) -> NewJob {
    NewJob {
        kind: KIND.to_owned(),
        team_id: None,
        unique_key: Some(format!("{KIND}:{team}:{user}")),
        payload: json!({ "team": team, "user": user }),
        run_at,
        max_attempts: 20,
    }
}

fn parse_payload(payload: &Value) -> Option<(Uuid, Uuid)> {
    let id = |name: &str| payload.get(name)?.as_str()?.parse::<Uuid>().ok();
    Some((id("team")?, id("user")?))
}

/// The `store.delete_user` handler.
#[derive(Debug, Clone)]
pub struct Eraser {
    health: HealthStore,
}

impl Eraser {
    /// A handler removing users' data from `health`.
    pub fn new(health: HealthStore) -> Self {
        Eraser { health }
    }
}

#[async_trait::async_trait]
impl JobHandler for Eraser {
    fn kind(&self) -> &'static str {
        KIND
    }

    async fn run(&self, _ctx: &JobContext, payload: Value) -> Result<Outcome, JobError> {
        let (team, user) = parse_payload(&payload)
            .ok_or_else(|| JobError::Permanent(format!("malformed payload {payload}")))?;
        self.health
            .delete_user(team, user)
            .await
            .map_err(|e| JobError::Retry(format!("removing the user's data failed: {e}")))?;
        Ok(Outcome::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_bad_ones_are_refused() {
        let (team, user) = (Uuid::new_v4(), Uuid::new_v4());
        assert_eq!(
            parse_payload(&job(team, user, Utc::now()).payload),
            Some((team, user))
        );
        assert_eq!(parse_payload(&json!({ "team": team })), None);
        assert_eq!(parse_payload(&json!({ "team": "x", "user": user })), None);
    }
}
