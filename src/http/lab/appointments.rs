//! Appointment routes: availability, book, reschedule, cancel, get and cancellation reasons,
//! for phlebotomy (`/v3/order/{id}/phlebotomy/appointment/...`) and patient service centres
//! (`/v3/order/{id}/psc/appointment/...`).

use axum::Json;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::AppState;
use super::super::error::ApiError;
use super::super::extract::{AuthTeam, PathId, QueryParams};
use crate::http::extract::Typed;
use crate::lab::appointments::{self, slots};
use crate::lab::model::appointment::{
    Appointment, AppointmentType, Availability, BookRequest, CancelRequest, CancellationReason,
    RescheduleRequest, UsAddress,
};
use crate::lab::sandbox::SandboxScheduler;
use crate::lab::{LabError, area, catalogue::labs};
use crate::loc;
use crate::validation::Violation;

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(phlebotomy_availability))
        .routes(routes!(psc_availability))
        .routes(routes!(phlebotomy_book))
        .routes(routes!(psc_book))
        .routes(routes!(phlebotomy_reschedule))
        .routes(routes!(psc_reschedule))
        .routes(routes!(phlebotomy_cancel))
        .routes(routes!(psc_cancel))
        .routes(routes!(phlebotomy_get))
        .routes(routes!(psc_get))
        .routes(routes!(phlebotomy_reasons))
        .routes(routes!(psc_reasons))
}

/// Slots at the patient's address; each slot's booking key is single-use and expires one hour
/// before the slot.
#[utoipa::path(post, path = "/v3/order/phlebotomy/appointment/availability", tag = "lab",
    request_body = UsAddress,
    responses((status = 200, body = Availability), (status = 400, description = "The ZIP code is not served"),
              (status = 422, description = "Malformed or unknown ZIP code")),
    security(("api_key" = [])))]
async fn phlebotomy_availability(
    team: AuthTeam,
    State(state): State<AppState>,
    Typed(address): Typed<UsAddress>,
) -> Result<Json<Availability>, ApiError> {
    Ok(Json(
        slots::phlebotomy(&state.meta, &SandboxScheduler, team.0.id, address).await?,
    ))
}

/// Slots at the lab's nearest patient service centres within the radius.
#[utoipa::path(post, path = "/v3/order/psc/appointment/availability", tag = "lab",
    params(("lab" = String, Query, description = "lab slug"), ("zip_code" = String, Query),
           ("radius" = Option<String>, Query, description = "10, 20, 25, 50 or 100; default 25")),
    responses((status = 200, body = Availability), (status = 422, description = "Bad lab, ZIP code or radius")),
    security(("api_key" = [])))]
async fn psc_availability(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<Availability>, ApiError> {
    let missing = |n: &str| {
        ApiError::invalid(Violation::new(
            loc!["query", n],
            "missing",
            "Field required",
        ))
    };
    let lab = query.get("lab").ok_or_else(|| missing("lab"))?;
    if labs::lab_by_slug(lab).is_none() {
        return Err(LabError::invalid(
            Violation::value(
                loc!["query", "lab"],
                format!("unknown lab {lab:?}; expected one of: {}", labs::slugs()),
            )
            .with_input(lab.into()),
        )
        .into());
    }
    let zip = area::known_zip(
        query.get("zip_code").ok_or_else(|| missing("zip_code"))?,
        loc!["query", "zip_code"],
        true,
    )?;
    let radius = area::parse_radius(query.get("radius"), loc!["query", "radius"])?;
    let index = state.lab.pscs();
    Ok(Json(
        slots::psc(
            &state.meta,
            &SandboxScheduler,
            &index,
            team.0.id,
            lab,
            zip,
            radius,
        )
        .await?,
    ))
}

/// Books a phlebotomy appointment. `async_confirmation` false waits for the provider and answers
/// 500 with a `detail` if it does not confirm; true answers a `pending` appointment when the
/// confirmation does not arrive within `sync_confirmation_timeout_millisecond` and keeps waiting
/// in the background (a durable job) until `async_confirmation_timeout_millisecond`.
#[utoipa::path(post, path = "/v3/order/{order_id}/phlebotomy/appointment/book", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)), request_body = BookRequest,
    responses((status = 200, body = Appointment),
              (status = 400, description = "Unknown, used or expired booking key; order not bookable"),
              (status = 422, description = "Notes over 1000 characters, timeouts out of range, bad time zone"),
              (status = 500, description = "Synchronous booking the provider did not confirm: {detail}")),
    security(("api_key" = [])))]
async fn phlebotomy_book(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    Typed(body): Typed<BookRequest>,
) -> Result<Json<Appointment>, ApiError> {
    Ok(Json(
        appointments::book(
            &state.meta,
            &SandboxScheduler,
            team.0.id,
            id,
            AppointmentType::Phlebotomy,
            body,
        )
        .await?,
    ))
}

/// Books a patient service centre appointment (same rules as phlebotomy booking).
#[utoipa::path(post, path = "/v3/order/{order_id}/psc/appointment/book", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)), request_body = BookRequest,
    responses((status = 200, body = Appointment), (status = 400, description = "Key or order not usable"),
              (status = 500, description = "Synchronous booking the provider did not confirm")),
    security(("api_key" = [])))]
async fn psc_book(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    Typed(body): Typed<BookRequest>,
) -> Result<Json<Appointment>, ApiError> {
    Ok(Json(
        appointments::book(
            &state.meta,
            &SandboxScheduler,
            team.0.id,
            id,
            AppointmentType::PatientServiceCenter,
            body,
        )
        .await?,
    ))
}

/// Moves the active phlebotomy appointment to another slot.
#[utoipa::path(patch, path = "/v3/order/{order_id}/phlebotomy/appointment/reschedule", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)), request_body = RescheduleRequest,
    responses((status = 200, body = Appointment), (status = 400, description = "Key not usable or no active appointment"),
              (status = 404, description = "No such order or appointment")),
    security(("api_key" = [])))]
async fn phlebotomy_reschedule(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    Typed(body): Typed<RescheduleRequest>,
) -> Result<Json<Appointment>, ApiError> {
    Ok(Json(
        appointments::reschedule(
            &state.meta,
            team.0.id,
            id,
            AppointmentType::Phlebotomy,
            body,
        )
        .await?,
    ))
}

/// Moves the active PSC appointment to another slot.
#[utoipa::path(patch, path = "/v3/order/{order_id}/psc/appointment/reschedule", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)), request_body = RescheduleRequest,
    responses((status = 200, body = Appointment)), security(("api_key" = [])))]
async fn psc_reschedule(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    Typed(body): Typed<RescheduleRequest>,
) -> Result<Json<Appointment>, ApiError> {
    Ok(Json(
        appointments::reschedule(
            &state.meta,
            team.0.id,
            id,
            AppointmentType::PatientServiceCenter,
            body,
        )
        .await?,
    ))
}

/// Cancels the active phlebotomy appointment with a reason.
#[utoipa::path(patch, path = "/v3/order/{order_id}/phlebotomy/appointment/cancel", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)), request_body = CancelRequest,
    responses((status = 200, body = Appointment), (status = 400, description = "Not active"),
              (status = 422, description = "Unknown reason or notes over 1000 characters")),
    security(("api_key" = [])))]
async fn phlebotomy_cancel(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    Typed(body): Typed<CancelRequest>,
) -> Result<Json<Appointment>, ApiError> {
    Ok(Json(
        appointments::cancel(
            &state.meta,
            team.0.id,
            id,
            AppointmentType::Phlebotomy,
            body,
        )
        .await?,
    ))
}

/// Cancels the active PSC appointment with a reason.
#[utoipa::path(patch, path = "/v3/order/{order_id}/psc/appointment/cancel", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)), request_body = CancelRequest,
    responses((status = 200, body = Appointment)), security(("api_key" = [])))]
async fn psc_cancel(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    Typed(body): Typed<CancelRequest>,
) -> Result<Json<Appointment>, ApiError> {
    Ok(Json(
        appointments::cancel(
            &state.meta,
            team.0.id,
            id,
            AppointmentType::PatientServiceCenter,
            body,
        )
        .await?,
    ))
}

/// The order's phlebotomy appointment.
#[utoipa::path(get, path = "/v3/order/{order_id}/phlebotomy/appointment", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)),
    responses((status = 200, body = Appointment), (status = 404, description = "No such order or appointment")),
    security(("api_key" = [])))]
async fn phlebotomy_get(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<Appointment>, ApiError> {
    let (_, appt) =
        appointments::current(&state.meta, team.0.id, id, AppointmentType::Phlebotomy).await?;
    Ok(Json(appt))
}

/// The order's PSC appointment.
#[utoipa::path(get, path = "/v3/order/{order_id}/psc/appointment", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)),
    responses((status = 200, body = Appointment), (status = 404, description = "No such order or appointment")),
    security(("api_key" = [])))]
async fn psc_get(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<Appointment>, ApiError> {
    let (_, appt) = appointments::current(
        &state.meta,
        team.0.id,
        id,
        AppointmentType::PatientServiceCenter,
    )
    .await?;
    Ok(Json(appt))
}

/// Why a phlebotomy appointment can be cancelled.
#[utoipa::path(get, path = "/v3/order/phlebotomy/appointment/cancellation-reasons", tag = "lab",
    responses((status = 200, body = Vec<CancellationReason>)), security(("api_key" = [])))]
async fn phlebotomy_reasons(_team: AuthTeam) -> Json<Vec<CancellationReason>> {
    Json(appointments::reasons())
}

/// Why a PSC appointment can be cancelled.
#[utoipa::path(get, path = "/v3/order/psc/appointment/cancellation-reasons", tag = "lab",
    responses((status = 200, body = Vec<CancellationReason>)), security(("api_key" = [])))]
async fn psc_reasons(_team: AuthTeam) -> Json<Vec<CancellationReason>> {
    Json(appointments::reasons())
}
