//! Polar AccessLink webhooks (the documentation's *Accesslink webhooks* and *Webhooks*
//! sections, schemas `webhookPayload*` and `webhookPing`), served at `/v2/provider/polar/notify`:
//! - **Creating** a webhook (`POST /v3/webhooks` with the callback URL and the event types)
//!   makes Polar send a `PING` (`{"timestamp", "event": "PING"}`, header `Polar-Webhook-Event:
//!   PING`), which must be answered 200 or the webhook is not created. The creation's answer
//!   holds the `signature_secret_key`, given only then; a client has one webhook.
//! - **Events**: `POST <callback>` with `{"event", "user_id", "date" | "entity_id" | "from"/"to",
//!   "timestamp", "url"}` (`event` one of `EXERCISE`, `SLEEP`, `CONTINUOUS_HEART_RATE`,
//!   `ACTIVITY_SUMMARY`, `SLEEP_WISE_CIRCADIAN_BEDTIME`, `SLEEP_WISE_ALERTNESS`; `user_id` the
//!   Polar user id, an int64, which the token answer's `x_user_id` gave the connection).
//! - **Signature**: every message, the ping included, carries `Polar-Webhook-Signature`, the
//!   HMAC-SHA256 of the raw body keyed with the `signature_secret_key`, in hex (the
//!   documentation's examples are lower case; compared case-insensitively).
//!
//! Decisions where the documentation is silent:
//! - The signing key is the deployment's Polar application's `verification_token`
//!   (`--oauth-apps`), where the secret that verifies its change notifications lives for the
//!   other providers. A team's own Polar application is not accepted: teams' verification
//!   tokens are kept as hashes, which cannot key an HMAC.
//! - A verified `PING` answers 200 and queues nothing; every other verified event queues the
//!   connection's incremental pull of every resource (the one `POST /v2/user/refresh` runs),
//!   whatever its type, including event types added later. An unsigned or wrongly signed
//!   message answers 401 and queues nothing.

use hmac::{Hmac, Mac};
use serde::Deserialize;
use serde_json::Value;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::sync::notify::Signer;
use crate::sync::oauth::OAuthApps;

/// The header holding the signature.
pub const SIGNATURE_HEADER: &str = "polar-webhook-signature";

/// What a verified message asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The creation's ping: answer 200, nothing to pull.
    Ping,
    /// New data of the Polar user `user` (`event` says which kind).
    Changed {
        /// The event type (`EXERCISE`, `SLEEP`, ...).
        event: String,
        /// The Polar user id.
        user: String,
    },
}

/// Whether `signature` is the hex HMAC-SHA256 of `body` under `secret`.
pub fn signed_with(secret: &str, body: &[u8], signature: &str) -> bool {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return false;
    };
    mac.update(body);
    let expected = hex::encode(mac.finalize().into_bytes());
    let given = signature.trim().to_ascii_lowercase();
    bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
}

/// Who signed `body`: the deployment's Polar application (its `verification_token` being the
/// webhook's signing key), else nobody.
pub fn signer(apps: &OAuthApps, body: &[u8], signature: &str) -> Option<Signer> {
    let key = apps.0.get(super::SLUG)?.verification_token.as_deref()?;
    (!signature.is_empty() && signed_with(key, body, signature)).then_some(Signer::Deployment)
}

#[derive(Debug, Deserialize)]
struct Payload {
    event: String,
    #[serde(default)]
    user_id: Option<Value>,
}

/// Reads a verified message; `Err` says what is wrong with it.
pub fn parse(body: &[u8]) -> Result<Notice, String> {
    let payload: Payload =
        serde_json::from_slice(body).map_err(|e| format!("not a Polar webhook payload: {e}"))?;
    if payload.event == "PING" {
        return Ok(Notice::Ping);
    }
    let user = match payload.user_id {
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        _ => return Err("a Polar webhook names its user by an integer user_id".into()),
    };
    Ok(Notice::Changed {
        event: payload.event,
        user,
    })
}
