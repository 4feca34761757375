//! The `link.bulk_import` job: works one operation's recipes in order (the rules are in the
//! parent module's docs).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{KIND, MAX_ATTEMPTS, OpStatus, context};
use crate::jobs::{JobContext, JobError, JobHandler, NewJob, Outcome};
use crate::link::bulk_ops::job::settle;
use crate::link::lifecycle::{self, Linked};
use crate::link::oauth::{self, Refreshed};
use crate::link::{LinkConfig, LinkError};
use crate::providers::{self, Provider, scopes};
use crate::secret::{SecretError, SecretKey};
use crate::store::metadata::bulk_imports::{self, OpRow, PendingRecipe, Settled};
use crate::store::metadata::{MetadataError, MetadataStore, team_apps};
use crate::sync::apps::AppError;
use crate::sync::credentials::{self, Credentials};

/// The job working operation `op` of `team`.
pub fn job(team: Uuid, op: Uuid) -> NewJob {
    NewJob::typed(KIND, &OpPayload { op })
        .for_team(team)
        .unique(format!("{KIND}:{op}"))
        .max_attempts(MAX_ATTEMPTS)
}

/// The payload of a job working one bulk operation: this job's and the historical trigger's
/// (`link::bulk_ops`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpPayload {
    /// The operation.
    pub op: Uuid,
}

/// The handler: opens recipes with the deployment's key and refreshes tokens with the team's
/// application at the provider's token endpoint.
#[derive(Clone)]
pub struct Importer {
    secret: Option<SecretKey>,
    link: Arc<LinkConfig>,
    http: reqwest::Client,
}

impl std::fmt::Debug for Importer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Importer").finish_non_exhaustive()
    }
}

/// What one recipe came to.
enum Verdict {
    /// Make the connection.
    Import(Box<Linked>),
    /// The recipe fails, for this reason.
    Fail(String),
    /// The team's application is gone: the operation stops.
    Abort(String),
}

impl Importer {
    /// A handler opening recipes with `secret` and refreshing with the link settings' endpoints.
    pub fn new(secret: Option<SecretKey>, link: Arc<LinkConfig>) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()?;
        Ok(Importer { secret, link, http })
    }

    /// Decides one recipe: its user, its tokens (refreshed when expired), its grant.
    async fn decide(
        &self,
        ctx: &JobContext,
        op: &OpRow,
        provider: &Provider,
        recipe: &PendingRecipe,
    ) -> Result<Verdict, JobError> {
        let meta = &ctx.meta;
        if meta.user(op.team_id, recipe.user_id).await?.is_none() {
            return Ok(Verdict::Fail(format!(
                "user {} is not a user of this team",
                recipe.user_id
            )));
        }
        let Some(sealed) = &recipe.sealed_credentials else {
            return Ok(Verdict::Fail("the recipe's tokens are missing".into()));
        };
        let mut tokens = match credentials::open_for(
            self.secret.as_ref(),
            &context(op.id, recipe.position),
            sealed,
        ) {
            Ok(tokens) => tokens,
            Err(SecretError::Missing) => {
                return Err(JobError::Retry(
                    "no secret key to open the recipe's tokens".into(),
                ));
            }
            Err(_) => {
                return Ok(Verdict::Fail(
                    "the recipe's tokens could not be opened (the secret key changed)".into(),
                ));
            }
        };
        if team_apps::get(&mut *meta.reader().await?, op.team_id, provider.slug)
            .await?
            .is_none()
        {
            return Ok(Verdict::Abort(format!(
                "the team removed its OAuth application for {} before this recipe was imported",
                provider.slug
            )));
        }
        if tokens
            .expires_at
            .is_none_or(|at| at <= ctx.now().timestamp())
        {
            match self.refresh(ctx, op, provider, recipe, &tokens).await? {
                Ok(fresh) => tokens = fresh,
                Err(reason) => return Ok(Verdict::Fail(reason)),
            }
        }
        Ok(Verdict::Import(Box::new(linked(provider, recipe, tokens))))
    }

    /// Refreshes an expired recipe with the team's application and keeps the new tokens on
    /// the recipe; answers them, or why the recipe fails.
    async fn refresh(
        &self,
        ctx: &JobContext,
        op: &OpRow,
        provider: &Provider,
        recipe: &PendingRecipe,
        tokens: &Credentials,
    ) -> Result<Result<Credentials, String>, JobError> {
        let last_attempt = ctx.attempt >= ctx.max_attempts;
        let answer = oauth::refresh(
            &ctx.meta,
            self.secret.as_ref(),
            self.link.as_ref(),
            &self.http,
            op.team_id,
            provider,
            tokens,
        )
        .await;
        let fresh = match answer {
            Ok(Refreshed::Tokens(fresh)) => fresh,
            Ok(Refreshed::Refused(message)) => return Ok(Err(message)),
            Ok(Refreshed::Failed(message)) if last_attempt => {
                return Ok(Err(format!(
                    "{} could not refresh the expired access token: {message}",
                    provider.name
                )));
            }
            Ok(Refreshed::Failed(message)) => return Err(JobError::Retry(message)),
            Err(AppError::NotConfigured(_)) => {
                return Ok(Err(format!(
                    "the access token expired and this deployment has no OAuth endpoints for {} \
                     to refresh it",
                    provider.slug
                )));
            }
            Err(e) => return Err(JobError::Retry(e.to_string())),
        };
        let sealed = credentials::seal_for(
            self.secret.as_ref(),
            &context(op.id, recipe.position),
            &fresh,
        )
        .map_err(|e| JobError::Retry(e.to_string()))?;
        bulk_imports::checkpoint(
            &mut *ctx.meta.writer().await?,
            op.id,
            recipe.position,
            &sealed,
        )
        .await?;
        Ok(Ok(fresh))
    }

    /// Records the recipe's verdict: the connection and the outcome in one transaction.
    async fn record(
        &self,
        meta: &MetadataStore,
        op: &OpRow,
        provider: &Provider,
        recipe: &PendingRecipe,
        verdict: Verdict,
        now: DateTime<Utc>,
    ) -> Result<(), JobError> {
        let linked = match verdict {
            Verdict::Import(linked) => linked,
            Verdict::Fail(reason) => {
                return settle(meta, op.id, recipe.position, Settled::Failed(reason), now).await;
            }
            Verdict::Abort(reason) => {
                let mut tx = meta.begin().await?;
                bulk_imports::fail_rest(&mut tx, op.id, &reason, now).await?;
                bulk_imports::end_op(&mut tx, op.id, OpStatus::Aborted.as_str(), now).await?;
                tx.commit().await.map_err(MetadataError::from)?;
                return Ok(());
            }
        };
        let Some(user) = meta.user(op.team_id, recipe.user_id).await? else {
            let reason = format!("user {} is not a user of this team", recipe.user_id);
            return settle(meta, op.id, recipe.position, Settled::Failed(reason), now).await;
        };
        let mut tx = meta.begin().await?;
        let settled = match lifecycle::duplicate_on(&mut tx, &user, provider, &linked)
            .await
            .map_err(link_error)?
        {
            Some((_, message)) => Settled::Failed(message),
            None => {
                lifecycle::connect_on(&mut tx, self.secret.as_ref(), &user, provider, &linked, now)
                    .await
                    .map_err(link_error)?;
                Settled::Imported
            }
        };
        if bulk_imports::settle(&mut tx, op.id, recipe.position, &settled, now).await? {
            tx.commit().await.map_err(MetadataError::from)?;
            // Its pull and its event's deliveries start now.
            meta.jobs_wake().notify_waiters();
        }
        // Else another run settled it meanwhile: dropping the transaction undoes this one.
        Ok(())
    }
}

/// The connection a recipe makes.
fn linked(provider: &Provider, recipe: &PendingRecipe, tokens: Credentials) -> Linked {
    let asked = scopes::all_scopes(provider);
    // The provider's own scope names, as its token answer gave them, read back like a link's.
    let granted: Vec<String> = match &recipe.oauth_scopes {
        Some(list) => scopes::granted(provider, list),
        None => asked.iter().map(|s| (*s).to_owned()).collect(),
    };
    let denied = asked
        .iter()
        .filter(|s| !granted.iter().any(|g| g == *s))
        .map(|s| (*s).to_owned())
        .collect();
    Linked {
        provider_user_id: Some(recipe.provider_id.clone()),
        scopes_granted: granted,
        scopes_denied: denied,
        credentials: Credentials {
            access_token: tokens.access_token,
            refresh_token: tokens.refresh_token,
            expires_at: tokens.expires_at,
            ..Credentials::default()
        },
    }
}

fn link_error(e: LinkError) -> JobError {
    JobError::Retry(e.to_string())
}

#[async_trait::async_trait]
impl JobHandler for Importer {
    fn kind(&self) -> &'static str {
        KIND
    }

    type Payload = OpPayload;

    async fn run(&self, ctx: &JobContext, payload: OpPayload) -> Result<Outcome, JobError> {
        let id = payload.op;
        let Some(op) = bulk_imports::op(&mut *ctx.meta.reader().await?, None, id).await? else {
            return Err(JobError::Permanent(format!("no bulk import {id}")));
        };
        if op.status != OpStatus::InProgress.as_str() {
            return Ok(Outcome::Done);
        }
        let Some(provider) = providers::provider(&op.provider) else {
            return Err(JobError::Permanent(format!(
                "unknown provider {:?}",
                op.provider
            )));
        };
        loop {
            if ctx.is_draining() {
                // The next runner resumes at the first waiting recipe.
                return Ok(Outcome::RetryAt(ctx.now()));
            }
            let next = bulk_imports::next_pending(&mut *ctx.meta.reader().await?, op.id).await?;
            let Some(recipe) = next else {
                break;
            };
            let verdict = self.decide(ctx, &op, provider, &recipe).await?;
            let abort = matches!(verdict, Verdict::Abort(_));
            self.record(&ctx.meta, &op, provider, &recipe, verdict, ctx.now())
                .await?;
            if abort {
                return Ok(Outcome::Done);
            }
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
