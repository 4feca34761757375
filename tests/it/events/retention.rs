//! Events are kept 30 days.

use serde_json::json;

use super::support;

/// Events are kept 30 days: older ones go with their deliveries, except while a delivery of
/// theirs is still pending; newer ones stay.
#[tokio::test(flavor = "multi_thread")]
async fn events_older_than_30_days_are_pruned_once_delivered() {
    use wearhouse::events::{Event, EventType, history, outbox, retention};
    use wearhouse::store::metadata::deliveries::fail_pending;

    let dir = tempfile::tempdir().unwrap();
    let meta = support::sqlite_meta(dir.path()).await;
    let (quiet, _) = meta.create_team("quiet").await.unwrap();
    let (hooked, _) = meta.create_team("hooked").await.unwrap();
    let endpoint = support::endpoint_at(&meta, hooked.id, "http://127.0.0.1:9/h").await;
    let now = chrono::Utc::now();
    let old = now - retention::KEEP - chrono::Duration::hours(1);
    let recent = now - retention::KEEP + chrono::Duration::hours(1);
    let event = |n: i64| Event {
        event_type: EventType::DailyCreated("steps"),
        user: None,
        data: json!({ "n": n }),
    };
    for (team, at, n) in [
        (quiet.id, old, 0),
        (quiet.id, recent, 1),
        (hooked.id, old, 2),
    ] {
        let mut tx = meta.begin().await.unwrap();
        outbox::enqueue(&mut tx, team, &[event(n)], at)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }
    // Stored rows, whether or not the listing (which shows 30 days) would show them.
    let listed = |team: uuid::Uuid| {
        let meta = meta.clone();
        async move {
            let mut conn = meta.reader().await.unwrap();
            sqlx::query_scalar::<_, String>("SELECT body FROM events WHERE team_id = $1")
                .bind(team.to_string())
                .fetch_all(&mut *conn)
                .await
                .unwrap()
        }
    };
    assert_eq!(retention::prune(&meta, now).await.unwrap(), 1);
    let quiet_left = listed(quiet.id).await;
    assert_eq!(quiet_left.len(), 1, "the recent event stays");
    assert!(quiet_left[0].contains(r#""n":1"#), "{quiet_left:?}");
    assert_eq!(
        listed(hooked.id).await.len(),
        1,
        "an old event with a pending delivery stays"
    );
    let mut conn = meta.writer().await.unwrap();
    fail_pending(&mut conn, endpoint.id, "gave up")
        .await
        .unwrap();
    drop(conn);
    assert_eq!(retention::prune(&meta, now).await.unwrap(), 1);
    assert!(listed(hooked.id).await.is_empty());
    let (deliveries, _) = history::deliveries(&meta, hooked.id, endpoint.id, None, None, 10)
        .await
        .unwrap();
    assert!(deliveries.is_empty(), "its deliveries went with it");
}
