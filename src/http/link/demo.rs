//! `POST /v2/link/connect/demo`: the demo connection, which fills a user's history with
//! synthetic data from a demo-capable provider (`data-model.md` §Providers).
//!
//! Like the reference, the answer comes once the connection is made; the history is pulled by
//! the connection's pull job (`sync::connectors::demo`), as for a real provider, and announced by
//! `historical.data.<resource>.created` when it is stored (seconds for 90 days).

use axum::Json;
use axum::extract::State;
use chrono::Utc;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::{AuthTeam, Decoded};
use crate::http::models::DemoConnectRequest;
use crate::http::users::team_user;
use crate::loc;
use crate::sync::connectors::demo;
use crate::sync::connectors::demo::generator::{MAX_DAYS, Persona, is_demo_provider};

/// The routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(connect_demo))
}

/// The answer of a demo connection (the reference's `DemoConnectionStatus` and more).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DemoConnected {
    /// Always true on a 2xx answer.
    success: bool,
    /// What was done, as a sentence.
    detail: String,
    /// The user.
    user_id: uuid::Uuid,
    /// The demo provider.
    provider: String,
    /// Days of history asked for.
    days: u32,
    /// Whether that history is being pulled now (`historical.data.<resource>.created` announces
    /// it; an earlier demo history of this connection still being pulled is replaced); `false`
    /// when the user's `ingestion_start`/`ingestion_end` leave no day of it.
    history_pulling: bool,
}

/// Connect a demo provider (oura, fitbit, freestyle_libre, apple_health_kit) to a user: the
/// connection is made at once, and `days` days (default 90, at most 1100) of synthetic history
/// ending today are pulled in the background like a real provider's, announced by
/// `historical.data.<resource>.created`; new days then arrive every 30 minutes.
/// `persona`: regular (default), traveller or athlete.
#[utoipa::path(post, path = "/v2/link/connect/demo", tag = "link",
    request_body(content = DemoConnectRequest),
    responses((status = 200, description = "Connected", body = DemoConnected),
              (status = 404, description = "User not found", body = crate::http::models::ErrorDetail),
              (status = 422, description = "Validation error", body = crate::http::models::ValidationError)),
    security(("api_key" = [])))]
async fn connect_demo(
    team: AuthTeam,
    State(state): State<AppState>,
    Decoded(body, mut checks): Decoded<DemoConnectRequest>,
) -> Result<Json<DemoConnected>, ApiError> {
    if !is_demo_provider(&body.provider) {
        checks.fail(
            loc!["provider"],
            "enum",
            format!("{:?} has no demo mode; expected one of: oura, fitbit, freestyle_libre, apple_health_kit", body.provider),
        );
    }
    let days = body.days.unwrap_or(demo::DEFAULT_DAYS);
    if !(1..=MAX_DAYS).contains(&days) {
        checks.refuse(
            loc!["days"],
            days,
            format!("days must be an integer from 1 to {MAX_DAYS}"),
        );
    }
    checks.finish()?;
    let (id, provider) = (body.user_id, body.provider);
    let persona = body.persona.unwrap_or(Persona::Regular);
    let user = team_user(&state, &team, id).await?;
    let link = demo::DemoLink {
        provider: &provider,
        persona,
        days,
    };
    let connected = demo::connect(&state.meta, &state.health, &user, link, Utc::now()).await?;
    let detail = if connected.pulling {
        format!("{provider} connected; {days} days of demo history are being pulled")
    } else {
        format!("{provider} connected; its days are outside the user's ingestion bounds")
    };
    Ok(Json(DemoConnected {
        success: true,
        detail,
        user_id: user.id,
        provider,
        days,
        history_pulling: connected.pulling,
    }))
}
