//! Link tokens: issue, every 422 rule, hashed storage, the 60-minute lifetime, single use, and
//! the token's own checks on `GET /v2/link/providers`.

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use wearhouse::link::tokens;

use crate::support::{Answer, TestApp, assert_422_at};

async fn token(app: &TestApp, body: Value) -> Answer {
    app.post("/v2/link/token", body).await
}

async fn providers(app: &TestApp, token: &str) -> Answer {
    let req = Request::builder()
        .uri("/v2/link/providers")
        .header("x-link-token", token)
        .body(Body::empty())
        .unwrap();
    app.raw(req).await
}

fn slugs(a: &Answer) -> Vec<String> {
    a.json
        .as_array()
        .unwrap_or_else(|| panic!("{}", a.json))
        .iter()
        .map(|p| p["slug"].as_str().unwrap().to_owned())
        .collect()
}

fn assert_link_error(a: &Answer, error_type: &str) {
    assert_eq!(a.status, 401, "{}", a.json);
    assert_eq!(a.json["detail"]["error_type"], error_type, "{}", a.json);
    assert!(
        a.json["detail"]["error_message"]
            .as_str()
            .is_some_and(|m| m.len() > 10)
    );
}

/// An app whose deployment has an Oura application and Peloton's sign-in (neither is asked).
async fn linking_app() -> TestApp {
    with_oura_and_peloton(TestApp::new().await)
}

/// `app` with a deployment Oura application and Peloton's sign-in at a closed port.
pub(super) fn with_oura_and_peloton(mut app: TestApp) -> TestApp {
    let oura = wearhouse::link::oauth::OAuthApp {
        client_id: "client".into(),
        client_secret: "secret".into(),
        authorize_url: "https://auth.example.test/authorize".into(),
        token_url: "https://auth.example.test/token".into(),
        redirect_uri: None,
        verification_token: None,
        subscription_id: None,
    };
    let peloton = wearhouse::sync::connectors::peloton::access::Peloton::new(
        "http://127.0.0.1:9",
        "http://127.0.0.1:9",
    )
    .unwrap();
    app.state = app
        .state
        .clone()
        .with_link_config(wearhouse::link::LinkConfig {
            oauth_apps: wearhouse::link::oauth::OAuthApps([("oura".to_owned(), oura)].into()),
            password: wearhouse::link::password::PasswordLogins::default()
                .with(std::sync::Arc::new(peloton)),
            ..Default::default()
        });
    app
}

#[tokio::test]
async fn a_token_is_issued_stored_hashed_and_lists_what_it_may_link() {
    let app = linking_app().await;
    let user = app.user("linking").await;
    let a = token(&app, json!({"user_id": user})).await;
    assert_eq!(a.status, 200, "{}", a.json);
    let t = a.json["link_token"].as_str().unwrap().to_owned();
    assert!(t.len() >= 40, "{t}");
    assert_eq!(
        a.json["link_web_url"],
        format!("http://127.0.0.1:8080/link?token={t}")
    );
    // Only the hash is stored.
    let bytes = super::sqlite_bytes(app.dir.path());
    let has = |s: &str| bytes.windows(s.len()).any(|w| w == s.as_bytes());
    assert!(has(&tokens::hash(&t)));
    assert!(!has(&t));

    // What this deployment can connect by a link: not SDK-only or app providers, nor any
    // provider without an application or sign-in (`catalogue.rs` has the whole rule).
    let all = slugs(&providers(&app, &t).await);
    assert_eq!(all, ["oura", "peloton"]);
    // The query parameter works as the header does.
    let a = app
        .send("GET", &format!("/v2/link/providers?token={t}"), None, None)
        .await;
    assert_eq!(slugs(&a), all);

    let a = token(
        &app,
        json!({"user_id": user, "filter_on_providers": ["peloton"]}),
    )
    .await;
    let t = a.json["link_token"].as_str().unwrap().to_owned();
    assert_eq!(slugs(&providers(&app, &t).await), ["peloton"]);
    let a = token(&app, json!({"user_id": user, "provider": "oura",
        "redirect_url": "https://app.example.com/done", "on_error": "redirect", "on_close": "redirect"})).await;
    assert_eq!(a.status, 200, "{}", a.json);
    let t = a.json["link_token"].as_str().unwrap().to_owned();
    assert_eq!(slugs(&providers(&app, &t).await), ["oura"]);
}

#[tokio::test]
async fn unknown_expired_and_consumed_tokens_are_refused_with_their_error_type() {
    let app = TestApp::new().await;
    let user = app.user("linking").await;
    assert_link_error(&providers(&app, "lt_nonsense").await, "invalid_token");
    let a = app.send("GET", "/v2/link/providers", None, None).await;
    assert_eq!(a.status, 401);
    assert_eq!(a.json, json!({"detail": "Missing link token"}));

    // 60 minutes: fine just before, expired just after.
    let a = token(&app, json!({"user_id": user})).await;
    let t = a.json["link_token"].as_str().unwrap().to_owned();
    let now = chrono::Utc::now();
    let session = tokens::check(&app.state.meta, &t, now + chrono::Duration::minutes(59))
        .await
        .unwrap();
    assert_eq!(session.user_id.to_string(), user);
    let late = tokens::check(&app.state.meta, &t, now + chrono::Duration::minutes(61)).await;
    assert!(matches!(
        late,
        Err(wearhouse::link::LinkError::Link {
            error_type: wearhouse::link::LinkErrorType::TokenExpired,
            ..
        })
    ));
    sqlx::query("UPDATE link_tokens SET expires_at = '2000-01-01T00:00:00.000000Z'")
        .execute(&mut *app.state.meta.writer().await.unwrap())
        .await
        .unwrap();
    assert_link_error(&providers(&app, &t).await, "token_expired");

    // Consumed by the first connection; a second consumption loses.
    let a = token(&app, json!({"user_id": user})).await;
    let t = a.json["link_token"].as_str().unwrap().to_owned();
    let session = tokens::check(&app.state.meta, &t, chrono::Utc::now())
        .await
        .unwrap();
    let mut tx = app.state.meta.begin().await.unwrap();
    tokens::consume_on(&mut tx, &session, chrono::Utc::now())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_link_error(&providers(&app, &t).await, "token_consumed");
    let mut tx = app.state.meta.begin().await.unwrap();
    assert!(
        tokens::consume_on(&mut tx, &session, chrono::Utc::now())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn every_token_rule_answers_422_at_its_member() {
    let app = TestApp::new().await;
    let user = app.user("linking").await;
    let cases: Vec<(Value, Vec<Value>)> = vec![
        (json!({}), vec![json!("body"), json!("user_id")]),
        (
            json!({"user_id": "nope"}),
            vec![json!("body"), json!("user_id")],
        ),
        (
            json!({"user_id": user, "provider": "myspace"}),
            vec![json!("body"), json!("provider")],
        ),
        (
            json!({"user_id": user, "provider": "apple_health_kit"}),
            vec![json!("body"), json!("provider")],
        ),
        (
            json!({"user_id": user, "provider": 7}),
            vec![json!("body"), json!("provider")],
        ),
        (
            json!({"user_id": user, "filter_on_providers": []}),
            vec![json!("body"), json!("filter_on_providers")],
        ),
        (
            json!({"user_id": user, "filter_on_providers": "oura"}),
            vec![json!("body"), json!("filter_on_providers")],
        ),
        (
            json!({"user_id": user, "filter_on_providers": ["oura", "health_connect"]}),
            vec![json!("body"), json!("filter_on_providers"), json!(1)],
        ),
        (
            json!({"user_id": user, "redirect_url": "/relative"}),
            vec![json!("body"), json!("redirect_url")],
        ),
        (
            json!({"user_id": user, "redirect_url": "ftp://files.example.com/x"}),
            vec![json!("body"), json!("redirect_url")],
        ),
        (
            json!({"user_id": user, "on_error": "close"}),
            vec![json!("body"), json!("on_error")],
        ),
        (
            json!({"user_id": user, "on_close": "popup"}),
            vec![json!("body"), json!("on_close")],
        ),
        (
            json!({"user_id": user, "on_error": "redirect"}),
            vec![json!("body"), json!("redirect_url")],
        ),
        (
            json!({"user_id": user, "on_close": "redirect"}),
            vec![json!("body"), json!("redirect_url")],
        ),
        (json!([1]), vec![json!("body")]),
    ];
    for (body, loc) in cases {
        let a = token(&app, body.clone()).await;
        assert_422_at(&a, &loc);
    }
    // Tenancy: another team's user is unknown; no key is 401.
    let theirs = app.foreign_user().await;
    let a = token(&app, json!({"user_id": theirs})).await;
    assert_eq!(a.status, 404);
    assert_eq!(a.json, json!({"detail": "User not found"}));
    let a = app
        .send(
            "POST",
            "/v2/link/token",
            None,
            Some(json!({"user_id": user})),
        )
        .await;
    assert_eq!(a.status, 401);
    let a = app
        .send(
            "POST",
            "/v2/link/token",
            Some("wrong"),
            Some(json!({"user_id": user})),
        )
        .await;
    assert_eq!(a.status, 401);
}
