//! `POST /v2/user/{user_id}/sign_in_token` on the real server: the token is exchanged once, at
//! `POST /v2/link/code/exchange`, for the push credential of its one user; it is never logged,
//! stored only as its hash, expires, and another team's user answers 404.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{Live, case, check_against_reference};
use crate::support::TestApp;

async fn exchange(live: &Live, token: &str) -> super::Reply {
    live.call(
        "POST",
        "/v2/link/code/exchange",
        None,
        Some(json!({"code": token})),
    )
    .await
}

async fn push(live: &Live, user: &str, credential: &str, provider: &str) -> u16 {
    let body = json!({"provider": provider, "source": {"type": "watch"}, "timeseries": {"heartrate": [
        {"timestamp": "2025-01-01T00:00:00Z", "unit": "bpm", "value": 61}]}});
    live.http
        .post(live.server.url(&format!("/v2/user/{user}/data")))
        .header("x-link-code-token", credential)
        .json(&body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_sign_in_token_is_exchanged_once_for_its_users_push_credential_and_never_logged() {
    let live = Live::start("info");
    let key = live.key.clone();
    let user = live.user(&key, "phone-owner").await;
    let other_user = live.user(&key, "someone-else").await;
    let theirs = live.user(&live.other.clone(), "theirs").await;

    let a = live
        .post(&format!("/v2/user/{user}/sign_in_token"), json!({}))
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["user_id"], user.as_str());
    let token = a.json["sign_in_token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("wst_") && token.len() >= 40, "{token}");
    check_against_reference(&[case(
        "sign in token",
        "UserSignInTokenResponse",
        Some("UserSignInTokenResponse"),
        &a.json,
    )]);
    // Each call draws a new token.
    let again = live
        .post(&format!("/v2/user/{user}/sign_in_token"), json!({}))
        .await;
    assert_ne!(again.json["sign_in_token"], a.json["sign_in_token"]);

    // Tenancy: another team's user, an unknown one, no key.
    let a = live
        .post(&format!("/v2/user/{theirs}/sign_in_token"), json!({}))
        .await;
    assert_eq!(a.status, 404, "{}", a.json);
    assert_eq!(a.json["detail"], "User not found");
    let a = live
        .post(
            &format!("/v2/user/{}/sign_in_token", uuid::Uuid::new_v4()),
            json!({}),
        )
        .await;
    assert_eq!(a.status, 404, "{}", a.json);
    let a = live
        .call(
            "POST",
            &format!("/v2/user/{user}/sign_in_token"),
            None,
            None,
        )
        .await;
    assert_eq!(a.status, 401, "{}", a.json);

    // Exchanged once, for the push credential of that user only.
    let a = exchange(&live, &token).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["user_id"], user.as_str());
    let credential = a.json["link_code_token"].as_str().unwrap().to_owned();
    let a = exchange(&live, &token).await;
    assert_eq!(a.status, 400, "{}", a.json);
    assert!(a.json["detail"].as_str().unwrap().contains("already used"));
    assert_eq!(
        push(&live, &user, &credential, "apple_health_kit").await,
        200
    );
    assert_eq!(push(&live, &user, &credential, "oura").await, 400);
    assert_eq!(
        push(&live, &other_user, &credential, "apple_health_kit").await,
        404
    );
    // The sign-in token itself authenticates nothing.
    assert_eq!(push(&live, &user, &token, "apple_health_kit").await, 401);
    let a = live
        .call("GET", &format!("/v2/user/{user}"), Some(&token), None)
        .await;
    assert_eq!(a.status, 401);

    // Neither the token nor the credential appears in the log.
    let log = live.server.log();
    assert!(
        log.contains("sign_in_token"),
        "the request was logged: {log}"
    );
    assert!(!log.contains(&token), "token logged");
    assert!(!log.contains(&credential), "credential logged");
}

#[tokio::test]
async fn a_sign_in_token_is_stored_as_its_hash_and_expires_within_the_hour() {
    let app = TestApp::new().await;
    let user = app.user("hashed").await;
    let a = app
        .post(&format!("/v2/user/{user}/sign_in_token"), json!({}))
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let token = a.json["sign_in_token"].as_str().unwrap().to_owned();
    let rows: Vec<(String, String, String)> =
        sqlx::query_as("SELECT code_hash, created_at, expires_at FROM link_codes")
            .fetch_all(&mut *app.state.meta.writer().await.unwrap())
            .await
            .unwrap();
    let digest = hex::encode(Sha256::digest(token.as_bytes()));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].0, digest);
    assert!(!rows.iter().any(|r| r.0.contains(&token)));
    let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap();
    let lifetime = at(&rows[0].2) - at(&rows[0].1);
    assert_eq!(lifetime, chrono::Duration::hours(1));
    // Expired: refused, with nothing handed out.
    sqlx::query("UPDATE link_codes SET expires_at = '2000-01-01T00:00:00.000000Z'")
        .execute(&mut *app.state.meta.writer().await.unwrap())
        .await
        .unwrap();
    let a = app
        .send(
            "POST",
            "/v2/link/code/exchange",
            None,
            Some(json!({"code": token})),
        )
        .await;
    assert_eq!(a.status, 400, "{}", a.json);
    assert!(a.json["detail"].as_str().unwrap().contains("expired"));
    assert_eq!(a.json.get("link_code_token"), None::<&Value>);
}
