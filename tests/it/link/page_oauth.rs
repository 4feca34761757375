//! The hosted link page's OAuth round trip for each new OAuth provider (issue 37), in a real
//! headless Chromium (the [`page`](super::page) test's browser) against a real server process:
//! the deployment has an application for each, at [`FakeOAuth`] (the provider's own page,
//! `/consent`, asks the user first; its token endpoint answers as the provider's does), and each
//! connector points at its provider's fake API (`sync::<slug>`'s, serving its fixtures) through
//! its URL variable. A row of [`providers`] is opened from a link token's page, allowed on the
//! provider's page (which lists the scopes the link asks), lands back on the `redirect_url` with
//! `state=success`, has its connection, and has had its first pull (the `sync.historical` job)
//! run against the fake with the tokens the link got.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use fantoccini::Locator;
use serde_json::{Value, json};

use super::fake_oauth::{CLIENT_ID, FakeOAuth};
use super::page::{Browser, assert_linked_back, customer_app, link_for, link_url};
use super::page_offered::listed;
use crate::support::server::Server;
use crate::sync::fake::Gate;
use crate::sync::polar::fake_polar::POLAR_USER;
use wearhouse::sync::connectors as c;

/// A provider's row: its slug, its connector's URL variable, and how its token endpoint answers
/// beside the tokens (the steering parameters its end-to-end suite links with: no user id in
/// the answer, Garmin's `scope`, Polar's wire and user id).
struct Row {
    slug: &'static str,
    api_url_env: &'static str,
    steer: Vec<(&'static str, String)>,
}

/// The new OAuth providers, in the order the page lists them (the catalogue's).
fn providers() -> Vec<Row> {
    let no_user = || vec![("x_account", String::new())];
    let row = |slug, api_url_env, steer| Row {
        slug,
        api_url_env,
        steer,
    };
    vec![
        row(
            c::garmin::SLUG,
            c::garmin::API_URL_ENV,
            vec![
                ("x_account", String::new()),
                ("x_grant", GARMIN_SCOPE.to_owned()),
            ],
        ),
        row(
            c::google_health::SLUG,
            c::google_health::API_URL_ENV,
            no_user(),
        ),
        row(
            c::polar::SLUG,
            c::polar::API_URL_ENV,
            vec![
                ("x_account", POLAR_USER.to_string()),
                ("x_wire", "polar".to_owned()),
            ],
        ),
        row("strava", c::strava::API_URL_ENV, no_user()),
        row(c::ultrahuman::SLUG, c::ultrahuman::API_URL_ENV, no_user()),
        row("whoop_v2", c::whoop::API_URL_ENV, no_user()),
    ]
}

/// The `scope` of Garmin's token answers (its OAuth 2.0 PKCE specification's example): its
/// authorisation page takes none.
const GARMIN_SCOPE: &str = "PARTNER_WRITE PARTNER_READ CONNECT_READ CONNECT_WRITE";

/// What the test needs of a provider's fake API: its gate.
trait Api: Send + Sync {
    /// Accepts as bearer tokens what `issued` holds (the authorisation server's tokens).
    fn accept(&self, issued: Arc<std::sync::Mutex<Vec<String>>>);
    /// The requests it answered.
    fn log(&self) -> Vec<String>;
}

impl<F: Copy + Send + Sync + 'static> Api for Gate<F> {
    fn accept(&self, issued: Arc<std::sync::Mutex<Vec<String>>>) {
        self.accept_when(move |t| issued.lock().unwrap().iter().any(|i| i == t));
    }
    fn log(&self) -> Vec<String> {
        Gate::log(self)
    }
}

/// A running fake's base URL and its gate.
macro_rules! api {
    ($start:expr) => {{
        let fake = $start.await;
        let gate: Box<dyn Api> = Box::new((*fake).clone());
        (fake.base.clone(), gate)
    }};
}

/// The provider's fake API serving its fixtures: its base URL and its gate.
async fn fake_api(slug: &str) -> (String, Box<dyn Api>) {
    use crate::sync as s;
    match slug {
        "garmin" => {
            use s::garmin::fake_garmin::{FakeGarmin, fixture_data};
            api!(FakeGarmin::start(fixture_data()))
        }
        "google_health" => {
            use s::google_health::fake_google_health::{FakeGoogleHealth, fixture_data};
            api!(FakeGoogleHealth::start(fixture_data(), 2))
        }
        "polar" => {
            use s::polar::fake_polar::{FakePolar, fixture_data};
            api!(FakePolar::start(fixture_data()))
        }
        "strava" => {
            use s::strava::fake_strava::{FakeStrava, fixture_data};
            let (activities, streams) = fixture_data();
            api!(FakeStrava::start(activities, streams))
        }
        "ultrahuman" => {
            use s::ultrahuman::fake_ultrahuman::{FakeUltrahuman, fixture_days};
            api!(FakeUltrahuman::start(fixture_days()))
        }
        "whoop_v2" => {
            use s::whoop::fake_whoop::{FakeWhoop, fixture_collections};
            api!(FakeWhoop::start(fixture_collections(), 2))
        }
        other => panic!("no fake API for {other}"),
    }
}

/// The scopes the provider's page lists, sorted.
async fn shown_scopes(b: &Browser) -> Vec<String> {
    let mut shown = Vec::new();
    for li in b.client.find_all(Locator::Css("li.scope")).await.unwrap() {
        shown.push(li.text().await.unwrap());
    }
    shown.sort();
    shown
}

/// The scopes a link to `slug` asks its authorisation page for, sorted (Strava's written as
/// one comma-separated scope, as its page takes them).
fn asked_scopes(slug: &str) -> Vec<String> {
    let entry = wearhouse::providers::provider(slug).unwrap();
    if !wearhouse::sync::token_wire::asks_scopes(slug) {
        return Vec::new();
    }
    let all = wearhouse::providers::scopes::authorisation_scopes(entry);
    let mut asked: Vec<String> = all
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::to_owned)
        .collect();
    asked.sort();
    asked
}

/// Waits (up to 60 s) until the user's `sync.historical` job has succeeded; fails at once if
/// it failed.
async fn first_pull_succeeded(server: &Server, key: &str, user: &str, slug: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let jobs = server
            .get_json("/v2/team/jobs?kind=sync.historical&size=100", key)
            .await;
        let job = jobs["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["payload"]["user"] == user)
            .cloned();
        if let Some(job) = &job {
            assert_ne!(job["state"], "failed", "{slug}: {job:#}");
            if job["state"] == "succeeded" {
                return job.clone();
            }
        }
        assert!(Instant::now() < deadline, "{slug}: {job:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_new_oauth_providers_round_trip_completes_in_a_real_browser() {
    let rows = providers();
    let oauth = FakeOAuth::start().await;
    let (mut apps, mut env, mut fakes) = (json!({}), Vec::new(), Vec::new());
    for row in &rows {
        let (base, api) = fake_api(row.slug).await;
        api.accept(oauth.issued_list());
        let steer: Vec<(&str, &str)> = row.steer.iter().map(|(k, v)| (*k, v.as_str())).collect();
        apps[row.slug] = oauth.app("consent", &steer);
        env.push((row.api_url_env, base));
        fakes.push(api);
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();
    let server = oauth.serve_apps(dir.path(), &apps, &[], &env);
    let key = crate::support::server::create_team(dir.path(), "browser-oauth", &[]);
    let back = customer_app().await;
    let mut b = Browser::start().await;

    // Each has an application: the page offers them all, ahead of the password providers.
    let (_, url) = link_url(&server, &key, "lister", json!({"redirect_url": back})).await;
    let offered = listed(&b, &url).await;
    let slugs: Vec<&str> = rows.iter().map(|r| r.slug).collect();
    assert_eq!(offered[..slugs.len()], slugs, "{offered:?}");
    b.shot("offered-oauth").await;

    for (row, fake) in rows.iter().zip(&fakes) {
        let slug = row.slug;
        let (user, url) = link_for(&server, &key, slug, &back).await;
        b.goto(&url).await;
        b.click(&format!("#provider-{slug}")).await;
        // The provider's page names the client and the scopes the link asks (none on
        // Garmin's: the user chooses what to share there); the user allows it.
        b.expect_text_containing("#consent", CLIENT_ID).await;
        assert_eq!(shown_scopes(&b).await, asked_scopes(slug), "{slug}");
        b.shot(&format!("{slug}-consent")).await;
        b.click("#allow").await;
        assert_linked_back(&b, &back, (&server, &key), &user, slug).await;
        b.shot(&format!("{slug}-back")).await;

        // The first pull ran against the provider's fake, with the tokens the link got.
        let job = first_pull_succeeded(&server, &key, &user, slug).await;
        assert_eq!(job["payload"]["provider"], slug, "{job:#}");
        assert!(!fake.log().is_empty(), "{slug}: the fake was never asked");
    }
    b.close().await;
}
