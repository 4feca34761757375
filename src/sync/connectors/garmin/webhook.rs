//! Garmin's notifications (Health API and Activity API §4 *Ping Service* and §5 *Push
//! Service*), served at `/v2/provider/garmin/notify`:
//! - **Ping**: `POST <endpoint>` with `{"<summary type>": [{"userId", "callbackURL"}, ...]}`
//!   (`dailies`, `sleeps`, `activities`, ..., and `deregistrations` without a `callbackURL`);
//!   OAuth 2.0 clients' callback URLs carry a pull token (`...&token=`) instead of the user's
//!   access token. Garmin wants a 200 within 30 s and retries anything else for up to 7 days.
//! - **Push**: the same lists, each item the summary itself with its `userId`.
//! - Garmin's example requests carry `garmin-client-id: <client id>`.
//!
//! **Verification.** Garmin signs nothing. What a notification gives is checked:
//! 1. `garmin-client-id` must be the client id of the deployment's Garmin application
//!    (`--oauth-apps`); a team's own Garmin application is not accepted (its notifications
//!    would go to its own endpoint).
//! 2. A `callbackURL`, where there is one, must point into the deployment's own Garmin API
//!    (the scheme, host and port of [`super::api_url`], under `/wellness-api/rest/`); one that
//!    names another host is a forgery. The URL is never followed: the pull that a
//!    notification queues reads the deployment's configured API with the connection's own
//!    token, so a notification cannot make this service call anywhere (no SSRF).
//! 3. At least one `userId` must be the Garmin user of a `connected` connection (recorded by
//!    the first historical pull from `GET /wellness-api/rest/user/id`).
//!
//! Anything else answers 401 and queues nothing. A caller who knows the client id (it appears
//! in authorisation URLs) and a user's Garmin id can forge a ping; what it can do is bounded:
//! move that connection's pending incremental pull to now (one job per connection, coalesced).
//!
//! Decisions where the documentation is silent:
//! - Every summary type, including deregistrations and permission changes, queues the
//!   connection's incremental pull of every resource: a deregistered user's pull is refused by
//!   Garmin and the connection goes to `error` through the usual path, so no unverifiable body
//!   can disconnect anyone.
//! - A push's inline summaries are not stored: the queued pull reads the same summaries from
//!   the API with the connection's token (Garmin: push data "is the exact same data" a ping's
//!   callback would return), so nothing an unsigned caller writes reaches the store.

use std::collections::BTreeSet;

use serde_json::Value;

/// The header Garmin names its client in.
pub const CLIENT_ID_HEADER: &str = "garmin-client-id";

/// What a notification names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The summary types it lists (`dailies`, `sleeps`, `deregistrations`, ...).
    pub kinds: BTreeSet<String>,
    /// The Garmin user ids it names.
    pub users: BTreeSet<String>,
}

/// Why a notification is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not a notification's shape (a 422).
    Malformed(String),
    /// A callback URL outside the deployment's Garmin API (a 401).
    Forged(String),
}

/// Whether `given` (the `garmin-client-id` header) is `expected` (compared in constant time).
pub fn client_verified(expected: &str, given: &str) -> bool {
    use subtle::ConstantTimeEq;
    !given.is_empty() && bool::from(expected.as_bytes().ct_eq(given.trim().as_bytes()))
}

/// Whether `callback` points into the Garmin API at `api` (same scheme, host and port, under
/// `/wellness-api/rest/`).
pub fn callback_allowed(api: &url::Url, callback: &str) -> bool {
    let Ok(url) = url::Url::parse(callback) else {
        return false;
    };
    let under = format!("{}/", super::REST_PATH);
    url.scheme() == api.scheme()
        && url.host_str() == api.host_str()
        && url.port_or_known_default() == api.port_or_known_default()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path().starts_with(&under)
}

/// Reads a notification whose callback URLs must point into the API at `api`.
pub fn parse(body: &[u8], api: &url::Url) -> Result<Notice, Refused> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| Refused::Malformed(format!("not JSON: {e}")))?;
    let Value::Object(lists) = value else {
        return Err(Refused::Malformed(
            "a Garmin notification is an object of lists by summary type".into(),
        ));
    };
    let mut notice = Notice {
        kinds: BTreeSet::new(),
        users: BTreeSet::new(),
    };
    for (kind, items) in &lists {
        let Value::Array(items) = items else {
            return Err(Refused::Malformed(format!("{kind}: not a list")));
        };
        for item in items {
            let user = match item.get("userId") {
                Some(Value::String(u)) if !u.trim().is_empty() => u.trim().to_owned(),
                _ => {
                    return Err(Refused::Malformed(format!(
                        "{kind}: every item names its user in userId"
                    )));
                }
            };
            match item.get("callbackURL") {
                None | Some(Value::Null) => {}
                Some(Value::String(url)) if callback_allowed(api, url) => {}
                Some(other) => {
                    return Err(Refused::Forged(format!(
                        "{kind}: the callbackURL {other} is not this deployment's Garmin API"
                    )));
                }
            }
            notice.users.insert(user);
        }
        notice.kinds.insert(kind.clone());
    }
    if notice.users.is_empty() {
        return Err(Refused::Malformed("the notification names no user".into()));
    }
    Ok(notice)
}
