//! Making and ending connections: a link records the grant and the sealed credentials (with
//! the token's consumption and `provider.connection.created`, in one transaction); a
//! deregistration marks the connection `deregistered`, forgets its credentials and keeps the
//! user's data; a failure that needs the user ([`fail`]) puts it in `error` with
//! `provider.connection.error`, in one transaction.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::tokens::{self, LinkSession};
use super::{LinkError, LinkErrorType};
use crate::events::data::ConnectionCreated;
use crate::events::{Event, EventType, EventUser, ProviderRef, outbox};
use crate::providers::Provider;
use crate::secret::SecretKey;
use crate::store::metadata::connections::{self, Grant};
use crate::store::metadata::{self, Connection, MetadataStore, User};
pub use crate::sync::connection::{credentials, fail};
use crate::sync::credentials::{self, Credentials};

/// What a successful link brings: who the user is at the provider, the scopes and the
/// credentials.
#[derive(Debug, Clone, Default)]
pub struct Linked {
    /// The user's id at the provider.
    pub provider_user_id: Option<String>,
    /// Scopes granted.
    pub scopes_granted: Vec<String>,
    /// Scopes asked for and denied.
    pub scopes_denied: Vec<String>,
    /// The credentials to keep (sealed before storing).
    pub credentials: Credentials,
}

/// Records the link in the caller's transaction (so its events and jobs commit with it).
/// Answers the connection and whether it was already `connected` before.
pub async fn link_on(
    conn: &mut sqlx::AnyConnection,
    key: Option<&SecretKey>,
    user: Uuid,
    provider: &str,
    linked: &Linked,
) -> Result<(Connection, bool), LinkError> {
    let grant = Grant {
        provider_user_id: linked.provider_user_id.clone(),
        scopes_granted: linked.scopes_granted.clone(),
        scopes_denied: linked.scopes_denied.clone(),
        sealed_credentials: credentials::seal(key, user, provider, &linked.credentials)?,
    };
    Ok(connections::link(conn, user, provider, &grant).await?)
}

/// Deregisters the user's connection to `provider`: `deregistered`, credentials forgotten,
/// data kept. Deregistering a deregistered connection changes nothing and succeeds.
pub async fn deregister(meta: &MetadataStore, user: Uuid, provider: &str) -> Result<(), LinkError> {
    if connections::deregister(&mut *meta.writer().await?, user, provider).await? {
        Ok(())
    } else {
        Err(LinkError::ConnectionNotFound(provider.to_owned()))
    }
}

/// Records a successful link: duplicate check, token consumption, the connection and its
/// `provider.connection.created` event, in one transaction. Answers the link error that
/// stopped it, if any.
pub async fn finish_link(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    session: &LinkSession,
    provider: &Provider,
    linked: &Linked,
    now: DateTime<Utc>,
) -> Result<Option<(LinkErrorType, String)>, LinkError> {
    let user = meta
        .user(session.team_id, session.user_id)
        .await?
        .ok_or_else(|| LinkError::ConnectionNotFound(provider.slug.to_owned()))?;
    let mut tx = meta.begin().await?;
    if let Some(refused) = duplicate_on(&mut tx, &user, provider, linked).await? {
        return Ok(Some(refused));
    }
    if let Err(LinkError::Link {
        error_type,
        message,
    }) = tokens::consume_on(&mut tx, session, now).await
    {
        return Ok(Some((error_type, message)));
    }
    let enqueued = connect_on(&mut tx, key, &user, provider, linked, now).await?;
    tx.commit().await.map_err(metadata::MetadataError::from)?;
    if enqueued > 0 {
        meta.jobs_wake().notify_waiters();
    }
    Ok(None)
}

/// The `duplicate_connection` refusal, on the caller's transaction, when the provider account
/// of `linked` is connected to another user of the team.
pub async fn duplicate_on(
    conn: &mut sqlx::AnyConnection,
    user: &User,
    provider: &Provider,
    linked: &Linked,
) -> Result<Option<(LinkErrorType, String)>, LinkError> {
    let Some(account) = &linked.provider_user_id else {
        return Ok(None);
    };
    if !connections::provider_account_taken(conn, user.team_id, user.id, provider.slug, account)
        .await?
    {
        return Ok(None);
    }
    Ok(Some((
        LinkErrorType::DuplicateConnection,
        format!(
            "This {} account is already connected to another user.",
            provider.name
        ),
    )))
}

/// What every successful link does after its checks, on the caller's transaction (link flows
/// and bulk import alike): records the connection with its sealed credentials, starts its
/// historical pull, and emits `provider.connection.created` unless it was `connected` already.
/// Answers how many webhook deliveries it enqueued: wake the job runners after the commit when
/// there are any.
pub async fn connect_on(
    conn: &mut sqlx::AnyConnection,
    key: Option<&SecretKey>,
    user: &User,
    provider: &Provider,
    linked: &Linked,
    now: DateTime<Utc>,
) -> Result<usize, LinkError> {
    let (connection, was_connected) = link_on(conn, key, user.id, provider.slug, linked).await?;
    // The new connection's history, pulled by a job committed with the link.
    crate::sync::pull::start_on(conn, user, provider.slug, now).await?;
    if was_connected {
        return Ok(0);
    }
    let entry = crate::data::provider_list::entry(&connection);
    let about = ProviderRef::of(provider.slug);
    let data = ConnectionCreated {
        user_id: user.id,
        provider: about.clone(),
        source: about,
        resource_availability: entry.resource_availability,
    };
    let event = Event::new(
        EventType::ConnectionCreated,
        Some(EventUser::of(user)),
        &data,
    );
    Ok(
        outbox::enqueue(conn, user.team_id, &[event], metadata::now())
            .await?
            .deliveries,
    )
}
