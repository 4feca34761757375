//! `/v3/order...` and `/v3/orders`: create (with `X-Idempotency-Key`), get, cancel, activation
//! date, list, the sandbox walk, results, requisition PDF.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::AppState;
use super::super::error::ApiError;
use super::super::extract::{AuthTeam, JsonBytes, PathId, QueryParams, parse_json};
use super::page;
use crate::http::extract::Typed;
use crate::lab::model::enums::Low;
use crate::lab::model::order::{
    CreateOrder, Order, OrderResponse, OrderResults, OrdersPage, PatchOrder,
};
use crate::lab::orders::{self, idempotency, list, requisition, results};
use crate::loc;
use crate::validation::Violation;
use crate::validation::decode_lenient;

/// Documented routes of this module.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_order))
        .routes(routes!(get_order, patch_order))
        .routes(routes!(cancel_order))
        .routes(routes!(list_orders))
        .routes(routes!(walk_order))
        .routes(routes!(order_result))
        .routes(routes!(requisition_pdf))
}

async fn create(
    state: &AppState,
    team: uuid::Uuid,
    bytes: &[u8],
) -> Result<OrderResponse, ApiError> {
    let value = parse_json(bytes)?;
    let req: CreateOrder = decode_lenient(&value, loc!["body"])?;
    Ok(orders::create(&state.meta, team, req).await?)
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// Creates an order. With `X-Idempotency-Key` the first answer for the key (failures included;
/// with `X-Idempotency-Error: no-cache` successes only) is kept 24 h and replayed; the key with a
/// different body answers 422, a duplicate while the first runs 409.
#[utoipa::path(post, path = "/v3/order", tag = "lab", request_body = CreateOrder,
    params(("X-Idempotency-Key" = Option<String>, Header), ("X-Idempotency-Error" = Option<String>, Header, description = "no-cache: keep successes only")),
    responses((status = 200, body = OrderResponse),
              (status = 409, description = "A request with this key is still running"),
              (status = 422, description = "Invalid order, or the key reused with another body")),
    security(("api_key" = [])))]
async fn create_order(
    team: AuthTeam,
    State(state): State<AppState>,
    headers: HeaderMap,
    JsonBytes(bytes): JsonBytes,
) -> Result<Response, ApiError> {
    let team = team.0.id;
    let key = match headers.get("x-idempotency-key") {
        None => None,
        Some(v) => Some(v.to_str().map(str::to_owned).map_err(|_| {
            ApiError::invalid(Violation::value(
                loc!["header", "x-idempotency-key"],
                "X-Idempotency-Key must be printable ASCII",
            ))
        })?),
    };
    let Some(key) = key else {
        return Ok(Json(create(&state, team, &bytes).await?).into_response());
    };
    if let idempotency::Claim::Replay { status, body } =
        idempotency::claim(&state.meta, team, &key, &bytes).await?
    {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
        return Ok(json_response(status, body));
    }
    let no_cache = headers
        .get("x-idempotency-error")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("no-cache"));
    let (status, body) = match create(&state, team, &bytes).await {
        Ok(created) => (
            StatusCode::OK,
            serde_json::to_string(&created).unwrap_or_default(),
        ),
        Err(e) => {
            let response = e.into_response();
            let status = response.status();
            if status.is_server_error() {
                // A failure of ours is not an answer to replay: free the key for a retry.
                idempotency::finish(&state.meta, team, &key, status.as_u16(), "", false).await?;
                return Ok(response);
            }
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .map_err(ApiError::internal)?;
            (status, String::from_utf8_lossy(&bytes).into_owned())
        }
    };
    let keep = status.is_success() || !no_cache;
    idempotency::finish(&state.meta, team, &key, status.as_u16(), &body, keep).await?;
    Ok(json_response(status, body))
}

/// One order.
#[utoipa::path(get, path = "/v3/order/{order_id}", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)),
    responses((status = 200, body = Order), (status = 404, description = "No such order")),
    security(("api_key" = [])))]
async fn get_order(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<Order>, ApiError> {
    Ok(Json(orders::get(&state.meta, team.0.id, id).await?))
}

/// Changes a scheduled order's `activate_by`.
#[utoipa::path(patch, path = "/v3/order/{order_id}", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)), request_body = PatchOrder,
    responses((status = 200, body = OrderResponse), (status = 400, description = "The order is not scheduled"), (status = 404, description = "No such order")),
    security(("api_key" = [])))]
async fn patch_order(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    Typed(body): Typed<PatchOrder>,
) -> Result<Json<OrderResponse>, ApiError> {
    Ok(Json(OrderResponse {
        order: orders::patch(&state.meta, team.0.id, id, body).await?,
        status: "success".to_owned(),
        message: "Order updated".to_owned(),
    }))
}

/// Cancels an order (only from a cancellable state; 400 names the state otherwise).
#[utoipa::path(post, path = "/v3/order/{order_id}/cancel", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)),
    responses((status = 200, body = OrderResponse), (status = 400, description = "Not cancellable in its state"), (status = 404, description = "No such order")),
    security(("api_key" = [])))]
async fn cancel_order(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<OrderResponse>, ApiError> {
    Ok(Json(OrderResponse {
        order: orders::cancel(&state.meta, team.0.id, id).await?,
        status: "success".to_owned(),
        message: "Order cancelled".to_owned(),
    }))
}

/// The team's orders: every filter ANDed, sorted, by page.
#[utoipa::path(get, path = "/v3/orders", tag = "lab",
    params(("search_input" = Option<String>, Query), ("start_date" = Option<String>, Query),
           ("end_date" = Option<String>, Query), ("updated_start_date" = Option<String>, Query),
           ("updated_end_date" = Option<String>, Query), ("status" = Option<Vec<String>>, Query),
           ("order_key" = Option<String>, Query, description = "created_at (default), patient_name, last_status"),
           ("order_direction" = Option<String>, Query, description = "desc (default) or asc"),
           ("order_type" = Option<Vec<String>>, Query), ("is_critical" = Option<bool>, Query),
           ("interpretation" = Option<String>, Query), ("order_activation_types" = Option<Vec<String>>, Query),
           ("user_id" = Option<uuid::Uuid>, Query), ("patient_name" = Option<String>, Query),
           ("shipping_recipient_name" = Option<String>, Query), ("order_ids" = Option<Vec<uuid::Uuid>>, Query),
           ("order_transaction_id" = Option<uuid::Uuid>, Query),
           ("page" = Option<i64>, Query), ("size" = Option<i64>, Query)),
    responses((status = 200, body = OrdersPage), (status = 422, description = "A bad filter, sort or page")),
    security(("api_key" = [])))]
async fn list_orders(
    team: AuthTeam,
    State(state): State<AppState>,
    query: QueryParams,
) -> Result<Json<OrdersPage>, ApiError> {
    let p = page(&query)?;
    Ok(Json(list::list(&state.meta, team.0.id, &query, p).await?))
}

/// Sandbox: walks the order along the legal path to `final_status`, one event per step;
/// results are filled on `partial_results` and `completed`.
#[utoipa::path(post, path = "/v3/order/{order_id}/test", tag = "lab",
    params(("order_id" = uuid::Uuid, Path), ("final_status" = String, Query, description = "a low-level status, alone or as `<top>.<method>.<low>`")),
    responses((status = 200, body = Order), (status = 400, description = "Not reachable from the current state")),
    security(("api_key" = [])))]
async fn walk_order(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
    query: QueryParams,
) -> Result<Json<Order>, ApiError> {
    let raw = query.get("final_status").ok_or_else(|| {
        ApiError::invalid(Violation::new(
            loc!["query", "final_status"],
            "missing",
            "Field required",
        ))
    })?;
    // The reference's SDK sends the full `<top>.<method>.<low>` form; the low-level status is
    // its last part.
    let low = raw.rsplit('.').next().unwrap_or(raw);
    let target: Low = low.parse().map_err(|()| {
        ApiError::invalid(
            Violation::value(
                loc!["query", "final_status"],
                format!("unknown status {raw:?}; expected one of: {}", Low::names()),
            )
            .with_input(raw.into()),
        )
    })?;
    Ok(Json(
        orders::walk(&state.meta, team.0.id, id, target).await?,
    ))
}

/// The order's results (empty before `partial_results`).
#[utoipa::path(get, path = "/v3/order/{order_id}/result", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)),
    responses((status = 200, body = OrderResults), (status = 404, description = "No such order")),
    security(("api_key" = [])))]
async fn order_result(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Json<OrderResults>, ApiError> {
    Ok(Json(results::get(&state.meta, team.0.id, id).await?))
}

/// A PDF document, as the OpenAPI document describes it: a binary string.
pub(super) struct PdfBytes;

impl utoipa::PartialSchema for PdfBytes {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .description(Some("A PDF document."))
            .into()
    }
}

impl utoipa::ToSchema for PdfBytes {}

/// The requisition form as a PDF.
#[utoipa::path(get, path = "/v3/order/{order_id}/requisition/pdf", tag = "lab",
    params(("order_id" = uuid::Uuid, Path)),
    responses((status = 200, content_type = "application/pdf", body = PdfBytes, description = "The requisition"), (status = 404, description = "No such order")),
    security(("api_key" = [])))]
async fn requisition_pdf(
    team: AuthTeam,
    State(state): State<AppState>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let (order, tests) = orders::with_tests(&state.meta, team.0.id, id).await?;
    super::documents::pdf_response(format!("requisition-{id}.pdf"), move || {
        requisition::render(&order, &tests)
    })
    .await
}
