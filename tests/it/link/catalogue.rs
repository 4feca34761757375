//! The catalogue tells the truth (issue 37): the hosted page and `GET /v2/link/providers` offer
//! only what this deployment can connect for the token's team, `GET /v2/providers` lists every
//! provider with `connectable`, and a link token for a provider that cannot connect is refused
//! at creation with the provider and why.
//!
//! The deployment here has every sign-in this process has (`PasswordLogins::from_env`,
//! `EmailLinks::from_env`, as `serve` builds them; no provider is ever asked) and the OAuth
//! applications each test names.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use wearhouse::link::LinkConfig;
use wearhouse::link::email::EmailLinks;
use wearhouse::link::oauth::{OAuthApp, OAuthApps};
use wearhouse::link::password::PasswordLogins;

use super::keyed_app;
use crate::support::{Answer, TestApp};

/// A keyed app whose deployment has OAuth applications for `apps` (at a host never asked) and
/// runs in demo mode when `demo`.
async fn deployment(apps: &[&str], demo: bool) -> TestApp {
    let mut app = keyed_app().await;
    let app_of = || OAuthApp {
        client_id: "deployment-client".into(),
        client_secret: "deployment-secret".into(),
        authorize_url: "https://auth.example.test/authorize".into(),
        token_url: "https://auth.example.test/token".into(),
        redirect_uri: None,
        verification_token: None,
        subscription_id: None,
    };
    app.state = app.state.clone().with_link_config(LinkConfig {
        oauth_apps: OAuthApps(apps.iter().map(|s| ((*s).to_owned(), app_of())).collect()),
        password: PasswordLogins::from_env().unwrap(),
        email: EmailLinks::from_env().unwrap(),
        demo,
        ..Default::default()
    });
    app
}

/// A link token of a new user of the team of `key`, made with `options`.
async fn token_with(app: &TestApp, key: &str, options: Value) -> Answer {
    let user = app
        .send(
            "POST",
            "/v2/user",
            Some(key),
            Some(json!({"client_user_id": uuid::Uuid::new_v4().to_string()})),
        )
        .await;
    let mut body = json!({"user_id": user.json["user_id"]});
    body.as_object_mut()
        .unwrap()
        .extend(options.as_object().unwrap().clone());
    app.send("POST", "/v2/link/token", Some(key), Some(body))
        .await
}

async fn token(app: &TestApp, key: &str) -> String {
    let a = token_with(app, key, json!({})).await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["link_token"].as_str().unwrap().to_owned()
}

/// What `GET /v2/link/providers` offers the token, and what its page lists: both, checked equal.
async fn offered(app: &TestApp, token: &str) -> Vec<String> {
    let a = app
        .send(
            "GET",
            &format!("/v2/link/providers?token={token}"),
            None,
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let api: Vec<String> = a
        .json
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["slug"].as_str().unwrap().to_owned())
        .collect();
    let page = app
        .send("GET", &format!("/link?token={token}"), None, None)
        .await;
    let html = String::from_utf8(page.bytes).unwrap();
    let listed: Vec<String> = html
        .split(r#"id="provider-"#)
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_owned())
        .collect();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, api, "the page lists what the API offers: {html}");
    api
}

async fn page(app: &TestApp, uri: &str) -> (Answer, String) {
    let a = app.send("GET", uri, None, None).await;
    let html = String::from_utf8(a.bytes.clone()).unwrap();
    (a, html)
}

async fn set_credentials(app: &TestApp, key: &str, provider: &str) {
    let a = app
        .send(
            "PUT",
            &format!("/v2/team/provider/{provider}/credentials"),
            Some(key),
            Some(json!({"client_id": "team-client", "client_secret": "team-secret"})),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
}

#[tokio::test]
async fn without_oauth_applications_only_working_sign_ins_are_offered_and_each_opens_its_form() {
    let app = deployment(&[], false).await;
    let key = app.key.clone();
    let t = token(&app, &key).await;
    assert_eq!(offered(&app, &t).await, ["abbott_libreview", "peloton"]);
    for (slug, heading) in [
        ("peloton", "Sign in to Peloton"),
        ("abbott_libreview", "Sign in to Abbott LibreView"),
    ] {
        let (a, html) = page(&app, &format!("/link/provider/{slug}?token={t}")).await;
        assert_eq!(a.status, 200, "{html}");
        assert!(html.contains(heading), "{html}");
    }
    // What is not offered says why, and never shows a flow that cannot succeed.
    for (slug, why) in [
        ("oura", "no OAuth application"),
        ("wahoo", "no connector"),
        ("renpho", "no connector"),
        ("zwift", "no connector"),
        ("freestyle_libre", "no follower account"),
    ] {
        let (a, html) = page(&app, &format!("/link/provider/{slug}?token={t}")).await;
        assert_eq!(a.status, 404, "{slug}: {html}");
        assert!(html.contains(why), "{slug}: {html}");
    }
}

#[tokio::test]
async fn demo_mode_offers_the_demo_providers_too() {
    let app = deployment(&[], true).await;
    let key = app.key.clone();
    let t = token(&app, &key).await;
    assert_eq!(
        offered(&app, &t).await,
        [
            "abbott_libreview",
            "fitbit",
            "freestyle_libre",
            "oura",
            "peloton"
        ]
    );
}

#[tokio::test]
async fn an_oauth_application_of_the_deployment_or_the_team_offers_a_provider_with_a_connector() {
    let app = deployment(&["dexcom_v3", "wahoo"], false).await;
    let (key, other) = (app.key.clone(), app.other_key.clone());
    // The deployment's: Dexcom has a connector, Wahoo none.
    let t = token(&app, &key).await;
    assert_eq!(
        offered(&app, &t).await,
        ["abbott_libreview", "dexcom_v3", "peloton"]
    );

    // The team's own: Oura (a connector: offered to this team only, on Oura's own endpoints),
    // FreeStyle Libre's follower account, Strava (a connector, on Strava's own endpoints),
    // Wahoo (no connector: never offered).
    for provider in ["oura", "freestyle_libre", "strava", "wahoo"] {
        set_credentials(&app, &key, provider).await;
    }
    let t = token(&app, &key).await;
    assert_eq!(
        offered(&app, &t).await,
        [
            "abbott_libreview",
            "dexcom_v3",
            "freestyle_libre",
            "oura",
            "peloton",
            "strava"
        ]
    );
    let theirs = token(&app, &other).await;
    assert_eq!(
        offered(&app, &theirs).await,
        ["abbott_libreview", "dexcom_v3", "peloton"]
    );
    let (a, _) = page(&app, &format!("/link/provider/oura?token={t}")).await;
    assert_eq!(a.status, 303);
    let to = a.headers["location"].to_str().unwrap();
    assert!(
        to.starts_with("https://cloud.ouraring.com/oauth/authorize?")
            && to.contains("client_id=team-client"),
        "{to}"
    );
    let (a, html) = page(&app, &format!("/link/provider/freestyle_libre?token={t}")).await;
    assert_eq!(a.status, 200, "{html}");
    assert!(html.contains("Connect FreeStyle Libre"), "{html}");
    let a = token_with(&app, &key, json!({"provider": "wahoo"})).await;
    assert_eq!(a.status, 400, "{}", a.json);
    assert!(
        a.json["detail"].as_str().unwrap().contains("Wahoo (wahoo)"),
        "{}",
        a.json
    );
}

#[tokio::test]
async fn the_catalogue_lists_every_provider_with_whether_the_team_can_connect_it() {
    let app = deployment(&["dexcom_v3"], false).await;
    let (key, other) = (app.key.clone(), app.other_key.clone());
    set_credentials(&app, &key, "oura").await;
    let catalogue = |key: String| {
        let app = &app;
        async move {
            let a = app.send("GET", "/v2/providers", Some(&key), None).await;
            assert_eq!(a.status, 200, "{}", a.json);
            a.json.as_array().unwrap().clone()
        }
    };
    let ours = catalogue(key).await;
    assert_eq!(ours.len(), wearhouse::providers::CATALOGUE.len());
    let reference_fields = [
        "auth_type",
        "connectable",
        "description",
        "id",
        "logo",
        "name",
        "slug",
        "supported_resources",
    ];
    for p in &ours {
        let mut keys: Vec<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, reference_fields, "{p}");
    }
    let connectable = |list: &[Value], slug: &str| {
        list.iter().find(|p| p["slug"] == slug).unwrap()["connectable"]
            .as_bool()
            .unwrap()
    };
    for (slug, want) in [
        ("oura", true),
        ("dexcom_v3", true),
        ("peloton", true),
        ("abbott_libreview", true),
        ("apple_health_kit", true),
        ("manual", true),
        ("fitbit", false),
        ("withings", false),
        ("wahoo", false),
        ("strava", false),
        ("renpho", false),
        ("freestyle_libre", false),
    ] {
        assert_eq!(connectable(&ours, slug), want, "{slug}");
    }
    // Another team has not set Oura's credentials.
    let theirs = catalogue(other).await;
    assert!(!connectable(&theirs, "oura"));
    assert!(connectable(&theirs, "dexcom_v3"));
}

#[tokio::test]
async fn a_token_for_a_provider_that_cannot_connect_is_refused_at_creation_naming_it() {
    let app = deployment(&[], false).await;
    let key = app.key.clone();
    for (options, names) in [
        (
            json!({"provider": "wahoo"}),
            vec!["Wahoo (wahoo)", "no connector"],
        ),
        (
            json!({"provider": "oura"}),
            vec![
                "Oura (oura)",
                "no OAuth application",
                "PUT /v2/team/provider/oura/credentials",
            ],
        ),
        (
            json!({"provider": "manual"}),
            vec!["Manual (manual)", "not through a link"],
        ),
        (
            json!({"filter_on_providers": ["peloton", "renpho", "oura"]}),
            vec!["Renpho (renpho)", "Oura (oura)"],
        ),
    ] {
        let a = token_with(&app, &key, options.clone()).await;
        assert_eq!(a.status, 400, "{options}: {}", a.json);
        let detail = a.json["detail"].as_str().unwrap();
        for name in names {
            assert!(detail.contains(name), "{options}: {detail}");
        }
        assert!(!detail.contains("Peloton"), "{detail}");
    }
    // SDK-only providers stay a 422 of the request itself.
    let a = token_with(&app, &key, json!({"provider": "apple_health_kit"})).await;
    assert_eq!(a.status, 422, "{}", a.json);

    // A token made while its provider could connect, which no longer can: the page says why.
    set_credentials(&app, &key, "oura").await;
    let a = token_with(&app, &key, json!({"provider": "oura"})).await;
    assert_eq!(a.status, 200, "{}", a.json);
    let t = a.json["link_token"].as_str().unwrap().to_owned();
    let gone = app
        .send(
            "DELETE",
            "/v2/team/provider/oura/credentials",
            Some(&key),
            None,
        )
        .await;
    assert_eq!(gone.status, 200, "{}", gone.json);
    let (a, html) = page(&app, &format!("/link/provider/oura?token={t}")).await;
    assert_eq!(a.status, 404, "{html}");
    assert!(html.contains("no OAuth application"), "{html}");
    assert!(offered(&app, &t).await.is_empty());
}
