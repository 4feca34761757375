//! Bulk import across a server process killed mid-operation (it resumes after a restart
//! without importing anything twice), and the operation's SQL on PostgreSQL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wearhouse::jobs::Runner;

use super::bulk_import::{access_token, assert_no_token_in_clear, now, recipe, refresh_token};
use super::fake_oauth::{CLIENT_ID, FakeOAuth, TEAM_CLIENT_ID, TEAM_CLIENT_SECRET};
use crate::jobs::support::config;

const IMPORT: &str = "/v2/link/bulk_import";
const OPS: &str = "/v2/link/bulk_op";

/// Bytes of every file of the server's SQLite database.
fn server_db_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("wearhouse.db") {
            all.extend(std::fs::read(&path).unwrap());
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_killed_mid_import_resumes_after_restart_and_imports_each_recipe_once() {
    let dir = tempfile::tempdir().unwrap();
    let oauth = FakeOAuth::start().await;
    // The third refresh never answers: two recipes are imported, the third is in flight.
    oauth.hang_request(3);
    let key = crate::support::server::create_team(dir.path(), "acme", &[]);
    let server = oauth.serve(
        dir.path(),
        &[],
        &[(
            wearhouse::sync::connectors::oura::API_URL_ENV,
            "http://127.0.0.1:9",
        )],
    );
    let http = crate::support::server::http_client(30);
    let call = |server: &crate::support::server::Server, method: reqwest::Method, path: &str| {
        http.request(method, server.url(path))
            .header("x-service-api-key", &key)
    };
    let a = call(
        &server,
        reqwest::Method::PUT,
        "/v2/team/provider/oura/credentials",
    )
    .json(&json!({"client_id": TEAM_CLIENT_ID, "client_secret": TEAM_CLIENT_SECRET}))
    .send()
    .await
    .unwrap();
    assert_eq!(a.status(), 200);
    let mut users = Vec::new();
    let mut recipes = Vec::new();
    for n in 1..=5 {
        let user = server
            .create_user(
                &http,
                Some(&key),
                json!({"client_user_id": format!("kill-{n}")}),
            )
            .await["user_id"]
            .as_str()
            .unwrap()
            .to_owned();
        oauth.grant_refresh_token(&refresh_token(n), TEAM_CLIENT_ID, "profile sleep");
        recipes.push(recipe(&user, n, now() - 60));
        users.push(user);
    }
    let a = call(&server, reqwest::Method::POST, IMPORT)
        .json(&json!({"provider": "oura", "connections": recipes}))
        .send()
        .await
        .unwrap();
    assert_eq!(a.status(), 202);
    let op = |server: &crate::support::server::Server| {
        let request = call(server, reqwest::Method::GET, OPS);
        async move {
            let body: Value = request.send().await.unwrap().json().await.unwrap();
            body["data"][0].clone()
        }
    };
    let started = Instant::now();
    while oauth.token_requests() < 3 || op(&server).await["processed"] != 2 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{}",
            op(&server).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.kill();

    let server = oauth.serve(
        dir.path(),
        &[],
        &[(
            wearhouse::sync::connectors::oura::API_URL_ENV,
            "http://127.0.0.1:9",
        )],
    );
    // The dead runner's lease (60 s) runs out, then the new one finishes the operation.
    let deadline = Instant::now() + Duration::from_secs(150);
    let done = loop {
        let now = op(&server).await;
        if now["status"] != "in_progress" {
            break now;
        }
        assert!(Instant::now() < deadline, "{now}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(done["status"], "success", "{done}");
    assert_eq!(
        (
            done["processed"].as_i64(),
            done["failed"].as_i64(),
            done["pending"].as_i64()
        ),
        (Some(5), Some(0), Some(0)),
        "{done}"
    );
    // Each refresh token was presented once (the one in flight at the kill hung before the
    // fake read it, and was sent again by the new process): the recipes imported before the
    // kill were not worked again.
    let mut presented = oauth.presented();
    presented.sort();
    assert_eq!(presented, (1..=5).map(refresh_token).collect::<Vec<_>>());
    assert_eq!(oauth.token_requests(), 6);
    for user in &users {
        let events = server
            .get_json(&format!("/v2/team/events?user_id={user}&limit=100"), &key)
            .await;
        let created = events["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["event_type"] == "provider.connection.created")
            .count();
        assert_eq!(created, 1, "{user}: {events}");
        let providers = server
            .get_json(&format!("/v2/user/providers/{user}"), &key)
            .await;
        let oura = providers["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["slug"] == "oura")
            .cloned()
            .unwrap_or_default();
        assert_eq!(oura["status"], "connected", "{providers}");
    }
    assert_no_token_in_clear(&server_db_bytes(dir.path()), 1..=5, &oauth.issued());
}

/// The operation's SQL on PostgreSQL: submitted, worked by the job, listed; no token in clear
/// in any column.
#[tokio::test(flavor = "multi_thread")]
async fn an_operation_is_stored_worked_and_listed_on_postgresql() {
    use std::sync::Arc;
    use wearhouse::link::bulk_import::{self, OpStatus, Recipe, job::Importer};
    use wearhouse::link::oauth::{OAuthApp, OAuthApps};
    use wearhouse::store::metadata::{MetadataStore, NewUser};

    let db = crate::support::postgres::ScratchDb::create("wearhouse_bulk").await;
    let meta = MetadataStore::connect(&db.url).await.unwrap();
    let fake = FakeOAuth::start().await;
    let (team, _) = meta.create_team("acme").await.unwrap();
    let mut users = Vec::new();
    for name in ["pg-fresh", "pg-expired"] {
        let new = NewUser {
            client_user_id: name.into(),
            ..Default::default()
        };
        users.push(meta.create_user(team.id, new).await.unwrap().id);
    }
    let (key, _) = wearhouse::secret::SecretKey::generate();
    wearhouse::link::team_apps::set(
        &meta,
        Some(&key),
        team.id,
        "oura",
        wearhouse::link::team_apps::NewTeamApp {
            client_id: TEAM_CLIENT_ID,
            client_secret: TEAM_CLIENT_SECRET,
            redirect_uri: None,
            verification_token: None,
        },
    )
    .await
    .unwrap();
    fake.grant_refresh_token(&refresh_token(2), TEAM_CLIENT_ID, "profile");
    let recipe = |user: uuid::Uuid, n: usize, expires_at: i64| Recipe {
        user_id: user,
        access_token: access_token(n),
        refresh_token: refresh_token(n),
        provider_id: format!("oura-account-{n}"),
        expires_at,
        oauth_scopes: Some(vec!["personal".into()]), // Oura's own name for its profile scope
    };
    let unknown = uuid::Uuid::new_v4();
    let recipes = [
        recipe(users[0], 1, now() + 3600),
        recipe(unknown, 3, now() + 3600),
        recipe(users[1], 2, now() - 5),
    ];
    let oura = wearhouse::providers::provider("oura").unwrap();
    let op = bulk_import::submit(
        &meta,
        Some(&key),
        team.id,
        oura,
        &recipes,
        chrono::Utc::now(),
    )
    .await
    .unwrap();
    let staged: Vec<String> = sqlx::query_scalar::<_, String>(
        "SELECT credentials FROM bulk_import_recipes ORDER BY position",
    )
    .fetch_all(&mut *meta.reader().await.unwrap())
    .await
    .unwrap();
    assert_eq!(staged.len(), 3);
    assert!(!staged.iter().any(|c| c.contains("never-in-clear")));

    let mut apps = OAuthApps::default();
    apps.0.insert(
        "oura".into(),
        OAuthApp {
            client_id: CLIENT_ID.into(),
            client_secret: super::fake_oauth::CLIENT_SECRET.into(),
            authorize_url: format!("{}/authorize", fake.base),
            token_url: format!("{}/token", fake.base),
            redirect_uri: None,
            verification_token: None,
            subscription_id: None,
        },
    );
    let link = wearhouse::link::LinkConfig {
        oauth_apps: apps,
        ..Default::default()
    };
    let importer = Importer::new(Some(key), Arc::new(link)).unwrap();
    let registry = wearhouse::jobs::Registry::new().register(importer);
    let runner = Runner::new(
        meta.clone(),
        registry,
        config("pg", Duration::from_secs(30)),
    )
    .spawn();
    let done = bulk_import::wait(&meta, team.id, op, Duration::from_secs(20))
        .await
        .unwrap()
        .expect("the operation ended within 20 s");
    runner.shutdown().await;
    assert_eq!(done.imported, users);
    assert_eq!(done.failed, vec![unknown]);
    let (ops, next) = bulk_import::list(&meta, team.id, None, 10).await.unwrap();
    assert_eq!(next, None);
    assert_eq!(ops.len(), 1);
    assert_eq!(
        (
            ops[0].status,
            ops[0].pending,
            ops[0].processed,
            ops[0].failed
        ),
        (OpStatus::Failure, 0, 3, 1)
    );
    let mut conn = meta.reader().await.unwrap();
    let left: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM bulk_import_recipes WHERE credentials IS NOT NULL",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    assert_eq!(left, 0, "handled recipes keep no tokens");
    let sealed: Vec<String> =
        sqlx::query_scalar("SELECT credentials FROM connections WHERE provider = 'oura'")
            .fetch_all(&mut *conn)
            .await
            .unwrap();
    assert_eq!(sealed.len(), 2);
    assert!(
        !sealed
            .iter()
            .any(|c| c.contains("never-in-clear") || c.contains("fake-"))
    );
    drop(conn);
    meta.close().await;
    db.drop_db().await;
}
