//! Strava's side of `/v2/provider/strava/notify` ([`crate::sync::connectors::strava::webhook`]):
//! the subscription validation (`hub.mode`, `hub.challenge`, `hub.verify_token`, answered
//! `{"hub.challenge": ...}`) and the events, which Strava does not sign: verified by their
//! `subscription_id` and `owner_id`, else 401 with nothing queued.

use axum::Json;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;
use super::error::ApiError;
use super::extract::QueryParams;
use super::notify::Queued;
use crate::loc;
use crate::sync::connectors::strava::webhook::{self, Event, Handled};
use crate::sync::notify;
use crate::validation::{Violation, decode_lenient};

/// The answer to Strava's subscription validation.
#[derive(Debug, Serialize, ToSchema)]
pub struct StravaChallenge {
    /// The `hub.challenge` of the query, echoed.
    #[serde(rename = "hub.challenge")]
    pub challenge: String,
}

/// Strava's subscription validation: `hub.mode=subscribe`, and `hub.verify_token` the Strava
/// application's `verification_token` (the deployment's, or a team's own).
pub(super) async fn handshake(state: &AppState, query: &QueryParams) -> Result<Response, ApiError> {
    let required = |name: &'static str| {
        query.get(name).map(str::to_owned).ok_or_else(|| {
            ApiError::invalid(Violation::new(
                loc!["query", name],
                "missing",
                format!("the {name} query parameter is required"),
            ))
        })
    };
    let mode = required("hub.mode")?;
    let (token, challenge) = (required("hub.verify_token")?, required("hub.challenge")?);
    if mode != "subscribe" {
        return Err(ApiError::invalid(
            Violation::new(
                loc!["query", "hub.mode"],
                "literal_error",
                "hub.mode must be subscribe",
            )
            .with_input(serde_json::Value::from(mode)),
        ));
    }
    let verified = notify::subscription_verified(&state.link.oauth_apps, "strava", &token)
        || crate::link::team_apps::verification_token_known(&state.meta, "strava", &token).await?;
    if !verified {
        return Err(ApiError::Unauthorized(
            "the verification token is not this subscription's",
        ));
    }
    Ok(Json(StravaChallenge { challenge }).into_response())
}

/// A Strava event: read, verified by its subscription and athlete, then acted on (a pull
/// queued, or, for a revocation, the athlete's connections put in `error`).
pub(super) async fn event(state: &AppState, body: &[u8]) -> Result<Json<Queued>, ApiError> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::invalid(Violation::new(
            loc!["body"],
            "json_invalid",
            format!("the event is not JSON: {e}"),
        ))
    })?;
    let event: Event = decode_lenient(&value, loc!["body"])?;
    let handled = webhook::handle(&state.meta, &state.link.oauth_apps, &event, Utc::now())
        .await?
        .ok_or(ApiError::Unauthorized(
            "the event names no Strava subscription or athlete of this deployment",
        ))?;
    tracing::info!(provider = "strava", object_type = %event.object_type,
        aspect_type = %event.aspect_type, object_id = event.object_id,
        event_time = event.event_time, ?handled, "change notification");
    Ok(Json(match handled {
        Handled::Queued(queued) => Queued {
            queued,
            revoked: None,
        },
        Handled::Revoked(revoked) => Queued {
            queued: 0,
            revoked: Some(revoked),
        },
    }))
}
