//! Extractors that turn bad input into the 422 (or 401, 413) bodies of `rest-conventions.md`
//! instead of axum's plain-text rejections: JSON bodies, uuid path segments, query strings and
//! the team API key.

use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use serde_json::Value;
use uuid::Uuid;

use super::AppState;
use super::error::ApiError;
use crate::loc;
use crate::store::metadata::Team;
use crate::validation::{Loc, Violation};

/// A JSON request body, decoded to a `Value` (typed parsing, with precise locations, is the
/// domain layer's job). Rejects a wrong `Content-Type`, malformed JSON and oversized bodies.
#[derive(Debug)]
pub struct JsonBody(pub Value);

fn is_json_content_type(value: &str) -> bool {
    let mime = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

impl FromRequest<AppState> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let limit = state.config.body_limit;
        read_json(req, limit).await.map(JsonBody)
    }
}

/// Reads a JSON body of at most `limit` bytes: 422 for a wrong or missing `Content-Type`, an
/// empty body or malformed JSON; 413 over the limit.
pub async fn read_json(req: Request, limit: usize) -> Result<Value, ApiError> {
    let content_type = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match content_type {
        Some(ct) if is_json_content_type(&ct) => {}
        Some(ct) => {
            return Err(ApiError::invalid(
                Violation::new(
                    loc!["header", "content-type"],
                    "content_type",
                    format!("expected Content-Type application/json, got {ct:?}"),
                )
                .with_input(Value::from(ct)),
            ));
        }
        None => {
            return Err(ApiError::invalid(Violation::new(
                loc!["header", "content-type"],
                "content_type",
                "expected Content-Type application/json",
            )));
        }
    }
    let bytes = axum::body::to_bytes(req.into_body(), limit)
        .await
        .map_err(|_| ApiError::PayloadTooLarge(limit))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid(Violation::new(
            loc!["body"],
            "missing",
            "request body is required",
        )));
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::invalid(Violation::new(
            loc!["body", e.column()],
            "json_invalid",
            format!("JSON decode error: {e}"),
        ))
    })
}

/// The uuid of the route's one path parameter (`user_id`, `order_id`, ...). A malformed uuid
/// is a 422 at `["path", <name>]`.
#[derive(Debug, Clone, Copy)]
pub struct PathId(pub Uuid);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(ApiError::internal)?;
        let Some((name, value)) = params.iter().next() else {
            return Err(ApiError::internal(
                "PathId used on a route without parameters",
            ));
        };
        parse_uuid(value, loc!["path", name]).map(PathId)
    }
}

/// Parses a uuid, or answers a 422 at `loc`.
pub fn parse_uuid(value: &str, loc: Vec<Loc>) -> Result<Uuid, ApiError> {
    Uuid::parse_str(value).map_err(|_| {
        ApiError::invalid(
            Violation::new(loc, "uuid_parsing", "Input should be a valid UUID")
                .with_input(Value::from(value)),
        )
    })
}

/// The decoded query string, with typed accessors that answer 422 at `["query", <name>]`.
/// Unknown parameters are ignored, as clients of this kind of API expect.
#[derive(Debug, Default)]
pub struct QueryParams(Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let raw = parts.uri.query().unwrap_or("");
        Ok(QueryParams(
            url::form_urlencoded::parse(raw.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        ))
    }
}

impl QueryParams {
    /// The last value of a parameter (empty values count as absent).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a repeated parameter (`?a=1&a=2`).
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// An integer in `min..=max`, or `default` when absent.
    pub fn int(&self, name: &str, default: i64, min: i64, max: i64) -> Result<i64, ApiError> {
        let Some(raw) = self.get(name) else {
            return Ok(default);
        };
        let violation = |msg: String| {
            ApiError::invalid(
                Violation::value(loc!["query", name], msg).with_input(Value::from(raw)),
            )
        };
        let value: i64 = raw
            .parse()
            .map_err(|_| violation("Input should be a valid integer".into()))?;
        if value < min || value > max {
            return Err(violation(format!(
                "Input should be between {min} and {max}, got {value}"
            )));
        }
        Ok(value)
    }
}

/// The authenticated team. Missing key → 401 "Missing API key"; unknown → "Invalid API key".
#[derive(Debug, Clone)]
pub struct AuthTeam(pub Team);

/// The header that carries the team key.
pub const API_KEY_HEADER: &str = "x-service-api-key";

impl FromRequestParts<AppState> for AuthTeam {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if let Some(team) = parts.extensions.get::<AuthTeam>() {
            return Ok(team.clone());
        }
        let key = parts
            .headers
            .get(API_KEY_HEADER)
            .map(|v| v.to_str().unwrap_or(""))
            .ok_or(ApiError::Unauthorized("Missing API key"))?;
        if key.is_empty() {
            return Err(ApiError::Unauthorized("Missing API key"));
        }
        let team = state
            .meta
            .team_for_key(key)
            .await?
            .ok_or(ApiError::Unauthorized("Invalid API key"))?;
        if let Some(slot) = parts.extensions.get::<TeamSlot>() {
            let _ = slot.0.set(team.id);
        }
        let auth = AuthTeam(team);
        parts.extensions.insert(auth.clone());
        Ok(auth)
    }
}

/// Where the auth extractor leaves the team id for the request log line.
#[derive(Debug, Clone, Default)]
pub struct TeamSlot(pub std::sync::Arc<std::sync::OnceLock<Uuid>>);
