//! Scheduled orders: an order created with a future `activate_by` is `scheduled` until that
//! date, then `current`. The `lab.order.activate` job (written with the order, due at 00:00 UTC
//! of the date) makes the change and emits `labtest.order.updated`; moving the date later
//! (`PATCH`) needs nothing else, as the job reads the date when it runs and waits again, and
//! moving it earlier re-enqueues the job, which moves its due time forward.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::super::LabError;
use super::super::model::enums::ActivationType;
use crate::jobs::{JobContext, JobError, JobHandler, NewJob, Outcome};
use crate::store::metadata::MetadataStore;

/// The job kind.
pub const ACTIVATE_JOB: &str = "lab.order.activate";

/// The job's payload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Payload {
    /// The scheduled order.
    pub order_id: Uuid,
}

/// When an order scheduled for `date` becomes current.
pub fn due(date: NaiveDate) -> DateTime<Utc> {
    date.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc()
}

fn job(team: Uuid, order: Uuid, date: NaiveDate) -> NewJob {
    NewJob::typed(ACTIVATE_JOB, &Payload { order_id: order })
        .for_team(team)
        .at(due(date))
        .unique(format!("{ACTIVATE_JOB}:{order}"))
}

/// Enqueues the activation of `order` on `conn` (the creating transaction).
pub async fn enqueue(
    conn: &mut AnyConnection,
    team: Uuid,
    order: Uuid,
    date: NaiveDate,
) -> Result<(), LabError> {
    crate::jobs::enqueue(conn, &job(team, order, date)).await?;
    Ok(())
}

/// Enqueues it on its own connection (after a `PATCH`).
pub async fn enqueue_now(
    meta: &MetadataStore,
    team: Uuid,
    order: Uuid,
    date: NaiveDate,
) -> Result<(), LabError> {
    crate::jobs::enqueue_now(meta, &job(team, order, date)).await?;
    Ok(())
}

/// The handler.
#[derive(Debug, Clone, Copy, Default)]
pub struct Activator;

#[async_trait::async_trait]
impl JobHandler for Activator {
    fn kind(&self) -> &'static str {
        ACTIVATE_JOB
    }

    type Payload = Payload;

    async fn run(&self, ctx: &JobContext, p: Payload) -> Result<Outcome, JobError> {
        let team = ctx
            .team_id
            .ok_or_else(|| JobError::Permanent("an activation job without a team".into()))?;
        let order = match super::get(&ctx.meta, team, p.order_id).await {
            Ok(o) => o,
            Err(LabError::NotFound(_)) => return Ok(Outcome::Done),
            Err(e) => return Err(JobError::Retry(e.to_string())),
        };
        let Some(date) = order.activate_by else {
            return Ok(Outcome::Done);
        };
        if order.activation_type != ActivationType::Scheduled {
            return Ok(Outcome::Done);
        }
        if date > ctx.now().date_naive() {
            return Ok(Outcome::RetryAt(due(date)));
        }
        super::modify(&ctx.meta, team, p.order_id, |o, _| {
            o.activation_type = ActivationType::Current;
            Ok(0)
        })
        .await
        .map_err(|e| JobError::Retry(e.to_string()))?;
        Ok(Outcome::Done)
    }
}
