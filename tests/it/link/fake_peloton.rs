//! A fake of Peloton's web API for the password-link and Peloton sync tests: an axum server on
//! a free loopback port. It shares no code with wearhouse.
//!
//! - `POST /auth/login` as Peloton's API does (JSON `{"username_or_email", "password"}` →
//!   `200 {"session_id", "user_id", ...}` with the `peloton_session_id` cookie, or
//!   `401 {"status": 401, "error_code": 3020, "message": "Login failed"}`). The first sign-in
//!   gives [`SESSION_ID`], each later one a new session; every session given is valid until
//!   [`FakePeloton::expire_sessions`].
//! - `GET /api/me` → `{"id", "username", ...}` and `GET /api/user/{id}/workouts?limit=&page=`
//!   → `{"data", "page", "page_count", "total", "limit", "count", ...}`, the workouts newest
//!   first (by `start_time`), `ride` kept only with `joins=ride`. Both want a valid session as
//!   the `peloton_session_id` cookie, else 401.
//! - Faults, served to the API calls (not the sign-in) before their answers: 429 with
//!   `Retry-After`, 500. `down()` makes every call answer 503, `sign_in_down(true)` the
//!   sign-in alone.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

/// The one account the fake knows.
pub const USERNAME: &str = "rider@example.com";
/// Its password.
pub const PASSWORD: &str = "pedal-harder-7f3a";
/// Its user id at Peloton.
pub const USER_ID: &str = "5b4c2a0e9d8f4e3b8a1c7d6e5f4a3b2c";
/// The session a first successful sign-in gives (no database may hold it in clear).
pub const SESSION_ID: &str = "sess-0c9e1f7a-never-in-clear";

/// A fault served to an API call instead of its answer.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// 429 with `Retry-After: <seconds>`.
    RateLimited(u64),
    /// 500.
    ServerError,
}

#[derive(Clone)]
struct Fake {
    attempts: Arc<AtomicUsize>,
    logins: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
    sign_in_down: Arc<AtomicBool>,
    password: Arc<Mutex<String>>,
    sessions: Arc<Mutex<HashSet<String>>>,
    workouts: Arc<Mutex<Vec<Value>>>,
    page_size: Arc<AtomicUsize>,
    faults: Arc<Mutex<VecDeque<Fault>>>,
    /// Pages of workouts answered.
    pages: Arc<AtomicUsize>,
}

/// A running fake.
pub struct FakePeloton {
    pub base: String,
    fake: Fake,
}

impl FakePeloton {
    /// A fake with no workouts, ten a page.
    pub async fn start() -> FakePeloton {
        let fake = Fake {
            attempts: Arc::default(),
            logins: Arc::default(),
            down: Arc::default(),
            sign_in_down: Arc::default(),
            password: Arc::new(Mutex::new(PASSWORD.to_owned())),
            sessions: Arc::default(),
            workouts: Arc::default(),
            page_size: Arc::new(AtomicUsize::new(10)),
            faults: Arc::default(),
            pages: Arc::default(),
        };
        let app = Router::new()
            .route("/auth/login", post(login))
            .route("/api/me", get(me))
            .route("/api/user/{user}/workouts", get(workouts))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakePeloton { base, fake }
    }

    /// Serves `workouts` (any order), at most `page_size` a page.
    pub fn serve(&self, workouts: Vec<Value>, page_size: usize) {
        *self.fake.workouts.lock().unwrap() = workouts;
        self.fake
            .page_size
            .store(page_size.max(1), Ordering::SeqCst);
    }

    /// Sign-in attempts received so far.
    pub fn attempts(&self) -> usize {
        self.fake.attempts.load(Ordering::SeqCst)
    }

    /// Sign-ins accepted so far.
    pub fn logins(&self) -> usize {
        self.fake.logins.load(Ordering::SeqCst)
    }

    /// Pages of workouts answered so far.
    pub fn pages(&self) -> usize {
        self.fake.pages.load(Ordering::SeqCst)
    }

    /// From now on every call answers 503.
    pub fn down(&self) {
        self.fake.down.store(true, Ordering::SeqCst);
    }

    /// While `down`, the sign-in alone answers 503 (the API still answers).
    pub fn sign_in_down(&self, down: bool) {
        self.fake.sign_in_down.store(down, Ordering::SeqCst);
    }

    /// Every session given so far stops being valid (the next API call answers 401).
    pub fn expire_sessions(&self) {
        self.fake.sessions.lock().unwrap().clear();
    }

    /// The account's password is now `password` (the stored one is refused).
    pub fn change_password(&self, password: &str) {
        *self.fake.password.lock().unwrap() = password.to_owned();
    }

    /// The next API calls answer `faults`, one each, in order.
    pub fn fail(&self, faults: &[Fault]) {
        self.fake
            .faults
            .lock()
            .unwrap()
            .extend(faults.iter().copied());
    }
}

async fn login(State(fake): State<Fake>, body: Json<Value>) -> Response {
    let n = fake.attempts.fetch_add(1, Ordering::SeqCst);
    if fake.down.load(Ordering::SeqCst) || fake.sign_in_down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "upstream maintenance").into_response();
    }
    let (Some(user), Some(password)) = (
        body.get("username_or_email").and_then(Value::as_str),
        body.get("password").and_then(Value::as_str),
    ) else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"status": 400, "error_code": 3000, "message": "Bad request"})),
        )
            .into_response();
    };
    if user != USERNAME || password != *fake.password.lock().unwrap() {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"status": 401, "error_code": 3020, "message": "Login failed", "subcode": ""})),
        )
            .into_response();
    }
    let session = match fake.logins.fetch_add(1, Ordering::SeqCst) {
        0 => SESSION_ID.to_owned(),
        _ => format!("sess-{n}-renewed"),
    };
    fake.sessions.lock().unwrap().insert(session.clone());
    (
        [(
            header::SET_COOKIE,
            format!("peloton_session_id={session}; Path=/; HttpOnly"),
        )],
        Json(json!({
            "session_id": session,
            "user_id": USER_ID,
            "pubsub_session": {},
            "user_data": {"username": "rider", "email": USERNAME},
        })),
    )
        .into_response()
}

/// The refusal an API call gets instead of its answer, if any: down, a fault, or no valid
/// session cookie.
fn gate(fake: &Fake, headers: &HeaderMap) -> Option<Response> {
    if fake.down.load(Ordering::SeqCst) {
        return Some((StatusCode::SERVICE_UNAVAILABLE, "upstream maintenance").into_response());
    }
    if let Some(fault) = fake.faults.lock().unwrap().pop_front() {
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
    let session = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix("peloton_session_id="));
    let valid = session.is_some_and(|s| fake.sessions.lock().unwrap().contains(s));
    (!valid).then(|| {
        (
            StatusCode::UNAUTHORIZED,
            Json(json!({"status": 401, "error_code": 3030, "message": "Session expired"})),
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
    fake.pages.fetch_add(1, Ordering::SeqCst);
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
