//! Provider change notifications (`provider-sync.md` §Pulls): a provider that pushes "this
//! user's data changed" calls `POST /v2/provider/{provider}/notify`; once its own verification
//! scheme accepts the call, the named account's connections get their incremental pull queued
//! now. An unverifiable call queues nothing.
//!
//! Oura (API v2 webhooks) is the provider that notifies so far:
//! - subscribing: Oura calls `GET <callback>?verification_token=<t>&challenge=<c>` and expects
//!   `200 {"challenge": "<c>"}` when `<t>` is the token the subscription was created with
//!   (`verification_token` of the deployment's Oura application in `--oauth-apps`);
//! - notifying: `POST <callback>` with `{"event_type", "data_type", "object_id", "event_time",
//!   "user_id"}`, signed in `x-oura-signature`: the upper-case hex HMAC-SHA256, keyed with the
//!   application's client secret, of the `x-oura-timestamp` header's value followed by the raw
//!   body. `user_id` is the user's `personal_info.id`, which the first historical pull records
//!   on the connection (Oura's token answer does not carry it).
//!
//! Decisions where the spec is silent:
//! - Only the deployment's application verifies: a team with its own Oura application would
//!   subscribe with its own secret, which this does not try.
//! - The pull queued is the connection's incremental pull of every resource (the one
//!   `POST /v2/user/refresh` runs), not only the notified `data_type`: one job per connection,
//!   moved earlier, so a burst of notifications costs one pull.
//! - No freshness window on the timestamp: a replayed notification can only queue a pull that
//!   the schedule would run anyway.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::pull::incremental_job;
use crate::link::oauth::OAuthApps;
use crate::store::metadata::{MetadataError, MetadataStore, connections};

/// The providers whose change notifications are accepted.
pub const NOTIFYING: &[&str] = &["oura"];

/// Whether `provider` sends change notifications this service verifies.
pub fn notifies(provider: &str) -> bool {
    NOTIFYING.contains(&provider)
}

/// The subscription handshake: whether `token` is the verification token of the provider's
/// application (compared in constant time; no configured token accepts nothing).
pub fn subscription_verified(apps: &OAuthApps, provider: &str, token: &str) -> bool {
    apps.0
        .get(provider)
        .and_then(|app| app.verification_token.as_deref())
        .is_some_and(|expected| bool::from(expected.as_bytes().ct_eq(token.as_bytes())))
}

/// Whether `signature` is Oura's signature of `timestamp` and `body` under the deployment
/// application's client secret.
pub fn signature_verified(
    apps: &OAuthApps,
    provider: &str,
    timestamp: &str,
    body: &[u8],
    signature: &str,
) -> bool {
    let Some(app) = apps.0.get(provider) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(app.client_secret.as_bytes()) else {
        return false;
    };
    mac.update(timestamp.as_bytes());
    mac.update(body);
    let expected = hex::encode_upper(mac.finalize().into_bytes());
    let given = signature.trim().to_ascii_uppercase();
    bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
}

/// Queues, due `now`, the incremental pull of every `connected` connection of the provider
/// account `account`; answers how many.
pub async fn queue_pulls(
    meta: &MetadataStore,
    provider: &str,
    account: &str,
    now: DateTime<Utc>,
) -> Result<usize, MetadataError> {
    let mut tx = meta.begin().await?;
    let found = connections::connected_accounts(&mut tx, provider, account).await?;
    for (team, user) in &found {
        crate::jobs::enqueue(&mut tx, &incremental_job(*team, *user, provider, now)).await?;
    }
    tx.commit().await.map_err(MetadataError::from)?;
    if !found.is_empty() {
        meta.jobs_wake().notify_waiters();
    }
    Ok(found.len())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::link::oauth::OAuthApp;

    fn apps() -> OAuthApps {
        let app = OAuthApp {
            client_id: "id".into(),
            client_secret: "the-client-secret".into(),
            authorize_url: "https://example.com/a".into(),
            token_url: "https://example.com/t".into(),
            redirect_uri: None,
            verification_token: Some("verify-me".into()),
        };
        OAuthApps([("oura".to_owned(), app)].into_iter().collect())
    }

    #[test]
    fn the_signature_is_the_upper_hex_hmac_of_timestamp_then_body() {
        let body = br#"{"event_type":"update","data_type":"sleep","user_id":"u1"}"#;
        let mut mac = Hmac::<Sha256>::new_from_slice(b"the-client-secret").unwrap();
        mac.update(b"1732442400");
        mac.update(body);
        let upper = hex::encode_upper(mac.finalize().into_bytes());
        let apps = apps();
        assert!(signature_verified(
            &apps,
            "oura",
            "1732442400",
            body,
            &upper
        ));
        // Oura's own examples compare case-insensitively.
        let lower = upper.to_ascii_lowercase();
        assert!(signature_verified(
            &apps,
            "oura",
            "1732442400",
            body,
            &lower
        ));
        assert!(!signature_verified(
            &apps,
            "oura",
            "1732442401",
            body,
            &upper
        ));
        assert!(!signature_verified(
            &apps,
            "oura",
            "1732442400",
            b"{}",
            &upper
        ));
        assert!(!signature_verified(
            &apps,
            "fitbit",
            "1732442400",
            body,
            &upper
        ));
        assert!(!signature_verified(&apps, "oura", "1732442400", body, ""));
    }

    #[test]
    fn the_handshake_needs_the_configured_token() {
        let apps = apps();
        assert!(subscription_verified(&apps, "oura", "verify-me"));
        assert!(!subscription_verified(&apps, "oura", "verify-m"));
        assert!(!subscription_verified(&apps, "oura", ""));
        assert!(!subscription_verified(
            &OAuthApps::default(),
            "oura",
            "verify-me"
        ));
    }
}
