//! The hosted link page in a real headless Chromium (Debian's, driven through ChromeDriver with
//! the fantoccini WebDriver client) against a real server process: an OAuth round trip through
//! [`FakeOAuth`], a password provider's inline error and its `on_error=redirect`, the Close
//! button with and without `on_close=redirect`, a spent token, and demo mode.
//!
//! Every step is photographed into the test's temporary directory; a failing test keeps that
//! directory and names it (set `WEARHOUSE_TEST_SCREENSHOTS=<dir>` to keep the pictures of a
//! passing run too).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use axum::response::Html;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use super::fake_oauth::FakeOAuth;
use super::fake_peloton::{FakePeloton, PASSWORD, USERNAME};
use crate::support::server::Server;

/// A ChromeDriver process and a session of headless Chromium on it, with a place for
/// screenshots.
pub(super) struct Browser {
    pub(super) client: Client,
    driver: Child,
    shots: Shots,
}

/// Where the screenshots go: kept when the test fails (or when asked to), else removed.
struct Shots {
    dir: Option<tempfile::TempDir>,
    keep: Option<PathBuf>,
    taken: usize,
}

impl Drop for Shots {
    fn drop(&mut self) {
        if std::thread::panicking()
            && let Some(dir) = self.dir.take()
        {
            eprintln!("link page screenshots kept in {}", dir.keep().display());
        }
    }
}

impl Browser {
    pub(super) async fn start() -> Browser {
        let chromium = crate::support::provision::chromium();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(&chromium.driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while reqwest::get(format!("{url}/status")).await.is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium.browser,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1000,900"],
            }),
        );
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&url)
            .await
            .expect("a Chromium session");
        Browser {
            client,
            driver,
            shots: Shots {
                dir: Some(tempfile::tempdir().unwrap()),
                keep: std::env::var_os("WEARHOUSE_TEST_SCREENSHOTS").map(PathBuf::from),
                taken: 0,
            },
        }
    }

    /// Saves a screenshot of the page as `NN-name.png`.
    pub(super) async fn shot(&mut self, name: &str) {
        self.shots.taken += 1;
        let png = self.client.screenshot().await.unwrap();
        let file = format!("{:02}-{name}.png", self.shots.taken);
        let dir = self.shots.dir.as_ref().unwrap().path();
        std::fs::write(dir.join(&file), &png).unwrap();
        if let Some(keep) = &self.shots.keep {
            std::fs::create_dir_all(keep).unwrap();
            std::fs::write(keep.join(&file), &png).unwrap();
        }
    }

    pub(super) async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap();
    }

    /// Waits (up to 15 s) until the text of `css` satisfies `ok`: after a click the old page
    /// may still be showing, so a step's page is waited for, and a failure says what was seen.
    pub(super) async fn wait_text(&self, css: &str, ok: impl Fn(&str) -> bool, want: &str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let seen = match self.client.find(Locator::Css(css)).await {
                Ok(element) => element.text().await.unwrap_or_default(),
                Err(_) => String::new(),
            };
            if ok(&seen) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{css} shows {seen:?}, not {want}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub(super) async fn expect_text(&self, css: &str, want: &str) {
        self.wait_text(css, |seen| seen == want, &format!("{want:?}"))
            .await;
    }

    pub(super) async fn expect_text_containing(&self, css: &str, part: &str) {
        self.wait_text(
            css,
            |seen| seen.contains(part),
            &format!("containing {part:?}"),
        )
        .await;
    }

    pub(super) async fn find(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(Duration::from_secs(15))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css} on the page: {e}"))
    }

    pub(super) async fn click(&self, css: &str) {
        self.find(css).await.click().await.unwrap();
    }

    pub(super) async fn fill(&self, css: &str, text: &str) {
        let field = self.find(css).await;
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    /// Waits until the browser is on a page of `base` and answers that URL's query.
    pub(super) async fn landed_on(&self, base: &str) -> HashMap<String, String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let url = self.client.current_url().await.unwrap();
            if url.as_str().starts_with(base) {
                return url.query_pairs().into_owned().collect();
            }
            assert!(Instant::now() < deadline, "still on {url}, not {base}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub(super) async fn close(mut self) {
        self.client.clone().close().await.ok();
        self.driver.kill().ok();
        self.driver.wait().ok();
    }
}

/// Peloton's sign-in at `peloton`, and pulls pointed at a closed port (these tests are about
/// linking, not pulling).
fn env(peloton: &FakePeloton) -> [(&'static str, &str); 3] {
    [
        (
            wearhouse::sync::connectors::peloton::access::API_URL_ENV,
            peloton.base.as_str(),
        ),
        (
            wearhouse::sync::connectors::peloton::access::AUTH_URL_ENV,
            peloton.base.as_str(),
        ),
        (
            wearhouse::sync::connectors::oura::API_URL_ENV,
            "http://127.0.0.1:9",
        ),
    ]
}

/// The customer's app the page sends users back to: `GET /back` answers a small page.
pub(super) async fn customer_app() -> String {
    let app = axum::Router::new().route(
        "/back",
        axum::routing::get(|| async { Html("<h1 id=back>Back in the app</h1>") }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/back", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// A new user of the team and a link token for it with `options`: (user id, link_web_url).
pub(super) async fn link_url(
    server: &Server,
    key: &str,
    name: &str,
    options: Value,
) -> (String, String) {
    let http = reqwest::Client::new();
    let user = server
        .create_user(&http, Some(key), json!({"client_user_id": name}))
        .await;
    let user = user["user_id"].as_str().unwrap().to_owned();
    let mut body = json!({"user_id": user});
    body.as_object_mut()
        .unwrap()
        .extend(options.as_object().unwrap().clone());
    let a = http
        .post(server.url("/v2/link/token"))
        .header("x-service-api-key", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(a.status(), 200);
    let token: Value = a.json().await.unwrap();
    (user, token["link_web_url"].as_str().unwrap().to_owned())
}

/// A new user named after `slug` and a link token for it going back to `back`: (user id,
/// link_web_url).
pub(super) async fn link_for(
    server: &Server,
    key: &str,
    slug: &str,
    back: &str,
) -> (String, String) {
    let options = json!({"redirect_url": back});
    link_url(server, key, &format!("{slug}-user"), options).await
}

/// The status of the user's connection to `provider`, if any.
pub(super) async fn connection(
    server: &Server,
    key: &str,
    user: &str,
    provider: &str,
) -> Option<String> {
    let list = server
        .get_json(&format!("/v2/user/providers/{user}"), key)
        .await;
    list["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["slug"] == provider)
        .map(|p| p["status"].as_str().unwrap().to_owned())
}

/// Checks that the browser came back to the app at `back` saying `provider` was linked, and
/// that `user`'s connection to it is connected.
pub(super) async fn assert_linked_back(
    b: &Browser,
    back: &str,
    (server, key): (&Server, &str),
    user: &str,
    provider: &str,
) {
    let landing = b.landed_on(back).await;
    assert_eq!(
        landing.get("state").map(String::as_str),
        Some("success"),
        "{landing:?}"
    );
    assert_eq!(landing.get("provider").map(String::as_str), Some(provider));
    assert_eq!(
        connection(server, key, user, provider).await.as_deref(),
        Some("connected")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosted_page_links_providers_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (oauth, peloton) = (FakeOAuth::start().await, FakePeloton::start().await);
    let back = customer_app().await;
    let server = oauth.serve(dir.path(), &[], &env(&peloton));
    let key = crate::support::server::create_team(dir.path(), "browser", &[]);
    let mut b = Browser::start().await;

    // The list: grouped, searchable as the user types.
    let (oura_user, url) =
        link_url(&server, &key, "oura-user", json!({"redirect_url": back})).await;
    b.goto(&url).await;
    b.expect_text("h1", "Connect a device or app").await;
    assert!(b.find("#provider-oura").await.is_displayed().await.unwrap());
    b.shot("providers").await;
    b.fill("#q", "pelo").await;
    assert!(!b.find("#provider-oura").await.is_displayed().await.unwrap());
    assert!(
        b.find("#provider-peloton")
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    b.shot("search").await;
    b.goto(&url).await;

    // OAuth: the provider's page, its redirect to the callback, back to the app.
    b.click("#provider-oura").await;
    let landing = b.landed_on(&back).await;
    assert_eq!(
        landing.get("state").map(String::as_str),
        Some("success"),
        "{landing:?}"
    );
    assert_eq!(landing.get("provider").map(String::as_str), Some("oura"));
    b.expect_text("#back", "Back in the app").await;
    assert_eq!(
        connection(&server, &key, &oura_user, "oura")
            .await
            .as_deref(),
        Some("connected")
    );

    // The spent token shows why it cannot be used.
    b.goto(&url).await;
    b.expect_text("h1", "This link cannot be used").await;
    b.expect_text("#error-type", "token_consumed").await;
    b.shot("token-consumed").await;

    // A password provider: a wrong password shows inline, the right one connects.
    let (rider, url) = link_url(&server, &key, "rider", json!({"redirect_url": back})).await;
    b.goto(&url).await;
    b.click("#provider-peloton").await;
    b.expect_text("h1", "Sign in to Peloton").await;
    b.shot("password-form").await;
    b.fill("#username", USERNAME).await;
    b.fill("#password", "wrong-password").await;
    b.click("#connect").await;
    b.expect_text_containing("#form-error", "did not accept")
        .await;
    assert!(
        b.client
            .current_url()
            .await
            .unwrap()
            .path()
            .ends_with("/link/provider/peloton")
    );
    b.shot("password-error").await;
    assert_eq!(connection(&server, &key, &rider, "peloton").await, None);
    b.fill("#username", USERNAME).await;
    b.fill("#password", PASSWORD).await;
    b.click("#connect").await;
    assert_linked_back(&b, &back, (&server, &key), &rider, "peloton").await;

    // on_error=redirect: the refusal goes back to the app; a token naming the provider opens
    // its form directly.
    let (_, url) = link_url(
        &server,
        &key,
        "redirected",
        json!({"redirect_url": back, "on_error": "redirect", "provider": "peloton"}),
    )
    .await;
    b.goto(&url).await;
    b.expect_text("h1", "Sign in to Peloton").await;
    b.fill("#username", USERNAME).await;
    b.fill("#password", "wrong-password").await;
    b.click("#connect").await;
    let landing = b.landed_on(&back).await;
    assert_eq!(landing.get("state").map(String::as_str), Some("error"));
    assert_eq!(
        landing.get("error_type").map(String::as_str),
        Some("provider_credential_error"),
        "{landing:?}"
    );

    // Close with on_close=redirect: back to the app with user_cancelled.
    let (_, url) = link_url(
        &server,
        &key,
        "closer",
        json!({"redirect_url": back, "on_close": "redirect"}),
    )
    .await;
    b.goto(&url).await;
    b.click("#close").await;
    let landing = b.landed_on(&back).await;
    assert_eq!(landing.get("state").map(String::as_str), Some("error"));
    assert_eq!(
        landing.get("error_type").map(String::as_str),
        Some("user_cancelled")
    );

    // Close without it: the page says the tab can be closed.
    let (_, url) = link_url(&server, &key, "leaver", json!({})).await;
    b.goto(&url).await;
    b.click("#close").await;
    b.expect_text("h1", "You can close this tab").await;
    b.shot("closed").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_demo_mode_a_demo_provider_connects_at_once_with_history() {
    let dir = tempfile::tempdir().unwrap();
    let (oauth, peloton) = (FakeOAuth::start().await, FakePeloton::start().await);
    let server = oauth.serve(dir.path(), &["--demo", "--demo-days", "2"], &env(&peloton));
    let key = server.key().to_owned();
    let mut b = Browser::start().await;

    // No redirect_url: the outcome is a screen.
    let (user, url) = link_url(&server, &key, "demo-page", json!({})).await;
    b.goto(&url).await;
    b.click("#provider-oura").await;
    b.expect_text("h1", "Oura is connected").await;
    b.shot("demo-connected").await;
    assert_eq!(
        connection(&server, &key, &user, "oura").await.as_deref(),
        Some("connected")
    );
    // The history (90 days, the page's default) arrives by the connection's pull job.
    let path = format!(
        "/v2/summary/sleep/{user}?start_date={}",
        chrono::Utc::now().date_naive() - chrono::Days::new(120)
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let sleep = server.get_json(&path, &key).await;
        // About one night in twenty is unworn: 90 nights leave 75 with a wide margin.
        if sleep["sleep"].as_array().is_some_and(|s| s.len() >= 75) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{sleep}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    b.close().await;
}

/// The page without a browser: what a client without JavaScript gets.
mod without_javascript {
    use axum::body::Body;
    use axum::http::Request;
    use serde_json::json;

    use crate::link::keyed_app;
    use crate::support::{Answer, TestApp};

    /// A keyed app whose deployment has an Oura application and Peloton's sign-in (neither
    /// is asked by these tests).
    async fn page_app() -> TestApp {
        crate::link::tokens::with_oura_and_peloton(keyed_app().await)
    }

    async fn token(app: &TestApp, options: serde_json::Value) -> String {
        let user = app.user(&uuid::Uuid::new_v4().to_string()).await;
        let mut body = json!({"user_id": user});
        body.as_object_mut()
            .unwrap()
            .extend(options.as_object().unwrap().clone());
        let a = app.post("/v2/link/token", body).await;
        a.json["link_token"].as_str().unwrap().to_owned()
    }

    async fn page(app: &TestApp, uri: &str) -> (Answer, String) {
        let a = app.send("GET", uri, None, None).await;
        let html = String::from_utf8(a.bytes.clone()).unwrap();
        (a, html)
    }

    #[tokio::test]
    async fn search_filters_on_the_server_and_every_answer_keeps_the_token_private() {
        let app = page_app().await;
        let t = token(&app, json!({})).await;
        let (a, html) = page(&app, &format!("/link?token={t}&q=PELO")).await;
        assert_eq!(a.status, 200);
        assert!(html.contains(r#"id="provider-peloton""#), "{html}");
        assert!(!html.contains(r#"id="provider-oura""#));
        assert_eq!(a.headers["referrer-policy"], "no-referrer");
        assert_eq!(a.headers["cache-control"], "no-store");
        assert!(
            a.headers["content-security-policy"]
                .to_str()
                .unwrap()
                .contains("script-src 'self'")
        );
        let (_, html) = page(&app, &format!("/link?token={t}&q=no-such-thing")).await;
        assert!(html.contains("No provider matches"), "{html}");

        // The filter on the token bounds the list.
        let t = token(&app, json!({"filter_on_providers": ["oura", "peloton"]})).await;
        let (_, html) = page(&app, &format!("/link?token={t}")).await;
        assert_eq!(html.matches(r#"class="provider""#).count(), 2, "{html}");
    }

    #[tokio::test]
    async fn tokens_that_cannot_be_used_get_a_screen_naming_why() {
        let app = page_app().await;
        let (a, html) = page(&app, "/link").await;
        assert_eq!(a.status, 400);
        assert!(html.contains("invalid_token"), "{html}");
        let (a, html) = page(&app, "/link?token=lt_unknown").await;
        assert_eq!(a.status, 401);
        assert!(html.contains("invalid_token"), "{html}");

        // A token naming its provider goes straight to it.
        let t = token(&app, json!({"provider": "peloton"})).await;
        let (a, _) = page(&app, &format!("/link?token={t}")).await;
        assert_eq!(a.status, 303);
        assert_eq!(
            a.headers["location"],
            format!("/link/provider/peloton?token={t}").as_str()
        );
        // Its form starts empty.
        let (a, html) = page(&app, &format!("/link/provider/peloton?token={t}")).await;
        assert_eq!(a.status, 200);
        assert!(
            html.contains(r#"id="username" name="username" value="" "#),
            "{html}"
        );
        // A provider outside the token's filter.
        let (a, _) = page(&app, &format!("/link/provider/oura?token={t}")).await;
        assert_eq!(a.status, 404);
        // A provider this deployment cannot connect (not offered): the page says why.
        let t = token(&app, json!({})).await;
        let (a, html) = page(&app, &format!("/link/provider/renpho?token={t}")).await;
        assert_eq!(a.status, 404);
        assert!(html.contains("Renpho (renpho)"), "{html}");
        assert!(html.contains("no connector"), "{html}");
    }

    #[tokio::test]
    async fn an_incomplete_password_form_is_shown_again_without_asking_the_provider() {
        let app = page_app().await;
        let t = token(&app, json!({})).await;
        let req = Request::builder()
            .method("POST")
            .uri("/link/provider/peloton")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(format!("token={t}&username=rider&password=")))
            .unwrap();
        let a = app.raw(req).await;
        assert_eq!(a.status, 422);
        let html = String::from_utf8(a.bytes).unwrap();
        assert!(
            html.contains("Enter both your username and your password."),
            "{html}"
        );
        assert!(html.contains(r#"value="rider""#), "{html}");
    }

    #[tokio::test]
    async fn assets_and_logos_are_served_by_the_service() {
        let app = keyed_app().await;
        let (a, _) = page(&app, "/link/assets/link.css").await;
        assert_eq!(a.status, 200);
        assert_eq!(a.headers["content-type"], "text/css; charset=utf-8");
        let (a, js) = page(&app, "/link/assets/link.js").await;
        assert_eq!(a.status, 200);
        assert!(js.contains("data-terms"));
        let (a, svg) = page(&app, "/link/logo/withings.svg").await;
        assert_eq!(a.status, 200);
        assert_eq!(a.headers["content-type"], "image/svg+xml");
        assert!(svg.contains(">W</text>"), "{svg}");
        for missing in [
            "/link/assets/other.js",
            "/link/logo/nope.svg",
            "/link/logo/oura.png",
        ] {
            assert_eq!(page(&app, missing).await.0.status, 404, "{missing}");
        }
    }
}
