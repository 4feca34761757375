//! `GET` and `POST /v2/provider/{provider}/notify`: providers' change notifications, verified
//! with the provider's own scheme ([`crate::sync::notify`]). No API key: the provider calls.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
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
use crate::sync::connectors::google_health::webhook;
use crate::sync::notify;
use crate::validation::Violation;
use crate::validation::decode_lenient;

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(subscription_handshake, notification))
}

/// The subscription handshake's query (Oura's or Strava's; Withings sends none).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
struct Handshake {
    /// The token the subscription was created with (Oura: required).
    verification_token: Option<String>,
    /// What to echo back (Oura: required).
    challenge: Option<String>,
    /// Strava: `subscribe` (required).
    #[serde(rename = "hub.mode")]
    hub_mode: Option<String>,
    /// Strava: what to echo back as `{"hub.challenge": ...}` (required).
    #[serde(rename = "hub.challenge")]
    hub_challenge: Option<String>,
    /// Strava: the `verify_token` the subscription was created with (required).
    #[serde(rename = "hub.verify_token")]
    hub_verify_token: Option<String>,
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

/// A WHOOP webhook (API v2).
#[derive(Debug, Deserialize, ToSchema)]
pub struct WhoopNotification {
    /// The user's WHOOP id (an int64 on the wire; a string is read the same).
    #[schema(value_type = i64)]
    pub user_id: serde_json::Value,
    /// The object that changed: a sleep's or workout's UUID, a recovery's cycle id.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Option<serde_json::Value>,
    /// `sleep.updated`, `recovery.updated`, `workout.updated`, or their `.deleted`.
    #[serde(rename = "type")]
    pub kind: String,
    /// WHOOP's trace id of the event.
    #[serde(default)]
    pub trace_id: Option<String>,
}

/// What a verified notification queued.
#[derive(Debug, Serialize, ToSchema)]
pub struct Queued {
    /// Connections whose incremental pull was queued (0 when no connected user has the
    /// account).
    pub queued: usize,
    /// Strava's revocation event: connections put in `error` (absent for other events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked: Option<usize>,
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
    params(("provider" = String, Path, description = "A provider that sends change notifications (oura, withings, whoop_v2, google_health, strava, polar, garmin)"), Handshake),
    responses((status = 200, description = "Oura: the challenge, echoed. Withings (its HEAD check): null. Strava (`hub.mode`, `hub.challenge`, `hub.verify_token`): `{\"hub.challenge\": ...}`", body = Challenge),
              (status = 401, description = "Not the configured verification token", body = models::ErrorDetail),
              (status = 422, description = "Not a notifying provider, or a parameter missing", body = models::ValidationError)))]
async fn subscription_handshake(
    State(state): State<AppState>,
    ApiPath(slug): ApiPath<String>,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let provider = notifying(&slug)?;
    if provider == "withings" {
        return Ok(Json(Challenge { challenge: None }).into_response());
    }
    if provider == "strava" {
        return super::notify_strava::handshake(&state, &query).await;
    }
    if !notify::takes_verification_token(provider) {
        return Err(ApiError::invalid(
            Violation::new(
                loc!["path", "provider"],
                "enum",
                format!("{provider:?} subscriptions have no handshake"),
            )
            .with_input(serde_json::Value::from(provider)),
        ));
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
    })
    .into_response())
}

/// A provider's change notification: verified with the provider's signature (Oura:
/// `x-oura-signature`, the upper-case hex HMAC-SHA256 of `x-oura-timestamp` and the raw body
/// under the client secret of the deployment's application or of a team's own), then the
/// incremental pull of every connected user with that provider account is queued now (a team's
/// application speaks for that team's users only). WHOOP's (`{user_id, id, type, trace_id}`)
/// is verified the same way with its own scheme: `x-whoop-signature`, the base64 HMAC-SHA256
/// of `x-whoop-signature-timestamp` and the raw body. An unverifiable call answers 401 and
/// queues nothing.
#[utoipa::path(post, path = "/v2/provider/{provider}/notify", tag = "providers",
    params(("provider" = String, Path, description = "A provider that sends change notifications (oura, withings, whoop_v2, google_health, strava, polar, garmin)"),
           ("x-oura-signature" = Option<String>, Header, description = "Oura: the notification's signature"),
           ("x-oura-timestamp" = Option<String>, Header, description = "Oura: the signed timestamp (unix seconds)"),
           ("x-whoop-signature" = Option<String>, Header, description = "WHOOP: the notification's signature"),
           ("x-whoop-signature-timestamp" = Option<String>, Header, description = "WHOOP: the signed timestamp (unix milliseconds)"),
           ("authorization" = Option<String>, Header, description = "Google Health: the subscriber's secret, the whole header value"),
           ("polar-webhook-signature" = Option<String>, Header, description = "Polar: the hex HMAC-SHA256 of the body under the webhook's signing key"),
           ("garmin-client-id" = Option<String>, Header, description = "Garmin: the client id of the deployment's Garmin application")),
    request_body(content(
        (ChangeNotification = "application/json"),
        (WithingsNotification = "application/x-www-form-urlencoded"))),
    responses((status = 200, description = "Verified; the pulls queued", body = Queued),
              (status = 201, description = "Google Health's subscriber verification, with the right secret", body = Queued),
                            (status = 401, description = "Unsigned or wrongly signed (Strava, which signs nothing: not the deployment's subscription, or an athlete no connection has; Garmin, which signs nothing: not the deployment's client id, a callbackURL outside the Garmin API, or no connected user named)", body = models::ErrorDetail),
              (status = 422, description = "Not a notifying provider, or a malformed notification", body = models::ValidationError)))]
async fn notification(
    State(state): State<AppState>,
    ApiPath(slug): ApiPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Queued>), ApiError> {
    let provider = notifying(&slug)?;
    if provider == "withings" {
        return Ok((StatusCode::OK, withings_notification(&state, &body).await?));
    }
    if provider == "google_health" {
        return google_notification(&state, &headers, &body).await;
    }
    if provider == "strava" {
        let queued = super::notify_strava::event(&state, &body).await?;
        return Ok((StatusCode::OK, queued));
    }
    if provider == "polar" {
        let queued = super::notify_polar::event(&state, &headers, &body).await?;
        return Ok((StatusCode::OK, queued));
    }
    if provider == "garmin" {
        let queued = super::notify_garmin::event(&state, &headers, &body).await?;
        return Ok((StatusCode::OK, queued));
    }
    let (signature, timestamp) = if provider == "whoop_v2" {
        ("x-whoop-signature", "x-whoop-signature-timestamp")
    } else {
        ("x-oura-signature", "x-oura-timestamp")
    };
    let signer = verified(&state, provider, &headers, (signature, timestamp), &body).await?;
    let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
        ApiError::invalid(Violation::new(
            loc!["body"],
            "json_invalid",
            format!("the notification is not JSON: {e}"),
        ))
    })?;
    if provider == "whoop_v2" {
        let event: WhoopNotification = decode_lenient(&value, loc!["body"])?;
        let account = match &event.user_id {
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::String(s) if !s.trim().is_empty() => s.trim().to_owned(),
            other => {
                return Err(ApiError::invalid(
                    Violation::new(
                        loc!["body", "user_id"],
                        "int_type",
                        "a WHOOP notification names its user by an integer user_id",
                    )
                    .with_input(other.clone()),
                ));
            }
        };
        let queued =
            notify::queue_pulls(&state.meta, provider, &account, signer, Utc::now()).await?;
        tracing::info!(provider, event_type = %event.kind, id = ?event.id,
            trace_id = ?event.trace_id, queued, "change notification");
        return Ok((
            StatusCode::OK,
            Json(Queued {
                queued,
                revoked: None,
            }),
        ));
    }
    let event: ChangeNotification = decode_lenient(&value, loc!["body"])?;
    let queued =
        notify::queue_pulls(&state.meta, provider, &event.user_id, signer, Utc::now()).await?;
    tracing::info!(provider, data_type = %event.data_type, event_type = %event.event_type,
        object_id = ?event.object_id, event_time = ?event.event_time, queued, "change notification");
    Ok((
        StatusCode::OK,
        Json(Queued {
            queued,
            revoked: None,
        }),
    ))
}

/// A Google Health webhook: its `Authorization` header must be the subscriber's secret (else
/// 401, which is also what Google's unauthorised verification call expects); the
/// verification answers 201, a change queues the named users' pulls.
async fn google_notification(
    state: &AppState,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(StatusCode, Json<Queued>), ApiError> {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let signer = notify::google_signer(&state.meta, &state.link.oauth_apps, authorization)
        .await?
        .ok_or(ApiError::Unauthorized(
            "the notification's Authorization is not the subscriber's secret",
        ))?;
    let notice = webhook::parse(body)
        .map_err(|why| ApiError::invalid(Violation::new(loc!["body"], "value_error", why)))?;
    let users = match notice {
        webhook::Notice::Verification => {
            return Ok((
                StatusCode::CREATED,
                Json(Queued {
                    queued: 0,
                    revoked: None,
                }),
            ));
        }
        webhook::Notice::Changes(users) => users,
    };
    let mut queued = 0;
    for user in &users {
        queued +=
            notify::queue_pulls(&state.meta, "google_health", user, signer, Utc::now()).await?;
    }
    tracing::info!(
        provider = "google_health",
        users = users.len(),
        queued,
        "change notification"
    );
    Ok((
        StatusCode::OK,
        Json(Queued {
            queued,
            revoked: None,
        }),
    ))
}

/// Who signed a notification, by the provider's scheme; unsigned or wrongly signed, a 401.
async fn verified(
    state: &AppState,
    provider: &str,
    headers: &HeaderMap,
    (signature, timestamp): (&str, &str),
    body: &[u8],
) -> Result<notify::Signer, ApiError> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let (signature, timestamp) = (header(signature), header(timestamp));
    let signer = if signature.is_empty() {
        None
    } else {
        notify::signer(
            &state.meta,
            state.secret.as_ref(),
            &state.link.oauth_apps,
            provider,
            (timestamp, body, signature),
        )
        .await?
    };
    signer.ok_or(ApiError::Unauthorized(
        "the notification's signature does not verify",
    ))
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
    Ok(Json(Queued {
        queued,
        revoked: None,
    }))
}
