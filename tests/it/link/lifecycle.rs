//! Connections: sealed credentials on both databases, the provider list's availability and
//! scopes, deregistration, and where the secret key comes from.

use serde_json::json;
use sqlx::Row;
use uuid::Uuid;
use wearhouse::link::lifecycle::{credentials, deregister, link_on};
use wearhouse::secret::SecretKey;
use wearhouse::store::metadata::connections::{self, ErrorDetails};
use wearhouse::store::metadata::{ConnectionStatus, MetadataStore};

use super::bulk_import::contains;
use super::{ACCESS_TOKEN, REFRESH_TOKEN, entry, keyed_app, link, linked, sqlite_bytes};
use crate::support::postgres::ScratchDb;
use crate::support::{TestApp, assert_422_at};

/// Links, errors, re-links and deregisters a connection through the store functions; answers
/// the user.
async fn exercise(meta: &MetadataStore, key: &SecretKey) -> Uuid {
    let (team, _) = meta.create_team("acme").await.unwrap();
    let user = crate::support::new_user(meta, team.id, "linked").await;
    let mut tx = meta.begin().await.unwrap();
    let (c, was) = link_on(
        &mut tx,
        Some(key),
        user.id,
        "oura",
        &linked(&["profile"], &["sleep"]),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(!was);
    assert_eq!(c.status, ConnectionStatus::Connected);
    assert_eq!(c.provider_user_id.as_deref(), Some("provider-user-42"));
    assert_eq!(c.scopes_granted, Some(vec!["profile".to_owned()]));
    assert_eq!(c.scopes_denied, Some(vec!["sleep".to_owned()]));
    let opened = credentials(meta, Some(key), user.id, "oura")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(opened.access_token.as_deref(), Some(ACCESS_TOKEN));
    assert_eq!(opened.refresh_token.as_deref(), Some(REFRESH_TOKEN));
    // Another key cannot open them.
    let other = SecretKey::generate().0;
    assert!(
        credentials(meta, Some(&other), user.id, "oura")
            .await
            .is_err()
    );

    let details = ErrorDetails {
        error_type: "provider_credential_error".into(),
        error_message: "the refresh token was revoked".into(),
        occurred_at: "2026-01-02T03:04:05Z".parse().unwrap(),
    };
    let mut w = meta.writer().await.unwrap();
    assert_eq!(
        connections::set_error(&mut w, user.id, "oura", &details)
            .await
            .unwrap(),
        connections::ErrorTransition::Entered
    );
    drop(w);
    let c = meta.connection(user.id, "oura").await.unwrap().unwrap();
    assert_eq!(c.status, ConnectionStatus::Error);
    assert_eq!(c.error_details, Some(details));
    // Re-linking brings it back and clears the error, keeping when it was first made.
    let mut tx = meta.begin().await.unwrap();
    let (again, was) = link_on(
        &mut tx,
        Some(key),
        user.id,
        "oura",
        &linked(&["profile", "sleep"], &[]),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(!was, "an errored connection was not connected");
    assert_eq!(again.status, ConnectionStatus::Connected);
    assert_eq!(again.error_details, None);
    assert_eq!(again.created_at, c.created_at);
    user.id
}

#[tokio::test]
async fn sqlite_keeps_credentials_sealed_and_the_connection_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("meta.db").display());
    let meta = MetadataStore::connect(&url).await.unwrap();
    let key = SecretKey::generate().0;
    let user = exercise(&meta, &key).await;
    let bytes = sqlite_bytes(dir.path());
    // The grep finds what is stored in clear (the provider's user id)...
    assert!(contains(&bytes, "provider-user-42"));
    assert!(contains(&bytes, "v1:"), "sealed values are stored");
    // ...and no token.
    assert!(!contains(&bytes, ACCESS_TOKEN));
    assert!(!contains(&bytes, REFRESH_TOKEN));
    deregister(&meta, user, "oura").await.unwrap();
    let c = meta.connection(user, "oura").await.unwrap().unwrap();
    assert_eq!(c.status, ConnectionStatus::Deregistered);
    assert!(
        credentials(&meta, Some(&key), user, "oura")
            .await
            .unwrap()
            .is_none()
    );
    assert!(deregister(&meta, user, "fitbit").await.is_err());
    meta.close().await;
}

#[tokio::test]
async fn postgres_keeps_credentials_sealed_and_the_connection_lifecycle() {
    let db = ScratchDb::create("wearhouse_link").await;
    let meta = MetadataStore::connect(&db.url).await.unwrap();
    let key = SecretKey::generate().0;
    let user = exercise(&meta, &key).await;
    let rows = sqlx::query("SELECT CAST(c.* AS TEXT) AS line FROM connections c")
        .fetch_all(&mut *meta.reader().await.unwrap())
        .await
        .unwrap();
    let table: String = rows
        .iter()
        .map(|r| r.get::<String, _>("line"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(table.contains("provider-user-42"), "{table}");
    assert!(table.contains("v1:"), "{table}");
    assert!(
        !table.contains(ACCESS_TOKEN) && !table.contains(REFRESH_TOKEN),
        "{table}"
    );
    deregister(&meta, user, "oura").await.unwrap();
    assert!(
        credentials(&meta, Some(&key), user, "oura")
            .await
            .unwrap()
            .is_none()
    );
    meta.close().await;
    db.drop_db().await;
}

#[tokio::test]
async fn availability_follows_status_and_granted_scopes() {
    let app = keyed_app().await;
    let user = app.user("scoped").await;
    link(
        &app,
        &user,
        "oura",
        &linked(&["profile", "sleep"], &["heartrate"]),
    )
    .await;
    let oura = entry(&app, &user, "oura").await;
    assert_eq!(oura["status"], "connected");
    assert_eq!(oura["error_details"], json!(null));
    let ra = &oura["resource_availability"];
    assert_eq!(ra["sleep"]["status"], "available");
    assert_eq!(
        ra["sleep"]["scope_requirements"]["user_granted"]["required"],
        json!(["sleep"])
    );
    assert_eq!(ra["heartrate"]["status"], "unavailable");
    assert_eq!(
        ra["heartrate"]["scope_requirements"]["user_denied"]["required"],
        json!(["heartrate"])
    );
    let scopes = &oura["scope_requirements"];
    assert_eq!(scopes["user_granted"]["required"], json!(["profile"]));
    assert_eq!(scopes["user_denied"]["required"], json!([]));
    assert!(
        scopes["user_granted"]["optional"]
            .as_array()
            .unwrap()
            .contains(&json!("sleep"))
    );
    assert!(
        scopes["user_denied"]["optional"]
            .as_array()
            .unwrap()
            .contains(&json!("heartrate"))
    );
    // An errored connection has nothing available and says why.
    let details = ErrorDetails {
        error_type: "provider_credential_error".into(),
        error_message: "the refresh token was revoked".into(),
        occurred_at: "2026-01-02T03:04:05Z".parse().unwrap(),
    };
    let mut w = app.state.meta.writer().await.unwrap();
    connections::set_error(&mut w, user.parse().unwrap(), "oura", &details)
        .await
        .unwrap();
    drop(w);
    let oura = entry(&app, &user, "oura").await;
    assert_eq!(oura["status"], "error");
    assert_eq!(
        oura["resource_availability"]["sleep"]["status"],
        "unavailable"
    );
    assert_eq!(
        oura["error_details"]["error_type"],
        "provider_credential_error"
    );
    assert_eq!(
        oura["error_details"]["error_message"],
        "the refresh token was revoked"
    );
    assert!(
        oura["error_details"]["occurred_at"]
            .as_str()
            .unwrap()
            .starts_with("2026-01-02T03:04:05")
    );
    // A push provider has no scopes: connected means available.
    let push = app
        .state
        .meta
        .upsert_connection(
            user.parse().unwrap(),
            "apple_health_kit",
            ConnectionStatus::Connected,
        )
        .await
        .unwrap();
    assert_eq!(push.scopes_granted, None);
    let ahk = entry(&app, &user, "apple_health_kit").await;
    assert_eq!(ahk["resource_availability"]["steps"]["status"], "available");
    assert_eq!(
        ahk["scope_requirements"]["user_granted"]["required"],
        json!([])
    );
}

#[tokio::test]
async fn deregistering_keeps_data_and_answers_404_for_unknown_connections() {
    let app = keyed_app().await;
    let user = app.user("leaving").await;
    // A week: the generator leaves about one day in twenty unworn, so two days were both
    // empty once in 400 runs and the user had no data to keep.
    app.demo_connect(&user, "oura", 7).await;
    let uri = format!("/v2/user/{user}/oura");
    let a = app.send("DELETE", &uri, Some(&app.key.clone()), None).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json, json!({"success": true}));
    let oura = entry(&app, &user, "oura").await;
    assert_eq!(oura["status"], "deregistered");
    assert_eq!(
        oura["resource_availability"]["sleep"]["status"],
        "unavailable"
    );
    let id: Uuid = user.parse().unwrap();
    let team = app.team().await.id;
    assert!(
        !app.state
            .health
            .datasets(team, id)
            .await
            .unwrap()
            .is_empty(),
        "data kept"
    );
    // Again: still deregistered, still fine.
    let a = app.send("DELETE", &uri, Some(&app.key.clone()), None).await;
    assert_eq!(a.status, 200, "{}", a.json);

    let a = app
        .send(
            "DELETE",
            &format!("/v2/user/{user}/fitbit"),
            Some(&app.key.clone()),
            None,
        )
        .await;
    assert_eq!(a.status, 404);
    assert_eq!(a.json, json!({"detail": "Connection not found"}));
    let theirs = app.foreign_user().await;
    let a = app
        .send(
            "DELETE",
            &format!("/v2/user/{theirs}/oura"),
            Some(&app.key.clone()),
            None,
        )
        .await;
    assert_eq!(a.status, 404);
    assert_eq!(a.json, json!({"detail": "User not found"}));
    let a = app
        .send(
            "DELETE",
            &format!("/v2/user/{user}/myspace"),
            Some(&app.key.clone()),
            None,
        )
        .await;
    assert_422_at(&a, &[json!("path"), json!("provider")]);
    let a = app
        .send(
            "DELETE",
            "/v2/user/not-a-uuid/oura",
            Some(&app.key.clone()),
            None,
        )
        .await;
    assert_422_at(&a, &[json!("path"), json!("user_id")]);
    let a = app.send("DELETE", &uri, None, None).await;
    assert_eq!(a.status, 401);
}

#[tokio::test]
async fn the_secret_key_comes_from_the_flag_or_the_demo_data_dir() {
    use clap::Parser;
    use wearhouse::config::{Cli, Command};
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().display().to_string();
    let serve = |extra: &[&str]| {
        let mut argv = vec!["wearhouse", "serve", "--data-dir", data_dir.as_str()];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Serve(args) => args,
            _ => unreachable!(),
        }
    };
    // Neither flag nor demo nor kept key: none, and nothing written.
    assert!(wearhouse::app::secret_key(&serve(&[])).unwrap().is_none());
    let path = dir.path().join(wearhouse::app::SECRET_KEY_FILE);
    assert!(!path.exists());
    // Demo: generated once, private, reused.
    let first = wearhouse::app::secret_key(&serve(&["--demo"]))
        .unwrap()
        .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let sealed = first.seal(b"x", "c").unwrap();
    let again = wearhouse::app::secret_key(&serve(&[])).unwrap().unwrap();
    assert_eq!(again.open(&sealed, "c").unwrap(), b"x");
    // The flag wins; a malformed one stops the start.
    let flag = "11".repeat(32);
    let given = wearhouse::app::secret_key(&serve(&["--secret-key", &flag]))
        .unwrap()
        .unwrap();
    assert!(given.open(&sealed, "c").is_err());
    assert!(wearhouse::app::secret_key(&serve(&["--secret-key", "short"])).is_err());
}

#[tokio::test]
async fn links_without_a_secret_key_are_refused_not_stored_in_clear() {
    let app = TestApp::new().await;
    let user = app.user("keyless").await;
    let mut tx = app.state.meta.begin().await.unwrap();
    let r = link_on(
        &mut tx,
        None,
        user.parse().unwrap(),
        "oura",
        &linked(&["profile"], &[]),
    )
    .await;
    assert!(r.is_err());
    drop(tx);
    assert!(
        app.state
            .meta
            .connection(user.parse().unwrap(), "oura")
            .await
            .unwrap()
            .is_none()
    );
}

/// The `provider.connection.error` events stored for the team, oldest first.
async fn error_events(meta: &MetadataStore) -> Vec<serde_json::Value> {
    let mut conn = meta.reader().await.unwrap();
    let bodies: Vec<String> = sqlx::query_scalar(
        "SELECT body FROM events WHERE event_type = 'provider.connection.error' \
         ORDER BY created_at, ordinal",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    bodies
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect()
}

#[tokio::test]
async fn entering_error_emits_one_connection_error_event_and_refreshes_the_details() {
    use wearhouse::link::LinkErrorType;
    use wearhouse::link::lifecycle::fail;
    use wearhouse::store::metadata::connections::ErrorTransition;

    let dir = tempfile::tempdir().unwrap();
    let meta = crate::events::support::sqlite_meta(dir.path()).await;
    let key = SecretKey::generate().0;
    let (team, _) = meta.create_team("acme").await.unwrap();
    crate::events::support::endpoint_at(&meta, team.id, "http://127.0.0.1:9/hook").await;
    let user = crate::support::new_user(&meta, team.id, "failing").await;
    let oura = wearhouse::providers::provider("oura").unwrap();
    let now = chrono::Utc::now();
    let fail_with = async |error_type, message: &str, at| {
        fail(&meta, &user, oura, error_type, message, at)
            .await
            .unwrap()
    };
    let relink = async || {
        let mut tx = meta.begin().await.unwrap();
        link_on(
            &mut tx,
            Some(&key),
            user.id,
            "oura",
            &linked(&["sleep"], &[]),
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
    };
    // No connection yet: nothing to fail, nothing emitted.
    let found = fail_with(LinkErrorType::ProviderCredentialError, "x", now).await;
    assert_eq!(found, ErrorTransition::Missing);
    relink().await;

    let revoked = "The refresh token was revoked; the user must link Oura again.";
    let found = fail_with(LinkErrorType::ProviderCredentialError, revoked, now).await;
    assert_eq!(found, ErrorTransition::Entered);
    let events = error_events(&meta).await;
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(event["event_type"], "provider.connection.error");
    assert_eq!(event["user_id"], user.id.to_string());
    assert_eq!(event["client_user_id"], "failing");
    assert_eq!(event["team_id"], team.id.to_string());
    assert_eq!(event["data"]["user_id"], user.id.to_string());
    assert_eq!(event["data"]["provider"]["slug"], "oura");
    assert_eq!(event["data"]["source"], event["data"]["provider"]);
    assert_eq!(event["data"]["error_type"], "provider_credential_error");
    assert_eq!(event["data"]["error_message"], revoked);
    let deliveries: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM webhook_deliveries")
        .fetch_one(&mut *meta.reader().await.unwrap())
        .await
        .unwrap();
    assert_eq!(deliveries, 1, "the team's endpoint gets the event");

    // Failing again while in `error` refreshes the details and emits nothing.
    let later = now + chrono::Duration::minutes(30);
    let found = fail_with(LinkErrorType::ProviderApiError, "still down", later).await;
    assert_eq!(found, ErrorTransition::Again);
    assert_eq!(error_events(&meta).await.len(), 1);
    let c = meta.connection(user.id, "oura").await.unwrap().unwrap();
    assert_eq!(c.status, ConnectionStatus::Error);
    let details = c.error_details.unwrap();
    assert_eq!(details.error_type, "provider_api_error");
    assert_eq!(details.error_message, "still down");

    // A re-link clears it; failing then emits again. A deregistered connection never fails.
    relink().await;
    let found = fail_with(LinkErrorType::ProviderCredentialError, revoked, later).await;
    assert_eq!(found, ErrorTransition::Entered);
    assert_eq!(error_events(&meta).await.len(), 2);
    deregister(&meta, user.id, "oura").await.unwrap();
    let found = fail_with(LinkErrorType::ProviderCredentialError, revoked, later).await;
    assert_eq!(found, ErrorTransition::Missing);
    let c = meta.connection(user.id, "oura").await.unwrap().unwrap();
    assert_eq!(c.status, ConnectionStatus::Deregistered);
    assert_eq!(error_events(&meta).await.len(), 2);
}

/// A push after a deregistration: an SDK provider's app sending data again reconnects it (the
/// way it connected in the first place), with `provider.connection.created` planned again; a
/// pull provider stays deregistered (its data is stored, its connection waits for a link).
#[tokio::test]
async fn a_push_reconnects_a_deregistered_sdk_provider_but_not_a_pull_provider() {
    let app = keyed_app().await;
    let user = app.user("pushing").await;
    let id: Uuid = user.parse().unwrap();
    let push = |provider: &str, start: i64| {
        let mut body = crate::events::support::push_body(start, 3, 61.0);
        body["provider"] = json!(provider);
        body
    };
    let planned_connections = || async {
        let mut conn = app.state.meta.reader().await.unwrap();
        let plans: Vec<String> = sqlx::query_scalar("SELECT plan FROM push_events")
            .fetch_all(&mut *conn)
            .await
            .unwrap();
        plans
            .iter()
            .filter(|p| p.contains("\"first_connection\":true"))
            .count()
    };
    for (provider, revives) in [("apple_health_kit", true), ("oura", false)] {
        let uri = format!("/v2/user/{user}/data");
        let a = app.post(&uri, push(provider, 0)).await;
        assert_eq!(a.status, 200, "{}", a.json);
        assert_eq!(entry(&app, &user, provider).await["status"], "connected");
        let a = app
            .send(
                "DELETE",
                &format!("/v2/user/{user}/{provider}"),
                Some(&app.key.clone()),
                None,
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.json);
        let before = planned_connections().await;
        let a = app.post(&uri, push(provider, 3_600)).await;
        assert_eq!(a.status, 200, "{}", a.json);
        let status = app
            .state
            .meta
            .connection(id, provider)
            .await
            .unwrap()
            .unwrap()
            .status;
        if revives {
            assert_eq!(status, ConnectionStatus::Connected, "{provider}");
            assert_eq!(
                planned_connections().await,
                before + 1,
                "{provider} announced again"
            );
        } else {
            assert_eq!(status, ConnectionStatus::Deregistered, "{provider}");
            assert_eq!(
                planned_connections().await,
                before,
                "{provider} not announced"
            );
        }
    }
}
