//! The reference's other bulk link operations (issue 42), beside [`super::bulk_import`]:
//!
//! - **Pause** ([`pause`], `POST /v2/link/bulk_pause`): the `connected` connections of the
//!   listed users to one provider become `paused` in one transaction, committed before the
//!   answer: pulls skip a paused connection (`sync::pull`), pushes do not resume it, linking
//!   again does. Users of another team, unknown ones and connections not `connected` are left
//!   alone and answered as skipped.
//! - **Historical pull** ([`submit_trigger`], `POST /v2/link/bulk_trigger_historical_pull`): a
//!   durable operation like a bulk import, listed by `GET /v2/link/bulk_op` as
//!   `link_bulk_historical_trigger`: the operation, one row per user and its job
//!   (`link.bulk_historical_trigger`, [`job::Triggerer`]) are committed together; the job
//!   starts each user's historical pull of the provider again over the last 90 days (within
//!   the user's ingestion bounds), the pull itself a `sync.historical` job of its own, and
//!   counts the user processed, or failed with the reason (not the team's user, not
//!   connected, a provider wearhouse does not pull). A run cut short resumes at the first user
//!   not handled; a user's restart and its count are one transaction, so none is counted twice.
//! - **Export** ([`export`], `POST /v2/link/bulk_export`): the team's live connections to one
//!   provider as connection recipes (the reference's `ConnectionRecipe`, tokens in clear), by
//!   pages of [`EXPORT_PAGE`] ordered by user id, `next_token` the last user of the page.
//!   Only for a provider the team has its own OAuth application for, as bulk import is: the
//!   tokens were issued to the team's application, so they are the team's to move; the
//!   deployment's own application's tokens never leave. Connections without OAuth tokens (a
//!   push-only or demo connection) are left out of a page.
//!
//! Provider slugs are those bulk import takes (OAuth providers of the catalogue).

pub mod job;

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::LinkError;
use super::bulk_import::{BulkImportError, OpStatus};
use crate::providers::Provider;
use crate::secret::SecretKey;
use crate::store::metadata::bulk_imports::{self, NewRecipe, OpRow};
use crate::store::metadata::{MetadataStore, bulk_ops, team_apps};
use crate::sync::credentials;

/// The operation type `GET /v2/link/bulk_op` names a historical trigger with.
pub const OP_TYPE: &str = "link_bulk_historical_trigger";

/// The job kind that works a historical trigger.
pub const KIND: &str = "link.bulk_historical_trigger";

/// The longest a trigger with `wait_for_completion` waits for its operation.
pub const WAIT: Duration = Duration::from_secs(20);

/// Connections per export page.
pub const EXPORT_PAGE: i64 = 100;

/// What a pause did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paused {
    /// Users whose connection is paused now.
    pub paused: Vec<Uuid>,
    /// Users left alone (not the team's, not connected, or paused already).
    pub skipped: Vec<Uuid>,
}

/// Pauses the listed users' connections to `provider` (module docs).
pub async fn pause(
    meta: &MetadataStore,
    team: Uuid,
    provider: &Provider,
    users: &[Uuid],
) -> Result<Paused, LinkError> {
    let mut out = Paused::default();
    let mut tx = meta.begin().await?;
    for user in users {
        if bulk_ops::pause(&mut tx, team, *user, provider.slug).await? {
            out.paused.push(*user);
        } else {
            out.skipped.push(*user);
        }
    }
    tx.commit()
        .await
        .map_err(crate::store::metadata::MetadataError::from)?;
    Ok(out)
}

/// Stores a historical trigger over `users` with its job (one transaction) and wakes this
/// process's runners; answers the operation's id.
pub async fn submit_trigger(
    meta: &MetadataStore,
    team: Uuid,
    provider: &Provider,
    users: &[Uuid],
    now: DateTime<Utc>,
) -> Result<Uuid, LinkError> {
    let id = Uuid::new_v4();
    let rows: Vec<NewRecipe> = users
        .iter()
        .map(|user| NewRecipe {
            user_id: *user,
            provider_id: String::new(),
            oauth_scopes: None,
            sealed_credentials: String::new(),
        })
        .collect();
    let mut tx = meta.begin().await?;
    let enqueued = crate::jobs::enqueue(&mut tx, &job::job(team, id)).await?;
    let op = OpRow {
        id,
        team_id: team,
        provider: provider.slug.to_owned(),
        kind: OP_TYPE.to_owned(),
        job_id: enqueued.id(),
        total: i64::try_from(users.len()).unwrap_or(i64::MAX),
        processed: 0,
        failed: 0,
        status: OpStatus::InProgress.as_str().to_owned(),
        started_at: now,
        ended_at: None,
        job_state: None,
        job_finished_at: None,
    };
    bulk_imports::insert_op(&mut tx, &op, &rows).await?;
    tx.commit()
        .await
        .map_err(crate::store::metadata::MetadataError::from)?;
    meta.jobs_wake().notify_waiters();
    Ok(id)
}

/// One exported connection (tokens in clear: module docs say which are exported).
#[derive(Clone)]
pub struct Exported {
    /// The team's user.
    pub user_id: Uuid,
    /// The provider's access token.
    pub access_token: String,
    /// The provider's refresh token.
    pub refresh_token: String,
    /// The user's id at the provider (empty when unknown).
    pub provider_id: String,
    /// When the access token expires (unix seconds; 0 when unknown).
    pub expires_at: i64,
    /// The granted scopes, when known.
    pub oauth_scopes: Option<Vec<String>>,
}

/// One export page and the token of the next.
pub struct ExportPage {
    /// The connections.
    pub data: Vec<Exported>,
    /// The last user of a full page (pass it back for the next); `None` on the last page.
    pub next_token: Option<Uuid>,
}

fn exported(
    key: Option<&SecretKey>,
    provider: &str,
    row: bulk_ops::ExportRow,
) -> Result<Option<Exported>, LinkError> {
    let Some(sealed) = row.sealed else {
        return Ok(None);
    };
    let tokens = credentials::open(key, row.user_id, provider, &sealed)?;
    let (Some(access_token), Some(refresh_token)) = (tokens.access_token, tokens.refresh_token)
    else {
        return Ok(None);
    };
    Ok(Some(Exported {
        user_id: row.user_id,
        access_token,
        refresh_token,
        provider_id: row.provider_user_id.unwrap_or_default(),
        expires_at: tokens.expires_at.unwrap_or(0),
        oauth_scopes: row
            .scopes_granted
            .and_then(|s| serde_json::from_str::<Vec<String>>(&s).ok()),
    }))
}

/// A page of the team's connections to `provider` (module docs); `users` narrows it to those
/// users (one page, no `next_token`).
pub async fn export(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    team: Uuid,
    provider: &Provider,
    users: Option<&[Uuid]>,
    after: Option<Uuid>,
) -> Result<ExportPage, BulkImportError> {
    let mut conn = meta.reader().await?;
    if team_apps::get(&mut conn, team, provider.slug)
        .await?
        .is_none()
    {
        return Err(BulkImportError::Disabled(provider.slug.to_owned()));
    }
    let (rows, full) = match users {
        Some(users) => {
            let mut rows = Vec::new();
            for user in users {
                if let Some(row) =
                    bulk_ops::export_one(&mut conn, team, provider.slug, *user).await?
                {
                    rows.push(row);
                }
            }
            (rows, false)
        }
        None => {
            let rows =
                bulk_ops::export_page(&mut conn, team, provider.slug, after, EXPORT_PAGE).await?;
            let full = i64::try_from(rows.len()).unwrap_or(0) == EXPORT_PAGE;
            (rows, full)
        }
    };
    let next_token = if full {
        rows.last().map(|r| r.user_id)
    } else {
        None
    };
    let mut data = Vec::with_capacity(rows.len());
    for row in rows {
        if let Some(e) = exported(key, provider.slug, row)? {
            data.push(e);
        }
    }
    Ok(ExportPage { data, next_token })
}
