//! The real `wearhouse` binary as a child process, for the tests that need a process of their
//! own: restarts on one data dir, SIGKILL, peak RSS, log lines. Each starts it with
//! `serve --listen 127.0.0.1:0 --data-dir DIR` plus its own arguments, and reads standard output
//! up to the `listening on` line (the last start-up line) for the address, the demo team's key
//! and the demo users.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// `serve`'s rate limits switched off (flags given on the command line still win).
const NO_RATE_LIMITS: [(&str, &str); 3] = [
    ("WEARHOUSE_RATE_LIMIT_RPS", "0"),
    ("WEARHOUSE_TEAM_RATE_LIMIT_RPS", "0"),
    ("WEARHOUSE_QUERY_RATE_LIMIT_RPS", "0"),
];

/// An HTTP client whose requests give up after `seconds`.
pub fn http_client(seconds: u64) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(seconds))
        .build()
        .unwrap()
}

/// Creates a team with the CLI (`wearhouse team create NAME --data-dir DIR` plus `store` flags
/// such as `--database-url ...`); its API key.
pub fn create_team(data_dir: &Path, name: &str, store: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_wearhouse"))
        .args(["team", "create", name, "--data-dir"])
        .arg(data_dir)
        .args(store)
        .output()
        .expect("team create");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("api_key: ").map(|k| k.trim().to_owned()))
        .expect("api key printed")
}

/// A running server process and what it printed at start-up. Killed when dropped.
pub struct Server {
    child: Child,
    /// What it logged to standard error so far.
    log: Arc<Mutex<String>>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The demo team's API key, when started with `--demo`.
    key: Option<String>,
    /// (client user id, user id) of the demo users it printed.
    pub demo_users: Vec<(String, String)>,
    /// `HOST:PORT` of Arrow Flight SQL, when started with `--flight-listen`.
    pub flight: Option<String>,
}

impl Server {
    /// `wearhouse serve` on `data_dir` with `args`, logging at `warn`.
    pub fn start(data_dir: &Path, args: &[&str]) -> Server {
        Server::start_logging(data_dir, args, "warn")
    }

    /// [`Server::start`] with `RUST_LOG=rust_log`.
    pub fn start_logging(data_dir: &Path, args: &[&str], rust_log: &str) -> Server {
        Server::start_with(data_dir, args, rust_log, &[])
    }

    /// [`Server::start_logging`] with extra environment variables.
    pub fn start_with(
        data_dir: &Path,
        args: &[&str],
        rust_log: &str,
        env: &[(&str, &str)],
    ) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wearhouse"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .arg("--data-dir")
            .arg(data_dir)
            .env("RUST_LOG", rust_log)
            // These tests push and query as fast as they can (the crash test pushes until the
            // process dies): no rate limits unless a test sets them (`rate_limit::`).
            .envs(NO_RATE_LIMITS)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn wearhouse");
        // Keep the server's log so a failed start (or a test about log lines) can read it.
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().expect("stderr");
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let (mut key, mut demo_users, mut flight) = (None, Vec::new(), None);
        let base = loop {
            let Some(Ok(line)) = lines.next() else {
                let status = child.wait().expect("wait");
                std::thread::sleep(Duration::from_millis(200));
                panic!(
                    "server exited ({status:?}) before it was ready:\n{}",
                    log.lock().unwrap()
                );
            };
            if let Some(k) = line.strip_prefix("demo team API key: ") {
                key = Some(k.trim().to_owned());
            }
            if let Some(rest) = line.strip_prefix("demo user ")
                && let Some((name, id)) = rest.split_once(": ")
            {
                demo_users.push((name.to_owned(), id.trim().to_owned()));
            }
            if let Some(addr) = line.strip_prefix("flight sql listening on ") {
                flight = Some(addr.trim().to_owned());
            }
            if let Some(addr) = line.strip_prefix("listening on ") {
                break addr.trim().to_owned();
            }
        };
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server {
            child,
            log,
            base,
            key,
            demo_users,
            flight,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `GET path` with `key`, answered as JSON.
    pub async fn get_json(&self, path: &str, key: &str) -> serde_json::Value {
        reqwest::Client::new()
            .get(self.url(path))
            .header("x-service-api-key", key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// `POST path` with `key` and a JSON `body`, which must answer 200; its JSON answer.
    pub async fn post_json(&self, path: &str, key: &str, body: &Value) -> Value {
        let answer = http_client(60)
            .post(self.url(path))
            .header("x-service-api-key", key)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = answer.status();
        let json: Value = answer.json().await.unwrap_or(Value::Null);
        assert_eq!(status, 200, "POST {path}: {json}");
        json
    }

    /// The demo team's key; panics when the server was not started with `--demo`.
    pub fn key(&self) -> &str {
        self.key.as_deref().expect("started without --demo")
    }

    /// The id of the demo user `client_user_id`.
    pub fn demo_user(&self, client_user_id: &str) -> &str {
        self.demo_users
            .iter()
            .find(|(name, _)| name == client_user_id)
            .map(|(_, id)| id.as_str())
            .unwrap_or_else(|| panic!("no demo user {client_user_id}: {:?}", self.demo_users))
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// A field of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`), in bytes.
    pub fn proc_status(&self, field: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{field} missing from /proc status"));
        kib * 1024
    }

    /// Creates a user with `key` (the demo key when None); the answer's JSON.
    pub async fn create_user(
        &self,
        http: &reqwest::Client,
        key: Option<&str>,
        body: Value,
    ) -> Value {
        let key = key.unwrap_or_else(|| self.key());
        let answer = http
            .post(self.url("/v2/user"))
            .header("x-service-api-key", key)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "create user {body}");
        answer.json().await.unwrap()
    }

    /// Creates the user `client_user_id` with the demo key; its (team id, user id).
    pub async fn demo_team_user(
        &self,
        http: &reqwest::Client,
        client_user_id: &str,
    ) -> (uuid::Uuid, uuid::Uuid) {
        let user = self
            .create_user(http, None, json!({"client_user_id": client_user_id}))
            .await;
        let id = |k: &str| user[k].as_str().unwrap().parse().unwrap();
        (id("team_id"), id("user_id"))
    }

    /// SIGTERM, then wait for a clean exit.
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        assert!(status.success());
        let exit = self.child.wait().expect("wait");
        assert!(exit.success(), "server exited with {exit:?} on SIGTERM");
    }

    /// Sends SIGTERM and returns at once (the server drains in the background).
    pub fn signal_term(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }

    /// Waits at most `limit` for the process to exit after a signal; its exit status, or None
    /// when it is still running (it is then killed when dropped).
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let until = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if std::time::Instant::now() > until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL: no shutdown path runs at all.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("wait");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What several server processes share in the scale-out tests (`spec/scale-out.md`): one
/// PostgreSQL database and one bucket of the S3-compatible server, a data directory for each of
/// two processes, and a team.
pub struct SharedStores {
    /// The database (dropped by the test that wants it gone).
    pub db: crate::support::postgres::ScratchDb,
    /// The bucket's prefix.
    pub bucket: crate::store::support::Site,
    /// One data directory per process.
    pub dirs: [tempfile::TempDir; 2],
    /// The team's API key.
    pub key: String,
    s3: Vec<(String, String)>,
}

impl SharedStores {
    /// Stores and a team named after `name` (`scale-out`: database `wearhouse_scale_out_*`,
    /// bucket prefix `scale-out-*`, team `scale-out`).
    pub async fn new(name: &str) -> SharedStores {
        let db = crate::support::postgres::ScratchDb::create(&format!(
            "wearhouse_{}",
            name.replace('-', "_")
        ))
        .await;
        let bucket = crate::store::support::Site::s3(&format!("{name}-{}", uuid::Uuid::new_v4()));
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let store = [
            "--database-url",
            db.url.as_str(),
            "--object-store-url",
            bucket.location.as_str(),
        ];
        let key = create_team(dirs[0].path(), name, &store);
        SharedStores {
            db,
            bucket,
            dirs,
            key,
            s3: crate::store::support::s3_env(),
        }
    }

    /// `--database-url` and `--object-store-url` for a process on them.
    pub fn args(&self) -> Vec<&str> {
        vec![
            "--database-url",
            self.db.url.as_str(),
            "--object-store-url",
            self.bucket.location.as_str(),
        ]
    }

    /// The S3-compatible server's configuration, for a process's environment.
    pub fn env(&self) -> Vec<(&str, &str)> {
        self.s3
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
}
