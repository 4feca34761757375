//! Extractors that turn bad input into the 422 (or 401, 413) bodies of `rest-conventions.md`
//! instead of axum's plain-text rejections: JSON bodies, uuid path segments, query strings and
//! the team API key.
//!
//! **One way to read a JSON body.** Every client JSON body is read by [`read_json_bytes`]
//! (`Content-Type`, size limit, emptiness) and, when its JSON is wanted as a tree, parsed by
//! [`parse_json`] (the malformed-JSON 422 at `["body", <column>]`); the extractors differ only in
//! what the handler is given:
//! - [`Typed<T>`] and [`Decoded<T>`]: a serde model (the usual case), the first structural
//!   mistake or every violation together;
//! - [`JsonBody`]: the JSON tree, for the domains whose own validators list every violation
//!   with its location (users, webhooks, continuous queries, bulk import), whose 422 bodies a
//!   serde model would not reproduce;
//! - [`JsonBytes`]: the text, for handlers whose bytes matter (an order's idempotency key
//!   compares them; then [`parse_json`]);
//! - [`PushBody`]: the push API, parsed by ingest in one pass without a tree;
//! - the aggregate query's body is [`read_json`] under the engine's own size limit.
//!
//! Provider notifications (`notify*.rs`) are not client bodies: they are verified over their
//! raw bytes (signatures, form bodies) before anything is parsed, so they take `Bytes`.

use axum::body::HttpBody;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::PathRejection;
use axum::extract::{
    FromRequest, FromRequestParts, OptionalFromRequest, Path, RawPathParams, Request,
};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::request::Parts;
use futures::StreamExt;
use serde::de::DeserializeOwned;
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

/// A JSON request body decoded into a typed model ([`crate::validation::decode_lenient`]): the
/// first structural mistake answers the 422; members the model does not know are ignored unless
/// the model refuses them itself (`deny_unknown_fields`). A handler whose rules should be
/// reported together with unknown members takes [`Decoded`] instead.
#[derive(Debug)]
pub struct Typed<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for Typed<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let JsonBody(value) = JsonBody::from_request(req, state).await?;
        Ok(Typed(crate::validation::decode_lenient(
            &value,
            loc!["body"],
        )?))
    }
}

/// A JSON request body decoded into a typed model whose unknown members are not yet a
/// rejection: they wait in the [`Checks`](crate::validation::Checks) with the handler's own
/// rules, so the 422 lists them all together.
#[derive(Debug)]
pub struct Decoded<T>(pub T, pub crate::validation::Checks);

impl<T: DeserializeOwned> FromRequest<AppState> for Decoded<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let JsonBody(value) = JsonBody::from_request(req, state).await?;
        let (body, checks) = crate::validation::decode(&value, loc!["body"])?;
        Ok(Decoded(body, checks))
    }
}

/// An optional body: a request whose body is declared empty (no `Content-Length`, or 0, and
/// not chunked), whatever its `Content-Type`, or whose JSON is `null`, is `None`; anything else
/// is read as [`Decoded`]. For `POST`s whose every member has a default (a key rotation).
impl<T: DeserializeOwned> OptionalFromRequest<AppState> for Decoded<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Option<Self>, Self::Rejection> {
        if req.body().size_hint().exact() == Some(0) {
            return Ok(None);
        }
        let JsonBody(value) = JsonBody::from_request(req, state).await?;
        if value.is_null() {
            return Ok(None);
        }
        let (body, checks) = crate::validation::decode(&value, loc!["body"])?;
        Ok(Some(Decoded(body, checks)))
    }
}

/// A JSON request body as its text, checked like [`JsonBody`] except for the JSON itself, which
/// the handler parses in one pass (the push API: no JSON tree of a big body).
#[derive(Debug)]
pub struct JsonBytes(pub bytes::Bytes);

impl FromRequest<AppState> for JsonBytes {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let limit = state.config.body_limit;
        read_json_bytes(req, limit).await.map(JsonBytes)
    }
}

/// Reads a JSON body of at most `limit` bytes: 422 for a wrong or missing `Content-Type`, an
/// empty body or malformed JSON; 413 over the limit.
pub async fn read_json(req: Request, limit: usize) -> Result<Value, ApiError> {
    let bytes = read_json_bytes(req, limit).await?;
    parse_json(&bytes)
}

/// Parses a JSON body read by [`read_json_bytes`]: malformed JSON is a 422 at
/// `["body", <column>]`.
pub fn parse_json(bytes: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::invalid(Violation::new(
            loc!["body", e.column()],
            "json_invalid",
            format!("JSON decode error: {e}"),
        ))
    })
}

/// Reads the text of a JSON body of at most `limit` bytes into one buffer sized from
/// `Content-Length` (no second copy): 422 for a wrong or missing `Content-Type` or an empty
/// body; 413 over the limit.
pub async fn read_json_bytes(req: Request, limit: usize) -> Result<bytes::Bytes, ApiError> {
    match content_type(&req) {
        Some(ct) if is_json_content_type(&ct) => read_bytes(req, limit).await,
        other => Err(wrong_content_type(other, "application/json")),
    }
}

fn content_type(req: &Request) -> Option<String> {
    req.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The 422 of a body sent with another `Content-Type` than `expected` (or none).
fn wrong_content_type(got: Option<String>, expected: &str) -> ApiError {
    let violation =
        |msg: String| Violation::new(loc!["header", "content-type"], "content_type", msg);
    ApiError::invalid(match got {
        Some(ct) => violation(format!("expected Content-Type {expected}, got {ct:?}"))
            .with_input(Value::from(ct)),
        None => violation(format!("expected Content-Type {expected}")),
    })
}

/// A push body: JSON text, or the rows of one timeseries in a columnar encoding
/// (`ingest::parse_push_columnar`), told apart by `Content-Type`; each at most the body limit.
#[derive(Debug)]
pub enum PushBody {
    /// `application/json`.
    Json(bytes::Bytes),
    /// An Arrow IPC stream or a Parquet file.
    Columnar(crate::ingest::Columnar, bytes::Bytes),
}

impl FromRequest<AppState> for PushBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let limit = state.config.body_limit;
        let ct = content_type(&req);
        match ct
            .as_deref()
            .and_then(crate::ingest::Columnar::from_media_type)
        {
            Some(format) => Ok(PushBody::Columnar(format, read_bytes(req, limit).await?)),
            None if ct.as_deref().is_some_and(is_json_content_type) => {
                Ok(PushBody::Json(read_bytes(req, limit).await?))
            }
            None => Err(wrong_content_type(
                ct,
                &format!(
                    "application/json, {} or {}",
                    crate::ingest::ARROW_STREAM_MEDIA_TYPE,
                    crate::ingest::PARQUET_MEDIA_TYPE
                ),
            )),
        }
    }
}

/// Reads a body of at most `limit` bytes into one buffer sized from `Content-Length`: 413 over
/// the limit, 422 when it is empty (or only whitespace).
async fn read_bytes(req: Request, limit: usize) -> Result<bytes::Bytes, ApiError> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(ApiError::PayloadTooLarge(limit));
    }
    let mut buf = Vec::with_capacity(declared.unwrap_or(0));
    let mut chunks = req.into_body().into_data_stream();
    while let Some(chunk) = chunks.next().await {
        // A broken body stream is the client's: answered like an oversized one never is, so
        // as a 422 on the body.
        let chunk = chunk.map_err(|e| {
            ApiError::invalid(Violation::new(
                loc!["body"],
                "json_invalid",
                format!("could not read the request body: {e}"),
            ))
        })?;
        if buf.len() + chunk.len() > limit {
            return Err(ApiError::PayloadTooLarge(limit));
        }
        buf.extend_from_slice(&chunk);
    }
    if buf.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid(Violation::new(
            loc!["body"],
            "missing",
            "request body is required",
        )));
    }
    Ok(bytes::Bytes::from(buf))
}

/// Path parameters deserialised by axum's `Path`, whose rejections answer the 422 body of
/// `rest-conventions.md` at `["path", <name>]` instead of axum's plain-text 400 (or a 500): a
/// segment that is not UTF-8 once percent-decoded is bad input like any other.
#[derive(Debug, Clone)]
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(ApiPath(value)),
            Err(rejection) => {
                // Names by position, for a tuple element that failed (all UTF-8 then).
                let names: Vec<String> = match RawPathParams::from_request_parts(parts, state).await
                {
                    Ok(params) => params.iter().map(|(name, _)| name.to_owned()).collect(),
                    Err(_) => Vec::new(),
                };
                Err(path_rejection(&names, rejection))
            }
        }
    }
}

/// The 422 for a path that does not deserialise; a rejection that is the route's own mistake
/// (a missing or unsupported parameter type) stays a 500.
fn path_rejection(names: &[String], rejection: PathRejection) -> ApiError {
    let PathRejection::FailedToDeserializePathParams(failed) = rejection else {
        return ApiError::internal(rejection);
    };
    let (name, input, msg) = match failed.into_kind() {
        ErrorKind::InvalidUtf8InPathParam { key } => (
            key,
            None,
            "Input should be a valid UTF-8 string once percent-decoded".to_owned(),
        ),
        ErrorKind::ParseErrorAtKey {
            key,
            value,
            expected_type,
        } => (
            key,
            Some(value),
            format!("Input should be a valid {expected_type}"),
        ),
        ErrorKind::ParseErrorAtIndex {
            index,
            value,
            expected_type,
        } => (
            names
                .get(index)
                .cloned()
                .unwrap_or_else(|| index.to_string()),
            Some(value),
            format!("Input should be a valid {expected_type}"),
        ),
        ErrorKind::DeserializeError {
            key,
            value,
            message,
        } => (key, Some(value), message),
        other => return ApiError::internal(other),
    };
    let violation = Violation::value(loc!["path", name], msg);
    ApiError::invalid(match input {
        Some(value) => violation.with_input(Value::from(value)),
        None => violation,
    })
}

/// The uuid of the route's one path parameter (`user_id`, `order_id`, ...). A malformed uuid
/// (or a segment that is not UTF-8) is a 422 at `["path", <name>]`.
#[derive(Debug, Clone, Copy)]
pub struct PathId(pub Uuid);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let ApiPath(params) =
            ApiPath::<Vec<(String, String)>>::from_request_parts(parts, state).await?;
        let Some((name, value)) = params.into_iter().next() else {
            return Err(ApiError::internal(
                "PathId used on a route without parameters",
            ));
        };
        parse_uuid(&value, loc!["path", name]).map(PathId)
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

/// The rule of an integer query parameter: the one definition the handler reads it with
/// ([`QueryParams::read`]) and the OpenAPI document states (`super::doc_rules`), so the two
/// cannot disagree.
#[derive(Debug, Clone, Copy)]
pub struct IntParam {
    /// The parameter's name.
    pub name: &'static str,
    /// Its value when absent.
    pub default: i64,
    /// The smallest value accepted.
    pub min: i64,
    /// The largest value accepted.
    pub max: i64,
}

impl IntParam {
    /// A rule; `const` so handlers declare theirs as items.
    pub const fn new(name: &'static str, default: i64, min: i64, max: i64) -> IntParam {
        IntParam {
            name,
            default,
            min,
            max,
        }
    }
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

    /// The value of an integer parameter under its rule (see [`IntParam`]).
    pub fn read(&self, rule: &IntParam) -> Result<i64, ApiError> {
        self.int(rule.name, rule.default, rule.min, rule.max)
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

/// The authenticated team. Missing key → 401 "Missing API key"; unknown, revoked or expired →
/// "Invalid API key"; a spent rate limit → 429 (`super::rate_limit`).
#[derive(Debug, Clone)]
pub struct AuthTeam(pub Team);

/// The header that carries the team key.
pub const API_KEY_HEADER: &str = "x-service-api-key";

/// The reference SDKs' name for the same header, accepted as its alias so those clients work
/// with only their base URL changed. When both are sent, `x-service-api-key` is the one read.
pub const API_KEY_HEADER_ALIAS: &str = "x-vital-api-key";

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
            .or_else(|| parts.headers.get(API_KEY_HEADER_ALIAS))
            .map(|v| v.to_str().unwrap_or(""))
            .ok_or(ApiError::Unauthorized("Missing API key"))?;
        if key.is_empty() {
            return Err(ApiError::Unauthorized("Missing API key"));
        }
        // Read on every request (no cache): a key revoked or expired by any process answers
        // 401 at once.
        let team = state
            .meta
            .authenticate(key)
            .await?
            .ok_or(ApiError::Unauthorized("Invalid API key"))?
            .team;
        if let Some(slot) = parts.extensions.get::<TeamSlot>() {
            let _ = slot.0.set(team.id);
        }
        // Charged here, once the key is known to be valid: 401s spend no budget.
        super::rate_limit::charge(parts, state, key, team.id)?;
        let auth = AuthTeam(team);
        parts.extensions.insert(auth.clone());
        Ok(auth)
    }
}

/// Where the auth extractor leaves the team id for the request log line.
#[derive(Debug, Clone, Default)]
pub struct TeamSlot(pub std::sync::Arc<std::sync::OnceLock<Uuid>>);

/// The team's user named by the route's one path parameter: the key is checked first (401),
/// then the uuid (422 at `["path", "user_id"]`), then the user, answered 404 when it does not
/// exist or belongs to another team.
#[derive(Debug, Clone)]
pub struct TeamUser(pub crate::store::metadata::User);

impl FromRequestParts<AppState> for TeamUser {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let AuthTeam(team) = AuthTeam::from_request_parts(parts, state).await?;
        let PathId(id) = PathId::from_request_parts(parts, state).await?;
        state
            .meta
            .user(team.id, id)
            .await?
            .map(TeamUser)
            .ok_or(ApiError::NotFound("User"))
    }
}

/// The header a custom link widget sends its link token in (or the `token` query parameter).
pub const LINK_TOKEN_HEADER: &str = "x-link-token";

/// The reference SDKs' name for the link token header, accepted as its alias (as
/// [`API_KEY_HEADER_ALIAS`] is for the key); `x-link-token` wins when both are sent.
pub const LINK_TOKEN_HEADER_ALIAS: &str = "x-vital-link-token";

/// A verified link token (`linking.md`): missing → 401 `Missing link token`; unknown, expired
/// or consumed → 401 with `{"detail": {"error_type", "error_message"}}`.
#[derive(Debug, Clone)]
pub struct LinkToken(pub crate::link::tokens::LinkSession);

impl FromRequestParts<AppState> for LinkToken {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(LINK_TOKEN_HEADER)
            .or_else(|| parts.headers.get(LINK_TOKEN_HEADER_ALIAS))
            .map(|v| v.to_str().unwrap_or("").to_owned());
        let token = match header {
            Some(t) if !t.is_empty() => t,
            _ => {
                let query = QueryParams::from_request_parts(parts, state).await?;
                query
                    .get("token")
                    .map(str::to_owned)
                    .ok_or(ApiError::Unauthorized("Missing link token"))?
            }
        };
        let session = crate::link::tokens::check(&state.meta, &token, chrono::Utc::now()).await?;
        Ok(LinkToken(session))
    }
}

/// Who may push for the path's user: the team key (as [`TeamUser`]), or the push credential
/// of an exchanged link code (`x-link-code-token`), which pushes for its one user only and
/// only on-device providers' data (`sdk_only`).
#[derive(Debug, Clone)]
pub struct PushUser {
    /// The user pushed for.
    pub user: crate::store::metadata::User,
    /// Whether the credential is a link code's (on-device providers only).
    pub sdk_only: bool,
}

impl FromRequestParts<AppState> for PushUser {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        use crate::link::codes;
        let Some(token) = parts.headers.get(codes::PUSH_TOKEN_HEADER) else {
            let TeamUser(user) = TeamUser::from_request_parts(parts, state).await?;
            return Ok(PushUser {
                user,
                sdk_only: false,
            });
        };
        let token = token.to_str().unwrap_or("").to_owned();
        let (team, user_id) = codes::push_user(&state.meta, &token, chrono::Utc::now())
            .await?
            .ok_or(ApiError::Unauthorized("Invalid link code token"))?;
        let PathId(id) = PathId::from_request_parts(parts, state).await?;
        if id != user_id {
            return Err(ApiError::NotFound("User"));
        }
        let user = state
            .meta
            .user(team, id)
            .await?
            .ok_or(ApiError::NotFound("User"))?;
        Ok(PushUser {
            user,
            sdk_only: true,
        })
    }
}
