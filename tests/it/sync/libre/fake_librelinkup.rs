//! A fake of LibreLinkUp's API (Abbott's app for following a wearer's readings) for the libre
//! suite and the link page's e-mail form: a route table on the shared fake provider
//! (`sync/fake/`), every region under `/{region}` (the connector's host template). It shares no
//! code with wearhouse and serves the wire as public clients observe it (Abbott publishes
//! none; `sync::connectors::libre::access` names the community's clients):
//!
//! - `POST /{region}/llu/auth/login` `{"email", "password"}` with the app's `product`
//!   (`llu.android`) and `version` headers → HTTP 200 and, in `status`: `2` (`notAuthenticated`)
//!   for a wrong address or password; `0` with `{"redirect": true, "region"}` from another
//!   region than the account's; else `0` with `user` and `authTicket` (a new session).
//! - Every call after the sign-in sends a session as `Authorization: Bearer`, `account-id` (the
//!   SHA-256 of the follower's id) and `product`, in the account's region; else 401
//!   `{"message": "invalid or expired jwt"}`. Answers are the `{"status": 0, "data"}` envelope.
//! - `GET /{region}/llu/connections` → the patients the account follows (`id`, `patientId`,
//!   `firstName`, `lastName`): another patient, and the wearer once their invitation was
//!   accepted.
//! - `GET /{region}/llu/connections/{patient}/graph` → the patient's readings
//!   (`FactoryTimestamp` in UTC, `Timestamp` in the phone's time, an hour ahead, both as
//!   `M/D/YYYY h:mm:ss AM`): the latest as `connection.glucoseMeasurement`, the rest as
//!   `graphData`. The other patient's are 40 mg/dL higher.
//! - `GET /{region}/llu/invitations/receiver/{accountId}` → the invitations the follower
//!   received (the wearer's, once they shared, until accepted); `POST
//!   /{region}/llu/invitations/accept/{id}` accepts one (`{"status": 4, "error": {"message":
//!   "notFound"}}` for another id). These are the listed, unpublished calls
//!   `sync::connectors::libre::share` names (from a public .NET client's API notes); their
//!   members beyond `id` are that module's assumption.
//!
//! The fake's [`Gate`] accepts the sessions it gave (an expired session: one it no longer
//! accepts, [`FakeLibreLinkUp::expire_sessions`]) and logs the sign-ins (`login`); it serves no
//! faults. LibreView's fake (`link/fake_libreview.rs`) serves the same graph
//! ([`graph_answer`]).

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::sync::fake::{self, Gate};

/// The deployment's LibreLinkUp follower account.
pub const FOLLOWER: &str = "follower@clinic.example";
pub const FOLLOWER_PASSWORD: &str = "follow-the-readings-4e1d";
/// The follower's id at LibreLinkUp (its `account-id` header is this id's SHA-256).
const FOLLOWER_ID: &str = "a1b2c3d4-0000-4c3b-9e8f-1a2b3c4d5e6f";
/// The patient who shares with the follower, and their LibreLink address.
pub const WEARER: &str = "7b2f0c1e-5a4d-4c3b-9e8f-1a2b3c4d5e6f";
pub const WEARER_EMAIL: &str = "Wearer@Example.com";
/// Another patient the account follows: never pulled for this user.
const OTHER: &str = "0f9e8d7c-6b5a-4c3d-8e2f-aa11bb22cc33";

/// The fake's state: the account's region, the sessions given, the share.
#[derive(Clone)]
struct Fake {
    /// Sessions as bearer tokens; the log of sign-ins.
    gate: Gate<Infallible>,
    region: Arc<Mutex<String>>,
    sessions: Arc<Mutex<HashSet<String>>>,
    /// Whether the wearer sent the invitation, and whether it was accepted.
    shared: Arc<Mutex<bool>>,
    accepted: Arc<Mutex<bool>>,
    /// The readings' instants (UTC) and mg/dL values, oldest first.
    readings: Arc<Vec<(DateTime<Utc>, u32)>>,
}

/// The SHA-256 (hex) of `s`: an `account-id` header.
pub fn sha256(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `M/D/YYYY h:mm:ss AM`, as LibreLinkUp writes times.
fn libre_time(t: DateTime<Utc>) -> String {
    t.format("%-m/%-d/%Y %-I:%M:%S %p").to_string()
}

/// The graph of `patient`'s `readings` (instants in UTC and mg/dL values, oldest first), their
/// phone `ahead` of UTC.
pub fn graph_answer(patient: &str, readings: &[(DateTime<Utc>, u32)], ahead: Duration) -> Value {
    let all: Vec<Value> = readings
        .iter()
        .map(|(at, mg_dl)| {
            json!({
                "FactoryTimestamp": libre_time(*at),
                "Timestamp": libre_time(*at + ahead),
                "type": 0, "ValueInMgPerDl": mg_dl, "MeasurementColor": 1, "GlucoseUnits": 1,
                "Value": mg_dl, "isHigh": false, "isLow": false
            })
        })
        .collect();
    let (latest, graph) = all.split_last().unwrap();
    json!({"status": 0, "data": {
        "connection": {"patientId": patient, "glucoseMeasurement": latest},
        "activeSensors": [],
        "graphData": graph
    }})
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
    let n = logins(&fake.gate);
    fake.gate.note("login");
    let token = format!("llu-token-{n}-never-in-clear");
    fake.sessions.lock().unwrap().insert(token.clone());
    Json(json!({"status": 0, "data": {
        "user": {"id": FOLLOWER_ID, "firstName": "Clinic", "email": FOLLOWER, "country": "DE"},
        "authTicket": {"token": token, "expires": 1_900_000_000, "duration": 15_552_000_000_u64}
    }}))
}

/// Sign-ins so far, as the gate logged them.
fn logins(gate: &Gate<Infallible>) -> usize {
    gate.log().iter().filter(|l| *l == "login").count()
}

/// Whether a call carries a session the gate accepts, the follower's `account-id` and the
/// app's `product`, in the account's region.
fn authorised(fake: &Fake, region: &str, headers: &HeaderMap) -> bool {
    region == *fake.region.lock().unwrap()
        && fake.gate.bearer_ok(headers)
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

/// `data` in LibreLinkUp's envelope.
fn ok(data: Value) -> Response {
    Json(json!({"status": 0, "data": data})).into_response()
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
    ok(json!(list))
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
    ok(json!(list))
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
    ok(json!({}))
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
    let readings: Vec<_> = fake
        .readings
        .iter()
        .map(|(at, mg_dl)| (*at, mg_dl + lift))
        .collect();
    Json(graph_answer(&patient, &readings, Duration::hours(1))).into_response()
}

fake::running! {
    /// A running fake LibreLinkUp and what tests steer and read; its [`Gate`] (sessions, log)
    /// is reached through it.
    FakeLibreLinkUp(Fake, Infallible),
    base: "http://127.0.0.1:<port>"
}

impl FakeLibreLinkUp {
    /// The follower account lives in `eu`; readings every 15 minutes over the last six hours.
    pub async fn start() -> FakeLibreLinkUp {
        let now = Utc::now();
        let readings = (0..24)
            .map(|i| (now - Duration::minutes(15 * (24 - i)), 90 + 3 * i as u32))
            .collect();
        let sessions: Arc<Mutex<HashSet<String>>> = Arc::default();
        let given = sessions.clone();
        let fake = Fake {
            gate: Gate::accepting(move |t| given.lock().unwrap().contains(t)),
            region: Arc::new(Mutex::new("eu".into())),
            sessions,
            shared: Arc::default(),
            accepted: Arc::default(),
            readings: Arc::new(readings),
        };
        let routes = Router::new()
            .route("/{region}/llu/auth/login", post(login))
            .route("/{region}/llu/connections", get(connections))
            .route("/{region}/llu/connections/{patient}/graph", get(graph))
            .route(
                "/{region}/llu/invitations/receiver/{account}",
                get(invitations),
            )
            .route("/{region}/llu/invitations/accept/{id}", post(accept))
            .with_state(fake.clone());
        let base = fake::serve(routes, &fake.gate, &["/data/graphData"]).await;
        FakeLibreLinkUp { base, fake }
    }

    /// The host template wearhouse is pointed at.
    pub fn template(&self) -> String {
        format!("{}/{{region}}", self.base)
    }

    /// The patient shares with the follower account (an invitation it has not accepted).
    pub fn share(&self) {
        *self.fake.shared.lock().unwrap() = true;
    }

    /// Whether the follower accepted the wearer's invitation.
    pub fn accepted(&self) -> bool {
        *self.fake.accepted.lock().unwrap()
    }

    /// How many sign-ins succeeded.
    pub fn logins(&self) -> usize {
        logins(self)
    }

    /// Moves the follower account to `region`.
    pub fn move_to(&self, region: &str) {
        *self.fake.region.lock().unwrap() = region.into();
    }

    /// Ends every session given.
    pub fn expire_sessions(&self) {
        self.fake.sessions.lock().unwrap().clear();
    }

    /// The wearer's readings served, oldest first.
    pub fn readings(&self) -> Vec<(DateTime<Utc>, u32)> {
        self.fake.readings.to_vec()
    }
}
