//! The hosted link page's second-factor step and e-mail form in a real headless Chromium
//! (the [`page`](super::page) test's browser) against a real server process and the fakes of
//! LibreView ([`FakeLibreView`]) and LibreLinkUp ([`FakeLibreLinkUp`]): Abbott LibreView's sign-in,
//! its code step (where the code went, a wrong code inline, a new code, the right one) to
//! `state=success` on the `redirect_url`; FreeStyle Libre's e-mail form, before the patient
//! shared (inline, then with `on_error=redirect`) and after, to `state=success`; the Close
//! button on the code step with `on_close=redirect`.
//!
//! Screenshots as in the page test (`WEARHOUSE_TEST_SCREENSHOTS=<dir>` keeps them; the
//! committed ones are in `docs/screenshots/link-page-mfa/`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use super::fake_libreview::{EMAIL, Factor, FakeLibreView, PASSWORD, SMS_HINT};
use super::fake_oauth::FakeOAuth;
use super::page::{Browser, assert_linked_back, connection, customer_app, link_url};
use crate::sync::libre::fake_librelinkup::{FOLLOWER, FOLLOWER_PASSWORD, FakeLibreLinkUp};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_code_step_and_the_email_form_work_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let oauth = FakeOAuth::start().await;
    let (libreview, llu) = (
        FakeLibreView::start(Factor::Sms).await,
        FakeLibreLinkUp::start().await,
    );
    let back = customer_app().await;
    let env = [
        (
            wearhouse::sync::connectors::libre::libreview::API_URL_ENV,
            libreview.template(),
        ),
        (
            wearhouse::sync::connectors::libre::access::API_URL_ENV,
            llu.template(),
        ),
        (
            wearhouse::sync::connectors::oura::API_URL_ENV,
            "http://127.0.0.1:9".into(),
        ),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = oauth.serve(dir.path(), &[], &env);
    let key = crate::support::server::create_team(dir.path(), "browser-mfa", &[]);
    // The team's own LibreLinkUp follower account.
    let put = reqwest::Client::new()
        .put(server.url("/v2/team/provider/freestyle_libre/credentials"))
        .header("x-service-api-key", &key)
        .json(&json!({"client_id": FOLLOWER, "client_secret": FOLLOWER_PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200);
    let mut b = Browser::start().await;

    // Abbott LibreView: the password form, then the code step.
    let (patient, url) = link_url(
        &server,
        &key,
        "lv-patient",
        json!({"redirect_url": back, "provider": "abbott_libreview"}),
    )
    .await;
    b.goto(&url).await;
    b.expect_text("h1", "Sign in to Abbott LibreView").await;
    b.fill("#username", EMAIL).await;
    b.fill("#password", PASSWORD).await;
    b.click("#connect").await;
    b.expect_text("h1", "Enter your Abbott LibreView code")
        .await;
    b.expect_text("#mfa-destination", SMS_HINT).await;
    b.expect_text_containing("#mfa-hint", "text message").await;
    b.shot("mfa-code").await;

    b.fill("#mfa_code", "000000").await;
    b.click("#verify").await;
    b.expect_text_containing("#form-error", "not the one").await;
    b.expect_text_containing("#form-error", "4 tries left")
        .await;
    let field = b.find("#mfa_code").await;
    assert_eq!(
        field.attr("aria-invalid").await.unwrap().as_deref(),
        Some("true")
    );
    b.shot("mfa-wrong-code").await;
    assert_eq!(
        connection(&server, &key, &patient, "abbott_libreview").await,
        None
    );

    b.click("#resend").await;
    b.expect_text_containing("#form-notice", "new code").await;
    assert_eq!(libreview.codes_sent(), 2);
    b.fill("#mfa_code", &libreview.last_code()).await;
    b.click("#verify").await;
    assert_linked_back(&b, &back, (&server, &key), &patient, "abbott_libreview").await;

    // The Close button on the code step, with on_close=redirect.
    let (_, url) = link_url(
        &server,
        &key,
        "lv-leaver",
        json!({"redirect_url": back, "provider": "abbott_libreview", "on_close": "redirect"}),
    )
    .await;
    b.goto(&url).await;
    b.fill("#username", EMAIL).await;
    b.fill("#password", PASSWORD).await;
    b.click("#connect").await;
    b.expect_text("h1", "Enter your Abbott LibreView code")
        .await;
    b.click("#close").await;
    let landing = b.landed_on(&back).await;
    assert_eq!(
        landing.get("error_type").map(String::as_str),
        Some("user_cancelled")
    );

    // FreeStyle Libre by e-mail: not shared yet (inline), shared, connected.
    let (wearer, url) = link_url(
        &server,
        &key,
        "libre-wearer",
        json!({"redirect_url": back, "provider": "freestyle_libre"}),
    )
    .await;
    b.goto(&url).await;
    b.expect_text("h1", "Connect FreeStyle Libre").await;
    b.expect_text("#follower", FOLLOWER).await;
    b.shot("email-form").await;
    b.fill("#email", "wearer@example.com").await;
    b.click("#connect").await;
    b.expect_text_containing("#form-error", "No FreeStyle Libre share")
        .await;
    b.shot("email-not-shared").await;
    assert_eq!(
        connection(&server, &key, &wearer, "freestyle_libre").await,
        None
    );
    llu.share();
    b.click("#connect").await;
    assert_linked_back(&b, &back, (&server, &key), &wearer, "freestyle_libre").await;

    // on_error=redirect: an address that has not shared goes back to the app.
    let (_, url) = link_url(
        &server,
        &key,
        "libre-redirected",
        json!({"redirect_url": back, "provider": "freestyle_libre", "on_error": "redirect"}),
    )
    .await;
    b.goto(&url).await;
    b.fill("#email", "nobody@example.com").await;
    b.click("#connect").await;
    let landing = b.landed_on(&back).await;
    assert_eq!(landing.get("state").map(String::as_str), Some("error"));
    assert_eq!(
        landing.get("error_type").map(String::as_str),
        Some("provider_credential_error"),
        "{landing:?}"
    );
    b.close().await;
}
