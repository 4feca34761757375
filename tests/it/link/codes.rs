//! Link codes: the exact code and exchange URL formats, the expiry rules, single use, and the
//! push-only credential of one user.

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use wearhouse::link::{LinkConfig, Region};

use crate::support::{Answer, TestApp, assert_422_at};

fn is_code(code: &str, region: &str) -> bool {
    code.len() == 12
        && code.starts_with(&format!("sk{region}"))
        && code[4..]
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
}

async fn create(app: &TestApp, query: &str) -> Answer {
    app.send(
        "POST",
        &format!("/v2/link/code/create?{query}"),
        Some(&app.key.clone()),
        None,
    )
    .await
}

async fn exchange(app: &TestApp, code: &str) -> Answer {
    app.send(
        "POST",
        "/v2/link/code/exchange",
        None,
        Some(json!({"code": code})),
    )
    .await
}

async fn push(app: &TestApp, user: &str, token: &str, provider: &str) -> Answer {
    let body = json!({"provider": provider, "source": {"type": "watch"}, "timeseries": {"heartrate": [
        {"timestamp": "2025-01-01T00:00:00Z", "unit": "bpm", "value": 61}]}});
    let req = Request::builder()
        .method("POST")
        .uri(format!("/v2/user/{user}/data"))
        .header("x-link-code-token", token)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    app.raw(req).await
}

#[tokio::test]
async fn a_code_has_the_exact_format_and_is_exchanged_once_for_a_push_credential() {
    let app = TestApp::new().await;
    let user = app.user("phone").await;
    let before = chrono::Utc::now();
    let a = create(&app, &format!("user_id={user}")).await;
    assert_eq!(a.status, 200, "{}", a.json);
    let code = a.json["code"].as_str().unwrap().to_owned();
    assert!(is_code(&code, "us"), "{code}");
    assert_eq!(
        a.json["exchange_url"],
        format!("wearhouse://link?code={code}")
    );
    let expires: chrono::DateTime<chrono::Utc> =
        a.json["expires_at"].as_str().unwrap().parse().unwrap();
    let hour = expires - before;
    assert!(
        hour >= chrono::Duration::minutes(59) && hour <= chrono::Duration::minutes(61),
        "{hour}"
    );

    let a = exchange(&app, &code).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["user_id"], user.as_str());
    let token = a.json["link_code_token"].as_str().unwrap().to_owned();
    let a = exchange(&app, &code).await;
    assert_eq!(a.status, 400);
    assert!(
        a.json["detail"].as_str().unwrap().contains("already used"),
        "{}",
        a.json
    );

    // The credential pushes on-device data of its user, nothing else.
    let a = push(&app, &user, &token, "apple_health_kit").await;
    assert_eq!(a.status, 200, "{}", a.json);
    let a = push(&app, &user, &token, "oura").await;
    assert_eq!(a.status, 400, "{}", a.json);
    assert!(a.json["detail"].as_str().unwrap().contains("on-device"));
    let other = app.user("someone-else").await;
    let a = push(&app, &other, &token, "apple_health_kit").await;
    assert_eq!(a.status, 404, "{}", a.json);
    let a = push(&app, &user, "lct_unknown", "apple_health_kit").await;
    assert_eq!(a.status, 401, "{}", a.json);
    // It reads nothing: the getters want the team key.
    let req = Request::builder()
        .uri(format!("/v2/user/{user}"))
        .header("x-link-code-token", &token)
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.raw(req).await.status, 401);
    // Expired credentials stop working.
    sqlx::query("UPDATE link_code_tokens SET expires_at = '2000-01-01T00:00:00.000000Z'")
        .execute(&mut *app.state.meta.writer().await.unwrap())
        .await
        .unwrap();
    assert_eq!(
        push(&app, &user, &token, "apple_health_kit").await.status,
        401
    );
}

#[tokio::test]
async fn expiry_rules_unknown_and_expired_codes_and_tenancy() {
    let mut app = TestApp::new().await;
    let user = app.user("phone").await;
    let now = chrono::Utc::now();
    let fmt = |t: chrono::DateTime<chrono::Utc>| {
        url::form_urlencoded::byte_serialize(t.to_rfc3339().as_bytes()).collect::<String>()
    };
    let a = create(
        &app,
        &format!(
            "user_id={user}&expires_at={}",
            fmt(now + chrono::Duration::days(2))
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let expires: chrono::DateTime<chrono::Utc> =
        a.json["expires_at"].as_str().unwrap().parse().unwrap();
    assert!(
        (expires - (now + chrono::Duration::days(2)))
            .num_seconds()
            .abs()
            <= 1
    );
    for bad in [
        fmt(now - chrono::Duration::minutes(1)),
        fmt(now + chrono::Duration::days(8)),
        "tomorrow".to_owned(),
    ] {
        let a = create(&app, &format!("user_id={user}&expires_at={bad}")).await;
        assert_422_at(&a, &[json!("query"), json!("expires_at")]);
    }
    assert_422_at(&create(&app, "").await, &[json!("query"), json!("user_id")]);
    assert_422_at(
        &create(&app, "user_id=nope").await,
        &[json!("query"), json!("user_id")],
    );
    let theirs = app.foreign_user().await;
    let a = create(&app, &format!("user_id={theirs}")).await;
    assert_eq!(a.status, 404);
    let a = app
        .send(
            "POST",
            &format!("/v2/link/code/create?user_id={user}"),
            None,
            None,
        )
        .await;
    assert_eq!(a.status, 401);

    let a = exchange(&app, "skus00000000").await;
    assert_eq!(a.status, 400);
    assert!(a.json["detail"].as_str().unwrap().contains("not valid"));
    let a = app
        .send("POST", "/v2/link/code/exchange", None, Some(json!({})))
        .await;
    assert_422_at(&a, &[json!("body"), json!("code")]);
    let code = create(&app, &format!("user_id={user}")).await.json["code"]
        .as_str()
        .unwrap()
        .to_owned();
    sqlx::query("UPDATE link_codes SET expires_at = '2000-01-01T00:00:00.000000Z'")
        .execute(&mut *app.state.meta.writer().await.unwrap())
        .await
        .unwrap();
    let a = exchange(&app, &code).await;
    assert_eq!(a.status, 400);
    assert!(
        a.json["detail"].as_str().unwrap().contains("expired"),
        "{}",
        a.json
    );

    // The region and app URL come from configuration.
    app.state = app.state.clone().with_link_config(LinkConfig {
        public_url: "https://link.example.com".into(),
        app_url: "acme://connect".into(),
        region: Region::Eu,
        ..Default::default()
    });
    let a = create(&app, &format!("user_id={user}")).await;
    let code = a.json["code"].as_str().unwrap();
    assert!(is_code(code, "eu"), "{code}");
    assert_eq!(
        a.json["exchange_url"],
        format!("acme://connect?code={code}")
    );
    let a = app.post("/v2/link/token", json!({"user_id": user})).await;
    assert!(
        a.json["link_web_url"]
            .as_str()
            .unwrap()
            .starts_with("https://link.example.com/link?token=")
    );
    let _: Value = a.json;
}
