//! Password links through the link API (`POST /v2/link/provider/password/{provider}`) against
//! [`FakePeloton`]: the sign-in, every outcome's link error, the sealed credentials, the
//! token's single use, and the 422s.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use serde_json::{Value, json};
use wearhouse::link::LinkConfig;
use wearhouse::link::password::PasswordLogins;
use wearhouse::sync::connectors::peloton::access::Peloton;

use super::fake_peloton::{ACCESS_TOKEN, FakePeloton, PASSWORD, REFRESH_TOKEN, USER_ID, USERNAME};
use super::{entry, keyed_app, sqlite_bytes};
use crate::support::{Answer, TestApp, assert_422_at};

const BACK: &str = "https://app.example.com/linked";

async fn setup() -> (TestApp, FakePeloton) {
    let fake = FakePeloton::start().await;
    let mut app = keyed_app().await;
    let logins =
        PasswordLogins::default().with(Arc::new(Peloton::new(&fake.base, &fake.base).unwrap()));
    app.state = app.state.clone().with_link_config(LinkConfig {
        password: logins,
        ..Default::default()
    });
    (app, fake)
}

async fn token(app: &TestApp, user: &str, extra: Value) -> String {
    let mut body = json!({"user_id": user});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let a = app.post("/v2/link/token", body).await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["link_token"].as_str().unwrap().to_owned()
}

async fn sign_in(app: &TestApp, token: &str, provider: &str, body: Value) -> Answer {
    let req = axum::http::Request::builder()
        .method("POST")
        .uri(format!("/v2/link/provider/password/{provider}"))
        .header("x-link-token", token)
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    app.raw(req).await
}

fn credentials(username: &str, password: &str) -> Value {
    json!({"username": username, "password": password})
}

#[tokio::test]
async fn a_password_the_provider_accepts_connects_the_user_once() {
    let (app, fake) = setup().await;
    let user = app.user("rider").await;
    let t = token(&app, &user, json!({"redirect_url": BACK})).await;

    let a = sign_in(&app, &t, "peloton", credentials(USERNAME, PASSWORD)).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["state"], "success");
    assert_eq!(a.json["connected"], true);
    assert_eq!(a.json["provider"], "peloton");
    assert_eq!(a.json["provider_id"], USER_ID);
    assert_eq!(
        a.json["redirect_url"],
        format!("{BACK}?state=success&provider=peloton")
    );
    assert!(a.json.get("error_type").is_none(), "{}", a.json);
    assert_eq!(fake.attempts(), 1);
    assert_eq!(entry(&app, &user, "peloton").await["status"], "connected");

    // Neither the password nor the provider's session is kept in clear.
    let db = sqlite_bytes(app.dir.path());
    for secret in [PASSWORD, ACCESS_TOKEN, REFRESH_TOKEN] {
        assert!(
            !db.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} in clear"
        );
    }

    // The token made its connection: a second use is refused before Peloton is asked.
    let again = sign_in(&app, &t, "peloton", credentials(USERNAME, PASSWORD)).await;
    assert_eq!(again.status, 401, "{}", again.json);
    assert_eq!(again.json["detail"]["error_type"], "token_consumed");
    assert_eq!(fake.attempts(), 1);
}

#[tokio::test]
async fn a_wrong_password_is_a_credential_error_and_the_token_stays_usable() {
    let (app, fake) = setup().await;
    let user = app.user("rider").await;
    let t = token(&app, &user, json!({})).await;

    let a = sign_in(&app, &t, "peloton", credentials(USERNAME, "not-it")).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["state"], "error");
    assert_eq!(a.json["connected"], false);
    assert_eq!(a.json["error_type"], "provider_credential_error");
    assert!(
        a.json["error"].as_str().unwrap().contains("Peloton"),
        "{}",
        a.json
    );
    assert!(a.json["provider_id"].is_null());
    assert!(a.json.get("redirect_url").is_none(), "{}", a.json);
    let providers = app.get(&format!("/v2/user/providers/{user}")).await;
    assert!(
        !providers.json.to_string().contains("\"peloton\""),
        "{}",
        providers.json
    );

    // The user corrects the password with the same token.
    let a = sign_in(&app, &t, "peloton", credentials(USERNAME, PASSWORD)).await;
    assert_eq!(a.json["state"], "success", "{}", a.json);
    assert_eq!(fake.attempts(), 2);
}

#[tokio::test]
async fn an_unreachable_provider_and_a_taken_account_are_link_errors() {
    let (app, fake) = setup().await;
    let first = app.user("first").await;
    let second = app.user("second").await;
    let t = token(&app, &first, json!({})).await;
    let a = sign_in(&app, &t, "peloton", credentials(USERNAME, PASSWORD)).await;
    assert_eq!(a.json["state"], "success", "{}", a.json);

    // The same Peloton account for another user of the team.
    let t2 = token(&app, &second, json!({"redirect_url": BACK})).await;
    let a = sign_in(&app, &t2, "peloton", credentials(USERNAME, PASSWORD)).await;
    assert_eq!(a.json["error_type"], "duplicate_connection", "{}", a.json);
    let landing = url::Url::parse(a.json["redirect_url"].as_str().unwrap()).unwrap();
    let query: std::collections::HashMap<_, _> = landing.query_pairs().into_owned().collect();
    assert_eq!(query["state"], "error");
    assert_eq!(query["error_type"], "duplicate_connection");

    fake.down();
    let a = sign_in(&app, &t2, "peloton", credentials(USERNAME, PASSWORD)).await;
    assert_eq!(a.json["error_type"], "provider_api_error", "{}", a.json);
    assert_eq!(a.json["connected"], false);
}

#[tokio::test]
async fn the_request_is_checked_before_the_provider_is_asked() {
    let (app, fake) = setup().await;
    let user = app.user("rider").await;
    let t = token(&app, &user, json!({})).await;
    let path = |p: &str| vec![json!("path"), json!(p)];

    // Not a password provider, not a provider, outside the token's filter.
    for slug in ["oura", "no_such_provider"] {
        let a = sign_in(&app, &t, slug, credentials(USERNAME, PASSWORD)).await;
        assert_422_at(&a, &path("provider"));
    }
    // Zwift cannot be connected here (no connector, no sign-in): no token is made for it.
    let a = app
        .post(
            "/v2/link/token",
            json!({"user_id": user, "filter_on_providers": ["zwift"]}),
        )
        .await;
    assert_eq!(a.status, 400, "{}", a.json);
    assert!(a.json["detail"].as_str().unwrap().contains("Zwift (zwift)"));
    // A token filtered on another provider the team can connect (Oura, with the team's own
    // application) does not sign in to Peloton.
    let creds = json!({"client_id": "team-client", "client_secret": "team-secret"});
    let key = app.key.clone();
    let set = app
        .send(
            "PUT",
            "/v2/team/provider/oura/credentials",
            Some(&key),
            Some(creds),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.json);
    let only_oura = token(&app, &user, json!({"filter_on_providers": ["oura"]})).await;
    let a = sign_in(&app, &only_oura, "peloton", credentials(USERNAME, PASSWORD)).await;
    assert_422_at(&a, &path("provider"));

    // The body: members missing, of the wrong type, unknown.
    for (b, at) in [
        (json!({"username": USERNAME}), "password"),
        (json!({"password": PASSWORD}), "username"),
        (json!({"username": 7, "password": PASSWORD}), "username"),
        (
            json!({"username": USERNAME, "password": PASSWORD, "pin": 1}),
            "pin",
        ),
    ] {
        let a = sign_in(&app, &t, "peloton", b).await;
        assert_eq!(a.status, 422, "{}", a.json);
        assert!(a.json.to_string().contains(at), "{at}: {}", a.json);
    }

    // No token, an unknown token.
    let a = sign_in(&app, "lt_nope", "peloton", credentials(USERNAME, PASSWORD)).await;
    assert_eq!(
        a.json["detail"]["error_type"], "invalid_token",
        "{}",
        a.json
    );
    assert_eq!(fake.attempts(), 0);
}

#[tokio::test]
async fn a_link_token_allows_a_few_sign_ins_then_asks_the_provider_no_more() {
    let (app, fake) = setup().await;
    let user = app.user("guesser").await;
    let t = token(&app, &user, json!({})).await;
    let limit = wearhouse::link::password::MAX_SIGN_INS;
    for guess in 0..limit {
        let a = sign_in(
            &app,
            &t,
            "peloton",
            credentials(USERNAME, &format!("guess-{guess}")),
        )
        .await;
        assert_eq!(
            a.json["error_type"], "provider_credential_error",
            "{}",
            a.json
        );
    }
    assert_eq!(fake.attempts(), usize::try_from(limit).unwrap());
    // Even the right password: the token has had its attempts, and Peloton is not asked.
    let a = sign_in(&app, &t, "peloton", credentials(USERNAME, PASSWORD)).await;
    assert_eq!(a.json["connected"], false, "{}", a.json);
    assert!(
        a.json["error"]
            .as_str()
            .unwrap()
            .contains("Too many sign-in attempts"),
        "{}",
        a.json
    );
    assert_eq!(fake.attempts(), usize::try_from(limit).unwrap());
    // A new link starts afresh.
    let fresh = token(&app, &user, json!({})).await;
    let a = sign_in(&app, &fresh, "peloton", credentials(USERNAME, PASSWORD)).await;
    assert_eq!(a.json["state"], "success", "{}", a.json);
}
