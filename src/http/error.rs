//! The HTTP error model of `rest-conventions.md`: every failure leaves as JSON with a `detail`
//! member, and every status code is decided here, in one exhaustive `match` per error enum.
//!
//! A 500 never shows its cause: the cause travels to the request-context middleware in a
//! response extension, which logs it with the request id and writes the generic body with that
//! id (so clients can quote it and operators can find it).

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::store::metadata::MetadataError;
use crate::users::wire::DuplicateUser;
use crate::validation::{Invalid, Violation};

/// Everything a handler can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is well formed but not allowed now (400).
    #[error("{0}")]
    BadRequest(String),
    /// The 400 of a `client_user_id` already in use: `detail` is the existing user.
    #[error("client user id already exists")]
    DuplicateUser(DuplicateUser),
    /// A link the provider or the rules refused (400), answered as `{"detail": {"error_type",
    /// "error_message"}}`.
    #[error("{message}")]
    LinkRefused {
        /// The link error type.
        error_type: &'static str,
        /// The sentence.
        message: String,
    },
    /// No or an unknown API key (401); the message is the `detail`.
    #[error("{0}")]
    Unauthorized(&'static str),
    /// Unknown id, or another team's (404); names the resource.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// An `Accept` the endpoint cannot produce (406).
    #[error("{0}")]
    NotAcceptable(String),
    /// A conflicting change (409).
    #[error("{0}")]
    Conflict(String),
    /// Body over the size limit (413).
    #[error("request body exceeds the limit of {0} bytes")]
    PayloadTooLarge(usize),
    /// A request target longer than the server reads (414): the URI's length, the limit.
    #[error("the request URI is {0} bytes long; the limit is {1} bytes")]
    UriTooLong(usize, usize),
    /// Validation failures (422).
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// Too many requests (429), with the seconds to wait.
    #[error("{message}")]
    TooManyRequests {
        /// The sentence for `detail`.
        message: String,
        /// Seconds for `Retry-After`.
        retry_after: u64,
    },
    /// A link token that does not authenticate (401): the link error type and a sentence,
    /// answered as `{"detail": {"error_type", "error_message"}}`.
    #[error("{message}")]
    LinkToken {
        /// `invalid_token`, `token_expired` or `token_consumed`.
        error_type: &'static str,
        /// The sentence.
        message: String,
    },
    /// A query cancelled at its time limit (504).
    #[error("{0}")]
    Timeout(String),
    /// A bug or an unreachable dependency (500); the cause is logged, never shown.
    #[error("internal error: {0}")]
    Internal(String),
    /// A third party failed a request the interface answers with a 500 whose `detail` names
    /// the failure (a synchronous appointment booking the provider did not confirm).
    #[error("{0}")]
    UpstreamFailed(String),
    /// An operation of the reference's API whose domain this service does not serve (501); the
    /// sentence says what is not served and what to use instead (`unserved.rs`).
    #[error("{0}")]
    NotImplemented(&'static str),
}

impl ApiError {
    /// A 500 from any displayable cause.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        ApiError::Internal(cause.to_string())
    }

    /// A single 422 violation.
    pub fn invalid(violation: Violation) -> Self {
        ApiError::Invalid(Invalid(vec![violation]))
    }
}

impl From<MetadataError> for ApiError {
    fn from(err: MetadataError) -> Self {
        match err {
            MetadataError::ClientUserIdTaken { existing } => ApiError::Conflict(format!(
                "client_user_id {:?} already belongs to another user",
                existing.client_user_id
            )),
            MetadataError::Database(_)
            | MetadataError::Migration(_)
            | MetadataError::Corrupt { .. }
            | MetadataError::UniqueKeyContended { .. }
            | MetadataError::UnsupportedUrl(_) => ApiError::internal(err),
        }
    }
}

impl From<crate::keys::KeysError> for ApiError {
    fn from(err: crate::keys::KeysError) -> Self {
        use crate::keys::KeysError;
        match err {
            KeysError::Invalid(invalid) => ApiError::Invalid(invalid),
            KeysError::KeyNotFound => ApiError::NotFound("API key"),
            KeysError::NotRotatable(sentence) => ApiError::BadRequest(sentence),
            KeysError::Metadata(e) => e.into(),
        }
    }
}

/// Provider access's application errors answer as the link errors they are.
impl From<crate::sync::apps::AppError> for ApiError {
    fn from(err: crate::sync::apps::AppError) -> Self {
        crate::link::LinkError::from(err).into()
    }
}

impl From<crate::link::LinkError> for ApiError {
    fn from(err: crate::link::LinkError) -> Self {
        use crate::link::{LinkError, LinkErrorType};
        match err {
            LinkError::ConnectionNotFound(_) => ApiError::NotFound("Connection"),
            LinkError::Metadata(e) => e.into(),
            LinkError::Link {
                error_type:
                    t @ (LinkErrorType::InvalidToken
                    | LinkErrorType::TokenExpired
                    | LinkErrorType::TokenConsumed),
                message,
            } => ApiError::LinkToken {
                error_type: t.as_str(),
                message,
            },
            LinkError::Link {
                error_type:
                    t @ (LinkErrorType::ProviderCredentialError
                    | LinkErrorType::ProviderPasswordExpired
                    | LinkErrorType::ProviderApiError
                    | LinkErrorType::UnsupportedRegion
                    | LinkErrorType::DuplicateConnection
                    | LinkErrorType::RequiredScopesNotGranted
                    | LinkErrorType::IncorrectMfaCode
                    | LinkErrorType::UserCancelled),
                message,
            } => ApiError::LinkRefused {
                error_type: t.as_str(),
                message,
            },
            LinkError::CodeRefused(message) => ApiError::BadRequest(message),
            // Well formed, but not allowed in this deployment's (or team's) configuration.
            LinkError::NotConnectable(sentence) => ApiError::BadRequest(sentence),
            LinkError::OAuthNotConfigured(_) => ApiError::BadRequest(err.to_string()),
            LinkError::TeamAppNotFound(_) => ApiError::NotFound("Provider credentials"),
            // A deployment without `--secret-key` (or with another one than sealed the row) is
            // a configuration the operator fixes, not a bug: a 400 naming the flag, which a
            // client library does not retry as it would a 500.
            LinkError::Secret(crate::secret::SecretError::Missing) => ApiError::BadRequest(
                "This deployment has no secret key (--secret-key or WEARHOUSE_SECRET_KEY), so \
                 provider credentials can be neither stored nor read; the operator must \
                 configure one."
                    .to_owned(),
            ),
            LinkError::Secret(crate::secret::SecretError::Unsealable) => ApiError::BadRequest(
                "Stored provider credentials do not open with this deployment's secret key \
                 (--secret-key); the operator must restore the key they were sealed with, or \
                 the user must link again."
                    .to_owned(),
            ),
            LinkError::Secret(
                crate::secret::SecretError::BadKey | crate::secret::SecretError::File { .. },
            ) => ApiError::internal(err),
        }
    }
}

impl From<crate::data::DataError> for ApiError {
    fn from(err: crate::data::DataError) -> Self {
        use crate::data::DataError;
        match err {
            DataError::Invalid(invalid) => ApiError::Invalid(invalid),
            DataError::Metadata(e) => e.into(),
            DataError::Timeout(limit) => ApiError::Timeout(format!(
                "the read did not finish within {} and was cancelled; narrow the window or ask for a smaller page (limit)",
                spoken(limit)
            )),
            DataError::Store(_)
            | DataError::Arrow(_)
            | DataError::Task(_)
            | DataError::EventRecords(_) => ApiError::internal(err),
        }
    }
}

impl From<crate::query::QueryError> for ApiError {
    fn from(err: crate::query::QueryError) -> Self {
        use crate::engine::EngineError;
        use crate::query::QueryError;
        use crate::validation::Violation;
        match err {
            QueryError::Engine(EngineError::Invalid(invalid)) => ApiError::Invalid(invalid),
            QueryError::Engine(EngineError::Timeout { seconds }) => ApiError::Timeout(format!(
                "the queries did not finish within {seconds} s and were cancelled; narrow the timeframe or split the request"
            )),
            QueryError::Engine(e @ EngineError::ResultTooLarge { query, .. }) => ApiError::invalid(
                Violation::value(crate::loc!["body", "queries", query], e.to_string()),
            ),
            QueryError::Engine(e @ EngineError::ResourcesExhausted { .. }) => {
                ApiError::invalid(Violation::value(
                    crate::loc!["body"],
                    format!("{e}; narrow the timeframe or split the request"),
                ))
            }
            QueryError::Metadata(e) => e.into(),
            QueryError::Engine(
                EngineError::Planning { .. }
                | EngineError::Execution { .. }
                | EngineError::Internal(_),
            )
            | QueryError::Store(_) => ApiError::internal(err),
        }
    }
}

/// A time limit as a sentence says it: whole seconds, or milliseconds under a second.
fn spoken(limit: std::time::Duration) -> String {
    if limit >= std::time::Duration::from_secs(1) {
        format!("{} s", limit.as_secs())
    } else {
        format!("{} ms", limit.as_millis())
    }
}

/// Marks a 500 response; carries the cause to the middleware that logs it.
#[derive(Debug, Clone)]
pub struct InternalCause(pub String);

/// The body of every error: `{"detail": ...}`.
#[derive(Serialize)]
struct Detail<D: Serialize> {
    detail: D,
}

/// A link error's `detail`.
#[derive(Serialize)]
struct LinkDetail<'a> {
    error_type: &'a str,
    error_message: &'a str,
}

fn answer(status: StatusCode, detail: impl Serialize) -> Response {
    (status, Json(Detail { detail })).into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let sentence = self.to_string();
        match self {
            ApiError::BadRequest(_) => answer(StatusCode::BAD_REQUEST, sentence),
            ApiError::DuplicateUser(user) => answer(StatusCode::BAD_REQUEST, user),
            ApiError::LinkRefused {
                error_type,
                message,
            } => answer(
                StatusCode::BAD_REQUEST,
                LinkDetail {
                    error_type,
                    error_message: &message,
                },
            ),
            ApiError::Unauthorized(_) => answer(StatusCode::UNAUTHORIZED, sentence),
            ApiError::NotFound(_) => answer(StatusCode::NOT_FOUND, sentence),
            ApiError::NotAcceptable(_) => answer(StatusCode::NOT_ACCEPTABLE, sentence),
            ApiError::Conflict(_) => answer(StatusCode::CONFLICT, sentence),
            ApiError::PayloadTooLarge(_) => answer(StatusCode::PAYLOAD_TOO_LARGE, sentence),
            ApiError::UriTooLong(..) => answer(StatusCode::URI_TOO_LONG, sentence),
            ApiError::Invalid(Invalid(violations)) => {
                answer(StatusCode::UNPROCESSABLE_ENTITY, violations)
            }
            ApiError::TooManyRequests { retry_after, .. } => {
                let mut response = answer(StatusCode::TOO_MANY_REQUESTS, sentence);
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
                response
            }
            ApiError::Timeout(_) => answer(StatusCode::GATEWAY_TIMEOUT, sentence),
            ApiError::LinkToken {
                error_type,
                message,
            } => answer(
                StatusCode::UNAUTHORIZED,
                LinkDetail {
                    error_type,
                    error_message: &message,
                },
            ),
            ApiError::UpstreamFailed(_) => answer(StatusCode::INTERNAL_SERVER_ERROR, sentence),
            ApiError::NotImplemented(_) => answer(StatusCode::NOT_IMPLEMENTED, sentence),
            ApiError::Internal(cause) => {
                let mut response =
                    answer(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error");
                response.extensions_mut().insert(InternalCause(cause));
                response
            }
        }
    }
}
