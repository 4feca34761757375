//! Peloton's Auth0 sign-in, driven headlessly with the user's username and password: the
//! authorization-code flow with PKCE of Peloton's web client, step by step as the public
//! clients observed it (see `sync::connectors::peloton::access` for the steps and their sources), and the
//! refresh-token grant.
//!
//! Auth0 keeps the sign-in's transaction in cookies (`_csrf` for the credentials step, the
//! session cookie for the resume), so this client keeps the cookies the auth host sets, for
//! that host only, for one sign-in. Redirects are followed by hand: only on the auth host, and
//! the last one (to the web app's callback, with the code) is read, never followed.

use oauth2::PkceCodeChallenge;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde::Deserialize;
use serde_json::json;
use url::Url;

use super::form::hidden_form;

/// Peloton's web client at Auth0.
pub const CLIENT_ID: &str = "WVoJxVDdPoFx4RNewvvg6ch2mZ7bwnsM";
/// The API the tokens are for.
pub const AUDIENCE: &str = "https://api.onepeloton.com/";
/// What the web client asks for (`offline_access`: a refresh token).
pub const SCOPE: &str = "offline_access openid peloton-api.members:default";
/// The web client's registered callback; the code is read from the redirect to it.
pub const REDIRECT_URI: &str = "https://members.onepeloton.com/callback";
/// Auth0's tenant and the database connection Peloton's accounts live in.
const TENANT: &str = "peloton-prod";
const CONNECTION: &str = "pelo-user-password";
/// The `Auth0-Client` telemetry Auth0's login page sends (base64 of
/// `{"name":"auth0.js-ulp","version":"9.14.3"}`).
const AUTH0_CLIENT: &str = "eyJuYW1lIjoiYXV0aDAuanMtdWxwIiwidmVyc2lvbiI6IjkuMTQuMyJ9";
/// The most redirects one step follows.
const MAX_REDIRECTS: usize = 10;

/// Tokens the token endpoint gave. Its `Debug` shows none of them.
#[derive(Clone, Deserialize)]
pub struct Tokens {
    /// The bearer token for the API.
    pub access_token: String,
    /// The refresh token (`offline_access`); a refresh may answer none (the old one stays).
    #[serde(default)]
    pub refresh_token: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens").finish_non_exhaustive()
    }
}

/// Why a sign-in or a refresh gave no tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// Peloton refused the username and password, or the refresh token (`invalid_grant`).
    Refused,
    /// Unreachable, a 5xx, or an answer not of the observed shape: worth trying again later.
    /// The text says which step (never a secret).
    Unavailable(String),
}

/// One sign-in's client state: the auth host, the HTTP client and the cookies set so far.
pub(super) struct Flow<'a> {
    auth: &'a Url,
    http: &'a reqwest::Client,
    cookies: Vec<(String, String)>,
}

fn unavailable(step: &str) -> AuthError {
    AuthError::Unavailable(step.to_owned())
}

impl<'a> Flow<'a> {
    /// A sign-in at the auth host `auth` (its root URL).
    pub(super) fn new(auth: &'a Url, http: &'a reqwest::Client) -> Flow<'a> {
        Flow {
            auth,
            http,
            cookies: Vec::new(),
        }
    }

    /// The whole flow: authorize, credentials, callback form, resume, code exchange.
    pub(super) async fn sign_in(
        mut self,
        username: &str,
        password: &str,
    ) -> Result<Tokens, AuthError> {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let state = random();
        let nonce = random();
        // 1. `/authorize` redirects to the login page, whose URL carries Auth0's own `state`
        //    (the transaction) and whose answer sets the `_csrf` cookie.
        let mut authorize = self.url("/authorize")?;
        authorize
            .query_pairs_mut()
            .append_pair("client_id", CLIENT_ID)
            .append_pair("audience", AUDIENCE)
            .append_pair("scope", SCOPE)
            .append_pair("response_type", "code")
            .append_pair("response_mode", "query")
            .append_pair("redirect_uri", REDIRECT_URI)
            .append_pair("state", &state)
            .append_pair("nonce", &nonce)
            .append_pair("code_challenge", challenge.as_str())
            .append_pair("code_challenge_method", "S256")
            .append_pair("auth0Client", AUTH0_CLIENT);
        let (login_page, _) = self
            .follow(self.http.get(authorize.clone()), authorize)
            .await?;
        let login_page =
            login_page.ok_or_else(|| unavailable("authorize ended off the auth host"))?;
        let transaction = login_page
            .query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .ok_or_else(|| unavailable("the login page has no state"))?;
        let csrf = self
            .cookie("_csrf")
            .ok_or_else(|| unavailable("the login page set no _csrf cookie"))?;
        // 2. The credentials, as the login page's script posts them.
        let body = json!({
            "client_id": CLIENT_ID, "redirect_uri": REDIRECT_URI, "tenant": TENANT,
            "response_type": "code", "scope": SCOPE, "audience": AUDIENCE,
            "_csrf": csrf, "state": transaction, "_intstate": "deprecated", "nonce": nonce,
            "username": username, "password": password, "connection": CONNECTION,
            "code_challenge": challenge.as_str(), "code_challenge_method": "S256",
        });
        let login = self.url("/usernamepassword/login")?;
        let origin = self.auth.origin().ascii_serialization();
        let answer = self
            .send(
                self.http
                    .post(login)
                    .header("Auth0-Client", AUTH0_CLIENT)
                    .header("Origin", origin)
                    .header("Referer", login_page.as_str())
                    .json(&body),
            )
            .await?;
        let status = answer.status().as_u16();
        match status {
            200 => {}
            // A wrong username or password (`invalid_user_password`), a blocked account.
            400 | 401 | 403 => return Err(AuthError::Refused),
            _ => {
                return Err(AuthError::Unavailable(format!(
                    "credentials answered {status}"
                )));
            }
        }
        let page = answer
            .text()
            .await
            .map_err(|_| unavailable("credentials answer unreadable"))?;
        // 3. The page's hidden form posts the signed sign-in back to `/login/callback`,
        //    which redirects to `/authorize/resume` and then to the web app with the code.
        let form = hidden_form(&page).ok_or_else(|| unavailable("no callback form"))?;
        let action = self
            .auth
            .join(&form.action)
            .map_err(|_| unavailable("the callback form's action is not a URL"))?;
        if !self.on_auth_host(&action) {
            return Err(unavailable("the callback form posts off the auth host"));
        }
        let callback = self.http.post(action.clone()).form(&form.fields);
        let (_, callback) = self.follow(callback, action).await?;
        let callback = callback.ok_or_else(|| unavailable("no code after the callback"))?;
        let pairs: Vec<(String, String)> = callback.query_pairs().into_owned().collect();
        let find = |key: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        if find("state") != Some(state.as_str()) {
            return Err(unavailable("the callback's state is not the one sent"));
        }
        let code = find("code").ok_or_else(|| unavailable("the callback has no code"))?;
        // 4. The code and the PKCE verifier for the tokens.
        let token = self.url("/oauth/token")?;
        let exchange = self.http.post(token).json(&json!({
            "grant_type": "authorization_code", "client_id": CLIENT_ID,
            "code_verifier": verifier.secret(), "code": code, "redirect_uri": REDIRECT_URI,
        }));
        // A refused code is not the user's doing (the password was accepted): retry later.
        match tokens(exchange.send().await, "code exchange").await {
            Err(AuthError::Refused) => Err(unavailable("the code exchange was refused")),
            answer => answer,
        }
    }

    /// The auth host's `path`.
    fn url(&self, path: &str) -> Result<Url, AuthError> {
        self.auth
            .join(path)
            .map_err(|_| unavailable("invalid auth URL"))
    }

    fn on_auth_host(&self, url: &Url) -> bool {
        url.origin() == self.auth.origin()
    }

    fn cookie(&self, name: &str) -> Option<String> {
        self.cookies
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    /// Sends `request` with the cookies kept so far, and keeps those it sets.
    async fn send(
        &mut self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, AuthError> {
        let request = match self.cookies.is_empty() {
            true => request,
            false => {
                let jar: Vec<String> = self
                    .cookies
                    .iter()
                    .map(|(n, v)| format!("{n}={v}"))
                    .collect();
                request.header(COOKIE, jar.join("; "))
            }
        };
        let answer = request
            .send()
            .await
            .map_err(|_| unavailable("auth host unreachable"))?;
        for set in answer.headers().get_all(SET_COOKIE) {
            let Some((name, value)) = set
                .to_str()
                .ok()
                .and_then(|s| s.split(';').next())
                .and_then(|pair| pair.split_once('='))
            else {
                continue;
            };
            let (name, value) = (name.trim().to_owned(), value.trim().to_owned());
            self.cookies.retain(|(n, _)| *n != name);
            self.cookies.push((name, value));
        }
        Ok(answer)
    }

    /// Sends `first` (to `at`) and follows its redirects on the auth host. Answers the page it
    /// ended on (`Some` when that is on the auth host and answered 200), or the redirect off
    /// the auth host to the web app's callback (which is not followed).
    async fn follow(
        &mut self,
        first: reqwest::RequestBuilder,
        mut at: Url,
    ) -> Result<(Option<Url>, Option<Url>), AuthError> {
        let mut answer = self.send(first).await?;
        for _ in 0..MAX_REDIRECTS {
            let status = answer.status();
            if status.is_success() {
                return Ok((Some(at), None));
            }
            if !status.is_redirection() {
                let s = status.as_u16();
                return Err(AuthError::Unavailable(format!(
                    "{} answered {s}",
                    at.path()
                )));
            }
            let location = answer
                .headers()
                .get(LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| at.join(l).ok())
                .ok_or_else(|| unavailable("a redirect without a location"))?;
            if location.as_str().starts_with(REDIRECT_URI) {
                return Ok((None, Some(location)));
            }
            if !self.on_auth_host(&location) {
                return Err(unavailable("a redirect off the auth host"));
            }
            at = location;
            answer = self.send(self.http.get(at.clone())).await?;
        }
        Err(unavailable("too many redirects"))
    }
}

/// The refresh-token grant at `auth`'s token endpoint.
pub(super) async fn refresh(
    auth: &Url,
    http: &reqwest::Client,
    refresh_token: &str,
) -> Result<Tokens, AuthError> {
    let token = auth
        .join("/oauth/token")
        .map_err(|_| unavailable("invalid auth URL"))?;
    let answer = http
        .post(token)
        .form(&[
            ("grant_type", "refresh_token"),
            ("client_id", CLIENT_ID),
            ("refresh_token", refresh_token),
        ])
        .send()
        .await;
    tokens(answer, "refresh").await
}

/// The tokens of a token endpoint's answer: 200 with them; 400/401/403 (`invalid_grant`: a
/// used, expired or revoked code or refresh token, a verifier that does not match) refused.
async fn tokens(
    answer: Result<reqwest::Response, reqwest::Error>,
    step: &str,
) -> Result<Tokens, AuthError> {
    let answer = answer.map_err(|_| AuthError::Unavailable(format!("{step}: unreachable")))?;
    match answer.status().as_u16() {
        200 => answer
            .json::<Tokens>()
            .await
            .ok()
            .filter(|t| !t.access_token.is_empty())
            .ok_or_else(|| AuthError::Unavailable(format!("{step}: no access token"))),
        400 | 401 | 403 => Err(AuthError::Refused),
        s => Err(AuthError::Unavailable(format!("{step}: answered {s}"))),
    }
}

/// 32 random bytes, base64url: a `state` or `nonce`.
fn random() -> String {
    use base64::Engine;
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
