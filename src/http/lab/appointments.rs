//! Appointment routes: availability, book, reschedule, cancel, get and cancellation reasons,
//! for phlebotomy (`/v3/order/{id}/phlebotomy/appointment/...`) and patient service centres
//! (`/v3/order/{id}/psc/appointment/...`). Book, reschedule, cancel and get are one handler
//! each over both kinds ([`OrderAppointment`]); availability differs by kind (an address
//! against a lab and radius) and keeps one handler per kind.

use axum::Json;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::AppState;
use super::super::error::ApiError;
use super::super::extract::{ApiPath, AuthTeam, QueryParams, parse_uuid};
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
        .routes(routes!(book))
        .routes(routes!(reschedule))
        .routes(routes!(cancel))
        .routes(routes!(get))
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

/// The order and the kind of appointment a path names:
/// `/v3/order/{order_id}/{appointment_type}/appointment/...`, where `appointment_type` is
/// `phlebotomy` (at the patient's address) or `psc` (at a patient service centre).
///
/// The reference documents each operation twice, once per kind, with the same body and
/// answer; wearhouse serves both from one handler per operation (issue 36) and documents one
/// templated path whose parameter is that enum, so the reference's literal paths are exactly
/// the values it admits (`tests/it/api/surface_team/unserved.rs` and the SDK check match them
/// so). A kind outside the enum is an unknown route: 404, as any other unknown path.
struct OrderAppointment {
    order: uuid::Uuid,
    kind: AppointmentType,
}

/// The `appointment_type` path parameter, as documented and as read.
#[derive(utoipa::ToSchema, serde::Deserialize)]
#[schema(rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
enum AppointmentPlace {
    Phlebotomy,
    Psc,
}

impl From<AppointmentPlace> for AppointmentType {
    fn from(place: AppointmentPlace) -> Self {
        match place {
            AppointmentPlace::Phlebotomy => AppointmentType::Phlebotomy,
            AppointmentPlace::Psc => AppointmentType::PatientServiceCenter,
        }
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for OrderAppointment {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let ApiPath(params) =
            ApiPath::<Vec<(String, String)>>::from_request_parts(parts, state).await?;
        let value = |name: &str| {
            params
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
                .ok_or_else(|| ApiError::internal(format!("route without {name}")))
        };
        let place = value("appointment_type")?;
        let place: serde::de::value::StrDeserializer<serde::de::value::Error> =
            serde::de::IntoDeserializer::into_deserializer(place);
        let kind = <AppointmentPlace as serde::Deserialize>::deserialize(place)
            .map(AppointmentType::from)
            .map_err(|_| ApiError::NotFound("Route"))?;
        let order = parse_uuid(value("order_id")?, loc!["path", "order_id"])?;
        Ok(OrderAppointment { order, kind })
    }
}

/// Books an appointment. `async_confirmation` false waits for the provider and answers 500
/// with a `detail` if it does not confirm; true answers a `pending` appointment when the
/// confirmation does not arrive within `sync_confirmation_timeout_millisecond` and keeps
/// waiting in the background (a durable job) until `async_confirmation_timeout_millisecond`.
#[utoipa::path(post, path = "/v3/order/{order_id}/{appointment_type}/appointment/book", tag = "lab",
    params(("order_id" = uuid::Uuid, Path), ("appointment_type" = inline(AppointmentPlace), Path)),
    request_body = BookRequest,
    responses((status = 200, body = Appointment),
              (status = 400, description = "Unknown, used or expired booking key; order not bookable"),
              (status = 422, description = "Notes over 1000 characters, timeouts out of range, bad time zone"),
              (status = 500, description = "Synchronous booking the provider did not confirm: {detail}")),
    security(("api_key" = [])))]
async fn book(
    team: AuthTeam,
    State(state): State<AppState>,
    at: OrderAppointment,
    Typed(body): Typed<BookRequest>,
) -> Result<Json<Appointment>, ApiError> {
    let booked = appointments::book(
        &state.meta,
        &SandboxScheduler,
        team.0.id,
        at.order,
        at.kind,
        body,
    )
    .await?;
    Ok(Json(booked))
}

/// Moves the order's active appointment to another slot.
#[utoipa::path(patch, path = "/v3/order/{order_id}/{appointment_type}/appointment/reschedule", tag = "lab",
    params(("order_id" = uuid::Uuid, Path), ("appointment_type" = inline(AppointmentPlace), Path)),
    request_body = RescheduleRequest,
    responses((status = 200, body = Appointment), (status = 400, description = "Key not usable or no active appointment"),
              (status = 404, description = "No such order or appointment")),
    security(("api_key" = [])))]
async fn reschedule(
    team: AuthTeam,
    State(state): State<AppState>,
    at: OrderAppointment,
    Typed(body): Typed<RescheduleRequest>,
) -> Result<Json<Appointment>, ApiError> {
    let moved = appointments::reschedule(&state.meta, team.0.id, at.order, at.kind, body).await?;
    Ok(Json(moved))
}

/// Cancels the order's active appointment with a reason.
#[utoipa::path(patch, path = "/v3/order/{order_id}/{appointment_type}/appointment/cancel", tag = "lab",
    params(("order_id" = uuid::Uuid, Path), ("appointment_type" = inline(AppointmentPlace), Path)),
    request_body = CancelRequest,
    responses((status = 200, body = Appointment), (status = 400, description = "Not active"),
              (status = 422, description = "Unknown reason or notes over 1000 characters")),
    security(("api_key" = [])))]
async fn cancel(
    team: AuthTeam,
    State(state): State<AppState>,
    at: OrderAppointment,
    Typed(body): Typed<CancelRequest>,
) -> Result<Json<Appointment>, ApiError> {
    let cancelled = appointments::cancel(&state.meta, team.0.id, at.order, at.kind, body).await?;
    Ok(Json(cancelled))
}

/// The order's appointment of that kind.
#[utoipa::path(get, path = "/v3/order/{order_id}/{appointment_type}/appointment", tag = "lab",
    params(("order_id" = uuid::Uuid, Path), ("appointment_type" = inline(AppointmentPlace), Path)),
    responses((status = 200, body = Appointment), (status = 404, description = "No such order or appointment")),
    security(("api_key" = [])))]
async fn get(
    team: AuthTeam,
    State(state): State<AppState>,
    at: OrderAppointment,
) -> Result<Json<Appointment>, ApiError> {
    let (_, appointment) = appointments::current(&state.meta, team.0.id, at.order, at.kind).await?;
    Ok(Json(appointment))
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
