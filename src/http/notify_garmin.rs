//! Garmin's side of `/v2/provider/garmin/notify` ([`crate::sync::connectors::garmin::webhook`]):
//! pings and pushes, which Garmin does not sign, verified by their `garmin-client-id`, their
//! callback URLs' host and the users they name; else 401 with nothing queued.

use axum::Json;
use axum::http::HeaderMap;
use chrono::Utc;

use super::AppState;
use super::error::ApiError;
use super::notify::Queued;
use crate::loc;
use crate::sync::connectors::garmin::{self, webhook};
use crate::sync::notify;
use crate::validation::Violation;

/// A Garmin notification: verified, read, the named users' pulls queued.
pub(super) async fn event(
    state: &AppState,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Json<Queued>, ApiError> {
    let given = headers
        .get(webhook::CLIENT_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let ours = state.link.oauth_apps.0.get(garmin::SLUG);
    if !ours.is_some_and(|app| webhook::client_verified(&app.client_id, given)) {
        return Err(ApiError::Unauthorized(
            "the notification's garmin-client-id is not this deployment's Garmin application",
        ));
    }
    let api = url::Url::parse(&garmin::api_url()).map_err(|e| {
        tracing::error!(error = %e, "the Garmin API URL is not a URL");
        ApiError::Unauthorized("the notification cannot be checked against the Garmin API")
    })?;
    let notice = webhook::parse(body, &api).map_err(|refused| match refused {
        webhook::Refused::Malformed(why) => {
            ApiError::invalid(Violation::new(loc!["body"], "value_error", why))
        }
        webhook::Refused::Forged(why) => {
            tracing::warn!(provider = garmin::SLUG, why = %why, "refused a forged notification");
            ApiError::Unauthorized("the notification's callbackURL is not the Garmin API")
        }
    })?;
    let mut queued = 0;
    for user in &notice.users {
        queued += notify::queue_pulls(
            &state.meta,
            garmin::SLUG,
            user,
            notify::Signer::Deployment,
            Utc::now(),
        )
        .await?;
    }
    tracing::info!(provider = garmin::SLUG, kinds = ?notice.kinds, users = notice.users.len(),
        queued, "change notification");
    if queued == 0 {
        return Err(ApiError::Unauthorized(
            "the notification names no Garmin user connected here",
        ));
    }
    Ok(Json(Queued {
        queued,
        revoked: None,
    }))
}
