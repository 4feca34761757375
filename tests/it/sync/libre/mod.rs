//! FreeStyle Libre by e-mail through a LibreLinkUp follower account, end to end against the
//! real app, its job runner and [`fake_librelinkup`], a fake of LibreLinkUp's API on the shared
//! fake provider (it shares no code with wearhouse's client).
//!
//! The deployment's follower account (`--oauth-apps`, or a team's own credentials) signs in,
//! asked in the wrong region and sent on to its own; a user links FreeStyle Libre with the
//! e-mail address the patient shared from: before the patient shared, the link says what to do
//! (`provider_credential_error` naming the follower's address); after, the pending invitation
//! is accepted and the user connected to that patient. The `sync.historical` job pulls that
//! patient's readings (not those of the other patient the account follows) and
//! `GET /v2/timeseries/{user}/glucose` answers them in mmol/L with the phone's offset. A region
//! LibreLinkUp lacks is `unsupported_region`; a deployment without a follower account
//! `provider_api_error`. An expired session is renewed by signing in again.

pub mod fake_librelinkup;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::link::fake_oauth::FakeOAuth;
use crate::link::keyed_app;
use crate::link::mfa::with_token;
use crate::support::TestApp;
use crate::sync::support::linked::Linked;
use fake_librelinkup::{FOLLOWER, FOLLOWER_PASSWORD, FakeLibreLinkUp, WEARER, WEARER_EMAIL};
use wearhouse::jobs::JobState;
use wearhouse::link::LinkConfig;
use wearhouse::link::email::EmailLinks;
use wearhouse::link::oauth::{OAuthApp, OAuthApps};
use wearhouse::link::password::PasswordLogins;
use wearhouse::sync::connectors::libre::access::Hosts;
use wearhouse::sync::connectors::libre::share::LibreLinkUp;

/// The follower account as `--oauth-apps` names it.
pub(crate) fn follower_app() -> OAuthApps {
    let mut apps = OAuthApps::default();
    apps.0.insert(
        "freestyle_libre".into(),
        OAuthApp {
            client_id: FOLLOWER.into(),
            client_secret: FOLLOWER_PASSWORD.into(),
            authorize_url: String::new(),
            token_url: String::new(),
            redirect_uri: None,
            verification_token: None,
            subscription_id: None,
        },
    );
    apps
}

/// The app with FreeStyle Libre's follower sign-in, share search and connector pointed at
/// `fake` (with the deployment's follower account when `follower`), and a user.
async fn app(fake: &FakeLibreLinkUp, follower: bool) -> (TestApp, String) {
    let hosts = Hosts::template(&fake.template());
    let mut app = keyed_app().await;
    app.state = app
        .state
        .clone()
        .with_link_config(LinkConfig {
            oauth_apps: if follower {
                follower_app()
            } else {
                OAuthApps::default()
            },
            password: PasswordLogins::default().with(Arc::new(
                wearhouse::sync::connectors::libre::access::Libre::new(hosts.clone()).unwrap(),
            )),
            email: EmailLinks::default().with(Arc::new(LibreLinkUp::new(hosts.clone()).unwrap())),
            ..Default::default()
        })
        .with_connectors(wearhouse::sync::Connectors::default().with(Arc::new(
            wearhouse::sync::connectors::libre::Libre::new(hosts).unwrap(),
        )));
    let user = app.user("libre-user").await;
    (app, user)
}

/// An e-mail link of FreeStyle Libre with `body` and a new link token; answers the outcome.
async fn email_link(app: &TestApp, user: &str, body: Value) -> Value {
    let token = app.post("/v2/link/token", json!({"user_id": user})).await;
    let t = token.json["link_token"].as_str().unwrap();
    let a = with_token(app, t, "/v2/link/provider/email/freestyle_libre", body).await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json
}

fn outcome(json: &Value) -> (String, Option<String>) {
    (
        json["state"].as_str().unwrap().to_owned(),
        json["error_type"].as_str().map(str::to_owned),
    )
}

fn err(t: &str) -> (String, Option<String>) {
    ("error".to_owned(), Some(t.to_owned()))
}

#[tokio::test]
async fn unsupported_regions_and_a_deployment_without_a_follower_are_link_errors() {
    let fake = FakeLibreLinkUp::start().await;
    let (app, user) = app(&fake, true).await;
    let mars = json!({"email": WEARER_EMAIL, "region": "mars"});
    let a = email_link(&app, &user, mars).await;
    assert_eq!(outcome(&a), err("unsupported_region"), "{a}");
    assert_eq!(fake.logins(), 0, "refused before signing in");

    // The follower account moved to a region LibreLinkUp's hosts do not include.
    fake.move_to("xx");
    let a = email_link(&app, &user, json!({"email": WEARER_EMAIL})).await;
    assert_eq!(outcome(&a), err("unsupported_region"), "{a}");
    fake.move_to("eu");

    // No follower account: nothing the patient can do, said as the provider's failure.
    let (bare, bare_user) = app_without_follower(&fake).await;
    let a = email_link(&bare, &bare_user, json!({"email": WEARER_EMAIL})).await;
    assert_eq!(outcome(&a), err("provider_api_error"), "{a}");
    assert!(!a.to_string().contains(FOLLOWER_PASSWORD));

    // The team's own follower account (its provider credentials) serves the team's links.
    let put = bare
        .send(
            "PUT",
            "/v2/team/provider/freestyle_libre/credentials",
            Some(&bare.key.clone()),
            Some(json!({"client_id": FOLLOWER, "client_secret": FOLLOWER_PASSWORD})),
        )
        .await;
    assert_eq!(put.status, 200, "{}", put.json);
    fake.share();
    let a = email_link(&bare, &bare_user, json!({"email": WEARER_EMAIL})).await;
    assert_eq!(a["state"], "success", "{a}");
}

async fn app_without_follower(fake: &FakeLibreLinkUp) -> (TestApp, String) {
    app(fake, false).await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_email_link_finds_the_patient_once_they_shared_and_pulls_only_their_readings() {
    let fake = FakeLibreLinkUp::start().await;
    let (app, user) = app(&fake, true).await;

    // Not shared yet: the link says what to do, naming the address to share with.
    let body = json!({"email": WEARER_EMAIL, "region": "us"});
    let a = email_link(&app, &user, body.clone()).await;
    assert_eq!(outcome(&a), err("provider_credential_error"), "{a}");
    let sentence = a["error"].as_str().unwrap();
    assert!(
        sentence.contains(FOLLOWER) && sentence.contains("LibreLinkUp"),
        "{a}"
    );
    assert!(!fake.accepted());

    // The patient shares; asked in the US, the follower lives in the EU: the sign-in follows,
    // the invitation is accepted, the user is connected to that patient.
    fake.share();
    let a = email_link(&app, &user, body).await;
    assert_eq!(a["state"], "success", "{a}");
    assert_eq!(a["connected"], true, "{a}");
    assert_eq!(a["provider_id"], WEARER, "{a}");
    assert!(fake.accepted());
    let l = Linked {
        app,
        oauth: FakeOAuth::start().await,
        user,
        provider: "freestyle_libre",
    };
    let done = l.run_until(JobState::Succeeded).await;
    assert_eq!(done.state, JobState::Succeeded, "{done:?}");

    let got = l.series("glucose").await;
    let want: Vec<(DateTime<Utc>, f64)> = fake
        .readings()
        .iter()
        .map(|(at, mg)| (*at, (f64::from(*mg) / 18.0182 * 100.0).round() / 100.0))
        .collect();
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (sample, (at, mmol)) in got.iter().zip(&want) {
        let t = crate::sync::support::linked::instant(&sample["timestamp"]);
        assert_eq!(t.timestamp(), at.timestamp(), "{sample}");
        assert_eq!(sample["value"].as_f64(), Some(*mmol), "{sample}");
        assert_eq!(sample["unit"], "mmol/L");
        assert_eq!(sample["timezone_offset"], 3600, "{sample}");
    }

    // The session expires: the next pull signs the follower in again and replaces, adding
    // nothing.
    let before = fake.logins();
    fake.expire_sessions();
    l.refreshed().await;
    assert_eq!(fake.logins(), before + 1);
    assert_eq!(l.series("glucose").await.len(), want.len());
}

/// The hosted page's e-mail form offers LibreLinkUp's regions and names the address to share
/// with; a region LibreLinkUp lacks is said inline, the address kept.
#[tokio::test]
async fn the_hosted_page_shows_the_email_form_and_says_an_unsupported_region_inline() {
    let fake = FakeLibreLinkUp::start().await;
    let (app, user) = app(&fake, true).await;
    fake.share();
    let token = app
        .post(
            "/v2/link/token",
            json!({"user_id": user, "provider": "freestyle_libre"}),
        )
        .await;
    let t = token.json["link_token"].as_str().unwrap().to_owned();
    let a = app
        .send("GET", &format!("/link?token={t}"), None, None)
        .await;
    assert_eq!(a.status, 303);
    let form = a.headers["location"].to_str().unwrap().to_owned();
    let a = app.send("GET", &form, None, None).await;
    let html = String::from_utf8(a.bytes).unwrap();
    assert!(html.contains(r#"id="email-form""#), "{html}");
    assert!(
        html.contains(r#"<select id="region" name="region""#),
        "{html}"
    );
    assert!(
        html.contains(r#"<option value="eu">Europe</option>"#),
        "{html}"
    );
    assert!(html.contains(FOLLOWER), "the address to share with: {html}");
    assert!(!html.contains(FOLLOWER_PASSWORD));

    let submit = |region: &str| {
        let form = format!("token={t}&email=wearer%40example.com&region={region}");
        let req = axum::http::Request::builder()
            .method("POST")
            .uri("/link/provider/freestyle_libre")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(axum::body::Body::from(form))
            .unwrap();
        app.raw(req)
    };
    let a = submit("xx").await;
    assert_eq!(a.status, 400);
    let html = String::from_utf8(a.bytes).unwrap();
    assert!(html.contains("has no region"), "{html}");
    assert!(html.contains(r#"value="wearer@example.com""#), "{html}");
    let a = submit("eu").await;
    assert_eq!(a.status, 200, "the success screen (no redirect_url)");
    let html = String::from_utf8(a.bytes).unwrap();
    assert!(html.contains("FreeStyle Libre is connected"), "{html}");
}
