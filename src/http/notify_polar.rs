//! Polar's side of `/v2/provider/polar/notify` ([`crate::sync::connectors::polar::webhook`]):
//! messages signed in `Polar-Webhook-Signature` (hex HMAC-SHA256 of the raw body under the
//! webhook's signing key). Unsigned or wrongly signed: 401, nothing queued; the creation's
//! `PING`: 200, nothing queued; any other event: the named user's pulls queued.

use axum::Json;
use axum::http::HeaderMap;
use chrono::Utc;

use super::AppState;
use super::error::ApiError;
use super::notify::Queued;
use crate::loc;
use crate::sync::connectors::polar::webhook::{self, Notice, SIGNATURE_HEADER};
use crate::sync::notify;
use crate::validation::Violation;

/// A Polar webhook message: verified, read, acted on.
pub(super) async fn event(
    state: &AppState,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Json<Queued>, ApiError> {
    let signature = headers
        .get(SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let signer = webhook::signer(&state.link.oauth_apps, body, signature).ok_or(
        ApiError::Unauthorized("the message's Polar-Webhook-Signature does not verify"),
    )?;
    let notice = webhook::parse(body)
        .map_err(|why| ApiError::invalid(Violation::new(loc!["body"], "value_error", why)))?;
    let queued = match &notice {
        Notice::Ping => 0,
        Notice::Changed { user, .. } => {
            notify::queue_pulls(&state.meta, "polar", user, signer, Utc::now()).await?
        }
    };
    tracing::info!(provider = "polar", ?notice, queued, "change notification");
    Ok(Json(Queued {
        queued,
        revoked: None,
    }))
}
