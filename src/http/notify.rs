//! `GET` and `POST /v2/provider/{provider}/notify`: providers' change notifications, verified
//! with the provider's own scheme ([`crate::sync::notify`]). No API key: the provider calls.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use bytes::Bytes;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::error::ApiError;
use super::extract::{ApiPath, QueryParams};
use super::models;
use crate::loc;
use crate::sync::notify;
use crate::validation::Violation;
use crate::validation::decode_lenient;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(subscription_handshake, notification))
}

/// The subscription handshake's query (Oura's; Withings sends none).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
struct Handshake {
    /// The token the subscription was created with (Oura: required).
    verification_token: Option<String>,
    /// What to echo back (Oura: required).
    challenge: Option<String>,
}

/// The handshake's answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Challenge {
    /// The `challenge` of the query, echoed (Oura); null for Withings, whose check (`HEAD`)
    /// wants only a 2xx.
    pub challenge: Option<String>,
}

/// A Withings notification (form-encoded).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct WithingsNotification {
    /// The user's Withings id.
    userid: String,
    /// The data category (`1`: weight and body composition, `44`: sleep, ...).
    appli: Option<i64>,
    /// Start of the changed range (unix seconds).
    startdate: Option<i64>,
    /// End of the changed range (unix seconds).
    enddate: Option<i64>,
}

/// A change notification (Oura's webhook body).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChangeNotification {
    /// `create`, `update` or `delete`.
    pub event_type: String,
    /// The collection that changed (`sleep`, `daily_activity`, ...).
    pub data_type: String,
    /// The changed document's id.
    #[serde(default)]
    pub object_id: Option<String>,
    /// When it changed.
    #[serde(default)]
    pub event_time: Option<String>,
    /// The user's id at the provider.
    pub user_id: String,
}

/// What a verified notification queued.
#[derive(Debug, Serialize, ToSchema)]
pub struct Queued {
    /// Connections whose incremental pull was queued (0 when no connected user has the
    /// account).
    pub queued: usize,
}

/// The provider of the path, if it sends change notifications here.
fn notifying(slug: &str) -> Result<&str, ApiError> {
    if notify::notifies(slug) {
        Ok(slug)
    } else {
        Err(ApiError::invalid(
            Violation::new(
                loc!["path", "provider"],
                "enum",
                format!(
                    "{slug:?} sends no change notifications here; expected one of: {}",
                    notify::NOTIFYING.join(", ")
                ),
            )
            .with_input(serde_json::Value::from(slug)),
        ))
    }
}

/// The subscription handshake: the provider asks whether this URL is its subscriber by sending
/// the subscription's `verification_token` and a `challenge`, echoed back when the token is the
/// deployment's (`verification_token` of the provider's application in `--oauth-apps`) or a
/// team's own (`PUT /v2/team/provider/{provider}/credentials` with `verification_token`).
#[utoipa::path(get, path = "/v2/provider/{provider}/notify", tag = "providers",
    params(("provider" = String, Path, description = "A provider that sends change notifications (oura, withings)"), Handshake),
    responses((status = 200, description = "Oura: the challenge, echoed. Withings (its HEAD check): null", body = Challenge),
              (status = 401, description = "Not the configured verification token", body = models::ErrorDetail),
              (status = 422, description = "Not a notifying provider, or a parameter missing", body = models::ValidationError)))]
async fn subscription_handshake(
    State(state): State<AppState>,
    ApiPath(slug): ApiPath<String>,
    query: QueryParams,
) -> Result<Json<Challenge>, ApiError> {
    let provider = notifying(&slug)?;
    if provider == "withings" {
        return Ok(Json(Challenge { challenge: None }));
    }
    let required = |name: &'static str| {
        query.get(name).map(str::to_owned).ok_or_else(|| {
            ApiError::invalid(Violation::new(
                loc!["query", name],
                "missing",
                format!("the {name} query parameter is required"),
            ))
        })
    };
    let (token, challenge) = (required("verification_token")?, required("challenge")?);
    let verified = notify::subscription_verified(&state.link.oauth_apps, provider, &token)
        || crate::link::team_apps::verification_token_known(&state.meta, provider, &token).await?;
    if !verified {
        return Err(ApiError::Unauthorized(
            "the verification token is not this subscription's",
        ));
    }
    Ok(Json(Challenge {
        challenge: Some(challenge),
    }))
}

/// A provider's change notification: verified with the provider's signature (Oura:
/// `x-oura-signature`, the upper-case hex HMAC-SHA256 of `x-oura-timestamp` and the raw body
/// under the client secret of the deployment's application or of a team's own), then the
/// incremental pull of every connected user with that provider account is queued now (a team's
/// application speaks for that team's users only). An unverifiable call answers 401 and queues
/// nothing.
#[utoipa::path(post, path = "/v2/provider/{provider}/notify", tag = "providers",
    params(("provider" = String, Path, description = "A provider that sends change notifications (oura, withings)"),
           ("x-oura-signature" = Option<String>, Header, description = "Oura: the notification's signature"),
           ("x-oura-timestamp" = Option<String>, Header, description = "Oura: the signed timestamp (unix seconds)")),
    request_body(content(
        (ChangeNotification = "application/json"),
        (WithingsNotification = "application/x-www-form-urlencoded"))),
    responses((status = 200, description = "Verified; the pulls queued", body = Queued),
              (status = 401, description = "Unsigned or wrongly signed", body = models::ErrorDetail),
              (status = 422, description = "Not a notifying provider, or a malformed notification", body = models::ValidationError)))]
async fn notification(
    State(state): State<AppState>,
    ApiPath(slug): ApiPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Queued>, ApiError> {
    let provider = notifying(&slug)?;
    if provider == "withings" {
        return withings_notification(&state, &body).await;
    }
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let (signature, timestamp) = (header("x-oura-signature"), header("x-oura-timestamp"));
    let signer = if signature.is_empty() {
        None
    } else {
        notify::signer(
            &state.meta,
            state.secret.as_ref(),
            &state.link.oauth_apps,
            provider,
            (timestamp, &body, signature),
        )
        .await?
    };
    let Some(signer) = signer else {
        return Err(ApiError::Unauthorized(
            "the notification's signature does not verify",
        ));
    };
    let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
        ApiError::invalid(Violation::new(
            loc!["body"],
            "json_invalid",
            format!("the notification is not JSON: {e}"),
        ))
    })?;
    let event: ChangeNotification = decode_lenient(&value, loc!["body"])?;
    let queued =
        notify::queue_pulls(&state.meta, provider, &event.user_id, signer, Utc::now()).await?;
    tracing::info!(provider, data_type = %event.data_type, event_type = %event.event_type,
        object_id = ?event.object_id, event_time = ?event.event_time, queued, "change notification");
    Ok(Json(Queued { queued }))
}

/// A Withings notification: the form's `userid` names the account whose connections' pulls are
/// queued (Withings signs nothing; see [`crate::sync::notify`]).
async fn withings_notification(state: &AppState, body: &[u8]) -> Result<Json<Queued>, ApiError> {
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(body).into_owned().collect();
    let userid = form
        .get("userid")
        .map(|u| u.trim())
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            ApiError::invalid(Violation::new(
                loc!["body", "userid"],
                "missing",
                "a Withings notification names its user in the form field userid",
            ))
        })?;
    let queued = notify::queue_pulls(
        &state.meta,
        "withings",
        userid,
        notify::Signer::Deployment,
        Utc::now(),
    )
    .await?;
    tracing::info!(provider = "withings", appli = ?form.get("appli"), queued, "change notification");
    Ok(Json(Queued { queued }))
}
