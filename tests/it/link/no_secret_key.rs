//! A deployment started without `--secret-key`: every operation that would seal or open provider
//! credentials answers a 400 whose `detail` names the flag (a configuration the operator fixes,
//! which a client library must not retry as it would a 500), and a change notification it
//! cannot verify is a 401, not an error.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use serde_json::json;
use wearhouse::link::LinkConfig;
use wearhouse::link::oauth::{OAuthApp, OAuthApps};
use wearhouse::link::password::PasswordLogins;
use wearhouse::sync::connectors::peloton::access::Peloton;

use crate::support::{Answer, TestApp};

/// An app with an Oura OAuth application and Peloton's sign-in, but no secret key. Nothing
/// listens at the provider URLs: no operation may get as far as calling them.
async fn keyless_app() -> TestApp {
    let mut app = TestApp::new().await;
    assert!(app.state.secret.is_none());
    let mut apps = OAuthApps::default();
    apps.0.insert(
        "oura".into(),
        OAuthApp {
            client_id: "client".into(),
            client_secret: "client-secret".into(),
            authorize_url: "http://127.0.0.1:9/authorize".into(),
            token_url: "http://127.0.0.1:9/token".into(),
            redirect_uri: None,
            verification_token: None,
            subscription_id: None,
        },
    );
    let closed = "http://127.0.0.1:9";
    let logins = PasswordLogins::default().with(Arc::new(Peloton::new(closed, closed).unwrap()));
    app.state = app.state.clone().with_link_config(LinkConfig {
        oauth_apps: apps,
        password: logins,
        ..Default::default()
    });
    app
}

fn assert_names_the_flag(a: &Answer, what: &str) {
    assert_eq!(a.status, 400, "{what}: {}", a.json);
    let detail = a.json["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("--secret-key"), "{what}: {}", a.json);
}

#[tokio::test]
async fn every_credential_operation_answers_400_naming_the_secret_key() {
    let app = keyless_app().await;
    let user = app.user("keyless").await;

    let a = app
        .send(
            "PUT",
            "/v2/team/provider/oura/credentials",
            Some(&app.key.clone()),
            Some(json!({"client_id": "c", "client_secret": "s"})),
        )
        .await;
    assert_names_the_flag(&a, "team credentials");

    let a = app.post("/v2/link/token", json!({"user_id": user})).await;
    assert_eq!(a.status, 200, "{}", a.json);
    let t = a.json["link_token"].as_str().unwrap().to_owned();
    let a = app
        .send(
            "GET",
            &format!("/v2/link/provider/oauth/oura?token={t}"),
            None,
            None,
        )
        .await;
    assert_names_the_flag(&a, "oauth url");

    let req = axum::http::Request::builder()
        .method("POST")
        .uri("/v2/link/provider/password/peloton")
        .header("x-link-token", &t)
        .header("content-type", "application/json")
        .body(axum::body::Body::from(
            json!({"username": "u@example.com", "password": "pw"}).to_string(),
        ))
        .unwrap();
    assert_names_the_flag(&app.raw(req).await, "password sign-in");

    // The callback, with whatever query the provider (or a fuzzer) sends.
    for query in [
        "",
        "?code=abc&state=x.y",
        "?error=access_denied",
        "?state=%00",
    ] {
        let a = app
            .send(
                "GET",
                &format!("/v2/link/oauth/callback/oura{query}"),
                None,
                None,
            )
            .await;
        assert_names_the_flag(&a, &format!("callback {query:?}"));
    }

    // The token was never consumed: nothing happened.
    let a = app
        .send("GET", &format!("/v2/link/providers?token={t}"), None, None)
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
}

#[tokio::test]
async fn a_signed_notification_the_deployment_cannot_verify_is_401() {
    let app = keyless_app().await;
    let req = axum::http::Request::builder()
        .method("POST")
        .uri("/v2/provider/oura/notify")
        .header("x-oura-signature", "AAAA")
        .header("x-oura-timestamp", "1700000000")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(
            json!({"event_type": "create", "data_type": "sleep", "user_id": "x"}).to_string(),
        ))
        .unwrap();
    let a = app.raw(req).await;
    assert_eq!(a.status, 401, "{}", a.json);
}
