//! Issue 42's team, sign-in token, lab and unserved operations, end to end against the real
//! binary (`server.rs`) with two teams made by its CLI, each answer checked against the
//! reference's published schema (`testdata/reference/junction-openapi-team-lab.json`, from the
//! same document as `junction-openapi-models.json`) and parsed by its SDK's models, and each id
//! route asked with the other team's id (404).
//!
//! - [`team`]: `GET /v2/team/{team_id}`, its physicians, user search;
//! - [`sign_in`]: `POST /v2/user/{user_id}/sign_in_token`, its exchange and what it may do;
//! - [`lab_docs`]: result metadata and report, collection instructions, per-order PSCs,
//!   markers by lab code, order transactions;
//! - [`bulk`]: bulk pause, historical trigger and export;
//! - [`unserved`]: the documented 501s, and every operation of the reference accounted for.

mod bulk;
mod lab_docs;
mod sign_in;
mod team;
mod unserved;

use std::path::Path;

use serde_json::{Value, json};

use crate::support::reference;
use crate::support::server::{Server, create_team, http_client};

/// A real server with two teams.
pub struct Live {
    pub server: Server,
    /// The first team's key.
    pub key: String,
    /// The second team's key.
    pub other: String,
    pub http: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// One answer of the real server.
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub json: Value,
    pub bytes: Vec<u8>,
}

impl Live {
    /// Two teams made with the CLI, then `serve` logging at `rust_log`.
    pub fn start(rust_log: &str) -> Live {
        Live::start_with(rust_log, &[], &[])
    }

    /// [`Live::start`] with more `serve` arguments and environment.
    pub fn start_with(rust_log: &str, args: &[&str], env: &[(&str, &str)]) -> Live {
        let dir = tempfile::tempdir().unwrap();
        let key = create_team(dir.path(), "acme", &[]);
        let other = create_team(dir.path(), "globex", &[]);
        let server = Server::start_with(dir.path(), args, rust_log, env);
        Live {
            server,
            key,
            other,
            http: http_client(30),
            _dir: dir,
        }
    }

    /// `method path` with `key` (None: no key) and a JSON body.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut req = self.http.request(
            reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            self.server.url(path),
        );
        if let Some(key) = key {
            req = req.header("x-service-api-key", key);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let answer = req.send().await.unwrap();
        let status = answer.status().as_u16();
        let headers = answer.headers().clone();
        let bytes = answer.bytes().await.unwrap().to_vec();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            json,
            bytes,
        }
    }

    /// `GET path` with the first team's key.
    pub async fn get(&self, path: &str) -> Reply {
        self.call("GET", path, Some(&self.key.clone()), None).await
    }

    /// `POST path` with the first team's key.
    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.call("POST", path, Some(&self.key.clone()), Some(body))
            .await
    }

    /// A user of the team of `key`; its id.
    pub async fn user(&self, key: &str, client_user_id: &str) -> String {
        let a = self
            .call(
                "POST",
                "/v2/user",
                Some(key),
                Some(json!({"client_user_id": client_user_id})),
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.json);
        a.json["user_id"].as_str().unwrap().to_owned()
    }
}

pub use crate::support::reference::case;

/// Checks `cases` against the team, sign-in, bulk and lab components
/// (`junction-openapi-team-lab.json`).
pub fn check_against_reference(cases: &[Value]) {
    reference::check("junction-openapi-team-lab.json", cases);
}

/// The text of every page of a PDF, read back by pypdf (`tests/python/pdf_text.py`).
pub fn pdf_text(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("doc.pdf");
    std::fs::write(&file, bytes).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/pdf_text.py");
    let out = crate::support::provision::python_script(Path::new(script))
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pypdf cannot read it: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
