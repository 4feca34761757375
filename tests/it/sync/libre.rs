//! FreeStyle Libre by e-mail through a LibreLinkUp follower account, end to end against the
//! real app, its job runner and a fake of LibreLinkUp's API (below; it shares no code with
//! wearhouse's client).
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
//!
//! The fake's invitations (`GET /llu/invitations/receiver/{accountId}`, `POST
//! /llu/invitations/accept/{id}`) are the listed, unpublished calls `sync::connectors::libre::share`
//! names; their members beyond `id` are that module's assumption.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::link::fake_oauth::FakeOAuth;
use crate::link::keyed_app;
use crate::link::mfa::with_token;
use crate::support::TestApp;
use crate::sync::support::linked::Linked;
use wearhouse::jobs::JobState;
use wearhouse::link::LinkConfig;
use wearhouse::link::email::EmailLinks;
use wearhouse::link::oauth::{OAuthApp, OAuthApps};
use wearhouse::link::password::PasswordLogins;
use wearhouse::sync::connectors::libre::access::Hosts;
use wearhouse::sync::connectors::libre::share::LibreLinkUp;

/// The deployment's LibreLinkUp follower account.
pub(crate) const FOLLOWER: &str = "follower@clinic.example";
pub(crate) const FOLLOWER_PASSWORD: &str = "follow-the-readings-4e1d";
/// The follower's id at LibreLinkUp (its `account-id` header is this id's SHA-256).
const FOLLOWER_ID: &str = "a1b2c3d4-0000-4c3b-9e8f-1a2b3c4d5e6f";
/// The patient who shares with the follower, and their LibreLink address.
const WEARER: &str = "7b2f0c1e-5a4d-4c3b-9e8f-1a2b3c4d5e6f";
const WEARER_EMAIL: &str = "Wearer@Example.com";
/// Another patient the account follows: never pulled for this user.
const OTHER: &str = "0f9e8d7c-6b5a-4c3d-8e2f-aa11bb22cc33";

/// The fake's state: the account's region, the sessions given, the share, the counts.
#[derive(Clone)]
struct Fake {
    region: Arc<Mutex<String>>,
    sessions: Arc<Mutex<HashSet<String>>>,
    logins: Arc<AtomicUsize>,
    /// Whether the wearer sent the invitation, and whether it was accepted.
    shared: Arc<Mutex<bool>>,
    accepted: Arc<Mutex<bool>>,
    /// The readings' instants (UTC) and mg/dL values, oldest first.
    readings: Arc<Vec<(DateTime<Utc>, u32)>>,
}

fn sha256(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `M/D/YYYY h:mm:ss AM`, as LibreLinkUp writes times.
fn libre_time(t: DateTime<Utc>) -> String {
    t.format("%-m/%-d/%Y %-I:%M:%S %p").to_string()
}

fn reading(at: DateTime<Utc>, mg_dl: u32) -> Value {
    json!({
        "FactoryTimestamp": libre_time(at),
        "Timestamp": libre_time(at + Duration::hours(1)),
        "type": 0, "ValueInMgPerDl": mg_dl, "MeasurementColor": 1, "GlucoseUnits": 1,
        "Value": mg_dl, "isHigh": false, "isLow": false
    })
}

async fn login(
    State(fake): State<Fake>,
    Path(region): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Json<Value> {
    assert_eq!(headers["product"], "llu.android");
    assert!(headers.contains_key("version"));
    if body["email"] != FOLLOWER || body["password"] != FOLLOWER_PASSWORD {
        return Json(json!({"status": 2, "error": {"message": "notAuthenticated"}}));
    }
    let home = fake.region.lock().unwrap().clone();
    if region != home {
        return Json(
            json!({"status": 0, "data": {"redirect": true, "region": home,
            "country": "DE", "uiLanguage": "de-DE"}}),
        );
    }
    let n = fake.logins.fetch_add(1, Ordering::SeqCst);
    let token = format!("llu-token-{n}-never-in-clear");
    fake.sessions.lock().unwrap().insert(token.clone());
    Json(json!({"status": 0, "data": {
        "user": {"id": FOLLOWER_ID, "firstName": "Clinic", "email": FOLLOWER, "country": "DE"},
        "authTicket": {"token": token, "expires": 1_900_000_000, "duration": 15_552_000_000_u64}
    }}))
}

/// The bearer token and `account-id` a call must carry, else 401.
fn authorised(fake: &Fake, region: &str, headers: &HeaderMap) -> bool {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    region == *fake.region.lock().unwrap()
        && bearer.is_some_and(|t| fake.sessions.lock().unwrap().contains(t))
        && headers.get("account-id").and_then(|v| v.to_str().ok()) == Some(&sha256(FOLLOWER_ID))
        && headers.contains_key("product")
}

fn unauthorised() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        Json(json!({"message": "invalid or expired jwt"})),
    )
        .into_response()
}

async fn connections(
    State(fake): State<Fake>,
    Path(region): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !authorised(&fake, &region, &headers) {
        return unauthorised();
    }
    let mut list =
        vec![json!({"id": "c-1", "patientId": OTHER, "firstName": "Kid", "lastName": "Lovelace"})];
    if *fake.accepted.lock().unwrap() {
        list.push(
            json!({"id": "c-2", "patientId": WEARER, "firstName": "Ada", "lastName": "Lovelace"}),
        );
    }
    Json(json!({"status": 0, "data": list})).into_response()
}

async fn invitations(
    State(fake): State<Fake>,
    Path((region, account)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if !authorised(&fake, &region, &headers) || account != FOLLOWER_ID {
        return unauthorised();
    }
    let pending = *fake.shared.lock().unwrap() && !*fake.accepted.lock().unwrap();
    let list = if pending {
        vec![
            json!({"id": "inv-7", "patientId": WEARER, "email": WEARER_EMAIL.to_lowercase(),
                    "firstName": "Ada", "lastName": "Lovelace", "created": 1_700_000_000}),
        ]
    } else {
        Vec::new()
    };
    Json(json!({"status": 0, "data": list})).into_response()
}

async fn accept(
    State(fake): State<Fake>,
    Path((region, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if !authorised(&fake, &region, &headers) {
        return unauthorised();
    }
    if id != "inv-7" || !*fake.shared.lock().unwrap() {
        return Json(json!({"status": 4, "error": {"message": "notFound"}})).into_response();
    }
    *fake.accepted.lock().unwrap() = true;
    Json(json!({"status": 0, "data": {}})).into_response()
}

async fn graph(
    State(fake): State<Fake>,
    Path((region, patient)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if !authorised(&fake, &region, &headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    // The other wearer's readings are 40 mg/dL higher: pulling them would show.
    let lift = if patient == OTHER { 40 } else { 0 };
    let all: Vec<Value> = fake
        .readings
        .iter()
        .map(|(at, mg)| reading(*at, mg + lift))
        .collect();
    let (latest, graph) = all.split_last().unwrap();
    Json(json!({"status": 0, "data": {
        "connection": {"patientId": patient, "glucoseMeasurement": latest},
        "activeSensors": [],
        "graphData": graph
    }}))
    .into_response()
}

pub(crate) struct FakeLibre {
    pub(crate) base: String,
    fake: Fake,
}

impl FakeLibre {
    /// The follower account lives in `eu`; readings every 15 minutes over the last six hours.
    pub(crate) async fn start() -> FakeLibre {
        let now = Utc::now();
        let readings = (0..24)
            .map(|i| (now - Duration::minutes(15 * (24 - i)), 90 + 3 * i as u32))
            .collect();
        let fake = Fake {
            region: Arc::new(Mutex::new("eu".into())),
            sessions: Arc::default(),
            logins: Arc::default(),
            shared: Arc::default(),
            accepted: Arc::default(),
            readings: Arc::new(readings),
        };
        let app = Router::new()
            .route("/{region}/llu/auth/login", post(login))
            .route("/{region}/llu/connections", get(connections))
            .route("/{region}/llu/connections/{patient}/graph", get(graph))
            .route(
                "/{region}/llu/invitations/receiver/{account}",
                get(invitations),
            )
            .route("/{region}/llu/invitations/accept/{id}", post(accept))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeLibre { base, fake }
    }

    fn hosts(&self) -> Hosts {
        Hosts::template(&format!("{}/{{region}}", self.base))
    }

    /// The patient shares with the follower account (an invitation it has not accepted).
    pub(crate) fn share(&self) {
        *self.fake.shared.lock().unwrap() = true;
    }

    fn accepted(&self) -> bool {
        *self.fake.accepted.lock().unwrap()
    }

    fn logins(&self) -> usize {
        self.fake.logins.load(Ordering::SeqCst)
    }
}

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
async fn app(fake: &FakeLibre, follower: bool) -> (TestApp, String) {
    let hosts = fake.hosts();
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
    let fake = FakeLibre::start().await;
    let (app, user) = app(&fake, true).await;
    let mars = json!({"email": WEARER_EMAIL, "region": "mars"});
    let a = email_link(&app, &user, mars).await;
    assert_eq!(outcome(&a), err("unsupported_region"), "{a}");
    assert_eq!(fake.logins(), 0, "refused before signing in");

    // The follower account moved to a region LibreLinkUp's hosts do not include.
    *fake.fake.region.lock().unwrap() = "xx".into();
    let a = email_link(&app, &user, json!({"email": WEARER_EMAIL})).await;
    assert_eq!(outcome(&a), err("unsupported_region"), "{a}");
    *fake.fake.region.lock().unwrap() = "eu".into();

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

async fn app_without_follower(fake: &FakeLibre) -> (TestApp, String) {
    app(fake, false).await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_email_link_finds_the_patient_once_they_shared_and_pulls_only_their_readings() {
    let fake = FakeLibre::start().await;
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
        .fake
        .readings
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
    fake.fake.sessions.lock().unwrap().clear();
    l.refreshed().await;
    assert_eq!(fake.logins(), before + 1);
    assert_eq!(l.series("glucose").await.len(), want.len());
}

/// The hosted page's e-mail form offers LibreLinkUp's regions and names the address to share
/// with; a region LibreLinkUp lacks is said inline, the address kept.
#[tokio::test]
async fn the_hosted_page_shows_the_email_form_and_says_an_unsupported_region_inline() {
    let fake = FakeLibre::start().await;
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
