//! The introspection read of the `sync_pulls` rows (`sync_introspect::team_pulls`) on both
//! metadata backends: a team's pulls only, live users only, ordered and paged by user id,
//! filtered by user and provider, each with its connection's status.

use chrono::{Duration, Utc};
use uuid::Uuid;
use wearhouse::store::metadata::deleted_users;
use wearhouse::store::metadata::sync_introspect::{PullFilter, team_pulls};
use wearhouse::store::metadata::sync_pulls::{self, ConnectionSync};
use wearhouse::store::metadata::{ConnectionStatus, MetadataStore, NewUser};

async fn user(store: &MetadataStore, team: Uuid, name: &str) -> Uuid {
    let new = NewUser {
        client_user_id: name.into(),
        ..NewUser::default()
    };
    store.create_user(team, new).await.unwrap().id
}

async fn pull(store: &MetadataStore, team: Uuid, user: Uuid, provider: &str) {
    let now = Utc::now();
    let sync = ConnectionSync {
        user_id: user,
        provider: provider.into(),
        team_id: team,
        window_start: now - Duration::days(30),
        window_end: now,
        done_until: now - Duration::days(30),
        resources: vec![],
        completed_at: None,
        synced_until: now,
        synced_at: None,
        synced_resources: vec![],
        failed: None,
        demo_persona: None,
    };
    let mut conn = store.writer().await.unwrap();
    assert!(sync_pulls::start(&mut conn, &sync, now).await.unwrap());
}

/// (user, provider, connection status) of each row.
async fn listed(
    store: &MetadataStore,
    team: Uuid,
    filter: PullFilter,
    users: i64,
) -> Vec<(Uuid, String, Option<ConnectionStatus>)> {
    let mut conn = store.reader().await.unwrap();
    let rows = team_pulls(&mut conn, team, &filter, users).await.unwrap();
    rows.into_iter()
        .map(|r| (r.user_id, r.provider, r.status))
        .collect()
}

async fn exercise(store: &MetadataStore) {
    let team = store.create_team("acme").await.unwrap().0.id;
    let other = store.create_team("globex").await.unwrap().0.id;
    let mut ours = [
        user(store, team, "a").await,
        user(store, team, "b").await,
        user(store, team, "c").await,
    ];
    ours.sort();
    let (low, high, gone) = (ours[0], ours[1], ours[2]);
    let theirs = user(store, other, "z").await;
    pull(store, team, low, "oura").await;
    pull(store, team, low, "fitbit").await;
    pull(store, team, high, "oura").await;
    pull(store, team, gone, "oura").await;
    pull(store, other, theirs, "oura").await;
    store
        .upsert_connection(low, "oura", ConnectionStatus::Error)
        .await
        .unwrap();
    // A deleted user (within its undo window) is not listed.
    let mut conn = store.writer().await.unwrap();
    let deleted = deleted_users::soft_delete(&mut conn, team, gone, Utc::now()).await;
    assert!(deleted.unwrap().is_some());
    drop(conn);

    let all = listed(store, team, PullFilter::default(), 10).await;
    assert_eq!(
        all,
        vec![
            (low, "fitbit".into(), None),
            (low, "oura".into(), Some(ConnectionStatus::Error)),
            (high, "oura".into(), None),
        ]
    );
    // One user a page: every pull of that user; the next page after it.
    let first = listed(store, team, PullFilter::default(), 1).await;
    assert_eq!(first, all[..2].to_vec());
    let after = PullFilter {
        after: Some(low),
        ..PullFilter::default()
    };
    assert_eq!(listed(store, team, after, 1).await, all[2..].to_vec());
    let fitbit = PullFilter {
        provider: Some("fitbit".into()),
        ..PullFilter::default()
    };
    assert_eq!(listed(store, team, fitbit, 10).await, all[..1].to_vec());
    let only_high = PullFilter {
        user: Some(high),
        ..PullFilter::default()
    };
    assert_eq!(listed(store, team, only_high, 10).await, all[2..].to_vec());
    // Another team's pulls are never ours, whichever user is named.
    let named = PullFilter {
        user: Some(theirs),
        ..PullFilter::default()
    };
    assert_eq!(listed(store, team, named, 10).await, vec![]);
    assert_eq!(
        listed(store, other, PullFilter::default(), 10).await,
        vec![(theirs, "oura".into(), None)]
    );
}

crate::support::backends::on_both_metadata_backends!(
    team_pulls_on_sqlite,
    team_pulls_on_postgres,
    exercise,
    "wearhouse_surface"
);
