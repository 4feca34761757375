//! Events and webhooks end to end (issue 16): the real binary delivers to a receiver in the
//! test, and every delivery's signature is verified by the Python `standardwebhooks` package,
//! not by our signing code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "events_support/mod.rs"]
mod events_support;

use std::collections::HashSet;
use std::time::Duration;

use events_support::{Received, Receiver, Server, assert_verified, push_body, verify};
use serde_json::{Value, json};

const ALLOW: &[&str] = &["--webhook-allow-private"];
const WAIT: Duration = Duration::from_secs(30);

fn of_type<'a>(got: &'a [Received], t: &str) -> Vec<&'a Received> {
    got.iter().filter(|r| r.event_type() == t).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn push_events_are_signed_shaped_like_the_getters_and_created_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let rx = Receiver::start(true).await;
    let (_, secret) = server.endpoint(&rx.url, None).await;
    let user = server.user("u1").await;
    let full: Value = serde_json::from_str(include_str!("../testdata/push/full.json")).unwrap();
    server
        .post(&format!("/v2/user/{user}/data"), full.clone())
        .await;

    let got = rx
        .wait_for(WAIT, "connection and sleep events", |g| {
            !of_type(g, "daily.data.sleep.created").is_empty()
                && !of_type(g, "provider.connection.created").is_empty()
        })
        .await;
    // The sleep event carries exactly what the getter renders for those records.
    let sleep = of_type(&got, "daily.data.sleep.created")[0].json();
    let rendered = server
        .get(&format!(
            "/v2/summary/sleep/{user}?start_date=2025-01-01&end_date=2025-12-31"
        ))
        .await;
    assert_eq!(
        sleep["data"]["data"], rendered["sleep"],
        "event data = getter rendering"
    );
    assert_eq!(sleep["data"]["source"]["provider"], full["provider"]);
    assert_eq!(sleep["user_id"], user.as_str());
    assert_eq!(sleep["client_user_id"], "u1");
    assert!(sleep["team_id"].is_string());
    let conn = of_type(&got, "provider.connection.created")[0].json();
    assert_eq!(conn["data"]["provider"]["slug"], full["provider"]);
    assert_eq!(conn["data"]["source"], conn["data"]["provider"]);
    // Headers: the svix copies equal the webhook ones.
    for d in &got {
        for h in ["id", "timestamp", "signature"] {
            assert_eq!(
                d.header(&format!("svix-{h}")),
                d.header(&format!("webhook-{h}"))
            );
        }
    }
    assert_verified(&secret, &got);
    // A wrong secret does not verify: the check can fail.
    let wrong = verify("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &got[..1]);
    assert_ne!(wrong[0], "ok");

    // The same push again: nothing new. One changed value: one updated event with one record.
    let before = server.events("").await.len();
    server
        .post(&format!("/v2/user/{user}/data"), full.clone())
        .await;
    assert_eq!(
        server.events("").await.len(),
        before,
        "an identical re-push emits nothing"
    );
    let mut changed =
        json!({ "provider": full["provider"], "source": full["source"], "sleep": full["sleep"] });
    changed["sleep"][0]["rem"] = json!(6300);
    server.post(&format!("/v2/user/{user}/data"), changed).await;
    let events = server.events("").await;
    let new: Vec<&Value> = events[before..].iter().collect();
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0]["event_type"], "daily.data.sleep.updated");
    assert_eq!(new[0]["data"]["data"].as_array().unwrap().len(), 1);
    assert_eq!(new[0]["data"]["data"][0]["rem"], 6300);
    let got = rx
        .wait_for(WAIT, "the updated event", |g| {
            !of_type(g, "daily.data.sleep.updated").is_empty()
        })
        .await;
    assert_verified(&secret, &got);
    // Created once per key: every delivered daily created event names distinct records.
    assert_eq!(of_type(&got, "daily.data.sleep.created").len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn new_samples_are_created_and_changed_samples_updated() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let user = server.user("u1").await;
    server
        .post(&format!("/v2/user/{user}/data"), push_body(0, 10, 60.0))
        .await;
    server
        .post(&format!("/v2/user/{user}/data"), push_body(0, 10, 60.0))
        .await;
    let mut body = push_body(0, 10, 60.0);
    body["timeseries"]["heartrate"][3]["value"] = json!(61.0);
    server.post(&format!("/v2/user/{user}/data"), body).await;
    let events = server.events(&format!("&user_id={user}")).await;
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "provider.connection.created",
            "daily.data.heartrate.created",
            "daily.data.heartrate.updated"
        ]
    );
    assert_eq!(events[1]["data"]["data"].as_array().unwrap().len(), 10);
    assert_eq!(events[2]["data"]["data"].as_array().unwrap().len(), 1);
    assert_eq!(events[2]["data"]["data"][0]["value"], 61.0);
    assert_eq!(events[2]["data"]["source"]["slug"], "oura");
    let only = server
        .events("&event_type=daily.data.heartrate.updated")
        .await;
    assert_eq!(only.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn receiver_down_at_first_gets_the_event_later_with_the_same_id() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let rx = Receiver::start(false).await;
    let (endpoint, secret) = server.endpoint(&rx.url, None).await;
    let sent = server
        .post(
            "/v2/team/events/test",
            json!({"event_type": "daily.data.sleep.created"}),
        )
        .await;
    let id = sent["event_id"].as_str().unwrap().to_owned();
    let started = std::time::Instant::now();
    while rx.refused.lock().unwrap().is_empty() {
        assert!(started.elapsed() < WAIT);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pending = server
        .get(&format!(
            "/v2/team/webhooks/{endpoint}/deliveries?status=pending"
        ))
        .await;
    let d = &pending["deliveries"][0];
    assert_eq!(d["attempts"], 1);
    assert_eq!(d["status_code"], 503);
    assert!(d["next_attempt_at"].is_string());
    rx.up.store(true, std::sync::atomic::Ordering::SeqCst);
    let got = rx
        .wait_for(WAIT, "the retried delivery", |g| !g.is_empty())
        .await;
    assert_eq!(got[0].id(), id);
    assert_eq!(
        rx.refused.lock().unwrap()[0].id(),
        id,
        "the same webhook-id on every attempt"
    );
    assert_verified(&secret, &got);
    let done = server
        .get(&format!("/v2/team/webhooks/{endpoint}/deliveries"))
        .await;
    assert_eq!(done["deliveries"][0]["status"], "succeeded");
    assert_eq!(done["deliveries"][0]["attempts"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn events_pending_at_a_sigkill_are_all_delivered_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let key = server.key.clone();
    let rx = Receiver::start(false).await;
    let (_, secret) = server
        .endpoint(&rx.url, Some(json!(["daily.data.*"])))
        .await;
    let user = server.user("u1").await;
    for n in 0..5 {
        server
            .post(
                &format!("/v2/user/{user}/data"),
                push_body(n * 3600, 5, 60.0),
            )
            .await;
    }
    // The last push is acknowledged just before the kill.
    let expected: HashSet<String> = server
        .events("&event_type=daily.data.heartrate.created")
        .await
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(expected.len(), 5);
    server.kill();
    rx.up.store(true, std::sync::atomic::Ordering::SeqCst);
    let server = Server::start(dir.path(), ALLOW, Some(key));
    let jobs = server.get("/v2/team/jobs?kind=webhook.deliver").await;
    eprintln!("jobs after restart: {jobs}");
    // A stream whose job was running at the kill is taken over once the dead runner's lease
    // (60 s) expires; one that was waiting for its retry runs when due.
    let got = rx
        .wait_for(
            Duration::from_secs(100),
            "every event after the restart",
            |g| expected.iter().all(|id| g.iter().any(|r| &r.id() == id)),
        )
        .await;
    assert_verified(&secret, &got);
    drop(server);
}

#[tokio::test(flavor = "multi_thread")]
async fn deliveries_keep_creation_order_per_endpoint_and_user() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let rx = Receiver::start(true).await;
    let (_, secret) = server
        .endpoint(&rx.url, Some(json!(["daily.data.heartrate.created"])))
        .await;
    let users = [server.user("a").await, server.user("b").await];
    for n in 0..8 {
        for user in &users {
            server
                .post(
                    &format!("/v2/user/{user}/data"),
                    push_body(n * 3600, 2, 60.0),
                )
                .await;
        }
    }
    let got = rx.wait_for(WAIT, "16 events", |g| g.len() >= 16).await;
    for user in &users {
        let firsts: Vec<String> = got
            .iter()
            .map(Received::json)
            .filter(|b| b["user_id"] == user.as_str())
            .map(|b| {
                b["data"]["data"][0]["timestamp"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(firsts.len(), 8);
        let mut sorted = firsts.clone();
        sorted.sort();
        assert_eq!(
            firsts, sorted,
            "user {user}'s events arrive in creation order"
        );
    }
    assert_verified(&secret, &got);
}

#[tokio::test(flavor = "multi_thread")]
async fn rotation_signs_with_both_secrets_during_the_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let rx = Receiver::start(true).await;
    let (endpoint, old) = server.endpoint(&rx.url, None).await;
    let rotated = server
        .post(
            &format!("/v2/team/webhooks/{endpoint}/rotate_secret"),
            json!({}),
        )
        .await;
    let new = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert!(rotated["previous_secret_expires_at"].is_string());
    let listed = server.get(&format!("/v2/team/webhooks/{endpoint}")).await;
    assert!(
        listed.get("secret").is_none(),
        "the secret is shown only at creation and rotation"
    );
    server
        .post(
            "/v2/team/events/test",
            json!({"event_type": "provider.connection.created"}),
        )
        .await;
    let got = rx.wait_for(WAIT, "the test event", |g| !g.is_empty()).await;
    assert_eq!(
        got[0]
            .header("webhook-signature")
            .unwrap()
            .split(' ')
            .count(),
        2
    );
    assert_verified(&old, &got);
    assert_verified(&new, &got);
}

#[tokio::test(flavor = "multi_thread")]
async fn replay_resends_exactly_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let test = |t: &'static str| json!({ "event_type": t });
    for _ in 0..2 {
        server
            .post("/v2/team/events/test", test("labtest.order.created"))
            .await;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let since = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    tokio::time::sleep(Duration::from_millis(20)).await;
    for _ in 0..3 {
        server
            .post("/v2/team/events/test", test("labtest.order.updated"))
            .await;
    }
    let window: Vec<String> = server
        .events(&format!("&since={}", since.replace('+', "%2B")))
        .await
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(window.len(), 3);
    let rx = Receiver::start(true).await;
    let (endpoint, secret) = server.endpoint(&rx.url, None).await;
    let answer = server
        .post(
            &format!("/v2/team/webhooks/{endpoint}/replay"),
            json!({ "since": since }),
        )
        .await;
    assert_eq!(answer["replayed"], 3);
    let got = rx
        .wait_for(WAIT, "the replayed events", |g| g.len() >= 3)
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ids: Vec<String> = rx.got().iter().map(Received::id).collect();
    assert_eq!(
        ids, window,
        "exactly the window, in order, with the events' own ids"
    );
    assert_verified(&secret, &got);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_team_never_sees_another_teams_endpoints_deliveries_or_events() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let other = events_support::create_team(dir.path(), "globex");
    let rx = Receiver::start(true).await;
    let (endpoint, _) = server.endpoint(&rx.url, None).await;
    server
        .post(
            "/v2/team/events/test",
            json!({"event_type": "provider.connection.created"}),
        )
        .await;
    for (method, path, body) in [
        ("GET", format!("/v2/team/webhooks/{endpoint}"), None),
        (
            "PATCH",
            format!("/v2/team/webhooks/{endpoint}"),
            Some(json!({"description": "x"})),
        ),
        ("DELETE", format!("/v2/team/webhooks/{endpoint}"), None),
        (
            "POST",
            format!("/v2/team/webhooks/{endpoint}/rotate_secret"),
            Some(json!({})),
        ),
        (
            "GET",
            format!("/v2/team/webhooks/{endpoint}/deliveries"),
            None,
        ),
        (
            "POST",
            format!("/v2/team/webhooks/{endpoint}/replay"),
            Some(json!({"since": "2020-01-01T00:00:00Z"})),
        ),
    ] {
        let (status, answer) = server.call(method, &path, &other, body).await;
        assert_eq!(status, 404, "{method} {path}: {answer}");
        assert_eq!(answer["detail"], "Webhook endpoint not found");
    }
    let (_, list) = server.call("GET", "/v2/team/webhooks", &other, None).await;
    assert_eq!(list["endpoints"], json!([]));
    let (_, events) = server.call("GET", "/v2/team/events", &other, None).await;
    assert_eq!(events["events"], json!([]));
    assert_eq!(server.events("").await.len(), 1, "the owner sees its event");
    let (status, _) = server.call("GET", "/v2/team/webhooks", "wrong", None).await;
    assert_eq!(status, 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn private_link_local_and_loopback_urls_are_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let strict = Server::start(dir.path(), &[], None);
    for url in [
        "http://10.0.0.1/",
        "https://10.0.0.1/",
        "http://169.254.169.254/",
        "https://169.254.169.254/latest/meta-data/",
        "https://127.0.0.1:9000/hook",
        "https://localhost/hook",
        "https://[::1]/hook",
        "http://example.com/hook",
        "not a url",
    ] {
        let (status, answer) = strict
            .call(
                "POST",
                "/v2/team/webhooks",
                &strict.key.clone(),
                Some(json!({"url": url})),
            )
            .await;
        assert_eq!(status, 422, "{url}: {answer}");
        assert_eq!(
            answer["detail"][0]["loc"],
            json!(["body", "url"]),
            "{answer}"
        );
        assert!(answer["detail"][0]["msg"].as_str().unwrap().len() > 10);
    }
    let ok = strict
        .post(
            "/v2/team/webhooks",
            json!({"url": "https://example.com/hook"}),
        )
        .await;
    assert!(ok["secret"].as_str().unwrap().starts_with("whsec_"));
    let key = strict.key.clone();
    drop(strict);
    let open = Server::start(dir.path(), ALLOW, Some(key));
    open.post(
        "/v2/team/webhooks",
        json!({"url": "http://127.0.0.1:9/hook"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_answers_the_conventions_4xx() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let key = server.key.clone();
    let cases = [
        (
            "POST",
            "/v2/team/webhooks",
            Some(json!({"url": "https://example.com", "event_types": ["nope"]})),
            422,
        ),
        (
            "POST",
            "/v2/team/webhooks",
            Some(json!({"url": "https://example.com", "event_types": []})),
            422,
        ),
        ("POST", "/v2/team/webhooks", Some(json!({"url": 5})), 422),
        (
            "POST",
            "/v2/team/webhooks",
            Some(json!({"url": "https://example.com", "extra": 1})),
            422,
        ),
        ("GET", "/v2/team/webhooks/not-a-uuid", None, 422),
        (
            "GET",
            "/v2/team/webhooks/00000000-0000-0000-0000-000000000000",
            None,
            404,
        ),
        (
            "POST",
            "/v2/team/events/test",
            Some(json!({"event_type": "daily.data.hypnogram.created"})),
            422,
        ),
        ("GET", "/v2/team/events?since=yesterday", None, 422),
        (
            "GET",
            "/v2/team/events?next_cursor=00000000-0000-0000-0000-000000000000",
            None,
            422,
        ),
        ("GET", "/v2/team/events?limit=0", None, 422),
    ];
    for (method, path, body, expected) in cases {
        let (status, answer) = server.call(method, path, &key, body).await;
        assert_eq!(status, expected, "{method} {path}: {answer}");
        assert!(
            answer["detail"].is_string() || answer["detail"].is_array(),
            "{answer}"
        );
    }
    let (id, _) = server
        .endpoint("https://example.com/h", Some(json!(["daily.*"])))
        .await;
    let (status, answer) = server
        .call(
            "PATCH",
            &format!("/v2/team/webhooks/{id}"),
            &key,
            Some(json!({"disabled": true, "description": "d"})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(answer["disabled"], true);
    assert_eq!(answer["description"], "d");
    let (status, _) = server
        .call("DELETE", &format!("/v2/team/webhooks/{id}"), &key, None)
        .await;
    assert_eq!(status, 200);
    let (status, _) = server
        .call("GET", &format!("/v2/team/webhooks/{id}"), &key, None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_demo_connection_emits_connection_and_historical_events() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), ALLOW, None);
    let rx = Receiver::start(true).await;
    let (_, secret) = server.endpoint(&rx.url, None).await;
    let user = server.user("demo").await;
    server
        .post(
            "/v2/link/connect/demo",
            json!({"user_id": user, "provider": "oura", "days": 3}),
        )
        .await;
    let got = rx
        .wait_for(WAIT, "demo events", |g| {
            !of_type(g, "provider.connection.created").is_empty()
                && g.iter()
                    .any(|r| r.event_type().starts_with("historical.data."))
        })
        .await;
    let historical: Vec<Value> = got
        .iter()
        .filter(|r| r.event_type().starts_with("historical.data."))
        .map(Received::json)
        .collect();
    assert!(
        historical
            .iter()
            .any(|h| h["event_type"] == "historical.data.sleep.created")
    );
    for h in &historical {
        assert_eq!(h["data"]["provider"]["slug"], "oura");
        assert!(
            h["data"]["start_date"].as_str().unwrap() < h["data"]["end_date"].as_str().unwrap()
        );
    }
    assert!(
        of_type(&got, "daily.data.sleep.created").is_empty(),
        "a pull emits historical events, not daily ones"
    );
    assert_verified(&secret, &got);
}
