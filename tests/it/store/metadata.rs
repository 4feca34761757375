//! The metadata store against both backends it supports: a SQLite file and the real PostgreSQL
//! server (`WEARHOUSE_TEST_POSTGRES_URL`, default `postgres://postgres@127.0.0.1:5432/postgres`).
//! Each PostgreSQL run gets a fresh database, dropped afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::postgres::ScratchDb;
use chrono::NaiveDate;
use serde_json::json;
use wearhouse::store::metadata::{
    ConnectionStatus, MetadataError, MetadataStore, NewUser, UserPatch,
};

async fn exercise(store: &MetadataStore) {
    let (team, key) = store.create_team("acme").await.unwrap();
    let (other, _) = store.create_team("globex").await.unwrap();
    assert_eq!(
        store.team_for_key(&key.secret).await.unwrap().map(|t| t.id),
        Some(team.id)
    );
    assert_eq!(store.team_for_key("wh_wrong").await.unwrap(), None);
    assert_eq!(
        store.team_by_name("globex").await.unwrap().map(|t| t.id),
        Some(other.id)
    );

    let new = NewUser {
        client_user_id: "c1".into(),
        fallback_time_zone: Some("Asia/Tokyo".into()),
        ingestion_start: NaiveDate::from_ymd_opt(2024, 1, 1),
        ..NewUser::default()
    };
    let user = store.create_user(team.id, new.clone()).await.unwrap();
    assert!(matches!(
        store.create_user(team.id, new.clone()).await,
        Err(MetadataError::ClientUserIdTaken { existing }) if existing.id == user.id
    ));
    store.create_user(other.id, new).await.unwrap();
    assert_eq!(
        store.user(team.id, user.id).await.unwrap().as_ref(),
        Some(&user)
    );
    assert_eq!(
        store.user(other.id, user.id).await.unwrap(),
        None,
        "tenancy"
    );

    for i in 2..=4 {
        let u = NewUser {
            client_user_id: format!("c{i}"),
            ..NewUser::default()
        };
        store.create_user(team.id, u).await.unwrap();
    }
    let (page, total) = store.list_users(team.id, 1, 2).await.unwrap();
    assert_eq!(total, 4);
    assert_eq!(
        page.iter()
            .map(|u| u.client_user_id.as_str())
            .collect::<Vec<_>>(),
        ["c2", "c3"]
    );

    let patch = UserPatch {
        client_user_id: Some("c1b".into()),
        fallback_time_zone: Some(None),
        ..UserPatch::default()
    };
    let updated = store
        .update_user(team.id, user.id, patch)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(updated.client_user_id, "c1b");
    assert_eq!(updated.fallback_time_zone, None);
    assert_eq!(updated.ingestion_start, user.ingestion_start);
    let taken = UserPatch {
        client_user_id: Some("c2".into()),
        ..UserPatch::default()
    };
    assert!(matches!(
        store.update_user(team.id, user.id, taken).await,
        Err(MetadataError::ClientUserIdTaken { .. })
    ));

    store
        .set_user_info(user.id, &json!({"first_name": "Ada"}))
        .await
        .unwrap();
    store
        .set_user_info(user.id, &json!({"first_name": "Grace"}))
        .await
        .unwrap();
    assert_eq!(
        store.user_info(user.id).await.unwrap(),
        Some(json!({"first_name": "Grace"}))
    );

    let first = store
        .upsert_connection(user.id, "oura", ConnectionStatus::Connected)
        .await
        .unwrap();
    let again = store
        .upsert_connection(user.id, "oura", ConnectionStatus::Error)
        .await
        .unwrap();
    assert_eq!(
        first.created_at, again.created_at,
        "re-linking keeps the original time"
    );
    assert_eq!(store.connections(user.id).await.unwrap().len(), 1);

    store
        .set_team_priorities(team.id, "sleep", &["fitbit".into(), "oura".into()])
        .await
        .unwrap();
    store
        .set_team_priorities(team.id, "sleep", &["oura".into()])
        .await
        .unwrap();
    let priorities = store.team_priorities(team.id).await.unwrap();
    assert_eq!(priorities.get("sleep"), Some(&vec!["oura".to_owned()]));
    assert!(store.team_priorities(other.id).await.unwrap().is_empty());

    assert!(store.delete_user(team.id, user.id).await.unwrap());
    assert!(!store.delete_user(team.id, user.id).await.unwrap());
    assert_eq!(store.user_info(user.id).await.unwrap(), None);
    assert!(store.connections(user.id).await.unwrap().is_empty());
    store.ping().await.unwrap();
    transactions_are_all_or_nothing(store, team.id).await;
}

/// Changes composed in one transaction through the table groups' functions: a rollback leaves
/// none of them, a commit all of them; a reader sees the committed state at once.
async fn transactions_are_all_or_nothing(store: &MetadataStore, team: uuid::Uuid) {
    use wearhouse::store::metadata::{connections, user_info, users};
    let new = |id: &str| NewUser {
        client_user_id: id.into(),
        ..NewUser::default()
    };
    for commit in [false, true] {
        let name = format!("tx-{commit}");
        let mut tx = store.begin().await.unwrap();
        let user = users::create_user(&mut tx, team, new(&name)).await.unwrap();
        user_info::set_user_info(&mut tx, user.id, &json!({"first_name": "Tx"}))
            .await
            .unwrap();
        connections::upsert_connection(&mut tx, user.id, "oura", ConnectionStatus::Paused)
            .await
            .unwrap();
        // Inside the transaction its own changes are visible.
        assert!(users::user(&mut tx, team, user.id).await.unwrap().is_some());
        if commit {
            tx.commit().await.unwrap();
        } else {
            tx.rollback().await.unwrap();
        }
        assert_eq!(store.user(team, user.id).await.unwrap().is_some(), commit);
        assert_eq!(store.user_info(user.id).await.unwrap().is_some(), commit);
        let linked = store.connections(user.id).await.unwrap();
        assert_eq!(
            linked.iter().map(|c| c.status).collect::<Vec<_>>(),
            if commit {
                vec![ConnectionStatus::Paused]
            } else {
                vec![]
            }
        );
    }
}

#[tokio::test]
async fn sqlite_backend() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("m.db").display());
    let store = MetadataStore::connect(&url).await.unwrap();
    exercise(&store).await;
    // A write transaction held open does not stop reads: they answer the committed state from
    // the read pool (with one shared connection they waited for the writer forever).
    let team = store.list_teams().await.unwrap()[0].id;
    let mut tx = store.begin().await.unwrap();
    let held = wearhouse::store::metadata::users::create_user(
        &mut tx,
        team,
        NewUser {
            client_user_id: "held".into(),
            ..NewUser::default()
        },
    )
    .await
    .unwrap();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        store.user(team, held.id),
    )
    .await
    .expect("a read waited for an open write transaction");
    assert_eq!(read.unwrap(), None, "uncommitted rows are invisible");
    tx.commit().await.unwrap();
    assert!(store.user(team, held.id).await.unwrap().is_some());
    // Reopening applies no migration twice and keeps the data.
    store.close().await;
    let store = MetadataStore::connect(&url).await.unwrap();
    assert_eq!(store.list_teams().await.unwrap().len(), 2);
}

#[tokio::test]
async fn postgres_backend() {
    let db = ScratchDb::create("wearhouse_test").await;
    let store = MetadataStore::connect(&db.url).await.unwrap();
    exercise(&store).await;
    store.close().await;
    db.drop_db().await;
}

#[tokio::test]
async fn unsupported_urls_are_refused() {
    assert!(matches!(
        MetadataStore::connect("mysql://localhost/x").await,
        Err(MetadataError::UnsupportedUrl(_))
    ));
}
