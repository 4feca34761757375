//! A fake of Abbott LibreView's API for the second-factor tests: a route table on the shared
//! fake provider (`sync/fake/`), every region under `/{region}` (the connector's host template).
//! It shares no code with wearhouse and serves the wire as `sync::connectors::libre::libreview`
//! names its sources:
//!
//! - `POST /{region}/auth/login` `{"email", "password"}` → HTTP 200 and, in `status`: `2`
//!   (`notAuthenticated`) for a wrong address or password; `0` with `{"redirect": true,
//!   "region"}` from another region than the account's; `4` with a step (`tou`; `2faVerify`,
//!   component `TwoFactorVerify`, whose `props` name the primary and secondary methods and
//!   their masked values; the password step `pwdExpired`, component `ChangePassword`, which no
//!   public source shows: the connector's assumption) and a temporary `authTicket`; else `0`
//!   with `user` and `authTicket`.
//! - `POST /{region}/auth/continue/2fa/sendcode` `{"isPrimaryMethod"}` with a temporary ticket
//!   → `{"status": 0, "ticket": {...}}`, a new temporary ticket; the code it "sends" is kept
//!   for the test ([`FakeLibreView::last_code`]). An unknown ticket → 401.
//! - `POST /{region}/auth/continue/2fa/result` `{"code", "isPrimaryMethod"}` → the signed-in
//!   answer for the last code sent, `{"status": 2, "error": {"message": "notAuthenticated"}}`
//!   (no `data`) for another one; an unknown ticket → 401.
//! - `GET /{region}/llu/connections/{patient}/graph` with a session from a finished sign-in,
//!   `account-id` = SHA-256 of the patient's id and the app's `product` header, else 401: the
//!   patient's readings (`FactoryTimestamp`/`Timestamp` as `M/D/YYYY h:mm:ss AM`): LibreLinkUp's
//!   graph, as its fake serves it (`sync/libre/fake_librelinkup.rs`).
//!
//! The fake's [`Gate`] accepts the sessions of finished sign-ins as bearer tokens and logs the
//! sign-ins past the password (`login`) and the codes sent (`sendcode`); it serves no faults.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};

use crate::sync::fake::{self, Gate, bearer_token};
use crate::sync::libre::fake_librelinkup::{graph_answer, sha256};

/// The patient's e-mail address.
pub const EMAIL: &str = "patient@example.com";
/// Their password.
pub const PASSWORD: &str = "glucose-in-range-9c2b";
/// Their LibreView user id.
pub const PATIENT: &str = "5e1c7a2b-0d9f-4c4e-8b3a-6f2d1e0c9b8a";
/// The masked phone number of the SMS method.
pub const SMS_HINT: &str = "+44 ••• ••• ••21";
/// The masked address of the e-mail method.
pub const EMAIL_HINT: &str = "p••••••@e••••••.com";

/// The second factor the account asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Factor {
    /// None: the sign-in succeeds at once.
    Off,
    /// A code by text message (primary), e-mail second.
    Sms,
    /// A code by e-mail (primary), text message second.
    Email,
}

#[derive(Clone)]
struct Fake {
    /// Sessions as bearer tokens; the log of sign-ins and codes sent.
    gate: Gate<Infallible>,
    region: Arc<Mutex<String>>,
    factor: Arc<Mutex<Factor>>,
    terms: Arc<Mutex<bool>>,
    password_expired: Arc<Mutex<bool>>,
    /// Temporary tickets (before the code) and the code each last sent.
    pending: Arc<Mutex<Vec<(String, String)>>>,
    sessions: Arc<Mutex<HashSet<String>>>,
    counter: Arc<AtomicUsize>,
    readings: Arc<Vec<(DateTime<Utc>, u32)>>,
}

impl Fake {
    fn next(&self) -> usize {
        self.counter.fetch_add(1, Ordering::SeqCst)
    }

    fn ticket(token: &str) -> Value {
        json!({"token": token, "expires": 1_900_000_000, "duration": 3_600_000})
    }

    fn signed_in(&self) -> Value {
        let token = format!("lv-session-{}-never-in-clear", self.next());
        self.sessions.lock().unwrap().insert(token.clone());
        json!({"status": 0, "data": {
            "user": {"id": PATIENT, "email": EMAIL, "accountType": "pat", "country": "GB"},
            "authTicket": {"token": token, "expires": 1_900_000_000, "duration": 15_552_000_000_u64}
        }})
    }
}

async fn login(
    State(fake): State<Fake>,
    Path(region): Path<String>,
    Json(body): Json<Value>,
) -> Json<Value> {
    if body["email"] != EMAIL || body["password"] != PASSWORD {
        return Json(json!({"status": 2, "error": {"message": "notAuthenticated"}}));
    }
    let home = fake.region.lock().unwrap().clone();
    if region != home {
        return Json(json!({"status": 0, "data": {"redirect": true, "region": home}}));
    }
    fake.gate.note("login");
    let temp = format!("lv-temp-{}", fake.next());
    let user = json!({"accountType": "pat", "country": "GB", "uiLanguage": "en-GB"});
    let step = if *fake.password_expired.lock().unwrap() {
        Some(json!({"type": "pwdExpired", "componentName": "ChangePassword", "props": {}}))
    } else if *fake.terms.lock().unwrap() {
        Some(json!({"type": "tou", "componentName": "AcceptDocument",
            "props": {"reaccept": true, "titleKey": "Common.termsOfUse", "type": "tou"}}))
    } else {
        match *fake.factor.lock().unwrap() {
            Factor::Off => None,
            Factor::Sms => Some(
                json!({"type": "2faVerify", "componentName": "TwoFactorVerify",
                "props": {"primaryMethod": "phone", "primaryValue": SMS_HINT,
                          "secondaryMethod": "email", "secondaryValue": EMAIL_HINT}}),
            ),
            Factor::Email => Some(
                json!({"type": "2faVerify", "componentName": "TwoFactorVerify",
                "props": {"primaryMethod": "email", "primaryValue": EMAIL_HINT,
                          "secondaryMethod": "phone", "secondaryValue": SMS_HINT}}),
            ),
        }
    };
    match step {
        None => Json(fake.signed_in()),
        Some(step) => {
            fake.pending
                .lock()
                .unwrap()
                .push((temp.clone(), String::new()));
            Json(json!({"status": 4, "data": {
                "step": step, "user": user, "authTicket": Fake::ticket(&temp)
            }}))
        }
    }
}

async fn send_code(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    assert_eq!(body["isPrimaryMethod"], true, "{body}");
    let Some(temp) = bearer_token(&headers) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let mut pending = fake.pending.lock().unwrap();
    let Some(i) = pending.iter().position(|(t, _)| *t == temp) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let n = codes_sent(&fake.gate);
    fake.gate.note("sendcode");
    let code = format!("{:06}", 482_913 + 7_919 * n);
    let next = format!("lv-temp-{}", fake.next());
    pending[i] = (next.clone(), code);
    Json(json!({"status": 0, "ticket": Fake::ticket(&next)})).into_response()
}

async fn result(State(fake): State<Fake>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let Some(temp) = bearer_token(&headers) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let found = {
        let pending = fake.pending.lock().unwrap();
        pending
            .iter()
            .position(|(t, _)| *t == temp)
            .map(|i| (i, pending[i].1.clone()))
    };
    let Some((i, code)) = found else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    if code.is_empty() || body["code"] != code.as_str() {
        return Json(json!({"status": 2, "error": {"message": "notAuthenticated"}}))
            .into_response();
    }
    fake.pending.lock().unwrap().remove(i);
    Json(fake.signed_in()).into_response()
}

/// Codes sent so far, as the gate logged them.
fn codes_sent(gate: &Gate<Infallible>) -> usize {
    gate.log().iter().filter(|l| *l == "sendcode").count()
}

async fn graph(
    State(fake): State<Fake>,
    Path((region, patient)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let valid = fake.gate.bearer_ok(&headers);
    let account = headers.get("account-id").and_then(|v| v.to_str().ok());
    if !valid
        || region != *fake.region.lock().unwrap()
        || patient != PATIENT
        || account != Some(sha256(PATIENT).as_str())
        || !headers.contains_key("product")
    {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    Json(graph_answer(&patient, &fake.readings, Duration::hours(2))).into_response()
}

fake::running! {
    /// A running fake LibreView and what tests steer and read; its [`Gate`] (sessions, log) is
    /// reached through it.
    FakeLibreView(Fake, Infallible),
    base: "http://127.0.0.1:<port>"
}

impl FakeLibreView {
    /// The account lives in `eu` and asks for `factor`; readings every 15 minutes over the
    /// last five hours.
    pub async fn start(factor: Factor) -> FakeLibreView {
        let now = Utc::now();
        let readings = (0..20)
            .map(|i| (now - Duration::minutes(15 * (20 - i)), 100 + 2 * i as u32))
            .collect();
        let sessions: Arc<Mutex<HashSet<String>>> = Arc::default();
        let valid = sessions.clone();
        let fake = Fake {
            gate: Gate::accepting(move |t| valid.lock().unwrap().contains(t)),
            region: Arc::new(Mutex::new("eu".into())),
            factor: Arc::new(Mutex::new(factor)),
            terms: Arc::default(),
            password_expired: Arc::default(),
            pending: Arc::default(),
            sessions,
            counter: Arc::default(),
            readings: Arc::new(readings),
        };
        let routes = Router::new()
            .route("/{region}/auth/login", post(login))
            .route("/{region}/auth/continue/2fa/sendcode", post(send_code))
            .route("/{region}/auth/continue/2fa/result", post(result))
            .route("/{region}/llu/connections/{patient}/graph", get(graph))
            .with_state(fake.clone());
        let base = fake::serve(routes, &fake.gate, &["/data/graphData"]).await;
        FakeLibreView { base, fake }
    }

    /// The host template wearhouse is pointed at.
    pub fn template(&self) -> String {
        format!("{}/{{region}}", self.base)
    }

    /// The code the last send-code call "sent".
    pub fn last_code(&self) -> String {
        let pending = self.fake.pending.lock().unwrap();
        pending.last().map(|(_, c)| c.clone()).unwrap_or_default()
    }

    /// How many codes were sent.
    pub fn codes_sent(&self) -> usize {
        codes_sent(self)
    }

    /// How many sign-ins got past the password.
    pub fn logins(&self) -> usize {
        self.log().iter().filter(|l| *l == "login").count()
    }

    /// Whether LibreView forces a password change.
    pub fn password_expired(&self, expired: bool) {
        *self.fake.password_expired.lock().unwrap() = expired;
    }

    /// Whether LibreView asks for its terms to be accepted.
    pub fn terms(&self, pending: bool) {
        *self.fake.terms.lock().unwrap() = pending;
    }

    /// Ends every session given.
    pub fn expire_sessions(&self) {
        self.fake.sessions.lock().unwrap().clear();
    }

    /// The readings served, oldest first.
    pub fn readings(&self) -> Vec<(DateTime<Utc>, u32)> {
        self.fake.readings.to_vec()
    }
}
