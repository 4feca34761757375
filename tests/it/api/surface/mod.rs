//! Issue 42's data operations against the real server (`server.rs`): sleep cycles, session
//! streams, devices and pull introspection. Each answer is checked value by value against what
//! the test pushed, for tenancy (another team's ids answer 404), and against the reference's
//! published schema for the operation (`testdata/reference/junction-openapi-data-models.json`)
//! and its SDK's pydantic model.

mod devices;
mod ecg;
mod introspect;
mod pulls_store;
mod sessions;

use serde_json::{Value, json};

use crate::support::reference;
use crate::support::server::{Server, create_team};

/// A running server with two teams: `ours` (its key and a user) and `theirs` (its key).
pub struct World {
    pub server: Server,
    pub http: reqwest::Client,
    pub key: String,
    pub other_key: String,
    pub user: String,
    _dir: tempfile::TempDir,
}

impl World {
    /// Starts the server on a fresh data dir with two teams and one user of the first.
    pub async fn start() -> World {
        let dir = tempfile::tempdir().unwrap();
        let key = create_team(dir.path(), "acme", &[]);
        let other_key = create_team(dir.path(), "globex", &[]);
        let server = Server::start(dir.path(), &[]);
        let http = crate::support::server::http_client(60);
        let mut world = World {
            server,
            http,
            key,
            other_key,
            user: String::new(),
            _dir: dir,
        };
        world.user = world.new_user("surface-1").await;
        world
    }

    /// Creates another user of our team, as `client_user_id`; its id.
    pub async fn new_user(&self, client_user_id: &str) -> String {
        let created = self
            .server
            .create_user(
                &self.http,
                Some(&self.key),
                json!({"client_user_id": client_user_id}),
            )
            .await;
        created["user_id"].as_str().unwrap().to_owned()
    }

    /// `GET path` with `key`: (status, JSON body).
    pub async fn get_with(&self, key: &str, path: &str) -> (u16, Value) {
        let answer = self
            .http
            .get(self.server.url(path))
            .header("x-service-api-key", key)
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }

    /// `GET path` with our key.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.get_with(&self.key, path).await
    }

    /// `POST path` with our key and a JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let answer = self
            .http
            .post(self.server.url(path))
            .header("x-service-api-key", &self.key)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }

    /// Pushes `body` for our user; asserts it was stored.
    pub async fn push(&self, body: &Value) {
        let (status, answer) = self
            .post(&format!("/v2/user/{}/data", self.user), body)
            .await;
        assert_eq!(status, 200, "{answer}");
    }
}

/// One answer to check against the data components (`junction-openapi-data-models.json`).
pub fn case(name: &str, component: &str, sdk_model: &str, answer: &Value) -> Value {
    reference::case(name, component, Some(sdk_model), answer)
}

/// Checks `cases` against `junction-openapi-data-models.json`.
pub fn check_against_reference(cases: &[Value]) {
    reference::check("junction-openapi-data-models.json", cases);
}
