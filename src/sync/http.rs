//! What every connector's calls to its provider share: an HTTP client (30 s per request,
//! connection included; no redirects followed), a base URL, and one JSON `GET` with the user's
//! credential (an OAuth bearer token, or a password provider's session cookie) whose status
//! becomes a [`SyncError`]: 401 `Unauthorised`, 429 `RateLimited` with the wait the provider
//! named, 408 and 5xx `Transient`, any other status `Permanent`; a transport failure (timeout,
//! refused or broken connection) is `Transient`. A provider whose 429 names its wait in
//! headers of its own (Strava's usage and limit pairs) reads them with
//! [`Api::with_rate_limit_wait`].

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::header::{ACCEPT, COOKIE, HeaderMap, RETRY_AFTER};
use serde_json::Value;

use super::SyncError;

/// How long one request may take, connection included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest part of an error body kept in an error message.
const ERROR_BODY_CHARS: usize = 200;

/// One provider's API: its client, base URL and name (for messages).
#[derive(Debug, Clone)]
pub struct Api {
    http: reqwest::Client,
    /// The base URL without a trailing slash.
    base: String,
    /// The provider's display name (`Oura`).
    name: &'static str,
    /// A header naming the seconds until a rate limit resets, read when `Retry-After` is not.
    reset_header: Option<&'static str>,
    /// How calls carry the user's credential.
    credential: Credential,
    /// Headers every call sends besides.
    headers: Vec<(&'static str, String)>,
    /// The provider's own reading of a 429's headers, when `Retry-After` names no wait.
    rate_limit_wait: Option<RateLimitWait>,
}

/// Reads the seconds a 429 asks to wait from the provider's own headers, at `now`.
pub type RateLimitWait = fn(&HeaderMap, DateTime<Utc>) -> Option<u64>;

/// How an API's calls carry the user's credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credential {
    /// `Authorization: Bearer <token>` (OAuth 2.0).
    Bearer,
    /// A session cookie of this name (a password provider's sign-in session).
    Cookie(&'static str),
}

impl Api {
    /// The API of `name` at `base_url`, with its own client.
    pub fn new(name: &'static str, base_url: &str) -> Result<Api, SyncError> {
        let parsed = url::Url::parse(base_url).map_err(|e| SyncError::Permanent {
            reason: format!("invalid {name} API URL {base_url:?}: {e}"),
        })?;
        Ok(Api::with_client(name, parsed, client()?))
    }

    /// The API of `name` at `base_url` over an existing client.
    pub fn with_client(name: &'static str, base_url: url::Url, http: reqwest::Client) -> Api {
        Api {
            http,
            base: base_url.as_str().trim_end_matches('/').to_owned(),
            name,
            reset_header: None,
            credential: Credential::Bearer,
            headers: Vec::new(),
            rate_limit_wait: None,
        }
    }

    /// The same API, sending the credential as the session cookie `name` instead of a bearer
    /// token.
    pub fn with_session_cookie(mut self, name: &'static str) -> Api {
        self.credential = Credential::Cookie(name);
        self
    }

    /// The same API, sending `name: value` with every call.
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Api {
        self.headers.push((name, value.into()));
        self
    }

    /// The same API, reading `header` (seconds) for a 429's wait when `Retry-After` is absent.
    pub fn with_reset_header(mut self, header: &'static str) -> Api {
        self.reset_header = Some(header);
        self
    }

    /// The same API, reading a 429's wait with `wait` when `Retry-After` names none.
    pub fn with_rate_limit_wait(mut self, wait: RateLimitWait) -> Api {
        self.rate_limit_wait = Some(wait);
        self
    }

    /// `GET {base}{path}?{query}` with the credential `token`, answering its JSON body.
    pub async fn get(
        &self,
        token: &str,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Value, SyncError> {
        let request = self.http.get(format!("{}{path}", self.base)).query(query);
        self.send(token, path, request, false)
            .await?
            .ok_or_else(|| SyncError::Permanent {
                reason: format!("{} answered 404 to {path}", self.name),
            })
    }

    /// [`Api::get`], answering `None` when the provider answers 404 (a document that is gone,
    /// or that a record never had).
    pub async fn get_optional(
        &self,
        token: &str,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Option<Value>, SyncError> {
        let request = self.http.get(format!("{}{path}", self.base)).query(query);
        self.send(token, path, request, true).await
    }

    /// `POST {base}{path}` with the JSON `body` and the credential `token`, answering its JSON
    /// body (Google's `:dailyRollUp`, a read that takes its arguments as a body).
    pub async fn post_json(
        &self,
        token: &str,
        path: &str,
        body: &Value,
    ) -> Result<Value, SyncError> {
        let request = self.http.post(format!("{}{path}", self.base)).json(body);
        self.send(token, path, request, false)
            .await?
            .ok_or_else(|| SyncError::Permanent {
                reason: format!("{} answered 404 to {path}", self.name),
            })
    }

    /// Sends `request` with the credential and the API's headers; its status becomes a
    /// [`SyncError`] as the module says, except a 404 when `absent_ok` (then `None`).
    async fn send(
        &self,
        token: &str,
        path: &str,
        request: reqwest::RequestBuilder,
        absent_ok: bool,
    ) -> Result<Option<Value>, SyncError> {
        let name = self.name;
        let mut request = request.header(ACCEPT, "application/json");
        request = match self.credential {
            Credential::Bearer => request.bearer_auth(token),
            Credential::Cookie(cookie) => request.header(COOKIE, format!("{cookie}={token}")),
        };
        for (header, value) in &self.headers {
            request = request.header(*header, value.as_str());
        }
        let response = request.send().await.map_err(|e| transport(name, e))?;
        let status = response.status();
        if status.is_success() {
            let bytes = response.bytes().await.map_err(|e| transport(name, e))?;
            return serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| SyncError::Permanent {
                    reason: format!("{name} answered {status} with a body that is not JSON: {e}"),
                });
        }
        if absent_ok && status.as_u16() == 404 {
            return Ok(None);
        }
        let now = Utc::now();
        let wait = retry_after(response.headers(), now, self.reset_header).or_else(|| {
            self.rate_limit_wait
                .and_then(|f| f(response.headers(), now))
        });
        // The body only feeds the error message: a failure to read it changes nothing.
        let text = response.text().await.unwrap_or_default();
        let detail: String = text.chars().take(ERROR_BODY_CHARS).collect();
        Err(match status.as_u16() {
            401 => SyncError::Unauthorised,
            429 => SyncError::RateLimited {
                retry_after_seconds: wait,
            },
            408 | 500..=599 => SyncError::Transient {
                reason: format!("{name} answered {status} to {path}: {detail}"),
                source: None,
            },
            _ => SyncError::Permanent {
                reason: format!("{name} answered {status} to {path}: {detail}"),
            },
        })
    }
}

/// The connectors' HTTP client: 30 s per request, connection included; no redirects followed.
pub fn client() -> Result<reqwest::Client, SyncError> {
    reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .connect_timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("wearhouse/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| SyncError::Permanent {
            reason: format!("could not build the HTTP client: {e}"),
        })
}

/// A transport failure: always worth a retry (timeouts, refused or broken connections).
fn transport(name: &str, e: reqwest::Error) -> SyncError {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    SyncError::Transient {
        reason: format!("{name} {what}: {e}"),
        source: Some(e),
    }
}

/// The wait a 429 names, in seconds: `Retry-After` (delta-seconds, or an HTTP date counted from
/// `now`, RFC 9110), else the provider's `reset_header` (seconds), else `None`.
pub fn retry_after(
    headers: &HeaderMap,
    now: DateTime<Utc>,
    reset_header: Option<&str>,
) -> Option<u64> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(value) = header(RETRY_AFTER.as_str()) {
        if let Ok(seconds) = value.parse::<u64>() {
            return Some(seconds);
        }
        if let Ok(at) = DateTime::parse_from_rfc2822(value) {
            let wait = at.with_timezone(&Utc) - now;
            return Some(u64::try_from(wait.num_seconds()).unwrap_or(0));
        }
    }
    header(reset_header?).and_then(|v| v.parse::<u64>().ok())
}

/// One page of a provider that pages by token: its `items` array and its `token` for the
/// next page (absent, null or empty: the last page). `who` names the provider and the
/// resource in the error of a page of another shape (`Oura sleep`).
pub fn token_page(
    page: Value,
    (items, token): (&str, &str),
    who: &str,
) -> Result<(Vec<Value>, Option<String>), SyncError> {
    let bad = |what: String| SyncError::Permanent {
        reason: format!("{who}: {what}"),
    };
    let Value::Object(mut page) = page else {
        return Err(bad("the page is not a JSON object".into()));
    };
    let records = match page.remove(items) {
        Some(Value::Array(records)) => records,
        _ => return Err(bad(format!("the page has no `{items}` array"))),
    };
    let next = match page.remove(token) {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) if t.is_empty() => None,
        Some(Value::String(t)) => Some(t),
        Some(_) => return Err(bad(format!("`{token}` is not a string"))),
    };
    Ok((records, next))
}

/// Whether the RFC 3339 instant under `member` of `record` falls in `window`; a record
/// without a readable one is kept (its normaliser counts it as malformed).
pub fn instant_in(record: &Value, member: &str, window: &super::Window) -> bool {
    match record
        .get(member)
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
    {
        Some(at) => window.contains(at.with_timezone(&Utc)),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use reqwest::header::HeaderValue;
    use serde_json::json;

    #[test]
    fn token_pages_must_have_the_documented_envelope() {
        for (items, other) in [("data", "items"), ("records", "data")] {
            let members = (items, "next_token");
            let page = |v: serde_json::Value| token_page(v, members, "x");
            let (data, next) = page(json!({items: [1, 2], "next_token": "abc"})).unwrap();
            assert_eq!((data.len(), next.as_deref()), (2, Some("abc")));
            let (_, next) = page(json!({items: [], "next_token": ""})).unwrap();
            assert_eq!(next, None);
            let (_, next) = page(json!({items: []})).unwrap();
            assert_eq!(next, None);
            for bad in [
                json!([1, 2]),
                json!({other: []}),
                json!({items: [], "next_token": 5}),
            ] {
                assert!(matches!(page(bad), Err(SyncError::Permanent { .. })));
            }
        }
    }

    #[test]
    fn retry_after_reads_seconds_http_dates_and_a_reset_header() {
        let now: DateTime<Utc> = "2025-03-01T12:00:00Z".parse().unwrap();
        let with = |pairs: &[(&'static str, &str)], reset: Option<&str>| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_str(v).unwrap());
            }
            retry_after(&h, now, reset)
        };
        let reset = Some("fitbit-rate-limit-reset");
        assert_eq!(with(&[("retry-after", "120")], None), Some(120));
        assert_eq!(
            with(&[("retry-after", "Sat, 01 Mar 2025 12:01:30 GMT")], None),
            Some(90)
        );
        assert_eq!(
            with(&[("retry-after", "Sat, 01 Mar 2025 11:00:00 GMT")], None),
            Some(0),
            "a date in the past means now"
        );
        assert_eq!(with(&[("retry-after", "soon")], None), None);
        assert_eq!(with(&[], None), None);
        assert_eq!(
            with(
                &[("retry-after", "60"), ("fitbit-rate-limit-reset", "900")],
                reset
            ),
            Some(60),
            "Retry-After wins"
        );
        assert_eq!(
            with(
                &[("retry-after", "soon"), ("fitbit-rate-limit-reset", "900")],
                reset
            ),
            Some(900)
        );
        assert_eq!(
            with(&[("fitbit-rate-limit-reset", "900")], None),
            None,
            "a reset header counts only for the provider that sends it"
        );
    }
}
