//! The `link.bulk_historical_trigger` job: starts the historical pull of each user of one
//! operation again, in submission order (the rules are in the parent module's docs).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::KIND;
use crate::jobs::{JobContext, JobError, JobHandler, NewJob, Outcome};
use crate::link::bulk_import::OpStatus;
use crate::link::bulk_import::job::OpPayload;
use crate::store::metadata::bulk_imports::{self, OpRow, PendingRecipe, Settled};
use crate::store::metadata::sync_pulls::{self, ConnectionSync};
use crate::store::metadata::{ConnectionStatus, MetadataError, MetadataStore};

/// Claims a trigger job gets before it fails for good (the operation then reads `aborted`).
const MAX_ATTEMPTS: u32 = 8;

/// The job working operation `op` of `team`.
pub fn job(team: Uuid, op: Uuid) -> NewJob {
    NewJob::typed(KIND, &OpPayload { op })
        .for_team(team)
        .unique(format!("{KIND}:{op}"))
        .max_attempts(MAX_ATTEMPTS)
}

/// The handler (stateless: everything it needs is in the metadata store).
#[derive(Debug, Clone, Default)]
pub struct Triggerer;

/// Starts the user's historical pull of `provider` again, or says why it cannot be.
async fn trigger_one(
    meta: &MetadataStore,
    op: &OpRow,
    recipe: &PendingRecipe,
    now: DateTime<Utc>,
) -> Result<(), JobError> {
    let provider = op.provider.as_str();
    let Some(user) = meta.user(op.team_id, recipe.user_id).await? else {
        let reason = format!("user {} is not a user of this team", recipe.user_id);
        return settle(meta, op.id, recipe.position, Settled::Failed(reason), now).await;
    };
    let connected = meta
        .connection(user.id, provider)
        .await?
        .is_some_and(|c| c.status == ConnectionStatus::Connected);
    if !connected {
        let reason = format!("user {} has no connected {provider} connection", user.id);
        return settle(meta, op.id, recipe.position, Settled::Failed(reason), now).await;
    }
    let mut tx = meta.begin().await?;
    let before = sync_pulls::get(&mut tx, user.id, provider).await?;
    let demo = before.as_ref().and_then(|b| b.demo_persona.clone());
    if demo.is_none() && !crate::sync::has_connector(provider) {
        drop(tx);
        let reason = format!("{provider} data arrives by push only; there is no history to pull");
        return settle(meta, op.id, recipe.position, Settled::Failed(reason), now).await;
    }
    let Some(window) = crate::sync::pull::window(&user, now) else {
        drop(tx);
        let reason = "the user's ingestion bounds leave nothing to pull".to_owned();
        return settle(meta, op.id, recipe.position, Settled::Failed(reason), now).await;
    };
    let pull = ConnectionSync::new(
        (user.id, user.team_id),
        provider,
        (window.start, window.end),
        demo,
    );
    if before.is_some() {
        sync_pulls::restart(&mut tx, &pull).await?;
    } else {
        sync_pulls::start(&mut tx, &pull, now).await?;
    }
    crate::jobs::enqueue(
        &mut tx,
        &crate::sync::pull::job(user.team_id, user.id, provider, now),
    )
    .await?;
    if bulk_imports::settle(&mut tx, op.id, recipe.position, &Settled::Imported, now).await? {
        tx.commit().await.map_err(MetadataError::from)?;
        meta.jobs_wake().notify_waiters();
    }
    // Else another run settled it meanwhile: dropping the transaction undoes this one.
    Ok(())
}

/// Settles one recipe of a bulk operation in a transaction of its own.
pub(in crate::link) async fn settle(
    meta: &MetadataStore,
    op: Uuid,
    position: i64,
    outcome: Settled,
    now: DateTime<Utc>,
) -> Result<(), JobError> {
    let mut tx = meta.begin().await?;
    bulk_imports::settle(&mut tx, op, position, &outcome, now).await?;
    tx.commit().await.map_err(MetadataError::from)?;
    Ok(())
}

#[async_trait::async_trait]
impl JobHandler for Triggerer {
    fn kind(&self) -> &'static str {
        KIND
    }

    type Payload = OpPayload;

    async fn run(&self, ctx: &JobContext, payload: OpPayload) -> Result<Outcome, JobError> {
        let id = payload.op;
        let Some(op) = bulk_imports::op(&mut *ctx.meta.reader().await?, None, id).await? else {
            return Err(JobError::Permanent(format!("no bulk operation {id}")));
        };
        if op.status != OpStatus::InProgress.as_str() {
            return Ok(Outcome::Done);
        }
        loop {
            if ctx.is_draining() {
                // The next runner resumes at the first user not handled.
                return Ok(Outcome::RetryAt(ctx.now()));
            }
            let next = bulk_imports::next_pending(&mut *ctx.meta.reader().await?, op.id).await?;
            let Some(recipe) = next else {
                break;
            };
            trigger_one(&ctx.meta, &op, &recipe, ctx.now()).await?;
        }
        let mut conn = ctx.meta.writer().await?;
        let done = bulk_imports::op(&mut conn, None, op.id).await?;
        let status = if done.is_some_and(|d| d.failed == 0) {
            OpStatus::Success
        } else {
            OpStatus::Failure
        };
        bulk_imports::end_op(&mut conn, op.id, status.as_str(), ctx.now()).await?;
        Ok(Outcome::Done)
    }
}
