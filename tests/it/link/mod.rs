//! Linking (issue 14): connections as records with sealed credentials, their provider list and
//! deregistration.
//!
//! - [`lifecycle`]: the store functions on SQLite and PostgreSQL (credentials never in clear
//!   in either database), `GET /v2/user/providers/{user_id}` availability and scopes,
//!   `DELETE /v2/user/{user_id}/{provider}`, the secret key's start-up rules;
//! - [`tokens`]: `POST /v2/link/token` (every 422 rule, hashed storage, lifetime, single use)
//!   and the token's checks on `GET /v2/link/providers`;
//! - [`codes`]: link codes (format, expiry, single use) and the push-only credential;
//! - [`oauth`]: OAuth links through the link API against [`fake_oauth`], a fake
//!   authorisation server (state, PKCE, code exchange, every callback error);
//! - [`team_apps`]: team provider credentials and the team's client in its OAuth links;
//! - [`password`]: password links through the link API against [`fake_peloton`];
//! - [`peloton_sign_in`]: Peloton's PKCE sign-in and refresh grant, each answer's outcome;
//! - [`mfa`]: Abbott LibreView's password link with its second factor against
//!   [`fake_libreview`], and the token rules of the code and e-mail routes;
//! - [`page`]: the hosted link page in a real headless Chromium, against a real server;
//! - [`page_flows`]: its second-factor step and e-mail form, in the same browser;
//! - [`page_offered`]: every provider the page offers without OAuth applications (and in demo
//!   mode) completes, in the same browser;
//! - [`page_oauth`]: with applications configured, each new OAuth provider's round trip
//!   through the page, the provider's page and back, and its first pull, in the same browser;
//! - [`no_secret_key`]: a deployment without `--secret-key` answers 400s naming it, never 500s;
//! - [`catalogue`]: what the page, `GET /v2/link/providers` and link tokens offer (only what
//!   connects), and `connectable` in `GET /v2/providers`.

mod bulk_import;
mod bulk_import_durable;
mod catalogue;
mod codes;
pub(crate) mod fake_libreview;
pub(crate) mod fake_oauth;
pub(crate) mod fake_peloton;
mod lifecycle;
pub(crate) mod mfa;
mod no_secret_key;
pub(crate) mod oauth;
mod page;
mod page_flows;
mod page_oauth;
mod page_offered;
mod password;
mod peloton_sign_in;
mod team_apps;
mod tokens;

/// What the team-credential tests borrow from the OAuth tests.
mod oauth_support {
    pub use super::oauth::setup;
    use crate::support::TestApp;

    /// The authorisation URL of a new link token of `user`, asked with `key`.
    pub async fn oauth_url_of(app: &TestApp, user: &str, key: &str) -> String {
        let a = app
            .send(
                "POST",
                "/v2/link/token",
                Some(key),
                Some(serde_json::json!({"user_id": user})),
            )
            .await;
        let token = a.json["link_token"].as_str().unwrap().to_owned();
        let a = app
            .send(
                "GET",
                &format!("/v2/link/provider/oauth/oura?token={token}"),
                None,
                None,
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.json);
        a.json["oauth_url"].as_str().unwrap().to_owned()
    }
}

use serde_json::Value;
use wearhouse::link::lifecycle::Linked;
use wearhouse::secret::SecretKey;
use wearhouse::sync::credentials::Credentials;

use crate::support::TestApp;

/// A token no database may hold in clear.
pub const ACCESS_TOKEN: &str = "at-9f7c2e51-never-in-clear";
/// Its refresh token.
pub const REFRESH_TOKEN: &str = "rt-4d0b8a33-never-in-clear";

/// A link result for `scopes` with the tokens above.
pub fn linked(scopes: &[&str], denied: &[&str]) -> Linked {
    Linked {
        provider_user_id: Some("provider-user-42".into()),
        scopes_granted: scopes.iter().map(|s| (*s).to_owned()).collect(),
        scopes_denied: denied.iter().map(|s| (*s).to_owned()).collect(),
        credentials: Credentials {
            access_token: Some(ACCESS_TOKEN.into()),
            refresh_token: Some(REFRESH_TOKEN.into()),
            expires_at: Some(1_900_000_000),
            ..Default::default()
        },
    }
}

/// A test app whose state has a secret key.
pub async fn keyed_app() -> TestApp {
    let mut app = TestApp::new().await;
    app.state = app.state.clone().with_secret_key(SecretKey::generate().0);
    app
}

/// A keyed app whose password sign-in is `login` and whose pulls go to `connector` (both at a
/// provider's fake).
pub async fn password_app(
    login: std::sync::Arc<dyn wearhouse::link::password::PasswordLogin>,
    connector: std::sync::Arc<dyn wearhouse::sync::Connector>,
) -> TestApp {
    let mut app = keyed_app().await;
    app.state = app
        .state
        .clone()
        .with_link_config(wearhouse::link::LinkConfig {
            password: wearhouse::link::password::PasswordLogins::default().with(login),
            ..Default::default()
        })
        .with_connectors(wearhouse::sync::Connectors::default().with(connector));
    app
}

/// A password link of `user` to `provider` through the link API: a link token, then `body`
/// posted with it; answers the 200's outcome.
pub async fn password_link(app: &TestApp, user: &str, provider: &str, body: Value) -> Value {
    let token = app
        .post("/v2/link/token", serde_json::json!({"user_id": user}))
        .await;
    assert_eq!(token.status, 200, "{}", token.json);
    let req = axum::http::Request::builder()
        .method("POST")
        .uri(format!("/v2/link/provider/password/{provider}"))
        .header("x-link-token", token.json["link_token"].as_str().unwrap())
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let a = app.raw(req).await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json
}

/// Records `linked` for the user through the domain function, in a transaction.
pub async fn link(app: &TestApp, user: &str, provider: &str, linked: &Linked) {
    let mut tx = app.state.meta.begin().await.unwrap();
    wearhouse::link::lifecycle::link_on(
        &mut tx,
        app.state.secret.as_ref(),
        user.parse().unwrap(),
        provider,
        linked,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

/// The entry of `provider` in the user's provider list.
pub async fn entry(app: &TestApp, user: &str, provider: &str) -> Value {
    let a = app.get(&format!("/v2/user/providers/{user}")).await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["slug"] == provider)
        .cloned()
        .unwrap_or_else(|| panic!("no {provider} in {}", a.json))
}

/// Bytes of every file of the SQLite database (main file and write-ahead log).
pub fn sqlite_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("meta.db")
        {
            all.extend(std::fs::read(&path).unwrap());
        }
    }
    all
}
