//! The fake's Auth0 tenant: the routes of Peloton's sign-in as the public clients observed
//! them, each checking what the real one would (the web client, PKCE S256, the `_csrf` cookie
//! against the posted `_csrf`, the transaction `state`, the session cookie on resume, a code
//! used once with its verifier), and the token endpoint's refresh grant.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{ACCESS_TOKEN, Fake, REFRESH_TOKEN, USERNAME};
use crate::sync::fake::html_escape;

/// Peloton's web client, its callback, and what it asks for.
pub const WEB_CLIENT_ID: &str = "WVoJxVDdPoFx4RNewvvg6ch2mZ7bwnsM";
pub const CALLBACK: &str = "https://members.onepeloton.com/callback";
pub const AUDIENCE: &str = "https://api.onepeloton.com/";

/// A sign-in begun at `/authorize`.
#[derive(Clone)]
struct Transaction {
    client_state: String,
    challenge: String,
    redirect_uri: String,
    /// Set once the credentials were accepted and the callback posted.
    signed_in: bool,
}

/// Auth0's half-done sign-ins and unused codes.
#[derive(Default)]
pub(crate) struct Transactions {
    /// By transaction `state`.
    open: HashMap<String, Transaction>,
    /// `_csrf` cookies given.
    csrf: Vec<String>,
    /// The `wresult` of an accepted credentials POST → its transaction.
    results: HashMap<String, String>,
    /// The `auth0` session cookie → its transaction.
    sessions: HashMap<String, String>,
    /// Code → (challenge, redirect_uri).
    codes: HashMap<String, (String, String)>,
}

/// The Auth0 routes.
pub(crate) fn routes() -> Router<Fake> {
    Router::new()
        .route("/authorize", get(authorize))
        .route("/login", get(login_page))
        .route("/usernamepassword/login", post(credentials))
        .route("/login/callback", post(callback))
        .route("/authorize/resume", get(resume))
        .route("/oauth/token", post(token))
}

fn unavailable(fake: &Fake) -> Option<Response> {
    let down = fake.down.load(Ordering::SeqCst) || fake.sign_in_down.load(Ordering::SeqCst);
    down.then(|| (StatusCode::SERVICE_UNAVAILABLE, "upstream maintenance").into_response())
}

fn bad(what: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Html(format!("<p>invalid_request: {what}</p>")),
    )
        .into_response()
}

fn redirect(to: &str, cookie: Option<String>) -> Response {
    let mut r = (StatusCode::FOUND, [(header::LOCATION, to.to_owned())]).into_response();
    if let Some(c) = cookie {
        r.headers_mut()
            .insert(header::SET_COOKIE, c.parse().unwrap());
    }
    r
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.to_owned())
}

fn s256(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

async fn authorize(State(fake): State<Fake>, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(r) = unavailable(&fake) {
        return r;
    }
    let is = |k: &str, v: &str| q.get(k).is_some_and(|x| x == v);
    let present = |k: &str| q.get(k).is_some_and(|x| !x.is_empty());
    if !is("client_id", WEB_CLIENT_ID) || !is("audience", AUDIENCE) || !is("response_type", "code")
    {
        return bad("client, audience or response type");
    }
    if !is("code_challenge_method", "S256") || !present("code_challenge") {
        return bad("PKCE S256 is required");
    }
    let scopes: Vec<&str> = q.get("scope").map_or(vec![], |s| s.split(' ').collect());
    if !scopes.contains(&"offline_access") || !scopes.contains(&"openid") {
        return bad("scope");
    }
    if !is("redirect_uri", CALLBACK) || !present("state") || !present("nonce") {
        return bad("redirect_uri, state or nonce");
    }
    let id = fake.id("tx");
    fake.auth.lock().unwrap().open.insert(
        id.clone(),
        Transaction {
            client_state: q["state"].clone(),
            challenge: q["code_challenge"].clone(),
            redirect_uri: q["redirect_uri"].clone(),
            signed_in: false,
        },
    );
    let did = fake.id("did");
    let to = format!("/login?state={id}&client={WEB_CLIENT_ID}&protocol=oauth2");
    redirect(&to, Some(format!("did={did}; Path=/; HttpOnly")))
}

async fn login_page(
    State(fake): State<Fake>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = unavailable(&fake) {
        return r;
    }
    let mut auth = fake.auth.lock().unwrap();
    if !q.get("state").is_some_and(|s| auth.open.contains_key(s)) {
        return bad("unknown state");
    }
    let csrf = fake.id("csrf");
    auth.csrf.push(csrf.clone());
    let set = format!("_csrf={csrf}; Path=/usernamepassword/login; HttpOnly; Secure");
    (
        [(header::SET_COOKIE, set)],
        Html("<html><body><div id=\"lock\"></div><script>/* auth0 lock */</script></body></html>"),
    )
        .into_response()
}

async fn credentials(State(fake): State<Fake>, headers: HeaderMap, body: Bytes) -> Response {
    fake.note("credentials");
    if let Some(r) = unavailable(&fake) {
        return r;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return bad("not JSON");
    };
    let field = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut auth = fake.auth.lock().unwrap();
    let csrf = cookie(&headers, "_csrf");
    if csrf.as_deref() != Some(field("_csrf")) || !auth.csrf.iter().any(|c| c == field("_csrf")) {
        let refusal =
            json!({"statusCode": 403, "description": "Invalid state", "name": "ForbiddenError"});
        return (StatusCode::FORBIDDEN, axum::Json(refusal)).into_response();
    }
    let state = field("state").to_owned();
    let Some(tx) = auth.open.get(&state) else {
        return bad("unknown state");
    };
    let checks = [
        ("client_id", WEB_CLIENT_ID),
        ("tenant", "peloton-prod"),
        ("connection", "pelo-user-password"),
        ("redirect_uri", CALLBACK),
        ("code_challenge", tx.challenge.as_str()),
    ];
    if let Some((k, _)) = checks.iter().find(|(k, v)| field(k) != *v) {
        return bad(k);
    }
    if field("username") != USERNAME || field("password") != *fake.password.lock().unwrap() {
        let refusal = json!({"name": "ValidationError", "code": "invalid_user_password",
            "description": "Wrong email or password.", "statusCode": 400});
        return (StatusCode::UNAUTHORIZED, axum::Json(refusal)).into_response();
    }
    let result = fake.id("wresult");
    auth.results.insert(result.clone(), state.clone());
    let wctx = json!({"strategy": "auth0", "tenant": "peloton-prod", "connection":
        "pelo-user-password", "client_id": WEB_CLIENT_ID, "response_type": "code",
        "redirect_uri": CALLBACK, "state": state, "sid": fake.id("sid")});
    let page = format!(
        r#"<html><head><title>Submit This Form</title></head><body onload="javascript:document.forms[0].submit()"><form method="post" name="hiddenform" action="{base}/login/callback"><input type="hidden" name="wa" value="wsignin1.0"><input type="hidden" name="wresult" value="{result}"><input type="hidden" name="wctx" value="{wctx}"><noscript><p>Script is disabled. Click Submit to continue.</p><input type="submit" value="Submit"></noscript></form></body></html>"#,
        base = fake.base(),
        wctx = html_escape(&wctx.to_string()),
    );
    Html(page).into_response()
}

async fn callback(State(fake): State<Fake>, body: Bytes) -> Response {
    if let Some(r) = unavailable(&fake) {
        return r;
    }
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let mut auth = fake.auth.lock().unwrap();
    let Some(state) = form.get("wresult").and_then(|r| auth.results.remove(r)) else {
        return bad("unknown wresult");
    };
    let ctx: Value = form
        .get("wctx")
        .and_then(|c| serde_json::from_str(c).ok())
        .unwrap_or_default();
    if form.get("wa").map(String::as_str) != Some("wsignin1.0") || ctx["state"] != state.as_str() {
        return bad("wa or wctx");
    }
    let Some(tx) = auth.open.get_mut(&state) else {
        return bad("unknown state");
    };
    tx.signed_in = true;
    let session = fake.id("auth0");
    auth.sessions.insert(session.clone(), state.clone());
    redirect(
        &format!("/authorize/resume?state={state}"),
        Some(format!("auth0={session}; Path=/; HttpOnly; Secure")),
    )
}

async fn resume(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = unavailable(&fake) {
        return r;
    }
    let mut auth = fake.auth.lock().unwrap();
    let state = q.get("state").cloned().unwrap_or_default();
    let session = cookie(&headers, "auth0").and_then(|s| auth.sessions.get(&s).cloned());
    if session.as_deref() != Some(state.as_str()) {
        return bad("no session for this state");
    }
    let Some(tx) = auth.open.remove(&state).filter(|t| t.signed_in) else {
        return bad("not signed in");
    };
    let code = fake.id("code");
    auth.codes
        .insert(code.clone(), (tx.challenge, tx.redirect_uri.clone()));
    let mut to = url::Url::parse(&tx.redirect_uri).unwrap();
    to.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &tx.client_state);
    redirect(to.as_str(), None)
}

fn grant_error(status: StatusCode, error: &str, description: &str) -> Response {
    let body = json!({"error": error, "error_description": description});
    (status, axum::Json(body)).into_response()
}

/// `/oauth/token`: JSON (the code exchange, as the clients send it) or a form (the refresh).
async fn token(State(fake): State<Fake>, headers: HeaderMap, body: Bytes) -> Response {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let params: HashMap<String, String> = if json {
        let v: Value = serde_json::from_slice(&body).unwrap_or_default();
        v.as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect()
    } else {
        url::form_urlencoded::parse(&body).into_owned().collect()
    };
    let get = |k: &str| params.get(k).map(String::as_str).unwrap_or_default();
    // Refresh grants are counted even while down: the tests see them retried.
    if get("grant_type") == "refresh_token" {
        fake.note("refresh");
    }
    if let Some(r) = unavailable(&fake) {
        return r;
    }
    if get("client_id") != WEB_CLIENT_ID {
        return grant_error(StatusCode::UNAUTHORIZED, "access_denied", "Unauthorized");
    }
    match get("grant_type") {
        "authorization_code" => {
            let grant = fake.auth.lock().unwrap().codes.remove(get("code"));
            let Some((challenge, redirect_uri)) = grant else {
                return grant_error(
                    StatusCode::FORBIDDEN,
                    "invalid_grant",
                    "Invalid authorization code",
                );
            };
            if redirect_uri != get("redirect_uri") {
                return grant_error(
                    StatusCode::FORBIDDEN,
                    "invalid_grant",
                    "redirect_uri mismatch",
                );
            }
            if s256(get("code_verifier")) != challenge {
                return grant_error(
                    StatusCode::FORBIDDEN,
                    "invalid_grant",
                    "Failed to verify code verifier",
                );
            }
            let first = fake.noted("login") == 0;
            fake.note("login");
            let (access, refresh) = if first {
                (ACCESS_TOKEN.to_owned(), REFRESH_TOKEN.to_owned())
            } else {
                (fake.id("at-signed-in"), fake.id("rt"))
            };
            fake.access.lock().unwrap().insert(access.clone());
            fake.refresh.lock().unwrap().insert(refresh.clone());
            axum::Json(json!({"access_token": access, "refresh_token": refresh,
                "id_token": "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "scope":
                "openid peloton-api.members:default offline_access", "expires_in": 172800,
                "token_type": "Bearer"}))
            .into_response()
        }
        "refresh_token" => {
            if !fake.refresh.lock().unwrap().contains(get("refresh_token")) {
                return grant_error(
                    StatusCode::FORBIDDEN,
                    "invalid_grant",
                    "Unknown or invalid refresh token.",
                );
            }
            fake.note("refreshed");
            let access = fake.id("at-refreshed");
            fake.access.lock().unwrap().insert(access.clone());
            // No rotation: the refresh token stays valid and is not sent again.
            axum::Json(json!({"access_token": access, "scope":
                "openid peloton-api.members:default offline_access", "expires_in": 172800,
                "token_type": "Bearer"}))
            .into_response()
        }
        _ => grant_error(
            StatusCode::FORBIDDEN,
            "unsupported_grant_type",
            "Unsupported grant type",
        ),
    }
}
