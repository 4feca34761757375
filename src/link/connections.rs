//! Making and ending connections: a link records the grant and the sealed credentials; a
//! deregistration marks the connection `deregistered`, forgets its credentials and keeps the
//! user's data.

use uuid::Uuid;

use super::LinkError;
use super::credentials::{self, Credentials};
use crate::secret::SecretKey;
use crate::store::metadata::connections::{self, Grant};
use crate::store::metadata::{Connection, MetadataStore};

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

/// The stored credentials of a connection, opened.
pub async fn credentials(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    user: Uuid,
    provider: &str,
) -> Result<Option<Credentials>, LinkError> {
    let sealed =
        connections::sealed_credentials(&mut *meta.reader().await?, user, provider).await?;
    Ok(sealed
        .map(|s| credentials::open(key, user, provider, &s))
        .transpose()?)
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
