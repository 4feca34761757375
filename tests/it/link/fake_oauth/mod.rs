//! A fake OAuth 2.0 authorisation server for the link tests: a route table on the shared fake
//! provider (`sync/fake/`) speaking the wire format of RFC 6749 (authorisation code grant) with
//! PKCE (RFC 7636). It shares no code with wearhouse.
//!
//! `GET /authorize` issues a code and redirects to `redirect_uri` with it and `state`. Test-only
//! query parameters steer what the code yields: `x_grant` (space-separated scopes granted;
//! default: all asked), `x_account` (the provider user id; empty: the token answer names none,
//! as Oura's), `x_fail` (`grant`: the token endpoint refuses the code with `invalid_grant`;
//! `server`: it answers 500), `x_wire` (`polar`: the token answer is Polar AccessLink's,
//! `{access_token, token_type, expires_in, x_user_id}` with the account as a number, no refresh
//! token and no `scope`, as `www.polar.com/accesslink-api/#token-endpoint` documents it).
//! `GET /consent` ([`consent`]) is the provider's page the user sees first: it names the client
//! and the scopes asked, and its Allow button sends the same parameters on to `/authorize` (an
//! application whose `authorize_url` is this page, steering parameters in its query, is
//! [`FakeOAuth::app`]).
//! `POST /token` checks client authentication (HTTP Basic, or RFC 6749 §2.3.1's `client_id` and
//! `client_secret` in the form, as WHOOP's clients send them: the deployment's client, or the
//! team's [`TEAM_CLIENT_ID`]; [`FakeOAuth::client_auth`] says which each request used), the
//! code, the redirect URI and the PKCE verifier against the S256 challenge. A refresh token is
//! bound to the client it was issued to (RFC 6749 §6), so another client's refresh is refused
//! with `invalid_grant`; [`FakeOAuth::grant_refresh_token`] stands for a grant made elsewhere
//! before a bulk import. Every token request meets the fake's [`Gate`] first: its faults are
//! the token endpoint's ([`Fault`]: [`FakeOAuth::set_delay`] slows it,
//! [`FakeOAuth::hang_request`] makes one of its requests never answer), and its timeline counts
//! the requests ([`FakeOAuth::token_requests`]).
//! `POST /v2/oauth2` is the same token endpoint in Withings' wire ([`wires`], with Polar's):
//! `action=requesttoken` and the client's id and secret in the form, the answer in a
//! `{"status", "body"}` envelope (HTTP 200 whatever happened; `userid` for the user id; status
//! 503 "Invalid Params" for a refusal).

mod consent;
mod wires;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest;

use crate::sync::fake::{self, Gate};
use wires::{polar_issue, withings_token};

pub const CLIENT_ID: &str = "wearhouse-test-client";
pub const CLIENT_SECRET: &str = "fake-client-secret";
/// A team's own OAuth application at the fake provider.
pub const TEAM_CLIENT_ID: &str = "team-own-client";
pub const TEAM_CLIENT_SECRET: &str = "team-own-secret";

/// The clients the fake knows, with their secrets.
const CLIENTS: [(&str, &str); 2] = [
    (CLIENT_ID, CLIENT_SECRET),
    (TEAM_CLIENT_ID, TEAM_CLIENT_SECRET),
];

#[derive(Clone)]
struct Grant {
    redirect_uri: String,
    challenge: String,
    scopes: String,
    account: String,
    fail: Option<String>,
    /// `polar`: answer in Polar's token wire.
    wire: Option<String>,
}

/// How a token request carried the client (`basic` or `form`), and its form's `scope`.
pub type ClientAuth = (&'static str, Option<String>);

/// What the token endpoint does instead of answering at once.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// Never answers, and changes nothing.
    Hang,
    /// Answers after this long.
    Slow(Duration),
}

#[derive(Clone)]
struct Fake {
    /// The token endpoint's faults and requests (no route takes a bearer token).
    gate: Gate<Fault>,
    grants: Arc<Mutex<HashMap<String, Grant>>>,
    issued: Arc<Mutex<Vec<String>>>,
    /// Refresh tokens issued and still valid: their grant's scopes and the client they belong to.
    refreshable: Arc<Mutex<HashMap<String, (String, String)>>>,
    /// Refresh tokens presented, in order.
    presented: Arc<Mutex<Vec<String>>>,
    /// How each authenticated token request carried the client: `basic` or `form`, and the
    /// form's `scope`, if any.
    client_auth: Arc<Mutex<Vec<ClientAuth>>>,
}

fake::running! {
    /// A running fake authorisation server; its [`Gate`] (the token endpoint's faults and
    /// requests) is reached through it.
    FakeOAuth(Fake, Fault),
    base: "http://127.0.0.1:<port>"
}

impl FakeOAuth {
    /// Starts the fake on a new loopback port.
    pub async fn start() -> FakeOAuth {
        let fake = Fake {
            gate: Gate::accepting(|_| false),
            grants: Arc::default(),
            issued: Arc::default(),
            refreshable: Arc::default(),
            presented: Arc::default(),
            client_auth: Arc::default(),
        };
        let routes = Router::new()
            .route("/consent", get(consent::consent))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/v2/oauth2", post(withings_token))
            .with_state(fake.clone());
        let base = fake::serve(routes, &fake.gate, &[]).await;
        FakeOAuth { base, fake }
    }

    /// Registers `refresh_token` as issued to `client` for `scopes` (a grant made elsewhere).
    pub fn grant_refresh_token(&self, refresh_token: &str, client: &str, scopes: &str) {
        self.fake.refreshable.lock().unwrap().insert(
            refresh_token.to_owned(),
            (scopes.to_owned(), client.to_owned()),
        );
    }

    /// The refresh tokens presented to the token endpoint, in order.
    pub fn presented(&self) -> Vec<String> {
        self.fake.presented.lock().unwrap().clone()
    }

    /// Requests the token endpoint received so far.
    pub fn token_requests(&self) -> usize {
        self.timeline().len()
    }

    /// How each authenticated token request carried the client (`basic` or `form`), with the
    /// `scope` its form named, in order.
    pub fn client_auth(&self) -> Vec<ClientAuth> {
        self.fake.client_auth.lock().unwrap().clone()
    }

    /// Every later token request waits `delay` before it is handled.
    pub fn set_delay(&self, delay: Duration) {
        self.fail(Fault::Slow(delay), 0);
    }

    /// The `n`-th token request from now (from 1) never answers and changes nothing.
    pub fn hang_request(&self, n: usize) {
        self.fail_times(Fault::Hang, n.saturating_sub(1), 1);
    }

    /// An application entry of `--oauth-apps` for the deployment's client at this fake, whose
    /// authorisation page is `page` (`authorize`: the code at once; `consent`: the provider's
    /// page asks the user first) with the steering parameters `steer` in its query.
    pub fn app(&self, page: &str, steer: &[(&str, &str)]) -> Value {
        let mut authorize = url::Url::parse(&format!("{}/{page}", self.base)).unwrap();
        if !steer.is_empty() {
            authorize.query_pairs_mut().extend_pairs(steer);
        }
        json!({
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "authorize_url": authorize.as_str(),
            "token_url": format!("{}/token", self.base)})
    }

    /// `wearhouse serve` on `dir` with this fake as the deployment's Oura application (written
    /// to `dir/oauth-apps.json`) and a secret key, plus `args` and the environment `env`.
    pub fn serve(
        &self,
        dir: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> crate::support::server::Server {
        let apps = json!({"oura": self.app("authorize", &[])});
        self.serve_apps(dir, &apps, args, env)
    }

    /// [`FakeOAuth::serve`] with `apps` (slug → [`FakeOAuth::app`]) as the deployment's
    /// applications.
    pub fn serve_apps(
        &self,
        dir: &std::path::Path,
        apps: &Value,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> crate::support::server::Server {
        let path = dir.join("oauth-apps.json");
        std::fs::write(&path, apps.to_string()).unwrap();
        let secret = "5a".repeat(32);
        let mut all = vec![
            "--oauth-apps",
            path.to_str().unwrap(),
            "--secret-key",
            &secret,
        ];
        all.extend_from_slice(args);
        crate::support::server::Server::start_with(dir, &all, "warn", env)
    }

    /// The access tokens issued so far.
    pub fn issued(&self) -> Vec<String> {
        self.fake.issued.lock().unwrap().clone()
    }

    /// The live list of access tokens issued, oldest first.
    pub fn issued_list(&self) -> Arc<Mutex<Vec<String>>> {
        self.fake.issued.clone()
    }

    /// Revokes every refresh token issued so far (the user withdrew the grant).
    pub fn revoke_refresh_tokens(&self) {
        self.fake.refreshable.lock().unwrap().clear();
    }
}

async fn authorize(State(fake): State<Fake>, Query(q): Query<HashMap<String, String>>) -> Response {
    let need = |k: &str| q.get(k).cloned();
    let (Some("code"), Some(client), Some(redirect), Some(state), Some(challenge), Some("S256")) = (
        need("response_type").as_deref(),
        need("client_id"),
        need("redirect_uri"),
        need("state"),
        need("code_challenge"),
        need("code_challenge_method").as_deref(),
    ) else {
        return (StatusCode::BAD_REQUEST, "missing authorisation parameters").into_response();
    };
    if !CLIENTS.iter().any(|(id, _)| *id == client) {
        return (StatusCode::BAD_REQUEST, "unknown client").into_response();
    }
    let code = format!("code-{}", uuid::Uuid::new_v4().simple());
    fake.grants.lock().unwrap().insert(
        code.clone(),
        Grant {
            redirect_uri: redirect.clone(),
            challenge,
            scopes: q
                .get("x_grant")
                .or(q.get("scope"))
                .cloned()
                .unwrap_or_default(),
            account: q
                .get("x_account")
                .cloned()
                .unwrap_or_else(|| "acct-1".into()),
            fail: q.get("x_fail").cloned(),
            wire: q.get("x_wire").cloned(),
        },
    );
    let mut url = url::Url::parse(&redirect).unwrap();
    url.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &state);
    Redirect::to(url.as_str()).into_response()
}

fn oauth_error(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": error}))).into_response()
}

async fn token(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    match fake.gate.meet() {
        Some(Fault::Hang) => std::future::pending::<()>().await,
        Some(Fault::Slow(delay)) => tokio::time::sleep(delay).await,
        None => {}
    }
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
    let client = CLIENTS
        .iter()
        .find(|(id, secret)| {
            let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
            auth == Some(format!("Basic {basic}").as_str())
        })
        .map(|(id, _)| ("basic", *id))
        .or_else(|| {
            let (id, secret) = (form.get("client_id")?, form.get("client_secret")?);
            CLIENTS
                .iter()
                .find(|(i, s)| i == id && s == secret)
                .map(|(id, _)| ("form", *id))
        });
    let Some((how, client)) = client else {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    };
    fake.client_auth
        .lock()
        .unwrap()
        .push((how, form.get("scope").cloned()));
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {}
        // RFC 6749 §6: a valid refresh token of this client buys new tokens (and is itself
        // replaced).
        Some("refresh_token") => {
            let presented = form.get("refresh_token").cloned().unwrap_or_default();
            fake.presented.lock().unwrap().push(presented.clone());
            let mut refreshable = fake.refreshable.lock().unwrap();
            let Some((scopes, owner)) = refreshable.get(&presented).cloned() else {
                return oauth_error("invalid_grant");
            };
            if owner != client {
                return oauth_error("invalid_grant");
            }
            refreshable.remove(&presented);
            drop(refreshable);
            return issue(&fake, &scopes, None, client);
        }
        _ => return oauth_error("unsupported_grant_type"),
    }
    let Some(grant) = form
        .get("code")
        .and_then(|c| fake.grants.lock().unwrap().remove(c))
    else {
        return oauth_error("invalid_grant");
    };
    match grant.fail.as_deref() {
        Some("grant") => return oauth_error("invalid_grant"),
        Some("server") => return (StatusCode::INTERNAL_SERVER_ERROR, "down").into_response(),
        _ => {}
    }
    if form.get("redirect_uri") != Some(&grant.redirect_uri) {
        return oauth_error("invalid_grant");
    }
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    if computed != grant.challenge {
        return oauth_error("invalid_grant");
    }
    if grant.wire.as_deref() == Some("polar") {
        return polar_issue(&fake, &grant.account);
    }
    // An empty account: the answer names no user, as Oura's token endpoint does.
    let account = Some(grant.account.as_str()).filter(|a| !a.is_empty());
    issue(&fake, &grant.scopes, account, client)
}

/// Issues an access and a refresh token of `client` for `scopes` (with the provider user id
/// when given).
fn issue(fake: &Fake, scopes: &str, account: Option<&str>, client: &str) -> Response {
    let access = format!("fake-access-{}", uuid::Uuid::new_v4().simple());
    let refresh = format!("fake-refresh-{}", uuid::Uuid::new_v4().simple());
    fake.issued.lock().unwrap().push(access.clone());
    fake.refreshable
        .lock()
        .unwrap()
        .insert(refresh.clone(), (scopes.to_owned(), client.to_owned()));
    let mut answer = json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": refresh,
        "scope": scopes,
    });
    if let Some(account) = account {
        answer["user_id"] = json!(account);
    }
    Json(answer).into_response()
}
