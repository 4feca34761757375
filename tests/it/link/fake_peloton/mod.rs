//! A fake of Peloton for the password-link and Peloton sync tests: its Auth0 tenant and its web
//! API, both route tables on one shared fake provider (`sync/fake/`). It shares no code with
//! wearhouse, and reproduces the wire the public clients observed
//! (`sync::connectors::peloton::access` names them).
//!
//! - The Auth0 sign-in ([`auth0`]): `/authorize` (PKCE S256 required) redirecting to the login
//!   page with a transaction `state`, the page setting `_csrf`, the credentials' JSON POST to
//!   `/usernamepassword/login` (401 `invalid_user_password` for a wrong username or password,
//!   else the hidden `wa`/`wresult`/`wctx` form), `/login/callback` redirecting to
//!   `/authorize/resume`, which redirects to the web app's callback with the code and the
//!   client's `state`, and `/oauth/token`: the code exchange (single use, its `code_verifier`
//!   checked against the `code_challenge`) and the refresh grant (403 `invalid_grant` for a
//!   revoked refresh token). The first sign-in gives [`ACCESS_TOKEN`], later ones and refreshes
//!   new tokens; each is valid until [`FakePeloton::expire_access_tokens`].
//! - `GET /api/me` → `{"id", "username", ...}` and `GET /api/user/{id}/workouts?limit=&page=`
//!   → `{"data", "page", "page_count", "total", "limit", "count", ...}`, the workouts newest
//!   first (by `start_time`), `ride` kept only with `joins=ride`. Both want a valid access token
//!   as `Authorization: Bearer`, else 401.
//! - Faults, served by the fake's [`Gate`] to the API calls (not the sign-in) before their
//!   answers: 429 with `Retry-After`, 500. `down()` makes every call answer 503,
//!   `sign_in_down(true)` the Auth0 host alone. The gate also checks the API calls' bearer
//!   tokens and logs the pages of workouts answered and the sign-in's steps (the counts the
//!   tests read: [`FakePeloton::attempts`], [`FakePeloton::logins`], [`FakePeloton::refreshes`]).

pub(crate) mod auth0;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::sync::fake::{self, Gate};

/// The one account the fake knows.
pub const USERNAME: &str = "rider@example.com";
/// Its password.
pub const PASSWORD: &str = "pedal-harder-7f3a";
/// Its user id at Peloton.
pub const USER_ID: &str = "5b4c2a0e9d8f4e3b8a1c7d6e5f4a3b2c";
/// The access token a first successful sign-in gives (no database may hold it in clear).
pub const ACCESS_TOKEN: &str = "at-0c9e1f7a-never-in-clear";
/// The refresh token a first successful sign-in gives (no database may hold it in clear).
pub const REFRESH_TOKEN: &str = "rt-5d2a9c4e-never-in-clear";

/// A fault served to an API call instead of its answer.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// 429 with `Retry-After: <seconds>`.
    RateLimited(u64),
    /// 500.
    ServerError,
}

/// The fake's state, shared by its Auth0 and API routes.
#[derive(Clone)]
pub(crate) struct Fake {
    /// The API calls' faults and token check; the log of pages answered and of the sign-in's
    /// steps ([`auth0`]: `credentials` posted, `login` for a code exchanged, `refresh` for a
    /// refresh grant asked, `refreshed` for one accepted).
    gate: Gate<Fault>,
    /// The fake's own URL (the callback form's absolute action), known once it serves.
    base: Arc<OnceLock<String>>,
    pub down: Arc<AtomicBool>,
    pub sign_in_down: Arc<AtomicBool>,
    pub password: Arc<Mutex<String>>,
    /// Valid access tokens and refresh tokens.
    pub access: Arc<Mutex<HashSet<String>>>,
    pub refresh: Arc<Mutex<HashSet<String>>>,
    /// Auth0's half-done sign-ins, codes, and the ids it makes them with.
    pub auth: Arc<Mutex<auth0::Transactions>>,
    pub ids: Arc<AtomicUsize>,
    workouts: Arc<Mutex<Vec<Value>>>,
    page_size: Arc<AtomicUsize>,
}

impl Fake {
    /// The fake's own URL.
    pub fn base(&self) -> &str {
        self.base.get().map_or("", String::as_str)
    }

    /// Logs a step of the sign-in as `step`.
    pub fn note(&self, step: &str) {
        self.gate.note(step);
    }

    /// How many times `step` was logged.
    pub fn noted(&self, step: &str) -> usize {
        self.gate.log().iter().filter(|l| *l == step).count()
    }

    /// A new id with `prefix`.
    pub fn id(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.ids.fetch_add(1, Ordering::SeqCst))
    }
}

fake::running! {
    /// A running fake Peloton; its [`Gate`] (the API calls' faults, token check and log) is
    /// reached through it.
    FakePeloton(Fake, Fault),
    base: "http://127.0.0.1:<port>"
}

impl FakePeloton {
    /// A fake with no workouts, ten a page.
    pub async fn start() -> FakePeloton {
        let access: Arc<Mutex<HashSet<String>>> = Arc::default();
        let valid = access.clone();
        let fake = Fake {
            gate: Gate::accepting(move |t| valid.lock().unwrap().contains(t)),
            base: Arc::default(),
            down: Arc::default(),
            sign_in_down: Arc::default(),
            password: Arc::new(Mutex::new(PASSWORD.to_owned())),
            access,
            refresh: Arc::default(),
            auth: Arc::default(),
            ids: Arc::default(),
            workouts: Arc::default(),
            page_size: Arc::new(AtomicUsize::new(10)),
        };
        let routes = auth0::routes()
            .route("/api/me", get(me))
            .route("/api/user/{user}/workouts", get(workouts))
            .with_state(fake.clone());
        let base = fake::serve(routes, &fake.gate, &["/data"]).await;
        fake.base.set(base.clone()).unwrap();
        FakePeloton { base, fake }
    }

    /// Serves `workouts` (any order), at most `page_size` a page.
    pub fn serve(&self, workouts: Vec<Value>, page_size: usize) {
        *self.fake.workouts.lock().unwrap() = workouts;
        self.fake
            .page_size
            .store(page_size.max(1), Ordering::SeqCst);
    }

    /// Credentials posted so far (sign-in attempts).
    pub fn attempts(&self) -> usize {
        self.fake.noted("credentials")
    }

    /// Sign-ins completed so far (codes exchanged for tokens).
    pub fn logins(&self) -> usize {
        self.fake.noted("login")
    }

    /// Refresh grants asked for so far, and how many were accepted.
    pub fn refreshes(&self) -> (usize, usize) {
        (self.fake.noted("refresh"), self.fake.noted("refreshed"))
    }

    /// Pages of workouts answered so far.
    pub fn pages(&self) -> usize {
        self.log()
            .iter()
            .filter(|l| l.starts_with("workouts?"))
            .count()
    }

    /// From now on every call answers 503.
    pub fn down(&self) {
        self.fake.down.store(true, Ordering::SeqCst);
    }

    /// While `down`, every Auth0 route answers 503 (the API still answers).
    pub fn sign_in_down(&self, down: bool) {
        self.fake.sign_in_down.store(down, Ordering::SeqCst);
    }

    /// Every access token given so far stops being valid (the next API call answers 401).
    pub fn expire_access_tokens(&self) {
        self.fake.access.lock().unwrap().clear();
    }

    /// Every refresh token given so far is revoked (a refresh grant answers `invalid_grant`).
    pub fn revoke_refresh_tokens(&self) {
        self.fake.refresh.lock().unwrap().clear();
    }

    /// The account's password is now `password` (the stored one is refused).
    pub fn change_password(&self, password: &str) {
        *self.fake.password.lock().unwrap() = password.to_owned();
    }

    /// The next API calls answer `faults`, one each, in order ([`Gate::fail_each`]).
    pub fn fail(&self, faults: &[Fault]) {
        self.fail_each(faults);
    }
}

/// The refusal an API call gets instead of its answer, if any: down, a fault, or no valid
/// bearer token.
fn gate(fake: &Fake, headers: &HeaderMap) -> Option<Response> {
    if fake.down.load(Ordering::SeqCst) {
        return Some((StatusCode::SERVICE_UNAVAILABLE, "upstream maintenance").into_response());
    }
    if let Some(fault) = fake.gate.meet() {
        return Some(match fault {
            Fault::RateLimited(wait) => (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, wait.to_string())],
                Json(json!({"status": 429, "message": "Too many requests"})),
            )
                .into_response(),
            Fault::ServerError => (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"status": 500, "message": "Internal error"})),
            )
                .into_response(),
        });
    }
    (!fake.gate.bearer_ok(headers)).then(|| {
        (
            StatusCode::UNAUTHORIZED,
            Json(json!({"status": 401, "message": "Unauthorized: invalid or expired token"})),
        )
            .into_response()
    })
}

async fn me(State(fake): State<Fake>, headers: HeaderMap) -> Response {
    if let Some(refused) = gate(&fake, &headers) {
        return refused;
    }
    Json(json!({
        "id": USER_ID,
        "username": "rider",
        "email": USERNAME,
        "total_workouts": fake.workouts.lock().unwrap().len(),
    }))
    .into_response()
}

async fn workouts(
    State(fake): State<Fake>,
    Path(user): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = gate(&fake, &headers) {
        return refused;
    }
    if user != USER_ID {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({"status": 403, "message": "Not allowed"})),
        )
            .into_response();
    }
    let number = |k: &str, default: usize| {
        query
            .get(k)
            .map_or(Some(default), |v| v.parse::<usize>().ok())
    };
    let (Some(limit), Some(page)) = (number("limit", 20), number("page", 0)) else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"status": 400, "message": "Bad paging"})),
        )
            .into_response();
    };
    let limit = limit.clamp(1, fake.page_size.load(Ordering::SeqCst));
    let joins_ride = query
        .get("joins")
        .is_some_and(|j| j.split(',').any(|j| j == "ride"));
    let mut all = fake.workouts.lock().unwrap().clone();
    // Newest first; a record without a numeric start (malformed) sorts by its creation.
    let start = |w: &Value| {
        w["start_time"]
            .as_i64()
            .or_else(|| w["created_at"].as_i64())
    };
    all.sort_by_key(|w| std::cmp::Reverse(start(w)));
    let total = all.len();
    let page_count = total.div_ceil(limit);
    let data: Vec<Value> = all
        .into_iter()
        .skip(page * limit)
        .take(limit)
        .map(|mut w| {
            if !joins_ride && let Some(o) = w.as_object_mut() {
                o.remove("ride");
            }
            w
        })
        .collect();
    fake.gate.note_query("workouts", &query);
    Json(json!({
        "data": data,
        "count": data.len(),
        "total": total,
        "limit": limit,
        "page": page,
        "page_count": page_count,
        "sort_by": "-created_at,-pk",
        "show_next": page + 1 < page_count,
        "show_previous": page > 0,
        "summary": {},
        "aggregate_stats": [],
    }))
    .into_response()
}
