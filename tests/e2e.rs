//! End-to-end: the real `wearhouse` binary on port 0 with a temporary data dir, driven over a
//! socket with reqwest, stopped (SIGTERM) and started again on the same data dir.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// A running server process and what it printed at start-up.
struct Server {
    child: Child,
    base: String,
    key: String,
}

impl Server {
    fn start(data_dir: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wearhouse"))
            .args(["serve", "--demo", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn wearhouse");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let (mut base, mut key) = (None, None);
        while base.is_none() || key.is_none() {
            let line = lines
                .next()
                .expect("server exited before it was ready")
                .expect("read stdout");
            if let Some(k) = line.strip_prefix("demo team API key: ") {
                key = Some(k.trim().to_owned());
            }
            if let Some(addr) = line.strip_prefix("listening on ") {
                base = Some(addr.trim().to_owned());
            }
        }
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server {
            child,
            base: base.unwrap(),
            key: key.unwrap(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// SIGTERM, then wait for a clean exit.
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        assert!(status.success());
        let exit = self.child.wait().expect("wait");
        assert!(exit.success(), "server exited with {exit:?} on SIGTERM");
    }
}

#[tokio::test]
async fn users_survive_a_restart_of_the_real_server() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();

    let server = Server::start(dir.path());
    let health = http.get(server.url("/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert!(health.headers().contains_key("x-request-id"));

    let created: Value = http
        .post(server.url("/v2/user/"))
        .header("x-service-api-key", &server.key)
        .json(&json!({"client_user_id": "e2e-user", "fallback_time_zone": "Europe/Berlin"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["user_id"].as_str().expect("user_id").to_owned();
    let unauthorised = http.get(server.url("/v2/user")).send().await.unwrap();
    assert_eq!(unauthorised.status(), 401);
    let key = server.key.clone();
    server.stop();

    // The key file is private to the owner.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("demo-api-key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "demo key readable by others: {mode:o}");
    }

    let server = Server::start(dir.path());
    assert_eq!(server.key, key, "a restart prints the same demo key");
    let read = http
        .get(server.url(&format!("/v2/user/{id}")))
        .header("x-service-api-key", &server.key)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    let read: Value = read.json().await.unwrap();
    assert_eq!(read, created);
    let listed: Value = http
        .get(server.url("/v2/user"))
        .header("x-service-api-key", &server.key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["total"], 1);
    server.stop();
}
