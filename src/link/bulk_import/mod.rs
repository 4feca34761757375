//! Bulk import of existing OAuth connections (`linking.md` §Team provider credentials and bulk
//! import): a team that moves its users' provider grants to this service submits them as
//! recipes, and one durable background operation turns each into a connection.
//!
//! - **Enabled** only for a provider the team has its own OAuth application for
//!   (`team_apps`): imported tokens were issued to that application, and only its client can
//!   refresh them.
//! - **Submission** ([`submit`]): the operation, every recipe (its tokens sealed with the
//!   deployment's key like connection credentials, bound to the recipe's row) and the one
//!   `link.bulk_import` job that works it are committed together, so a submission is either
//!   wholly stored or not at all. [`wait`] lets the caller wait for the end.
//! - **Work** ([`job::Importer`]): recipes one by one, in submission order. A recipe's outcome
//!   is committed in the transaction that makes its connection, and only while the recipe is
//!   still waiting, so a run cut short (SIGKILL, a lost lease) resumes at the first waiting
//!   recipe and never imports one twice. Each recipe:
//!   1. its `user_id` must be a user of the team (else it fails: another team's user answers
//!      exactly as an unknown one);
//!   2. an access token whose `expires_at` has passed is refreshed at the provider's token
//!      endpoint with the team's application; the new tokens are kept (sealed) on the recipe
//!      before they are used, so a resumed run does not present the spent refresh token again.
//!      A refusal (`invalid_grant`, `invalid_client`: the token belongs to another
//!      application, or was revoked) fails the recipe with the provider's answer;
//!   3. the provider account must not be connected to another user of the team
//!      (`duplicate_connection`, as for links);
//!   4. the connection is recorded exactly as a link records it
//!      (`connections::connect_on`): sealed credentials, the historical pull of providers
//!      with a connector, `provider.connection.created`.
//!
//!   A failure of the provider's token endpoint (unreachable, 5xx) is retried with the job's
//!   backoff; on the job's last attempt it fails the recipe instead, so one outage cannot
//!   leave the operation unfinished.
//! - **Statuses** ([`OpStatus`]): `in_progress` while recipes wait; `success` once every
//!   recipe was imported; `failure` once every recipe was handled and at least one failed
//!   (`failed` counts them, `details` says why); `aborted` when the operation stopped before
//!   handling every recipe: the team removed its OAuth application meanwhile (the recipes
//!   still waiting then fail with that reason), or the job failed for good (the metadata store
//!   failing through all its attempts; the waiting recipes stay `pending`).
//!
//! Decisions where the spec is silent: an access token that has not expired is not verified
//! against the provider at import (RFC 6749 gives no portable way to ask which client a token
//! was issued to, and a refresh would rotate a token the team may still be using); the first
//! pull that finds it refused refreshes it with the team's application, and a refusal then puts
//! the connection in `error` (`sync::pull`). `oauth_scopes`, when given, are the provider's own
//! scope names as its token answer gave them, recorded as granted after the same reading as a
//! link's grant (`providers::scopes::granted`; else every scope the provider asks for), and are
//! not held to the link flow's required scopes. A recipe for a user already connected to the provider replaces
//! that connection's credentials, as linking again does.

pub mod job;

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::LinkError;
use crate::providers::Provider;
use crate::secret::SecretKey;
use crate::store::metadata::MetadataStore;
use crate::store::metadata::bulk_imports::{self, NewRecipe, OpRow};
use crate::store::metadata::team_apps;
use crate::sync::credentials::{self, Credentials};

/// The job kind that works an operation.
pub const KIND: &str = "link.bulk_import";

/// The operation's type, as `GET /v2/link/bulk_op` names it.
pub const OP_TYPE: &str = "link_bulk_import";

/// The longest a submission with `wait_for_completion` waits for its operation.
pub const WAIT: Duration = Duration::from_secs(20);

/// How often a waiting submission looks at its operation.
const POLL: Duration = Duration::from_millis(100);

/// Claims a bulk import job gets before it fails for good (the operation is then `aborted`).
const MAX_ATTEMPTS: u32 = 8;

/// One connection to import. Its `Debug` never shows the tokens.
#[derive(Clone, PartialEq, Eq)]
pub struct Recipe {
    /// The team's user.
    pub user_id: Uuid,
    /// The provider's access token.
    pub access_token: String,
    /// The provider's refresh token.
    pub refresh_token: String,
    /// The user's id at the provider.
    pub provider_id: String,
    /// When the access token expires (unix seconds).
    pub expires_at: i64,
    /// The scopes the grant holds, when known.
    pub oauth_scopes: Option<Vec<String>>,
}

impl std::fmt::Debug for Recipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recipe")
            .field("user_id", &self.user_id)
            .field("provider_id", &self.provider_id)
            .field("expires_at", &self.expires_at)
            .field("oauth_scopes", &self.oauth_scopes)
            .finish_non_exhaustive()
    }
}

/// Where an operation stands (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpStatus {
    /// Recipes are waiting.
    InProgress,
    /// Every recipe was imported.
    Success,
    /// Every recipe was handled; at least one failed.
    Failure,
    /// Stopped before every recipe was handled.
    Aborted,
}

impl OpStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            OpStatus::InProgress => "in_progress",
            OpStatus::Success => "success",
            OpStatus::Failure => "failure",
            OpStatus::Aborted => "aborted",
        }
    }
}

/// An operation as the team sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// Its id.
    pub id: Uuid,
    /// The provider slug.
    pub provider: String,
    /// Its type (`link_bulk_import`, `link_bulk_historical_trigger`).
    pub kind: String,
    /// Where it stands.
    pub status: OpStatus,
    /// Recipes not handled yet.
    pub pending: i64,
    /// Recipes handled (imported or failed).
    pub processed: i64,
    /// Recipes that failed (part of `processed`).
    pub failed: i64,
    /// When it was submitted.
    pub started_at: DateTime<Utc>,
    /// When it ended.
    pub ended_at: Option<DateTime<Utc>>,
}

impl From<OpRow> for Operation {
    fn from(row: OpRow) -> Self {
        let gave_up = row.job_state.as_deref() == Some("failed");
        let (status, ended_at) = match row.status.as_str() {
            "success" => (OpStatus::Success, row.ended_at),
            "failure" => (OpStatus::Failure, row.ended_at),
            "aborted" => (OpStatus::Aborted, row.ended_at),
            // The job failed for good without ending the operation.
            _ if gave_up => (OpStatus::Aborted, row.job_finished_at),
            _ => (OpStatus::InProgress, None),
        };
        Operation {
            id: row.id,
            provider: row.provider,
            kind: row.kind,
            status,
            pending: (row.total - row.processed).max(0),
            processed: row.processed,
            failed: row.failed,
            started_at: row.started_at,
            ended_at,
        }
    }
}

/// The users of an operation's handled recipes, by outcome, in submission order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcomes {
    /// Users whose connection was imported.
    pub imported: Vec<Uuid>,
    /// Users whose recipe failed.
    pub failed: Vec<Uuid>,
}

/// Errors of bulk import.
#[derive(Debug, thiserror::Error)]
pub enum BulkImportError {
    /// The team has no OAuth application of its own for the provider.
    #[error("bulk import is disabled until the team configures its own OAuth application for {0}")]
    Disabled(String),
    /// A list cursor that names no operation of the team.
    #[error("unknown cursor")]
    UnknownCursor,
    /// Sealing or the metadata store failed.
    #[error(transparent)]
    Link(#[from] LinkError),
}

impl From<crate::store::metadata::MetadataError> for BulkImportError {
    fn from(e: crate::store::metadata::MetadataError) -> Self {
        BulkImportError::Link(e.into())
    }
}

/// The associated data binding a recipe's sealed credentials to its row.
fn context(op: Uuid, position: i64) -> String {
    format!("bulk-import:{op}:{position}")
}

/// Stores the submission as one operation with its job (in one transaction) and wakes this
/// process's runners; answers the operation's id. The recipes are checked for shape by the
/// caller; whether their users belong to the team is the job's to find out.
pub async fn submit(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    team: Uuid,
    provider: &Provider,
    recipes: &[Recipe],
    now: DateTime<Utc>,
) -> Result<Uuid, BulkImportError> {
    if team_apps::get(&mut *meta.reader().await?, team, provider.slug)
        .await?
        .is_none()
    {
        return Err(BulkImportError::Disabled(provider.slug.to_owned()));
    }
    let id = Uuid::new_v4();
    let mut sealed = Vec::with_capacity(recipes.len());
    for (position, recipe) in (0i64..).zip(recipes) {
        let tokens = Credentials {
            access_token: Some(recipe.access_token.clone()),
            refresh_token: Some(recipe.refresh_token.clone()),
            expires_at: Some(recipe.expires_at),
            ..Credentials::default()
        };
        sealed.push(NewRecipe {
            user_id: recipe.user_id,
            provider_id: recipe.provider_id.clone(),
            oauth_scopes: recipe.oauth_scopes.clone(),
            sealed_credentials: credentials::seal_for(key, &context(id, position), &tokens)
                .map_err(LinkError::from)?,
        });
    }
    let work = job::job(team, id);
    let op = OpRow {
        id,
        team_id: team,
        provider: provider.slug.to_owned(),
        kind: OP_TYPE.to_owned(),
        job_id: Uuid::nil(),
        total: i64::try_from(recipes.len()).unwrap_or(i64::MAX),
        processed: 0,
        failed: 0,
        status: OpStatus::InProgress.as_str().to_owned(),
        started_at: now,
        ended_at: None,
        job_state: None,
        job_finished_at: None,
    };
    let mut tx = meta.begin().await?;
    let enqueued = crate::jobs::enqueue(&mut tx, &work).await?;
    let op = OpRow {
        job_id: enqueued.id(),
        ..op
    };
    bulk_imports::insert_op(&mut tx, &op, &sealed).await?;
    tx.commit()
        .await
        .map_err(crate::store::metadata::MetadataError::from)?;
    meta.jobs_wake().notify_waiters();
    Ok(id)
}

/// The team's operation `id`.
pub async fn operation(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
) -> Result<Option<Operation>, BulkImportError> {
    let row = bulk_imports::op(&mut *meta.reader().await?, Some(team), id).await?;
    Ok(row.map(Operation::from))
}

/// Waits up to `timeout` for the team's operation `id` to end; answers its outcomes when it
/// did, `None` when it is still in progress.
pub async fn wait(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
    timeout: Duration,
) -> Result<Option<Outcomes>, BulkImportError> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let ended = operation(meta, team, id)
            .await?
            .is_some_and(|op| op.status != OpStatus::InProgress);
        if ended {
            return Ok(Some(outcomes(meta, id).await?));
        }
        if tokio::time::Instant::now() + POLL > deadline {
            return Ok(None);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The users of the operation's handled recipes, by outcome.
pub async fn outcomes(meta: &MetadataStore, id: Uuid) -> Result<Outcomes, BulkImportError> {
    let mut out = Outcomes::default();
    for (user, outcome) in bulk_imports::outcomes(&mut *meta.reader().await?, id).await? {
        if outcome == "imported" {
            out.imported.push(user);
        } else {
            out.failed.push(user);
        }
    }
    Ok(out)
}

/// The failed recipes of the operation: user and reason, in submission order.
pub async fn failures(
    meta: &MetadataStore,
    id: Uuid,
) -> Result<Vec<(Uuid, String)>, BulkImportError> {
    Ok(bulk_imports::failures(&mut *meta.reader().await?, id).await?)
}

/// A page of the team's operations, newest first: up to `page_size` after the operation
/// `cursor` (the previous page's last), and the cursor of the next page when there is one.
pub async fn list(
    meta: &MetadataStore,
    team: Uuid,
    cursor: Option<Uuid>,
    page_size: i64,
) -> Result<(Vec<Operation>, Option<Uuid>), BulkImportError> {
    let mut conn = meta.reader().await?;
    let after = match cursor {
        Some(id) => Some(
            bulk_imports::op(&mut conn, Some(team), id)
                .await?
                .ok_or(BulkImportError::UnknownCursor)?,
        ),
        None => None,
    };
    let mut rows = bulk_imports::list_ops(&mut conn, team, after.as_ref(), page_size + 1).await?;
    let more = i64::try_from(rows.len()).unwrap_or(i64::MAX) > page_size;
    rows.truncate(usize::try_from(page_size).unwrap_or(0));
    let next = if more {
        rows.last().map(|r| r.id)
    } else {
        None
    };
    Ok((rows.into_iter().map(Operation::from).collect(), next))
}
