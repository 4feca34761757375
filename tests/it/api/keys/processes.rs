//! Keys across processes: two real `wearhouse serve` processes on one PostgreSQL database, where
//! a key revoked or rotated through one (or revoked with the CLI, a third process) is refused by
//! the other on the very next request; and `wearhouse keys` on a SQLite data dir.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use wearhouse::store::metadata::MetadataStore;

use crate::support::postgres::ScratchDb;
use crate::support::server::{Server, create_team, http_client};

/// Runs `wearhouse keys ARGS --data-dir DIR STORE...`.
fn keys_cli(data_dir: &Path, args: &[&str], store: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wearhouse"))
        .arg("keys")
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .args(store)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run wearhouse keys")
}

/// The standard output of a run that must succeed.
fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The value of a `name: value` line.
fn field(text: &str, name: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .trim()
        .to_owned()
}

/// The status `key` gets from `server`.
async fn status(http: &reqwest::Client, server: &Server, key: &str) -> u16 {
    http.get(server.url("/v2/team/keys"))
        .header("x-service-api-key", key)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// `POST path` to `server` with `key`; the 200 answer's JSON.
async fn post(
    http: &reqwest::Client,
    server: &Server,
    key: &str,
    path: &str,
    body: Value,
) -> Value {
    let answer = http
        .post(server.url(path))
        .header("x-service-api-key", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "POST {path}");
    answer.json().await.unwrap()
}

#[tokio::test]
async fn a_second_server_refuses_a_revoked_or_rotated_key_at_once() {
    let db = ScratchDb::create("wearhouse_keys").await;
    let dir = tempfile::tempdir().unwrap();
    let store = ["--database-url", db.url.as_str()];
    let root = create_team(dir.path(), "acme", &store);
    let (a, b) = (
        Server::start(dir.path(), &store),
        Server::start(dir.path(), &store),
    );
    let http = http_client(30);

    // A key made through A works at both (so B has seen it valid before the revocation).
    let worker = post(&http, &a, &root, "/v2/team/keys", json!({"name": "worker"})).await;
    let (worker_id, worker_key) = (
        worker["id"].as_str().unwrap(),
        worker["secret"].as_str().unwrap(),
    );
    assert_eq!(status(&http, &a, worker_key).await, 200);
    assert_eq!(status(&http, &b, worker_key).await, 200);
    // Revoked through A: B refuses it on the next request.
    let revoke = format!("/v2/team/keys/{worker_id}/revoke");
    post(&http, &a, &root, &revoke, json!({})).await;
    assert_eq!(status(&http, &b, worker_key).await, 401);
    assert_eq!(status(&http, &a, worker_key).await, 401);

    // The root key rotated through B with no overlap: A refuses it at once, takes the new one.
    let listed = a.get_json("/v2/team/keys", &root).await;
    let root_id = listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "default")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(status(&http, &a, &root).await, 200);
    let rotate = format!("/v2/team/keys/{root_id}/rotate");
    let rotated = post(&http, &b, &root, &rotate, json!({"overlap_seconds": 0})).await;
    let (new_id, new_root) = (
        rotated["id"].as_str().unwrap(),
        rotated["secret"].as_str().unwrap(),
    );
    assert_eq!(status(&http, &a, &root).await, 401);
    assert_eq!(status(&http, &a, new_root).await, 200);
    assert_eq!(status(&http, &b, new_root).await, 200);

    // Revoked with the CLI, a third process: both servers refuse it at once.
    let out = ok(keys_cli(
        dir.path(),
        &["revoke", "--team", "acme", new_id],
        &store,
    ));
    assert_eq!(field(&out, "status"), "revoked");
    assert_eq!(status(&http, &a, new_root).await, 401);
    assert_eq!(status(&http, &b, new_root).await, 401);

    a.stop();
    b.stop();
    db.drop_db().await;
}

#[tokio::test]
async fn keys_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let root = create_team(dir.path(), "acme", &[]);
    create_team(dir.path(), "globex", &[]);

    let made = ok(keys_cli(
        dir.path(),
        &["create", "--team", "acme", "--name", "ci"],
        &[],
    ));
    let (ci_id, ci_key) = (field(&made, "key_id"), field(&made, "api_key"));
    assert_eq!(field(&made, "name"), "ci");
    assert!(ci_key.starts_with("wh_") && ci_key.len() == 67, "{made}");

    // Listed without secrets, one line a key.
    let list = ok(keys_cli(dir.path(), &["list", "--team", "acme"], &[]));
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(
        !list.contains(&root[3..]) && !list.contains(&ci_key[3..]),
        "{list}"
    );
    let ci_line = lines.iter().find(|l| l.starts_with(&ci_id)).unwrap();
    let hint = format!("wh_...{}", &ci_key[63..]);
    assert!(
        ci_line.starts_with(&format!("{ci_id}\tci\tactive\t{hint}\t")),
        "{ci_line}"
    );
    let root_id = lines
        .iter()
        .find(|l| l.contains("\tdefault\t"))
        .and_then(|l| l.split('\t').next())
        .unwrap()
        .to_owned();

    // Rotated (the team by id) with no overlap; the new secret is printed.
    let meta = MetadataStore::connect(&format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("wearhouse.db").display()
    ))
    .await
    .unwrap();
    let acme = meta.team_by_name("acme").await.unwrap().unwrap();
    let rotated = ok(keys_cli(
        dir.path(),
        &[
            "rotate",
            "--team",
            &acme.id.to_string(),
            &ci_id,
            "--overlap-seconds",
            "0",
        ],
        &[],
    ));
    let next_key = field(&rotated, "api_key");
    assert_eq!(field(&rotated, "previous_key_id"), ci_id);
    assert_ne!(next_key, ci_key);
    // An out-of-range overlap is refused, naming the rule.
    let refused = keys_cli(
        dir.path(),
        &["rotate", "--team", "acme", &root_id, "--overlap-seconds=-5"],
        &[],
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("overlap_seconds must be between"),
        "{refused:?}"
    );

    // Another team cannot revoke it; an unknown team is an error.
    let foreign = keys_cli(dir.path(), &["revoke", "--team", "globex", &root_id], &[]);
    assert!(!foreign.status.success());
    assert!(String::from_utf8_lossy(&foreign.stderr).contains("no such key"));
    let nobody = keys_cli(dir.path(), &["list", "--team", "initech"], &[]);
    assert!(!nobody.status.success());
    // Revoked: the database refuses the root key, the expired ci key, keeps the new one.
    ok(keys_cli(
        dir.path(),
        &["revoke", "--team", "acme", &root_id],
        &[],
    ));
    assert_eq!(meta.team_for_key(&root).await.unwrap(), None);
    assert_eq!(meta.team_for_key(&ci_key).await.unwrap(), None);
    let team = meta.team_for_key(&next_key).await.unwrap().map(|t| t.id);
    assert_eq!(team, Some(acme.id));
    meta.close().await;
}
