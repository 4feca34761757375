//! Peloton's sign-in. Peloton retired `POST https://api.onepeloton.com/auth/login` (the session
//! cookie sign-in) in late 2025; its web app and the public clients now sign in through
//! Peloton's Auth0 tenant at `auth.onepeloton.com` with the OAuth 2.0 authorization-code flow
//! and PKCE (S256), as the web client (`client_id` [`auth0::CLIENT_ID`], audience
//! `https://api.onepeloton.com/`, scope `offline_access openid peloton-api.members:default`,
//! redirect `https://members.onepeloton.com/callback`). Peloton documents none of it: this is
//! the wire the public clients observed and now drive headlessly with the user's username and
//! password: `philosowaffle/peloton-to-garmin` (issue #795, PR #806, its
//! `PelotonAuthApiClient`), `edwork/homeassistant-peloton-sensor` (PR #119) and
//! `justmedude/pylotoncycle` (PR #28). The steps (`auth0.rs`):
//!
//! 1. **Authorize**: `GET <auth>/authorize?client_id&audience&scope&response_type=code&
//!    response_mode=query&redirect_uri&state&nonce&code_challenge&code_challenge_method=S256&
//!    auth0Client` redirects to Auth0's login page (`/login?state=<transaction>&…`); its URL's
//!    `state` is Auth0's transaction, and the page sets the `_csrf` cookie.
//! 2. **Credentials**: `POST <auth>/usernamepassword/login` (JSON: `client_id`, `redirect_uri`,
//!    `tenant` `peloton-prod`, `response_type`, `scope`, `audience`, `_csrf`, the transaction
//!    `state`, `_intstate` `deprecated`, `nonce`, `username`, `password`, `connection`
//!    `pelo-user-password`, `code_challenge`, `code_challenge_method`; with the cookies and the
//!    `Auth0-Client` header). A wrong username or password answers 401 (`invalid_user_password`);
//!    a right one answers 200 with a page whose hidden form (`wa`, `wresult`, `wctx`) posts to
//!    `<auth>/login/callback` (`form.rs` reads it).
//! 3. **Callback and resume**: posting that form redirects to `<auth>/authorize/resume?state=…`,
//!    which redirects to the web app's callback with `?code=…&state=<ours>`; the code is read
//!    from that redirect, not followed.
//! 4. **Code exchange**: `POST <auth>/oauth/token` (JSON: `grant_type` `authorization_code`,
//!    `client_id`, `code_verifier`, `code`, `redirect_uri`) answers `{access_token,
//!    refresh_token, id_token, expires_in, token_type: "Bearer"}`.
//! 5. **The user**: `GET <api>/api/me` with `Authorization: Bearer <access_token>` answers the
//!    user's `id`, the connection's `provider_user_id`.
//!
//! Renewal ([`PasswordLogin::refresh`]): `POST <auth>/oauth/token` (form: `grant_type`
//! `refresh_token`, `client_id`, `refresh_token`) answers a new access token (and a refresh token
//! if rotated); an expired or revoked one answers 403 `invalid_grant`, and the pull then signs in
//! again with the sealed password.
//!
//! Errors: a refused username or password is `provider_credential_error`; anything else
//! (unreachable, a 5xx, a step whose answer is not of the observed shape) is
//! `provider_api_error`, which a pull retries. No token or password is ever logged.
//!
//! Hosts: the API is [`DEFAULT_API_URL`] or [`API_URL_ENV`]'s, Auth0 [`DEFAULT_AUTH_URL`] or
//! [`AUTH_URL_ENV`]'s (tests point both at a local fake).

mod auth0;
mod form;

use serde::Deserialize;
use url::Url;

use crate::sync::access::{LinkErrorType, Login, PasswordLogin, Renewal, SignIn};
use auth0::{AuthError, Flow};

/// Overrides the API host (tests point it at a local fake).
pub const API_URL_ENV: &str = "WEARHOUSE_PROVIDER_PELOTON_API_URL";
/// Peloton's API host.
pub const DEFAULT_API_URL: &str = "https://api.onepeloton.com";
/// Overrides the Auth0 host the sign-in and renewal use.
pub const AUTH_URL_ENV: &str = "WEARHOUSE_PROVIDER_PELOTON_AUTH_URL";
/// Peloton's Auth0 host.
pub const DEFAULT_AUTH_URL: &str = "https://auth.onepeloton.com";

/// Peloton's sign-in, at its API and Auth0 hosts.
#[derive(Debug, Clone)]
pub struct Peloton {
    api: String,
    /// Parsed when used: a bad override is then a sign-in that fails, not a server that
    /// does not start.
    auth: String,
    http: reqwest::Client,
}

/// The sentence a user sees when Peloton could not be asked.
const UNAVAILABLE: &str = "Peloton could not be reached or answered unexpectedly; try again later.";

impl Peloton {
    /// Peloton with its API at `api` and Auth0 at `auth` (no trailing slash needed), with a
    /// client that follows no redirects (the sign-in follows them itself, on the auth host
    /// only) and gives up after the connectors' request timeout.
    pub fn new(api: &str, auth: &str) -> Result<Peloton, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(crate::sync::http::REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("wearhouse/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Peloton {
            api: api.trim_end_matches('/').to_owned(),
            auth: auth.to_owned(),
            http,
        })
    }

    /// The Auth0 host's root URL.
    fn auth(&self) -> Result<Url, AuthError> {
        Url::parse(&self.auth).map_err(|_| AuthError::Unavailable("invalid auth URL".into()))
    }

    /// Peloton at the hosts [`API_URL_ENV`] and [`AUTH_URL_ENV`] name, else its own.
    pub fn from_env() -> Result<Peloton, reqwest::Error> {
        let url = |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| default.into());
        Peloton::new(
            &url(API_URL_ENV, DEFAULT_API_URL),
            &url(AUTH_URL_ENV, DEFAULT_AUTH_URL),
        )
    }

    /// The signed-in user's id (`GET /api/me` with the bearer token).
    async fn me(&self, access_token: &str) -> Result<String, AuthError> {
        let answer = self
            .http
            .get(format!("{}/api/me", self.api))
            .bearer_auth(access_token)
            .header("peloton-platform", "web")
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|_| AuthError::Unavailable("/api/me unreachable".into()))?;
        let status = answer.status().as_u16();
        if status != 200 {
            return Err(AuthError::Unavailable(format!("/api/me answered {status}")));
        }
        match answer.json::<Me>().await {
            Ok(me) if !me.id.is_empty() => Ok(me.id),
            _ => Err(AuthError::Unavailable("/api/me has no user id".into())),
        }
    }
}

#[derive(Deserialize)]
struct Me {
    id: String,
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
        let tokens = match self.auth() {
            Ok(auth) => {
                Flow::new(&auth, &self.http)
                    .sign_in(username, password)
                    .await
            }
            Err(e) => Err(e),
        };
        let signed_in = match tokens {
            Ok(tokens) => self.me(&tokens.access_token).await.map(|id| (id, tokens)),
            Err(e) => Err(e),
        };
        match signed_in {
            Ok((provider_user_id, tokens)) => SignIn::Accepted {
                provider_user_id,
                session: tokens.access_token,
                refresh_token: tokens.refresh_token,
            },
            Err(AuthError::Refused) => SignIn::Refused(
                LinkErrorType::ProviderCredentialError,
                "Peloton did not accept that username or password.".into(),
            ),
            Err(AuthError::Unavailable(why)) => {
                tracing::warn!(provider = "peloton", why, "sign-in failed");
                SignIn::Refused(LinkErrorType::ProviderApiError, UNAVAILABLE.into())
            }
        }
    }

    async fn refresh(&self, refresh_token: &str) -> Renewal {
        let tokens = match self.auth() {
            Ok(auth) => auth0::refresh(&auth, &self.http, refresh_token).await,
            Err(e) => Err(e),
        };
        match tokens {
            Ok(tokens) => Renewal::Renewed {
                session: tokens.access_token,
                refresh_token: tokens.refresh_token,
            },
            Err(AuthError::Refused) => Renewal::Refused,
            Err(AuthError::Unavailable(why)) => {
                tracing::warn!(provider = "peloton", why, "token refresh failed");
                Renewal::Failed(format!("Peloton's token refresh failed: {why}"))
            }
        }
    }
}
