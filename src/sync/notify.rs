//! Provider change notifications (`provider-sync.md` §Pulls): a provider that pushes "this
//! user's data changed" calls `POST /v2/provider/{provider}/notify`; once its own verification
//! scheme accepts the call, the named account's connections get their incremental pull queued
//! now. An unverifiable call queues nothing.
//!
//! Oura (API v2 webhooks) is the provider that notifies so far:
//! - subscribing: Oura calls `GET <callback>?verification_token=<t>&challenge=<c>` and expects
//!   `200 {"challenge": "<c>"}` when `<t>` is the token the subscription was created with
//!   (`verification_token` of the deployment's Oura application in `--oauth-apps`, or of a team's
//!   own application, set with its credentials and kept as a hash);
//! - notifying: `POST <callback>` with `{"event_type", "data_type", "object_id", "event_time",
//!   "user_id"}`, signed in `x-oura-signature`: the upper-case hex HMAC-SHA256, keyed with the
//!   application's client secret, of the `x-oura-timestamp` header's value followed by the raw
//!   body. `user_id` is the user's `personal_info.id`, which the first historical pull records
//!   on the connection (Oura's token answer does not carry it).
//!
//! Withings (Notify API) is the other:
//! - subscribing: Withings checks the callback with a `HEAD` request and wants a 2xx;
//! - notifying: `POST <callback>`, `application/x-www-form-urlencoded`, with `userid` (the
//!   user's Withings id, which its token answer carries and the link records), `appli` (the
//!   data category) and, for most categories, `startdate` and `enddate` (unix seconds).
//!   Withings signs nothing: a notification is believed for any team's connection of that
//!   `userid`. What an unsigned caller can do is bounded: it can only move a connection's
//!   pending incremental pull to now (one job per connection, its unique key folding a burst
//!   into one pull), and that pull reads the provider with the connection's own token.
//!
//! WHOOP (API v2 webhooks, `developer.whoop.com/docs/developing/webhooks`) is the third:
//! - subscribing: the webhook URL is set on the WHOOP application; there is no handshake;
//! - notifying: `POST <callback>` with `{"user_id", "id", "type", "trace_id"}` (`user_id` the
//!   user's WHOOP id, an int64: the basic profile's `user_id`, which the first historical pull
//!   records on the connection; `type` one of `sleep.updated`, `recovery.updated`,
//!   `workout.updated` and their `.deleted`), signed in `X-WHOOP-Signature`: the base64
//!   (standard alphabet, padded) HMAC-SHA256, keyed with the application's client secret, of the
//!   `X-WHOOP-Signature-Timestamp` header's value (unix milliseconds) followed by the raw body.
//!
//! Google Health (`developers.google.com/health/webhooks`) is the fourth; its scheme (the
//! subscriber's `Authorization` secret and a `{"type": "verification"}` handshake) is
//! `connectors::google_health::webhook`.
//! Strava (Webhook Events API) is the fifth; its handshake and unsigned events are
//! `sync::connectors::strava::webhook`.
//! Polar (AccessLink webhooks) is the sixth; its scheme (`Polar-Webhook-Signature`, the hex
//! HMAC-SHA256 of the body under the webhook's own signing key) is
//! `sync::connectors::polar::webhook`.
//! Garmin (Health and Activity API pings and pushes) is the seventh; it signs nothing, and its
//! checks (client id, callback host, connected user) are `sync::connectors::garmin::webhook`.
//!
//! Decisions where the spec is silent:
//! - A notification signed with the deployment's application may name a user of any team; one
//!   signed with a team's own application (its own subscription) queues that team's users only.
//! - The pull queued is the connection's incremental pull of every resource (the one
//!   `POST /v2/user/refresh` runs), not only the notified `data_type`: one job per connection,
//!   moved earlier, so a burst of notifications costs one pull.
//! - No freshness window on the timestamp (Oura's or WHOOP's): a replayed notification can only
//!   queue a pull that the schedule would run anyway.
//! - A WHOOP `.deleted` event queues the same incremental pull: the pull cannot remove a record
//!   (stored data is kept, as on deregistration), but it brings the rest of the night back in
//!   line (a deleted sleep also deletes its recovery).

use base64::Engine as _;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use uuid::Uuid;

use super::apps::{self as team_apps, AppError};
use super::connectors::google_health;
use super::oauth::OAuthApps;
use super::pull::incremental_job;
use crate::secret::SecretKey;
use crate::store::metadata::{MetadataError, MetadataStore, connections};

/// The providers whose change notifications are accepted.
pub const NOTIFYING: &[&str] = &[
    "oura",
    "withings",
    "whoop_v2",
    "google_health",
    "strava",
    "polar",
    "garmin",
];

/// Whether `provider` sends change notifications this service verifies.
pub fn notifies(provider: &str) -> bool {
    NOTIFYING.contains(&provider)
}

/// Whether `provider`'s subscriptions carry a verification token (Oura's and Strava's
/// handshakes); Withings' do not.
pub fn takes_verification_token(provider: &str) -> bool {
    matches!(provider, "oura" | "strava")
}

/// The subscription handshake: whether `token` is the verification token of the provider's
/// application (compared in constant time; no configured token accepts nothing).
pub fn subscription_verified(apps: &OAuthApps, provider: &str, token: &str) -> bool {
    apps.0
        .get(provider)
        .and_then(|app| app.verification_token.as_deref())
        .is_some_and(|expected| bool::from(expected.as_bytes().ct_eq(token.as_bytes())))
}

/// Whether `signature` is Oura's signature of `timestamp` and `body` under `secret`.
pub fn signed_with(secret: &str, timestamp: &str, body: &[u8], signature: &str) -> bool {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return false;
    };
    mac.update(timestamp.as_bytes());
    mac.update(body);
    let expected = hex::encode_upper(mac.finalize().into_bytes());
    let given = signature.trim().to_ascii_uppercase();
    bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
}

/// Whether `signature` is WHOOP's signature of `timestamp` and `body` under `secret`: the
/// base64 of the HMAC-SHA256 of the timestamp followed by the body.
pub fn whoop_signed_with(secret: &str, timestamp: &str, body: &[u8], signature: &str) -> bool {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return false;
    };
    mac.update(timestamp.as_bytes());
    mac.update(body);
    let expected = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    bool::from(expected.as_bytes().ct_eq(signature.trim().as_bytes()))
}

/// Whether `signature` is `provider`'s signature of `timestamp` and `body` under `secret`, by
/// the provider's own scheme (WHOOP's, else Oura's).
pub fn verifies(
    provider: &str,
    secret: &str,
    timestamp: &str,
    body: &[u8],
    signature: &str,
) -> bool {
    match provider {
        "whoop_v2" => whoop_signed_with(secret, timestamp, body, signature),
        _ => signed_with(secret, timestamp, body, signature),
    }
}

/// Whose application signed a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signer {
    /// The deployment's (`--oauth-apps`): its users of every team.
    Deployment,
    /// A team's own application: that team's users only.
    Team(Uuid),
}

/// Whose application signed `body`: the deployment's, else a team's own application for the
/// provider (whose subscription that team created); `None` when none did.
pub async fn signer(
    meta: &MetadataStore,
    key: Option<&SecretKey>,
    apps: &OAuthApps,
    provider: &str,
    (timestamp, body, signature): (&str, &[u8], &str),
) -> Result<Option<Signer>, AppError> {
    if apps
        .0
        .get(provider)
        .is_some_and(|app| verifies(provider, &app.client_secret, timestamp, body, signature))
    {
        return Ok(Some(Signer::Deployment));
    }
    // Without a secret key no team's own secret can be read (nor, normally, stored): only the
    // deployment's application can have signed.
    if key.is_none() {
        return Ok(None);
    }
    let teams = team_apps::secrets(meta, key, provider).await?;
    Ok(teams
        .into_iter()
        .find(|(_, secret)| verifies(provider, secret, timestamp, body, signature))
        .map(|(team, _)| Signer::Team(team)))
}

/// Whose Google Health subscriber `authorization` (a notification's `Authorization` header)
/// is the secret of ([`google_health::webhook`]): the deployment's application's
/// `verification_token`, else the one team's own application carrying it (kept as a hash);
/// `None` when none (or several teams) does.
pub async fn google_signer(
    meta: &MetadataStore,
    apps: &OAuthApps,
    authorization: &str,
) -> Result<Option<Signer>, AppError> {
    if authorization.is_empty() {
        return Ok(None);
    }
    let slug = google_health::SLUG;
    if apps
        .0
        .get(slug)
        .and_then(|app| app.verification_token.as_deref())
        .is_some_and(|secret| google_health::webhook::authorized(secret, authorization))
    {
        return Ok(Some(Signer::Deployment));
    }
    let teams = team_apps::verification_token_teams(meta, slug, authorization).await?;
    Ok(match teams.as_slice() {
        [team] => Some(Signer::Team(*team)),
        _ => None,
    })
}

/// Queues, due `now`, the incremental pull of every `connected` connection of the provider
/// account `account` that `signer` speaks for; answers how many.
pub async fn queue_pulls(
    meta: &MetadataStore,
    provider: &str,
    account: &str,
    signer: Signer,
    now: DateTime<Utc>,
) -> Result<usize, MetadataError> {
    let mut tx = meta.begin().await?;
    let found: Vec<(Uuid, Uuid)> = connections::connected_accounts(&mut tx, provider, account)
        .await?
        .into_iter()
        .filter(|(team, _)| signer == Signer::Deployment || signer == Signer::Team(*team))
        .collect();
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
    use crate::sync::oauth::OAuthApp;

    fn apps() -> OAuthApps {
        let app = OAuthApp {
            client_id: "id".into(),
            client_secret: "the-client-secret".into(),
            authorize_url: "https://example.com/a".into(),
            token_url: "https://example.com/t".into(),
            redirect_uri: None,
            verification_token: Some("verify-me".into()),
            subscription_id: None,
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
        let secret = "the-client-secret";
        assert!(signed_with(secret, "1732442400", body, &upper));
        // Oura's own examples compare case-insensitively.
        let lower = upper.to_ascii_lowercase();
        assert!(signed_with(secret, "1732442400", body, &lower));
        assert!(!signed_with(secret, "1732442401", body, &upper));
        assert!(!signed_with(secret, "1732442400", b"{}", &upper));
        assert!(!signed_with("another-secret", "1732442400", body, &upper));
        assert!(!signed_with(secret, "1732442400", body, ""));
    }

    #[test]
    fn whoops_signature_is_the_base64_hmac_of_timestamp_then_body() {
        let body = br#"{"user_id":10129,"id":"ecfc6a15-4661-442f-a9a4-f160dd7afae8","type":"sleep.updated","trace_id":"t"}"#;
        let mut mac = Hmac::<Sha256>::new_from_slice(b"the-client-secret").unwrap();
        mac.update(b"1748241241000");
        mac.update(body);
        let good = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
        let secret = "the-client-secret";
        assert!(whoop_signed_with(secret, "1748241241000", body, &good));
        assert!(verifies("whoop_v2", secret, "1748241241000", body, &good));
        // Not Oura's scheme, and Oura's is not WHOOP's.
        assert!(!verifies("oura", secret, "1748241241000", body, &good));
        let hex = {
            let mut mac = Hmac::<Sha256>::new_from_slice(b"the-client-secret").unwrap();
            mac.update(b"1748241241000");
            mac.update(body);
            hex::encode_upper(mac.finalize().into_bytes())
        };
        assert!(!verifies("whoop_v2", secret, "1748241241000", body, &hex));
        assert!(!whoop_signed_with(secret, "1748241241001", body, &good));
        assert!(!whoop_signed_with(secret, "1748241241000", b"{}", &good));
        assert!(!whoop_signed_with(
            "another-secret",
            "1748241241000",
            body,
            &good
        ));
        assert!(!whoop_signed_with(secret, "1748241241000", body, ""));
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
