//! Telling an unserved method from an unknown path. axum answers 405 whenever a route's
//! template matches, so a parameter catches any segment: `GET /v2/user/{uuid}/device` met
//! `DELETE /v2/user/{user_id}/{provider}` and answered 405 "Allow: DELETE", although no route
//! serves that path. Here the route's path parameters are checked against the rules the
//! OpenAPI document states for them (a UUID, one of an enum's values): a value outside them
//! means the path is unknown, answered 404 like any other; otherwise the method is the wrong
//! one, answered 405 with the JSON body (axum adds `Allow`). Served methods keep their own
//! answers (a malformed id there is a 422 naming the parameter, as the reference answers).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use axum::extract::{MatchedPath, RawPathParams};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::error::ApiError;
use super::models;

/// What a path parameter admits.
#[derive(Debug, Clone)]
enum Rule {
    /// A UUID.
    Uuid,
    /// One of these values.
    OneOf(BTreeSet<String>),
}

impl Rule {
    fn admits(&self, value: &str) -> bool {
        match self {
            Rule::Uuid => uuid::Uuid::parse_str(value).is_ok(),
            Rule::OneOf(values) => values.contains(value),
        }
    }
}

/// The rules of every route's path parameters, by route template.
#[derive(Debug, Clone, Default)]
pub(super) struct PathRules(Arc<HashMap<String, HashMap<String, Rule>>>);

impl PathRules {
    /// Reads the rules the document states for its path parameters (`format: uuid`, `enum`).
    pub(super) fn from_doc(doc: &utoipa::openapi::OpenApi) -> PathRules {
        let doc = serde_json::to_value(doc).unwrap_or_default();
        let mut out: HashMap<String, HashMap<String, Rule>> = HashMap::new();
        let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
            return PathRules::default();
        };
        for (path, item) in paths {
            let operations = item.as_object().into_iter().flat_map(|m| m.values());
            for parameter in operations
                .filter_map(|op| op.get("parameters")?.as_array())
                .flatten()
                .filter(|p| p.get("in").and_then(Value::as_str) == Some("path"))
            {
                let (Some(name), Some(schema)) = (
                    parameter.get("name").and_then(Value::as_str),
                    parameter.get("schema"),
                ) else {
                    continue;
                };
                let rule = if let Some(values) = schema.get("enum").and_then(Value::as_array) {
                    Rule::OneOf(
                        values
                            .iter()
                            .filter_map(|v| v.as_str().map(str::to_owned))
                            .collect(),
                    )
                } else if schema.get("format").and_then(Value::as_str) == Some("uuid") {
                    Rule::Uuid
                } else {
                    continue;
                };
                out.entry(path.clone())
                    .or_default()
                    .insert(name.to_owned(), rule);
            }
        }
        PathRules(Arc::new(out))
    }

    /// Whether every parameter of the matched route admits its value.
    fn admits(&self, template: &str, params: &RawPathParams) -> bool {
        let Some(rules) = self.0.get(template) else {
            return true;
        };
        params
            .iter()
            .all(|(name, value)| rules.get(name).is_none_or(|rule| rule.admits(value)))
    }
}

/// The route's raw path parameters, when they could be read.
pub(super) type Params = Result<RawPathParams, axum::extract::rejection::RawPathParamsRejection>;

/// The answer to a method the matched route does not serve: 404 when the path is not one of
/// the route's (a parameter's value outside its rules), else 405 with the JSON body.
pub(super) async fn method_not_allowed(
    rules: PathRules,
    matched: Option<MatchedPath>,
    params: Option<RawPathParams>,
) -> Response {
    if let (Some(matched), Some(params)) = (matched, params)
        && !rules.admits(matched.as_str(), &params)
    {
        return ApiError::NotFound("Route").into_response();
    }
    (
        StatusCode::METHOD_NOT_ALLOWED,
        axum::Json(models::ErrorDetail {
            detail: "Method Not Allowed".to_owned(),
        }),
    )
        .into_response()
}

/// Removes `Allow` from every answer but a 405: axum names the matched route's methods on any
/// answer of it, also on the 404 of an unknown path behind that route.
pub(super) async fn allow_only_on_405(mut response: Response) -> Response {
    if response.status() != StatusCode::METHOD_NOT_ALLOWED {
        response.headers_mut().remove(axum::http::header::ALLOW);
    }
    response
}
