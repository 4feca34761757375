//! Token endpoints that wrap RFC 6749 in their own wire, adapted at the HTTP layer so that the
//! `oauth2` client's exchange, refresh and error handling stay the same for every provider.
//!
//! Withings (`provider-sync.md`: "the token endpoint's `action=requesttoken` body and
//! `{status, body}` envelope"): `POST https://wbsapi.withings.net/v2/oauth2` takes the usual
//! form plus `action=requesttoken`, with the client's id and secret in the form rather than
//! HTTP Basic ([`client_in_body`]); it answers HTTP 200 with `{"status": 0, "body": {access_token,
//! refresh_token, expires_in, scope, token_type, userid}}`, or a non-zero `status` (still HTTP
//! 200) on failure. The adapter hands the client the inner `body` as a standard token answer,
//! and a failure as the RFC 6749 error it amounts to: `601` (too many requests) and Withings'
//! "an error occurred" statuses (`522`, `524`, `2555`) as `temporarily_unavailable` (retried),
//! anything else (invalid code, revoked refresh token, invalid parameters) as `invalid_grant`
//! (the user has to link again). Each refresh returns a new refresh token, which the caller
//! stores like any other.
//!
//! WHOOP (`developer.whoop.com/docs/developing/oauth` and its refresh tutorials) speaks RFC 6749
//! with the client's id and secret in the form ([`client_in_body`]), and its refresh requests
//! carry `scope=offline` ([`refresh_scopes`]), without which the answer has no new refresh token.
//!
//! Google (the Google Health API, `sync::connectors::google_health::access`) speaks RFC 6749
//! with the client in the form, as Google's guide for web server applications sends it, and
//! issues a refresh token only to an authorisation URL carrying `access_type=offline`
//! ([`authorize_params`]).
//! Strava (`developers.strava.com/docs/authentication/`) takes the client's id and secret in the
//! form too ([`client_in_body`]); its answers are RFC 6749's plus `expires_at` and the
//! `athlete`, which the connector reads itself (`GET /athlete`).
//! Garmin (OAuth 2.0 PKCE, `sync::connectors::garmin`) takes the client in the form too; its
//! authorisation page has no `scope` parameter ([`asks_scopes`]): the user chooses what to
//! share on Garmin's consent page, and the token answer's `scope` is the application's fixed
//! `PARTNER_WRITE PARTNER_READ CONNECT_READ CONNECT_WRITE`.
//! Ultrahuman (`vision.ultrahuman.com/developer-docs?type=oauth`, `sync::connectors::ultrahuman::
//! access`) lists `client_id` and `client_secret` among its token endpoint's parameters, so they
//! travel in the form ([`client_in_body`]).

use oauth2::{HttpClientError, HttpRequest, HttpResponse};
use serde_json::{Value, json};

/// How a provider's token endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenWire {
    /// RFC 6749 as written.
    Standard,
    /// Withings' `action=requesttoken` and `{status, body}` envelope.
    Withings,
}

/// The provider's token wire.
pub fn wire(provider: &str) -> TokenWire {
    match provider {
        "withings" => TokenWire::Withings,
        _ => TokenWire::Standard,
    }
}

/// Whether the provider wants the client's id and secret in the form instead of HTTP Basic.
pub fn client_in_body(provider: &str) -> bool {
    wire(provider) == TokenWire::Withings
        || matches!(
            provider,
            "whoop_v2" | "google_health" | "strava" | "garmin" | "ultrahuman"
        )
}

/// The parameters a provider's authorisation URL carries besides RFC 6749's (Google's offline
/// access).
pub fn authorize_params(provider: &str) -> &'static [(&'static str, &'static str)] {
    match provider {
        crate::sync::connectors::google_health::SLUG => {
            crate::sync::connectors::google_health::access::AUTHORIZE_PARAMS
        }
        _ => &[],
    }
}

/// Whether the provider's authorisation URL names the scopes asked (Garmin's takes none).
pub fn asks_scopes(provider: &str) -> bool {
    provider != crate::sync::connectors::garmin::SLUG
}

/// The scopes a provider wants named again on a refresh request (RFC 6749 §6 lets a client
/// narrow them; WHOOP wants `offline` to send a new refresh token).
pub fn refresh_scopes(provider: &str) -> &'static [&'static str] {
    match provider {
        "whoop_v2" => &["offline"],
        _ => &[],
    }
}

/// The HTTP client of a provider's token requests: `http`, speaking the provider's wire.
#[derive(Debug, Clone, Copy)]
pub struct TokenClient<'a> {
    http: &'a reqwest::Client,
    wire: TokenWire,
}

impl<'a> TokenClient<'a> {
    /// `provider`'s token requests over `http`.
    pub fn new(http: &'a reqwest::Client, provider: &str) -> TokenClient<'a> {
        TokenClient {
            http,
            wire: wire(provider),
        }
    }
}

impl<'c> oauth2::AsyncHttpClient<'c> for TokenClient<'_> {
    type Error = HttpClientError<reqwest::Error>;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<HttpResponse, Self::Error>> + Send + 'c>,
    >;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(send(self.http, self.wire, request))
    }
}

/// Sends a token request over `http`, in the provider's wire.
async fn send(
    http: &reqwest::Client,
    wire: TokenWire,
    request: HttpRequest,
) -> Result<HttpResponse, HttpClientError<reqwest::Error>> {
    match wire {
        TokenWire::Standard => oauth2::AsyncHttpClient::call(http, request).await,
        TokenWire::Withings => {
            let answer = oauth2::AsyncHttpClient::call(http, withings_request(request)).await?;
            Ok(withings_answer(answer))
        }
    }
}

/// The request with `action=requesttoken` added to its form.
fn withings_request(mut request: HttpRequest) -> HttpRequest {
    let body = request.body_mut();
    if !body.is_empty() {
        body.push(b'&');
    }
    body.extend_from_slice(b"action=requesttoken");
    request
}

/// Withings' answer as the standard answer it stands for.
fn withings_answer(answer: HttpResponse) -> HttpResponse {
    let envelope: Option<Value> = serde_json::from_slice(answer.body()).ok();
    let status = envelope
        .as_ref()
        .and_then(|e| e.get("status"))
        .and_then(Value::as_i64);
    let (code, body) = match (status, envelope.as_ref().and_then(|e| e.get("body"))) {
        (Some(0), Some(body)) => (200, body.clone()),
        (Some(601 | 522 | 524 | 2555), _) => (
            503,
            json!({"error": "temporarily_unavailable",
                   "error_description": format!("Withings status {}", status.unwrap_or_default())}),
        ),
        (Some(other), _) => (
            400,
            json!({"error": "invalid_grant",
                   "error_description": format!("Withings status {other}")}),
        ),
        // Not the envelope (an HTTP error page, a proxy): passed on as it came.
        (None, _) => return answer,
    };
    let mut standard = HttpResponse::new(body.to_string().into_bytes());
    *standard.status_mut() =
        oauth2::http::StatusCode::from_u16(code).unwrap_or(oauth2::http::StatusCode::BAD_GATEWAY);
    standard.headers_mut().insert(
        oauth2::http::header::CONTENT_TYPE,
        oauth2::http::HeaderValue::from_static("application/json"),
    );
    standard
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn answer(body: Value) -> HttpResponse {
        HttpResponse::new(body.to_string().into_bytes())
    }

    fn json_of(response: &HttpResponse) -> Value {
        serde_json::from_slice(response.body()).unwrap()
    }

    #[test]
    fn the_envelope_is_opened_and_failures_become_oauth_errors() {
        let ok = withings_answer(answer(json!({"status": 0, "body": {
            "userid": "363", "access_token": "a", "refresh_token": "r",
            "expires_in": 10800, "scope": "user.info,user.metrics", "token_type": "Bearer"}})));
        assert_eq!(ok.status(), 200);
        assert_eq!(json_of(&ok)["access_token"], "a");
        assert_eq!(json_of(&ok)["userid"], "363");

        let refused = withings_answer(answer(json!({"status": 503, "error": "Invalid Params"})));
        assert_eq!(refused.status(), 400);
        assert_eq!(json_of(&refused)["error"], "invalid_grant");

        let busy = withings_answer(answer(json!({"status": 601, "body": {}})));
        assert_eq!(busy.status(), 503);
        assert_eq!(json_of(&busy)["error"], "temporarily_unavailable");

        let mut page = HttpResponse::new(b"<html>bad gateway</html>".to_vec());
        *page.status_mut() = oauth2::http::StatusCode::BAD_GATEWAY;
        assert_eq!(withings_answer(page).status(), 502);
    }

    #[test]
    fn the_request_form_gains_the_action() {
        let request = HttpRequest::new(b"grant_type=authorization_code&code=c".to_vec());
        let sent = withings_request(request);
        assert_eq!(
            sent.body(),
            b"grant_type=authorization_code&code=c&action=requesttoken"
        );
        assert_eq!(wire("withings"), TokenWire::Withings);
        assert_eq!(wire("oura"), TokenWire::Standard);
    }
}
