//! Rate limits as HTTP sees them (the buckets are [`crate::rate_limit`]'s).
//!
//! A request is charged where its API key is resolved ([`super::extract::AuthTeam`]), once the
//! key proved valid: a request without a valid key is answered 401 without touching a bucket,
//! and a key's bucket is keyed by the hash of a real key only. Requests authenticated otherwise
//! (link tokens, link-code pushes, `/health`, `/metrics`) are not limited here.
//!
//! Every charged answer carries the deciding bucket's numbers (see [`stamp`]):
//! - `x-ratelimit-limit`: its capacity (the burst);
//! - `x-ratelimit-remaining`: whole requests left in it after this one;
//! - `x-ratelimit-reset`: seconds until it is full again (a delay, like `Retry-After`, so
//!   clients need no synchronised clock);
//!
//! and a refused one answers 429 with `Retry-After` (whole seconds, at least 1) and
//! `{"detail": "..."}`.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::http::HeaderValue;
use axum::http::request::Parts;
use axum::response::Response;
use uuid::Uuid;

use super::AppState;
use super::error::ApiError;
use crate::rate_limit::{Scope, Verdict};

/// The header of a bucket's capacity.
pub const LIMIT_HEADER: &str = "x-ratelimit-limit";
/// The header of the requests left.
pub const REMAINING_HEADER: &str = "x-ratelimit-remaining";
/// The header of the seconds until the bucket is full again.
pub const RESET_HEADER: &str = "x-ratelimit-reset";

/// Marks the routes whose requests also spend the team's aggregate-query budget (a route
/// layer of the aggregate router).
#[derive(Debug, Clone, Copy)]
pub struct QueryBudget;

/// Where the charge leaves its verdict for the answer's headers; `request_context` puts one
/// in every request.
#[derive(Debug, Clone, Default)]
pub struct RateSlot(Arc<OnceLock<Verdict>>);

/// Charges a request made with `key` for `team`; a 429 when a bucket is empty.
pub fn charge(parts: &Parts, state: &AppState, key: &str, team: Uuid) -> Result<(), ApiError> {
    let query = parts.extensions.get::<QueryBudget>().is_some();
    let Some(verdict) = state.limiter.check(key, team, query, Instant::now()) else {
        return Ok(());
    };
    if let Some(slot) = parts.extensions.get::<RateSlot>() {
        let _ = slot.0.set(verdict);
    }
    let Some(wait) = verdict.retry_after else {
        return Ok(());
    };
    state.metrics.rate_limited(verdict.scope);
    let limits = state.limiter.limits();
    let (whose, budget) = match verdict.scope {
        Scope::Key => ("this API key", limits.key),
        Scope::Team => ("this team", limits.team),
        Scope::Query => ("this team's aggregate queries", limits.query),
    };
    let retry_after = whole_seconds(wait).max(1);
    Err(ApiError::TooManyRequests {
        message: format!(
            "Rate limit exceeded for {whose}: {} requests per second, {} at once; retry after {retry_after} s",
            budget.per_second, budget.burst
        ),
        retry_after,
    })
}

/// Puts the `x-ratelimit-*` headers of the request's verdict, if it was charged, on its answer.
pub fn stamp(slot: &RateSlot, response: &mut Response) {
    let Some(v) = slot.0.get() else {
        return;
    };
    let headers = response.headers_mut();
    headers.insert(LIMIT_HEADER, HeaderValue::from(v.limit));
    headers.insert(REMAINING_HEADER, HeaderValue::from(v.remaining));
    headers.insert(RESET_HEADER, HeaderValue::from(whole_seconds(v.reset)));
}

/// A delay in whole seconds, rounded up (a client that waits that long finds a token).
fn whole_seconds(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// The 429 of a spent rate limit: `Retry-After` and the bucket's numbers.
pub(super) fn openapi_response() -> utoipa::openapi::Response {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder, header::HeaderBuilder};
    let integer = || {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::Integer)
            .build()
    };
    let header = |description: &str| {
        HeaderBuilder::new()
            .schema(integer())
            .description(Some(description))
            .build()
    };
    ResponseBuilder::new()
        .description(
            "A rate limit is spent (per API key, per team, or the team's aggregate queries; \
             per process). Successful answers carry the x-ratelimit-* headers too.",
        )
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorDetail")))
                .build(),
        )
        .header("Retry-After", header("Seconds to wait (at least 1)"))
        .header(LIMIT_HEADER, header("Capacity of the bucket that refused"))
        .header(REMAINING_HEADER, header("Requests left (0)"))
        .header(
            RESET_HEADER,
            header("Seconds until the bucket is full again"),
        )
        .build()
}
