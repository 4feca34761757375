//! Peloton's sign-in: `POST <api>/auth/login` with `{"username_or_email", "password"}` (JSON)
//! answers `200 {"session_id", "user_id", ...}` (the session also comes as the
//! `peloton_session_id` cookie) or `401 {"status": 401, "error_code": 3020, "message": "Login
//! failed"}` for a wrong username or password. Peloton publishes no API reference; this is the
//! wire its own web app and the community clients use.

use serde::Deserialize;

use super::{Login, PasswordLogin, SignIn};
use crate::link::LinkErrorType;

/// Overrides the API host (tests point it at a local fake).
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_PELOTON_API_URL";
/// Peloton's API host.
pub const DEFAULT_API_URL: &str = "https://api.onepeloton.com";

/// Peloton's sign-in, at `base`.
#[derive(Debug, Clone)]
pub struct Peloton {
    base: String,
    http: reqwest::Client,
}

impl Peloton {
    /// Peloton at `base` (no trailing slash needed), with a client that follows no redirects
    /// and gives up after the connectors' request timeout.
    pub fn new(base: &str) -> Result<Peloton, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(crate::sync::http::REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("wearhouse/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Peloton {
            base: base.trim_end_matches('/').to_owned(),
            http,
        })
    }
}

#[derive(Deserialize)]
struct Session {
    session_id: String,
    user_id: String,
}

#[async_trait::async_trait]
impl PasswordLogin for Peloton {
    fn provider(&self) -> &'static str {
        "peloton"
    }

    async fn sign_in(&self, login: Login<'_>) -> SignIn {
        let Login {
            username, password, ..
        } = login;
        let api_error = |why: &str| {
            tracing::warn!(provider = "peloton", why, "sign-in failed");
            SignIn::Refused(
                LinkErrorType::ProviderApiError,
                "Peloton could not be reached or answered unexpectedly; try again later.".into(),
            )
        };
        let answer = self
            .http
            .post(format!("{}/auth/login", self.base))
            .header("peloton-platform", "web")
            .json(&serde_json::json!({"username_or_email": username, "password": password}))
            .send()
            .await;
        let answer = match answer {
            Ok(a) => a,
            Err(_) => return api_error("unreachable"),
        };
        match answer.status().as_u16() {
            200 => match answer.json::<Session>().await {
                Ok(s) => SignIn::Accepted {
                    provider_user_id: s.user_id,
                    session: s.session_id,
                },
                Err(_) => api_error("unreadable session"),
            },
            400 | 401 | 403 => SignIn::Refused(
                LinkErrorType::ProviderCredentialError,
                "Peloton did not accept that username or password.".into(),
            ),
            _ => api_error("unexpected status"),
        }
    }
}
