//! A fake of Peloton's sign-in for the password-link tests: an axum server on a free loopback
//! port answering `POST /auth/login` as Peloton's API does (JSON `{"username_or_email",
//! "password"}` → `200 {"session_id", "user_id", ...}` with the `peloton_session_id` cookie, or
//! `401 {"status": 401, "error_code": 3020, "message": "Login failed"}`). It shares no code
//! with wearhouse. `down()` makes it answer 503 to everything.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

/// The one account the fake knows.
pub const USERNAME: &str = "rider@example.com";
/// Its password.
pub const PASSWORD: &str = "pedal-harder-7f3a";
/// Its user id at Peloton.
pub const USER_ID: &str = "5b4c2a0e9d8f4e3b8a1c7d6e5f4a3b2c";
/// The session a successful sign-in gives (no database may hold it in clear).
pub const SESSION_ID: &str = "sess-0c9e1f7a-never-in-clear";

#[derive(Clone, Default)]
struct Fake {
    attempts: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
}

/// A running fake.
pub struct FakePeloton {
    pub base: String,
    fake: Fake,
}

impl FakePeloton {
    pub async fn start() -> FakePeloton {
        let fake = Fake::default();
        let app = Router::new()
            .route("/auth/login", post(login))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakePeloton { base, fake }
    }

    /// Sign-in attempts received so far.
    pub fn attempts(&self) -> usize {
        self.fake.attempts.load(Ordering::SeqCst)
    }

    /// From now on every call answers 503.
    pub fn down(&self) {
        self.fake.down.store(true, Ordering::SeqCst);
    }
}

async fn login(State(fake): State<Fake>, body: Json<Value>) -> Response {
    fake.attempts.fetch_add(1, Ordering::SeqCst);
    if fake.down.load(Ordering::SeqCst) {
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
    if user != USERNAME || password != PASSWORD {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"status": 401, "error_code": 3020, "message": "Login failed", "subcode": ""})),
        )
            .into_response();
    }
    (
        [(
            header::SET_COOKIE,
            format!("peloton_session_id={SESSION_ID}; Path=/; HttpOnly"),
        )],
        Json(json!({
            "session_id": SESSION_ID,
            "user_id": USER_ID,
            "pubsub_session": {},
            "user_data": {"username": "rider", "email": USER},
        })),
    )
        .into_response()
}

const USER: &str = USERNAME;
