//! FreeStyle Libre through LibreLinkUp, end to end against the real app, its job runner and a
//! fake of LibreLinkUp's API (below; it shares no code with wearhouse's client).
//!
//! A user links FreeStyle Libre with the link API's password form: the sign-in asked in the
//! wrong region is sent on to the account's and succeeds there; the `sync.historical` job pulls
//! the wearer's readings (not those of the other wearer the account follows) and
//! `GET /v2/timeseries/{user}/glucose` answers them in mmol/L with the phone's offset. A
//! region LibreLinkUp lacks, asked or redirected to, is `unsupported_region`; a wrong password
//! is `provider_credential_error`; terms to accept first are said so. An expired session is
//! renewed by signing in again.

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
use crate::link::{password_app, password_link};
use crate::support::TestApp;
use crate::sync_support::linked::Linked;
use wearhouse::jobs::JobState;
use wearhouse::link::password::libre::Hosts;

const EMAIL: &str = "wearer@example.com";
const PASSWORD: &str = "sensor-on-the-arm-4e1d";
/// The wearer's id at LibreLinkUp (the account follows itself).
const WEARER: &str = "7b2f0c1e-5a4d-4c3b-9e8f-1a2b3c4d5e6f";
/// Another wearer the account follows (a family member): never pulled for this user.
const OTHER: &str = "0f9e8d7c-6b5a-4c3d-8e2f-aa11bb22cc33";

/// The fake's state: the account's region, the sessions given, the counts.
#[derive(Clone)]
struct Fake {
    region: Arc<Mutex<String>>,
    terms_pending: Arc<Mutex<bool>>,
    sessions: Arc<Mutex<HashSet<String>>>,
    logins: Arc<AtomicUsize>,
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
    if body["email"] != EMAIL || body["password"] != PASSWORD {
        return Json(json!({"status": 2, "error": {"message": "notAuthenticated"}}));
    }
    let home = fake.region.lock().unwrap().clone();
    if region != home {
        return Json(
            json!({"status": 0, "data": {"redirect": true, "region": home,
            "country": "DE", "uiLanguage": "de-DE"}}),
        );
    }
    if *fake.terms_pending.lock().unwrap() {
        return Json(
            json!({"status": 4, "data": {"step": {"type": "tou", "componentName": "AcceptDocument"}}}),
        );
    }
    let n = fake.logins.fetch_add(1, Ordering::SeqCst);
    let token = format!("llu-token-{n}-never-in-clear");
    fake.sessions.lock().unwrap().insert(token.clone());
    Json(json!({"status": 0, "data": {
        "user": {"id": WEARER, "firstName": "Ada", "email": EMAIL, "country": "DE"},
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
        && headers.get("account-id").and_then(|v| v.to_str().ok()) == Some(&sha256(WEARER))
        && headers.contains_key("product")
}

async fn connections(
    State(fake): State<Fake>,
    Path(region): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !authorised(&fake, &region, &headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"message": "invalid or expired jwt"})),
        )
            .into_response();
    }
    Json(json!({"status": 0, "data": [
        {"id": "c-1", "patientId": OTHER, "firstName": "Kid", "lastName": "Lovelace"},
        {"id": "c-2", "patientId": WEARER, "firstName": "Ada", "lastName": "Lovelace"}
    ]}))
    .into_response()
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

struct FakeLibre {
    base: String,
    fake: Fake,
}

impl FakeLibre {
    /// The account lives in `eu`; readings every 15 minutes over the last six hours.
    async fn start() -> FakeLibre {
        let now = Utc::now();
        let readings = (0..24)
            .map(|i| (now - Duration::minutes(15 * (24 - i)), 90 + 3 * i as u32))
            .collect();
        let fake = Fake {
            region: Arc::new(Mutex::new("eu".into())),
            terms_pending: Arc::default(),
            sessions: Arc::default(),
            logins: Arc::default(),
            readings: Arc::new(readings),
        };
        let app = Router::new()
            .route("/{region}/llu/auth/login", post(login))
            .route("/{region}/llu/connections", get(connections))
            .route("/{region}/llu/connections/{patient}/graph", get(graph))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeLibre { base, fake }
    }

    fn hosts(&self) -> Hosts {
        Hosts::template(&format!("{}/{{region}}", self.base))
    }
}

/// The app with FreeStyle Libre's sign-in and connector pointed at `fake`, and a user.
async fn app(fake: &FakeLibre) -> (TestApp, String) {
    let hosts = fake.hosts();
    let app = password_app(
        Arc::new(wearhouse::link::password::libre::Libre::new(hosts.clone()).unwrap()),
        Arc::new(wearhouse::sync::libre::Libre::new(hosts).unwrap()),
    )
    .await;
    let user = app.user("libre-user").await;
    (app, user)
}

/// A password link of FreeStyle Libre with `body`; answers the outcome.
async fn sign_in(app: &TestApp, user: &str, body: Value) -> Value {
    password_link(app, user, "freestyle_libre", body).await
}

#[tokio::test]
async fn regions_wrong_passwords_and_pending_terms_are_link_errors() {
    let fake = FakeLibre::start().await;
    let (app, user) = app(&fake).await;
    let outcome = |json: &Value| {
        (
            json["state"].as_str().unwrap().to_owned(),
            json["error_type"].as_str().map(str::to_owned),
        )
    };
    let err = |t: &str| ("error".to_owned(), Some(t.to_owned()));
    let right = || json!({"username": EMAIL, "password": PASSWORD});

    let wrong = sign_in(&app, &user, json!({"username": EMAIL, "password": "nope"})).await;
    assert_eq!(outcome(&wrong), err("provider_credential_error"), "{wrong}");
    let mars = json!({"username": EMAIL, "password": PASSWORD, "region": "mars"});
    let a = sign_in(&app, &user, mars).await;
    assert_eq!(outcome(&a), err("unsupported_region"), "{a}");

    // The account moved to a region LibreLinkUp's hosts do not include.
    *fake.fake.region.lock().unwrap() = "xx".into();
    let a = sign_in(&app, &user, right()).await;
    assert_eq!(outcome(&a), err("unsupported_region"), "{a}");
    *fake.fake.region.lock().unwrap() = "eu".into();

    *fake.fake.terms_pending.lock().unwrap() = true;
    let a = sign_in(&app, &user, right()).await;
    assert_eq!(outcome(&a), err("provider_credential_error"), "{a}");
    assert!(a["error"].as_str().unwrap().contains("terms"), "{a}");
    assert_eq!(fake.fake.logins.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_linked_wearer_is_pulled_in_mmol_per_litre_and_an_expired_session_is_renewed() {
    let fake = FakeLibre::start().await;
    let (app, user) = app(&fake).await;
    // Asked in the US; the account lives in the EU: the sign-in follows.
    let body = json!({"username": EMAIL, "password": PASSWORD, "region": "us"});
    let a = sign_in(&app, &user, body).await;
    assert_eq!(a["state"], "success", "{a}");
    assert_eq!(a["provider_id"], WEARER, "{a}");
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
        .map(|(at, mg)| {
            let at = at.with_timezone(&Utc);
            (at, (f64::from(*mg) / 18.0182 * 100.0).round() / 100.0)
        })
        .collect();
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (sample, (at, mmol)) in got.iter().zip(&want) {
        let t = crate::sync_support::linked::instant(&sample["timestamp"]);
        assert_eq!(t.timestamp(), at.timestamp(), "{sample}");
        assert_eq!(sample["value"].as_f64(), Some(*mmol), "{sample}");
        assert_eq!(sample["unit"], "mmol/L");
        assert_eq!(sample["timezone_offset"], 3600, "{sample}");
    }

    // The session expires: the next pull signs in again (starting at the host of every region)
    // and replaces, adding nothing.
    fake.fake.sessions.lock().unwrap().clear();
    l.refreshed().await;
    assert_eq!(fake.fake.logins.load(Ordering::SeqCst), 2);
    assert_eq!(l.series("glucose").await.len(), want.len());
}

/// The hosted page's form offers FreeStyle Libre's regions (not Peloton's, which has none),
/// and a region LibreLinkUp lacks is said inline, the chosen region kept.
#[tokio::test]
async fn the_hosted_page_asks_for_the_region_and_says_an_unsupported_one_inline() {
    let fake = FakeLibre::start().await;
    let (app, user) = app(&fake).await;
    let token = app
        .post(
            "/v2/link/token",
            json!({"user_id": user, "provider": "freestyle_libre"}),
        )
        .await;
    let t = token.json["link_token"].as_str().unwrap().to_owned();
    // A token naming its provider goes straight to that provider's form.
    let a = app
        .send("GET", &format!("/link?token={t}"), None, None)
        .await;
    assert_eq!(a.status, 303);
    let form = a.headers["location"].to_str().unwrap().to_owned();
    assert!(
        form.starts_with("/link/provider/freestyle_libre?"),
        "{form}"
    );
    let a = app.send("GET", &form, None, None).await;
    let html = String::from_utf8(a.bytes).unwrap();
    assert!(
        html.contains(r#"<select id="region" name="region""#),
        "{html}"
    );
    assert!(
        html.contains(r#"<option value="eu">Europe</option>"#),
        "{html}"
    );

    let submit = |region: &str| {
        let form = format!("token={t}&username={EMAIL}&password={PASSWORD}&region={region}");
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
    assert!(!html.contains(PASSWORD), "the password is never echoed");

    // The same form with the right region connects.
    let a = submit("eu").await;
    assert!(
        a.status.is_success() || a.status.is_redirection(),
        "{}",
        a.status
    );
    assert_eq!(fake.fake.logins.load(Ordering::SeqCst), 1);

    let token = app
        .post(
            "/v2/link/token",
            json!({"user_id": user, "provider": "peloton"}),
        )
        .await;
    let t = token.json["link_token"].as_str().unwrap();
    let a = app
        .send(
            "GET",
            &format!("/link/provider/peloton?token={t}"),
            None,
            None,
        )
        .await;
    let html = String::from_utf8(a.bytes).unwrap();
    assert!(html.contains("Sign in to Peloton"), "{html}");
    assert!(!html.contains(r#"name="region""#), "{html}");
}
