//! Strava's webhook subscription (`developers.strava.com/docs/webhooks/`), served at
//! `/v2/provider/strava/notify`:
//! - **Validation**: creating a subscription (`POST /api/v3/push_subscriptions` with the
//!   callback URL and a `verify_token` of the application's choosing), Strava calls
//!   `GET <callback>?hub.mode=subscribe&hub.challenge=<c>&hub.verify_token=<t>` and wants
//!   `200 {"hub.challenge": "<c>"}` within two seconds. The challenge is echoed only when `<t>`
//!   is the deployment's Strava application's `verification_token` (`--oauth-apps`) or a team's
//!   own (set with its credentials), and `hub.mode` is `subscribe`.
//! - **Events**: `POST <callback>` with `{"object_type": "activity"|"athlete", "object_id",
//!   "aspect_type": "create"|"update"|"delete", "updates": {...}, "owner_id", "subscription_id",
//!   "event_time"}`; Strava wants a 200 within two seconds and tries three times in all.
//!
//! **Verification.** Strava signs nothing and sends no secret with its events. What it does
//! give is checked: `subscription_id` must be the deployment's subscription (the
//! `subscription_id` of its Strava application in `--oauth-apps`: Strava answers it when the
//! subscription is created, and an application has one), and `owner_id` must be an athlete a
//! `connected` Strava connection recorded (the athlete's `id`, read by the first historical
//! pull). Anything else answers 401 and queues nothing. A caller who knows both numbers can
//! forge an event; what a forged event can do is bounded: move a connection's pending
//! incremental pull to now (one job per connection, coalesced), which reads Strava with the
//! connection's own token, or, forged as a deauthorisation, put the connection in `error`,
//! which the next successful link clears. The subscription id is not published anywhere but
//! in Strava's answers to the application, so a deployment should treat it as it treats its
//! client id.
//!
//! Decisions where the documentation and the spec are silent:
//! - An `athlete` `update` whose `updates` say `"authorized": "false"` is the athlete revoking
//!   the application's access: as a refresh the provider refuses (`provider-sync.md`), every
//!   connection of that athlete goes to `error` (`provider_credential_error`) with
//!   `provider.connection.error`, and no pull is queued.
//! - Every other event (an activity created, updated or deleted, an athlete updated) queues the
//!   connection's incremental pull of every resource (the one `POST /v2/user/refresh` runs).
//!   A deleted activity stays stored, as data does on deregistration.
//! - Events of a team's own Strava application (its own subscription) are not accepted yet: its
//!   connections are pulled on the schedule.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::store::metadata::{MetadataStore, connections};
use crate::sync::access::LinkErrorType;
use crate::sync::apps::AppError;
use crate::sync::notify::{self, Signer};
use crate::sync::oauth::OAuthApps;

/// The provider's slug.
const SLUG: &str = "strava";

/// A webhook event, as Strava posts it.
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    /// `activity` or `athlete`.
    pub object_type: String,
    /// The activity's id (activity events) or the athlete's (athlete events).
    pub object_id: i64,
    /// `create`, `update` or `delete`.
    pub aspect_type: String,
    /// The fields that changed (`title`, `type`, `private`; `authorized` on a revocation).
    #[serde(default)]
    pub updates: Map<String, Value>,
    /// The athlete the object belongs to.
    pub owner_id: i64,
    /// The subscription the event came through.
    pub subscription_id: i64,
    /// When it happened (epoch seconds).
    pub event_time: i64,
}

impl Event {
    /// Whether the event is the athlete revoking the application's access.
    pub fn is_deauthorisation(&self) -> bool {
        let revoked = match self.updates.get("authorized") {
            Some(Value::String(s)) => s == "false",
            Some(Value::Bool(b)) => !b,
            _ => false,
        };
        self.object_type == "athlete" && self.aspect_type == "update" && revoked
    }
}

/// What a verified event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// The incremental pulls of this many connections were queued now.
    Queued(usize),
    /// This many connections were put in `error` (a revocation).
    Revoked(usize),
}

/// Whether `subscription_id` is the deployment's Strava subscription.
pub fn subscription_verified(apps: &OAuthApps, subscription_id: i64) -> bool {
    apps.0
        .get(SLUG)
        .and_then(|app| app.subscription_id)
        .is_some_and(|expected| expected == subscription_id)
}

/// Verifies `event` and acts on it; `None` when it does not verify (not the deployment's
/// subscription, or an athlete no connected Strava connection has), nothing done.
pub async fn handle(
    meta: &MetadataStore,
    apps: &OAuthApps,
    event: &Event,
    now: DateTime<Utc>,
) -> Result<Option<Handled>, AppError> {
    if !subscription_verified(apps, event.subscription_id) {
        return Ok(None);
    }
    let owner = event.owner_id.to_string();
    let found: Vec<(Uuid, Uuid)> = {
        let mut conn = meta.reader().await?;
        connections::connected_accounts(&mut conn, SLUG, &owner).await?
    };
    if found.is_empty() {
        return Ok(None);
    }
    if !event.is_deauthorisation() {
        let queued = notify::queue_pulls(meta, SLUG, &owner, Signer::Deployment, now).await?;
        return Ok(Some(Handled::Queued(queued)));
    }
    let Some(provider) = crate::providers::provider(SLUG) else {
        return Ok(Some(Handled::Revoked(0)));
    };
    let mut revoked = 0;
    for (team, user) in found {
        let Some(user) = meta.user(team, user).await? else {
            continue;
        };
        crate::sync::connection::fail(
            meta,
            &user,
            provider,
            LinkErrorType::ProviderCredentialError,
            "The athlete revoked this application's access on Strava; link Strava again.",
            now,
        )
        .await?;
        revoked += 1;
    }
    Ok(Some(Handled::Revoked(revoked)))
}
