//! `POST /v2/link/connect/demo`: the demo connection, which fills a user's history with
//! synthetic data from a demo-capable provider (`data-model.md` §Providers).

use axum::Json;
use axum::extract::State;
use chrono::Utc;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::data::demo;
use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::extract::{AuthTeam, Decoded};
use crate::http::models::DemoConnectRequest;
use crate::http::users::team_user;
use crate::ingest::demo::{MAX_DAYS, Persona, is_demo_provider};
use crate::loc;

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
    /// Days of history generated.
    days: u32,
    /// Rows stored by each demo push: per table (push keys) and per timeseries resource.
    #[schema(value_type = Vec<Object>)]
    stored: Vec<Value>,
}

/// Connect a demo provider (oura, fitbit, freestyle_libre, apple_health_kit) to a user and
/// backfill `days` days (default 90, at most 1100) of synthetic data ending today.
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
    let now = Utc::now();
    let stored = demo::connect(
        &state.meta,
        &state.health,
        &user,
        &provider,
        persona,
        days,
        now.date_naive(),
        now,
    )
    .await?;
    Ok(Json(DemoConnected {
        success: true,
        detail: format!("{provider} connected with {days} days of demo data"),
        user_id: user.id,
        provider,
        days,
        stored,
    }))
}
