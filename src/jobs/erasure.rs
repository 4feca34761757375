//! Removing a deleted user (`store.delete_user`) once its undo window is over, durably: the job
//! is enqueued in the transaction that marks the user deleted (`crate::data::delete_user`) and
//! is due when the window ends, so it happens even when every process restarted in between.
//!
//! A run removes the user's row with its info and connections (one transaction) if the user is
//! still deleted by *that* deletion (the payload's `deleted_at`: a user restored with
//! `POST /v2/user/undo_delete`, or restored and deleted again, is left to the later job), then
//! its health data; a failure retries with backoff, and a retry after the rows went removes
//! the health data only. The data stays in place during the window (the user is invisible to
//! every query, not yet erased), so an undo brings back everything.
//!
//! Jobs enqueued before the undo window existed carry no `deleted_at`: their user's rows are
//! gone already, and they remove the health data only.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use uuid::Uuid;

use super::handler::{JobContext, JobError, JobHandler, Outcome};
use crate::store::health::HealthStore;
use crate::store::metadata::MetadataStore;
use crate::store::metadata::deleted_users::{Purge, purge};
use crate::store::metadata::jobs::NewJob;

/// The kind's name.
pub const KIND: &str = "store.delete_user";

/// The job purging `user`, deleted at `deleted_at` (as stored), due at `run_at` (the end of the
/// undo window). Unique per deletion.
pub fn purge_job(team: Uuid, user: Uuid, deleted_at: &str, run_at: DateTime<Utc>) -> NewJob {
    let payload = Payload {
        team,
        user,
        deleted_at: Some(deleted_at.to_owned()),
    };
    NewJob::typed(KIND, &payload)
        .unique(format!("{KIND}:{team}:{user}:{deleted_at}"))
        .at(run_at)
        .max_attempts(20)
}

/// The job's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {
    /// The user's team.
    pub team: Uuid,
    /// The deleted user.
    pub user: Uuid,
    /// The deletion instant, as stored; absent in jobs of before the undo window (present, it
    /// must be a string: `null` is as malformed as a number).
    #[serde(default, deserialize_with = "present_string")]
    pub deleted_at: Option<String>,
}

/// A field that may be absent but, when present, is a string.
fn present_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// The `store.delete_user` handler.
#[derive(Debug, Clone)]
pub struct Eraser {
    meta: MetadataStore,
    health: HealthStore,
}

impl Eraser {
    /// A handler removing deleted users from `meta` and their data from `health`.
    pub fn new(meta: MetadataStore, health: HealthStore) -> Self {
        Eraser { meta, health }
    }

    /// Removes the rows of the deletion at `stamp`; answers whether the data goes too.
    async fn purge_rows(&self, team: Uuid, user: Uuid, stamp: &str) -> Result<bool, JobError> {
        let retry = |e: crate::store::metadata::MetadataError| {
            JobError::Retry(format!("removing the user's rows failed: {e}"))
        };
        let mut tx = self.meta.begin().await.map_err(retry)?;
        let found = purge(&mut tx, team, user, stamp).await.map_err(retry)?;
        tx.commit()
            .await
            .map_err(|e| retry(crate::store::metadata::MetadataError::from(e)))?;
        Ok(found != Purge::Kept)
    }
}

#[async_trait::async_trait]
impl JobHandler for Eraser {
    fn kind(&self) -> &'static str {
        KIND
    }

    type Payload = Payload;

    async fn run(&self, _ctx: &JobContext, payload: Payload) -> Result<Outcome, JobError> {
        let Payload {
            team,
            user,
            deleted_at,
        } = payload;
        if let Some(stamp) = deleted_at
            && !self.purge_rows(team, user, &stamp).await?
        {
            tracing::info!(%team, %user, "deleted user was restored: nothing removed");
            return Ok(Outcome::Done);
        }
        self.health
            .delete_user(team, user)
            .await
            .map_err(|e| JobError::Retry(format!("removing the user's data failed: {e}")))?;
        Ok(Outcome::Done)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// A stored payload's team, user and deletion instant, or `None` if it does not decode.
    fn parse_payload(payload: &Value) -> Option<(Uuid, Uuid, Option<String>)> {
        let p = Payload::deserialize(payload).ok()?;
        Some((p.team, p.user, p.deleted_at))
    }

    #[test]
    fn payloads_round_trip_and_bad_ones_are_refused() {
        let (team, user) = (Uuid::new_v4(), Uuid::new_v4());
        let stamp = "2026-01-02T03:04:05.000006Z";
        assert_eq!(
            parse_payload(&purge_job(team, user, stamp, Utc::now()).payload),
            Some((team, user, Some(stamp.to_owned())))
        );
        assert_eq!(
            parse_payload(&json!({ "team": team, "user": user })),
            Some((team, user, None)),
            "a job of before the undo window"
        );
        assert_eq!(parse_payload(&json!({ "team": team })), None);
        assert_eq!(parse_payload(&json!({ "team": "x", "user": user })), None);
        assert_eq!(
            parse_payload(&json!({ "team": team, "user": user, "deleted_at": 5 })),
            None
        );
        assert_eq!(
            parse_payload(&json!({ "team": team, "user": user, "deleted_at": null })),
            None
        );
        assert_eq!(
            purge_job(team, user, stamp, Utc::now()).payload.to_string(),
            format!(r#"{{"team":"{team}","user":"{user}","deleted_at":"{stamp}"}}"#),
            "the stored JSON of before payloads were typed"
        );
    }
}
