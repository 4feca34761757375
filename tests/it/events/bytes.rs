//! Issue 43: events refer to the pushes they announce instead of copying their samples, and
//! still answer exactly what they answered when they carried them. The golden
//! (`testdata/events/bytes_golden.txt`) was captured from the code that stored every body
//! inline, before the change; this test replays the same pushes and compares every delivered
//! body, every replayed body and every listed event byte for byte, by length and SHA-256 (ids are the only thing
//! masked: the user's, the team's, and each event's, by its position). Regenerate it only on
//! purpose, with `WEARHOUSE_UPDATE_GOLDEN=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value, json};

use crate::events::support::{Receiver, Server, WAIT, assert_verified};

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testdata/events/bytes_golden.txt"
);

/// Heart-rate samples at minute `first + i`, `bpm(i)` each.
fn samples(first: i64, n: i64, bpm: impl Fn(i64) -> f64) -> Value {
    let base = chrono::DateTime::parse_from_rfc3339("2025-03-01T00:00:00Z").unwrap();
    let hr: Vec<Value> = (0..n)
        .map(|i| {
            let at = base + chrono::Duration::minutes(first + i);
            json!({
                "timestamp": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "value": bpm(first + i),
                "unit": "bpm",
            })
        })
        .collect();
    json!({ "provider": "oura", "timeseries": { "heartrate": hr } })
}

/// Waits until every listed event was delivered and nothing new came for a while.
async fn settled(server: &Server, rx: &Receiver) -> Vec<Value> {
    let deadline = std::time::Instant::now() + WAIT;
    let mut last = usize::MAX;
    loop {
        let events = server.events("").await;
        let got = rx.got().len();
        if got == events.len() && got == last && got > 0 {
            return events;
        }
        last = got;
        assert!(std::time::Instant::now() < deadline, "not settled");
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn deliveries_replays_and_the_list_answer_the_bytes_they_answered_before() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--webhook-allow-private"], None);
    let rx = Receiver::start(true).await;
    let (_, secret) = server.endpoint(&rx.url, None).await;
    let user = server.user("golden-user").await;
    let push = |body: Value| {
        let server = &server;
        let user = user.clone();
        async move {
            server.post(&format!("/v2/user/{user}/data"), body).await;
        }
    };
    let t0 = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    // New samples, enough for several events.
    push(samples(0, 6000, |i| 50.0 + (i % 37) as f64)).await;
    server.events_until("", 3, WAIT).await;
    // Overlapping: 1000 unchanged, 3000 changed, 2000 new; interleaved runs at the end.
    push(samples(2000, 6000, |i| {
        if i < 3000 {
            50.0 + (i % 37) as f64
        } else if i < 6000 || i % 3 == 0 {
            61.5
        } else {
            72.0
        }
    }))
    .await;
    // Overlapping the second push's new samples, some changed every other minute.
    push(samples(7000, 300, |i| if i % 2 == 0 { 61.5 } else { 99.0 })).await;
    let events = settled(&server, &rx).await;
    let got = rx.got();
    assert_verified(&secret, &got);

    // Replay everything to a second endpoint.
    let rx2 = Receiver::start(true).await;
    let (second, _) = server.endpoint(&rx2.url, None).await;
    let answer = server
        .post(
            &format!("/v2/team/webhooks/{second}/replay"),
            json!({ "since": t0 }),
        )
        .await;
    assert_eq!(answer["replayed"].as_u64(), Some(events.len() as u64));
    let replayed = rx2
        .wait_for(WAIT, "the replay", |g| g.len() >= events.len())
        .await;

    let team = got[0].json()["team_id"].as_str().unwrap().to_owned();
    let ids: Vec<String> = events
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    let mask = |text: &str| {
        let mut text = text.replace(&user, "<user>").replace(&team, "<team>");
        for (i, id) in ids.iter().enumerate() {
            text = text.replace(id, &format!("<event {i}>"));
        }
        text
    };
    // Each answer as its kind, its event, its length and the SHA-256 of its bytes: the
    // golden stays small and the comparison stays over every byte.
    let line = |kind: &str, id: &str, body: &str| {
        use sha2::Digest;
        let body = mask(body);
        let digest = hex::encode(sha2::Sha256::digest(body.as_bytes()));
        format!("{kind} {} {} {digest}", mask(id), body.len())
    };
    let mut lines = Vec::new();
    for d in &got {
        lines.push(line("delivery", &d.id(), &d.body));
    }
    for d in &replayed {
        lines.push(line("replay", &d.id(), &d.body));
    }
    for e in &events {
        let mut e = e.clone();
        e["created_at"] = json!("<created_at>");
        lines.push(line("list", "-", &e.to_string()));
    }
    // Both paths ran: events stored by reference, and earlier ones a later, overlapping push
    // wrote back inline before compaction could drop the rows they referred to.
    let meta = crate::events::support::server_meta(dir.path()).await;
    let mut conn = meta.reader().await.unwrap();
    let (referring, inline): (i64, i64) = sqlx::query_as(
        "SELECT SUM(CASE WHEN records_ref IS NULL THEN 0 ELSE 1 END), \
         SUM(CASE WHEN records_ref IS NULL THEN 1 ELSE 0 END) FROM events",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    assert!(
        referring >= 2 && inline >= 3,
        "{referring} by reference, {inline} inline"
    );
    drop(conn);

    let now = lines.join("\n") + "\n";
    if std::env::var_os("WEARHOUSE_UPDATE_GOLDEN").is_some() {
        std::fs::write(GOLDEN, &now).unwrap();
    }
    let golden = std::fs::read_to_string(GOLDEN).unwrap();
    assert_eq!(
        lines.len(),
        golden.lines().count(),
        "as many answers as before"
    );
    for (i, (a, b)) in now.lines().zip(golden.lines()).enumerate() {
        assert_eq!(a, b, "answer {i} differs from the golden");
    }
}
