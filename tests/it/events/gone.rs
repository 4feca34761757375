//! An event stored by reference whose records the store no longer holds (the user's data
//! erased after the undo window, say): its delivery fails at once, alone. No retry can bring
//! the records back, so it neither holds up the deliveries behind it nor counts against the
//! endpoint's health; the event after it is delivered.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use wearhouse::events::{Event, EventType, EventUser, UrlRules, delivery::Deliverer, outbox};
use wearhouse::jobs::{Registry, Runner, RunnerConfig};
use wearhouse::store::health::HealthStore;
use wearhouse::store::metadata::deliveries::{DeliveryStatus, list_deliveries};
use wearhouse::store::metadata::events::RecordsPointer;

use crate::events::support::{Receiver, WAIT, endpoint_at, sqlite_meta};

#[tokio::test(flavor = "multi_thread")]
async fn a_delivery_whose_records_are_gone_fails_alone_and_the_next_is_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let meta = sqlite_meta(dir.path()).await;
    let health = HealthStore::open(
        &dir.path().join("health").display().to_string(),
        Default::default(),
    )
    .unwrap();
    let (team, _) = meta.create_team("acme").await.unwrap();
    let rx = Receiver::start(true).await;
    let endpoint = endpoint_at(&meta, team.id, &rx.url).await;
    let user = EventUser {
        id: uuid::Uuid::new_v4(),
        client_user_id: "erased".into(),
    };
    let event = |n: i64| Event {
        event_type: EventType::DailyCreated("heartrate"),
        user: Some(user.clone()),
        data: json!({ "n": n }),
    };
    // An event pointing at five heart-rate samples of a push this store never held.
    let pointer = json!({
        "dataset": "timeseries/heartrate", "provider": "oura", "source_type": "ring",
        "stamp": 1_735_689_600_000_000_i64, "change": "created",
        "first": 1_735_689_600_000_000_i64, "last": 1_735_689_840_000_000_i64,
        "count": 5, "sha256": "0".repeat(64),
    });
    let now = chrono::Utc::now();
    {
        let mut tx = meta.begin().await.unwrap();
        let shell = event(0).envelope(team.id);
        let gone = outbox::insert_referring(
            &mut tx,
            team.id,
            &event(0),
            (
                shell,
                RecordsPointer {
                    json: pointer.to_string(),
                    dataset: "timeseries/heartrate".into(),
                    first: 1_735_689_600_000_000,
                    last: 1_735_689_840_000_000,
                },
            ),
            now,
            0,
        )
        .await
        .unwrap();
        let kept = outbox::insert(&mut tx, team.id, &event(1), now, 1)
            .await
            .unwrap();
        outbox::fan_out(&mut tx, team.id, [gone, kept], now)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }
    let deliverer = Deliverer::new(UrlRules {
        allow_private: true,
    })
    .unwrap()
    .with_store(health);
    let runner = Runner::new(
        meta.clone(),
        Registry::new().register(deliverer),
        RunnerConfig {
            poll_interval: Duration::from_millis(20),
            ..RunnerConfig::default()
        },
    )
    .spawn();

    rx.wait_for(WAIT, "the event after the unrenderable one", |g| {
        !g.is_empty()
    })
    .await;
    let got = rx.got();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].json()["data"]["n"], 1);
    // The two deliveries run as separate jobs: under load the kept one can be delivered before
    // the gone one's attempt is recorded, so wait for that attempt rather than assume it.
    let deadline = std::time::Instant::now() + WAIT;
    let gone = loop {
        let deliveries = {
            let mut conn = meta.reader().await.unwrap();
            list_deliveries(&mut conn, endpoint.id, None, None, 10)
                .await
                .unwrap()
        };
        let gone = deliveries
            .into_iter()
            .find(|d| d.records_ref.is_some())
            .expect("the referring delivery");
        if gone.attempts > 0 || std::time::Instant::now() > deadline {
            break gone;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(gone.status, DeliveryStatus::Failed);
    assert_eq!(gone.attempts, 1, "no retry of records that are gone");
    assert!(
        gone.last_error
            .as_deref()
            .is_some_and(|e| e.contains("no longer stored")),
        "{:?}",
        gone.last_error
    );
    let endpoint = {
        let mut conn = meta.reader().await.unwrap();
        wearhouse::store::metadata::webhooks::endpoint_by_id(&mut conn, endpoint.id)
            .await
            .unwrap()
            .unwrap()
    };
    assert_eq!(endpoint.failing_since, None, "the endpoint is not at fault");
    assert_eq!(endpoint.disabled_at, None);
    runner.shutdown().await;
}
