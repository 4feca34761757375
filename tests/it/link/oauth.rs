//! OAuth links through the link API against the fake authorisation server: the URL (signed
//! state, PKCE, scopes), the callback's success path (connection, sealed tokens, event, token
//! consumed) and each link error it can end in.

use serde_json::{Value, json};
use wearhouse::link::LinkConfig;
use wearhouse::link::oauth::{OAuthApp, OAuthApps};

use super::fake_oauth::{CLIENT_ID, CLIENT_SECRET, FakeOAuth};
use super::{entry, keyed_app};
use crate::support::{Answer, TestApp, assert_422_at};

const BACK: &str = "https://app.example.com/linked";

/// The verification token of the test's Oura application (its change-notification handshake).
pub const VERIFICATION_TOKEN: &str = "oura-subscription-verify-7c1e";

pub async fn setup() -> (TestApp, FakeOAuth) {
    let fake = FakeOAuth::start().await;
    let mut app = keyed_app().await;
    let mut apps = OAuthApps::default();
    apps.0.insert(
        "oura".into(),
        OAuthApp {
            client_id: CLIENT_ID.into(),
            client_secret: CLIENT_SECRET.into(),
            authorize_url: format!("{}/authorize", fake.base),
            token_url: format!("{}/token", fake.base),
            redirect_uri: None,
            verification_token: Some(VERIFICATION_TOKEN.into()),
            subscription_id: None,
        },
    );
    app.state = app.state.clone().with_link_config(LinkConfig {
        oauth_apps: apps,
        ..Default::default()
    });
    (app, fake)
}

pub(crate) async fn link_token(app: &TestApp, user: &str, redirect: bool) -> String {
    let body = if redirect {
        json!({"user_id": user, "redirect_url": BACK})
    } else {
        json!({"user_id": user})
    };
    let a = app.post("/v2/link/token", body).await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["link_token"].as_str().unwrap().to_owned()
}

async fn oauth_url(app: &TestApp, token: &str, provider: &str) -> Answer {
    app.send(
        "GET",
        &format!("/v2/link/provider/oauth/{provider}?token={token}"),
        None,
        None,
    )
    .await
}

/// The authorisation URL the link API answers for `token` (checked to be there).
pub(crate) async fn authorize_url(app: &TestApp, token: &str, provider: &str) -> String {
    let a = oauth_url(app, token, provider).await;
    a.json["oauth_url"]
        .as_str()
        .unwrap_or_else(|| panic!("no oauth_url: {}", a.json))
        .to_owned()
}

/// Plays the browser for an Oura link: [`visit_as`].
pub(crate) async fn visit(app: &TestApp, url: &str, extra: &[(&str, &str)]) -> Answer {
    visit_as(app, "oura", url, extra).await
}

/// Plays the browser: opens the authorisation URL (plus steering parameters), follows the
/// authorisation server's redirect to `provider`'s callback, and answers the callback's answer.
pub(crate) async fn visit_as(
    app: &TestApp,
    provider: &str,
    url: &str,
    extra: &[(&str, &str)],
) -> Answer {
    let mut url = url::Url::parse(url).unwrap();
    for (k, v) in extra {
        url.query_pairs_mut().append_pair(k, v);
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client.get(url).send().await.unwrap();
    assert_eq!(r.status(), 303, "{:?}", r.text().await);
    let location = url::Url::parse(r.headers()["location"].to_str().unwrap()).unwrap();
    assert_eq!(
        location.path(),
        format!("/v2/link/oauth/callback/{provider}")
    );
    let path = format!("{}?{}", location.path(), location.query().unwrap_or(""));
    app.send("GET", &path, None, None).await
}

/// The query of the redirect a callback answered.
fn landed(a: &Answer) -> std::collections::HashMap<String, String> {
    assert_eq!(a.status, 303, "{}", a.json);
    let location = url::Url::parse(a.headers["location"].to_str().unwrap()).unwrap();
    assert!(location.as_str().starts_with(BACK), "{location}");
    location.query_pairs().into_owned().collect()
}

fn assert_error(a: &Answer, error_type: &str) {
    let q = landed(a);
    assert_eq!(q["state"], "error", "{q:?}");
    assert_eq!(q["provider"], "oura");
    assert_eq!(q["error_type"], error_type, "{q:?}");
    assert!(q["error"].len() > 10, "{q:?}");
}

#[tokio::test]
async fn an_oauth_round_trip_connects_with_sealed_tokens_and_consumes_the_link_token() {
    let (app, fake) = setup().await;
    let user = app.user("oauth").await;
    let token = link_token(&app, &user, true).await;
    let a = oauth_url(&app, &token, "oura").await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["slug"], "oura");
    assert_eq!(a.json["auth_type"], "oauth");
    let url = a.json["oauth_url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}/authorize?", fake.base)),
        "{url}"
    );
    let q: std::collections::HashMap<String, String> = url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(
        q["redirect_uri"],
        "http://127.0.0.1:8080/v2/link/oauth/callback/oura"
    );
    // Oura's own scope names, not wearhouse's.
    assert!(q["scope"].split(' ').any(|s| s == "personal"), "{q:?}");
    assert!(!q["scope"].split(' ').any(|s| s == "profile"), "{q:?}");
    assert!(q["state"].contains('.'));

    let a = visit(
        &app,
        url,
        &[("x_grant", "personal daily"), ("x_account", "acct-7")],
    )
    .await;
    let q = landed(&a);
    assert_eq!(q["state"], "success", "{q:?}");
    assert_eq!(q["provider"], "oura");
    assert!(!q.contains_key("error_type"));

    let oura = entry(&app, &user, "oura").await;
    assert_eq!(oura["status"], "connected");
    assert_eq!(
        oura["resource_availability"]["sleep"]["status"],
        "available"
    );
    assert_eq!(
        oura["resource_availability"]["heartrate"]["status"],
        "unavailable"
    );
    let id = user.parse().unwrap();
    let c = app
        .state
        .meta
        .connection(id, "oura")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.provider_user_id.as_deref(), Some("acct-7"));
    let creds = wearhouse::link::lifecycle::credentials(
        &app.state.meta,
        app.state.secret.as_ref(),
        id,
        "oura",
    )
    .await
    .unwrap()
    .unwrap();
    let issued = fake.issued();
    assert_eq!(creds.access_token.as_deref(), Some(issued[0].as_str()));
    assert!(
        creds
            .refresh_token
            .as_deref()
            .unwrap()
            .starts_with("fake-refresh-")
    );
    assert!(creds.expires_at.unwrap() > chrono::Utc::now().timestamp() + 3000);
    // The event is in the outbox.
    let events: Vec<(String, String)> = sqlx::query_as(
        "SELECT event_type, body FROM events WHERE event_type = 'provider.connection.created'",
    )
    .fetch_all(&mut *app.state.meta.reader().await.unwrap())
    .await
    .unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    let body: Value = serde_json::from_str(&events[0].1).unwrap();
    assert!(body.to_string().contains("\"slug\":\"oura\""), "{body}");
    // The token is consumed; the state cannot be replayed.
    let a = oauth_url(&app, &token, "oura").await;
    assert_eq!(a.status, 401);
    assert_eq!(a.json["detail"]["error_type"], "token_consumed");
}

#[tokio::test]
async fn each_callback_failure_lands_with_its_error_type() {
    let (app, _fake) = setup().await;
    let user = app.user("oauth").await;
    // Required scope withheld.
    let token = link_token(&app, &user, true).await;
    let u = authorize_url(&app, &token, "oura").await;
    assert_error(
        &visit(&app, &u, &[("x_grant", "daily")]).await,
        "required_scopes_not_granted",
    );
    // The same token still works after a failure (not consumed).
    let u = authorize_url(&app, &token, "oura").await;
    assert_error(
        &visit(&app, &u, &[("x_fail", "grant")]).await,
        "provider_credential_error",
    );
    let u = authorize_url(&app, &token, "oura").await;
    assert_error(
        &visit(&app, &u, &[("x_fail", "server")]).await,
        "provider_api_error",
    );
    // The user declines at the provider.
    let u = authorize_url(&app, &token, "oura").await;
    let state = url::Url::parse(&u)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned();
    let a = app
        .send(
            "GET",
            &format!("/v2/link/oauth/callback/oura?error=access_denied&state={state}"),
            None,
            None,
        )
        .await;
    assert_error(&a, "user_cancelled");
    // The token expires between the URL and the callback.
    let u = authorize_url(&app, &token, "oura").await;
    sqlx::query("UPDATE link_tokens SET expires_at = '2000-01-01T00:00:00.000000Z'")
        .execute(&mut *app.state.meta.writer().await.unwrap())
        .await
        .unwrap();
    assert_error(&visit(&app, &u, &[]).await, "token_expired");
    assert!(
        app.state
            .meta
            .connection(user.parse().unwrap(), "oura")
            .await
            .unwrap()
            .is_none()
    );

    // One provider account, two users of the team: the second is a duplicate.
    let first = link_token(&app, &user, true).await;
    let u = authorize_url(&app, &first, "oura").await;
    assert_eq!(
        landed(&visit(&app, &u, &[("x_account", "shared")]).await)["state"],
        "success"
    );
    let other = app.user("second").await;
    let second = link_token(&app, &other, true).await;
    let u = authorize_url(&app, &second, "oura").await;
    assert_error(
        &visit(&app, &u, &[("x_account", "shared")]).await,
        "duplicate_connection",
    );
    // A consumed token's pending state lands on token_consumed.
    let u1 = authorize_url(&app, &second, "oura").await;
    let u2 = authorize_url(&app, &second, "oura").await;
    assert_eq!(
        landed(&visit(&app, &u1, &[("x_account", "own")]).await)["state"],
        "success"
    );
    assert_error(
        &visit(&app, &u2, &[("x_account", "own")]).await,
        "token_consumed",
    );
}

#[tokio::test]
async fn forged_replayed_or_missing_state_is_invalid_token_and_url_rules_hold() {
    let (app, _fake) = setup().await;
    let user = app.user("oauth").await;
    let token = link_token(&app, &user, false).await;
    let u = authorize_url(&app, &token, "oura").await;
    let state = url::Url::parse(&u)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned();
    let (id, _) = state.split_once('.').unwrap();
    let forged = format!("{id}.{}", "0".repeat(64));
    for query in [
        format!("code=x&state={forged}"),
        "code=x".to_owned(),
        "code=x&state=nodot".to_owned(),
    ] {
        let a = app
            .send(
                "GET",
                &format!("/v2/link/oauth/callback/oura?{query}"),
                None,
                None,
            )
            .await;
        assert_eq!(a.status, 400, "{}", a.json);
        assert_eq!(a.json["error_type"], "invalid_token", "{}", a.json);
        assert_eq!(a.json["state"], "error");
    }
    // The forged attempt used the state up: the genuine one is now refused too (single use).
    let a = visit(&app, &u, &[]).await;
    assert_eq!(a.json["error_type"], "invalid_token", "{}", a.json);
    // Without a redirect_url the outcome is answered as JSON.
    let u = authorize_url(&app, &token, "oura").await;
    let a = visit(&app, &u, &[]).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json, json!({"state": "success", "provider": "oura"}));

    // URL rules: OAuth providers the token may link, with an application configured.
    let token = link_token(&app, &user, false).await;
    let a = oauth_url(&app, &token, "freestyle_libre").await;
    assert_422_at(&a, &[json!("path"), json!("provider")]);
    let a = oauth_url(&app, &token, "myspace").await;
    assert_422_at(&a, &[json!("path"), json!("provider")]);
    let a = oauth_url(&app, &token, "fitbit").await;
    assert_eq!(a.status, 400, "{}", a.json);
    assert!(a.json["detail"].as_str().unwrap().contains("fitbit"));
    // A token cannot be made for a provider without an application; one filtered on Oura
    // links nothing else.
    let a = app
        .post(
            "/v2/link/token",
            json!({"user_id": user, "filter_on_providers": ["fitbit"]}),
        )
        .await;
    assert_eq!(a.status, 400, "{}", a.json);
    assert!(
        a.json["detail"]
            .as_str()
            .unwrap()
            .contains("Fitbit (fitbit)")
    );
    let filtered = app
        .post(
            "/v2/link/token",
            json!({"user_id": user, "filter_on_providers": ["oura"]}),
        )
        .await
        .json["link_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_422_at(
        &oauth_url(&app, &filtered, "fitbit").await,
        &[json!("path"), json!("provider")],
    );
    assert_eq!(
        oauth_url(&app, "lt_unknown", "oura").await.json["detail"]["error_type"],
        "invalid_token"
    );
}

/// Everything written to a tracing subscriber, for asserting what the logs never hold.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs [`log_capture_round_trip`] alone in a child process of this test binary: tracing's
/// per-thread subscribers miss events when other tests register the same callsites at the same
/// time, and a capture that misses lines would prove nothing.
#[test]
fn no_log_line_holds_a_token_or_code_even_at_trace_level() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "link::oauth::log_capture_round_trip",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The round trip whose logs are captured (run by the test above, in its own process).
#[tokio::test]
#[ignore = "run in a process of its own by no_log_line_holds_a_token_or_code_even_at_trace_level"]
async fn log_capture_round_trip() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    // The test runtime has one thread, so the default covers the server, the fake and the
    // client alike.
    let _guard = tracing::subscriber::set_default(subscriber);
    let (app, fake) = setup().await;
    let user = app.user("logged").await;
    let token = link_token(&app, &user, true).await;
    let u = authorize_url(&app, &token, "oura").await;
    assert_eq!(landed(&visit(&app, &u, &[]).await)["state"], "success");
    let id = user.parse().unwrap();
    let creds = wearhouse::link::lifecycle::credentials(
        &app.state.meta,
        app.state.secret.as_ref(),
        id,
        "oura",
    )
    .await
    .unwrap()
    .unwrap();
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("/v2/link"),
        "the capture saw the requests: {logs}"
    );
    for secret in [
        token.as_str(),
        creds.access_token.as_deref().unwrap(),
        creds.refresh_token.as_deref().unwrap(),
        fake.issued()[0].as_str(),
        CLIENT_SECRET,
    ] {
        assert!(!logs.contains(secret), "{secret} was logged");
    }
}
