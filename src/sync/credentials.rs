//! A connection's provider credentials and how they are sealed for storage.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::secret::{SecretError, SecretKey};

/// What a provider gave for a user: OAuth tokens, or the username and password of a password
/// provider. Its `Debug` shows which parts are present, never their values.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// OAuth access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<String>,
    /// OAuth refresh token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Password providers: the username.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Password providers: the password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("Credentials")
            .field("access_token", &shown(&self.access_token))
            .field("refresh_token", &shown(&self.refresh_token))
            .field("expires_at", &self.expires_at)
            .field("username", &shown(&self.username))
            .field("password", &shown(&self.password))
            .finish()
    }
}

/// The associated data binding sealed credentials to their connection row.
fn context(user: Uuid, provider: &str) -> String {
    format!("connection:{user}:{provider}")
}

/// Seals the credentials of the user's connection to `provider`.
pub fn seal(
    key: Option<&SecretKey>,
    user: Uuid,
    provider: &str,
    credentials: &Credentials,
) -> Result<String, SecretError> {
    seal_for(key, &context(user, provider), credentials)
}

/// Opens the sealed credentials of the user's connection to `provider`.
pub fn open(
    key: Option<&SecretKey>,
    user: Uuid,
    provider: &str,
    sealed: &str,
) -> Result<Credentials, SecretError> {
    open_for(key, &context(user, provider), sealed)
}

/// Seals credentials for the row `context` names: credentials kept somewhere else than their
/// connection (a bulk import's recipes) are sealed the same way, bound to their own row.
pub fn seal_for(
    key: Option<&SecretKey>,
    context: &str,
    credentials: &Credentials,
) -> Result<String, SecretError> {
    let key = key.ok_or(SecretError::Missing)?;
    let plain = serde_json::to_vec(credentials).map_err(|_| SecretError::Unsealable)?;
    key.seal(&plain, context)
}

/// Opens credentials sealed by [`seal_for`] for `context`.
pub fn open_for(
    key: Option<&SecretKey>,
    context: &str,
    sealed: &str,
) -> Result<Credentials, SecretError> {
    let key = key.ok_or(SecretError::Missing)?;
    let plain = key.open(sealed, context)?;
    serde_json::from_slice(&plain).map_err(|_| SecretError::Unsealable)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn credentials_round_trip_only_on_their_connection_and_never_show_in_debug() {
        let (key, _) = SecretKey::generate();
        let user = Uuid::new_v4();
        let c = Credentials {
            access_token: Some("at-secret".into()),
            refresh_token: Some("rt-secret".into()),
            expires_at: Some(1_700_000_000),
            ..Default::default()
        };
        let sealed = seal(Some(&key), user, "oura", &c).unwrap();
        assert_eq!(open(Some(&key), user, "oura", &sealed).unwrap(), c);
        assert!(open(Some(&key), user, "fitbit", &sealed).is_err());
        assert!(open(Some(&key), Uuid::new_v4(), "oura", &sealed).is_err());
        assert!(matches!(
            seal(None, user, "oura", &c),
            Err(SecretError::Missing)
        ));
        let shown = format!("{c:?}");
        assert!(!shown.contains("secret"), "{shown}");
    }
}
