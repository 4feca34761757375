//! Every provider the hosted page offers can be completed, in a real headless Chromium (the
//! [`page`](super::page) test's browser) against a real server process: on a deployment with
//! no OAuth application, the password providers (Peloton against [`FakePeloton`], Abbott
//! LibreView with its code step against [`FakeLibreView`]); in demo mode, the demo providers as
//! well, each connecting at once. The list is read from the page, so a provider offered that
//! cannot be completed fails the test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use fantoccini::Locator;
use serde_json::json;

use super::fake_libreview::{self, Factor, FakeLibreView};
use super::fake_peloton::{self, FakePeloton};
use super::page::{Browser, connection, customer_app, link_for, link_url};
use crate::support::server::Server;

/// The slugs the page at `url` lists, in its order.
pub(super) async fn listed(b: &Browser, url: &str) -> Vec<String> {
    b.goto(url).await;
    b.expect_text("h1", "Connect a device or app").await;
    let mut slugs = Vec::new();
    for a in b.client.find_all(Locator::Css("a.provider")).await.unwrap() {
        let id = a.attr("id").await.unwrap().unwrap();
        slugs.push(id.trim_start_matches("provider-").to_owned());
    }
    slugs
}

/// A server with no `--oauth-apps`, its password providers at the fakes, and `args`.
fn server(dir: &std::path::Path, args: &[&str], peloton: &str, libreview: &str) -> Server {
    let secret = "5a".repeat(32);
    let mut all = vec!["--secret-key", &secret];
    all.extend_from_slice(args);
    Server::start_with(
        dir,
        &all,
        "warn",
        &[
            (
                wearhouse::sync::connectors::peloton::access::API_URL_ENV,
                peloton,
            ),
            (
                wearhouse::sync::connectors::peloton::access::AUTH_URL_ENV,
                peloton,
            ),
            (
                wearhouse::sync::connectors::libre::libreview::API_URL_ENV,
                libreview,
            ),
        ],
    )
}

/// Completes `slug`'s flow from the list at `url` and checks it lands on `back` with success.
async fn complete(b: &Browser, url: &str, slug: &str, libreview: &FakeLibreView, back: &str) {
    b.goto(url).await;
    b.click(&format!("#provider-{slug}")).await;
    match slug {
        "peloton" => {
            b.expect_text("h1", "Sign in to Peloton").await;
            b.fill("#username", fake_peloton::USERNAME).await;
            b.fill("#password", fake_peloton::PASSWORD).await;
            b.click("#connect").await;
        }
        "abbott_libreview" => {
            b.expect_text("h1", "Sign in to Abbott LibreView").await;
            b.fill("#username", fake_libreview::EMAIL).await;
            b.fill("#password", fake_libreview::PASSWORD).await;
            b.click("#connect").await;
            b.expect_text("h1", "Enter your Abbott LibreView code")
                .await;
            b.fill("#mfa_code", &libreview.last_code()).await;
            b.click("#verify").await;
        }
        // Demo providers connect at once.
        _ => {}
    }
    let landing = b.landed_on(back).await;
    assert_eq!(
        landing.get("state").map(String::as_str),
        Some("success"),
        "{slug}: {landing:?}"
    );
    assert_eq!(landing.get("provider").map(String::as_str), Some(slug));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_provider_offered_without_oauth_applications_completes_in_a_real_browser() {
    let (peloton, libreview) = (
        FakePeloton::start().await,
        FakeLibreView::start(Factor::Sms).await,
    );
    let back = customer_app().await;
    let mut b = Browser::start().await;
    for (demo, want) in [
        (false, vec!["abbott_libreview", "peloton"]),
        (
            true,
            vec![
                "fitbit",
                "oura",
                "abbott_libreview",
                "peloton",
                "freestyle_libre",
            ],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let args: &[&str] = if demo {
            &["--demo", "--demo-days", "2"]
        } else {
            &[]
        };
        let server = server(dir.path(), args, &peloton.base, &libreview.template());
        let key = if demo {
            server.key().to_owned()
        } else {
            crate::support::server::create_team(dir.path(), "offered", &[])
        };
        let (_, url) = link_url(&server, &key, "lister", json!({"redirect_url": back})).await;
        // Grouped by how they connect: OAuth, password, then e-mail.
        assert_eq!(listed(&b, &url).await, want, "demo: {demo}");
        b.shot(if demo { "offered-demo" } else { "offered" }).await;
        for slug in &want {
            let (user, url) = link_for(&server, &key, slug, &back).await;
            complete(&b, &url, slug, &libreview, &back).await;
            assert_eq!(
                connection(&server, &key, &user, slug).await.as_deref(),
                Some("connected"),
                "{slug}"
            );
        }
    }
    b.close().await;
}
