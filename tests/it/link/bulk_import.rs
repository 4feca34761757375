//! Bulk import of OAuth connections against the fake authorisation server: 202 at once, 200
//! within 20 s with `wait_for_completion` (202 when the provider is slower), disabled without
//! the team's own OAuth application, every 422 rule, tenancy, refused refreshes, tokens never in
//! clear in the database, the operations list, an operation aborted by the removal of the
//! team's application. `bulk_import_durable` has the restart and PostgreSQL tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wearhouse::jobs::{Runner, RunnerHandle};

use super::fake_oauth::{CLIENT_ID, FakeOAuth, TEAM_CLIENT_ID, TEAM_CLIENT_SECRET};
use super::oauth_support::setup;
use crate::jobs::support::config;
use crate::support::{Answer, TestApp, assert_422_at};

const IMPORT: &str = "/v2/link/bulk_import";
const OPS: &str = "/v2/link/bulk_op";
const DISABLED: &str =
    "bulk import is disabled until the team configures its own OAuth application for oura";

pub(super) fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

pub(super) fn access_token(n: usize) -> String {
    format!("at-bulk-{n}-never-in-clear")
}

pub(super) fn refresh_token(n: usize) -> String {
    format!("rt-bulk-{n}-never-in-clear")
}

/// Recipe `n` for `user`, its access token expiring at `expires_at`.
pub(super) fn recipe(user: &str, n: usize, expires_at: i64) -> Value {
    json!({
        "user_id": user,
        "access_token": access_token(n),
        "refresh_token": refresh_token(n),
        "provider_id": format!("oura-account-{n}"),
        "expires_at": expires_at,
    })
}

/// Sets the team's own OAuth application for Oura (the fake's team client).
async fn team_app(app: &TestApp, key: &str) {
    let a = app
        .send(
            "PUT",
            "/v2/team/provider/oura/credentials",
            Some(key),
            Some(json!({"client_id": TEAM_CLIENT_ID, "client_secret": TEAM_CLIENT_SECRET})),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
}

/// The app with the team's application set, and the fake.
async fn enabled() -> (TestApp, FakeOAuth) {
    let (app, fake) = setup().await;
    team_app(&app, &app.key.clone()).await;
    (app, fake)
}

/// The app's job runner (bulk imports, pulls, deliveries), polling fast.
fn runner(app: &TestApp) -> RunnerHandle {
    let registry = wearhouse::app::job_registry(&app.state);
    Runner::new(
        app.state.meta.clone(),
        registry,
        config("bulk", Duration::from_secs(30)),
    )
    .spawn()
}

async fn submit(app: &TestApp, connections: Vec<Value>, wait: bool) -> Answer {
    app.post(
        IMPORT,
        json!({"provider": "oura", "connections": connections, "wait_for_completion": wait}),
    )
    .await
}

/// The team's newest operation.
async fn newest_op(app: &TestApp) -> Value {
    let a = app.get(OPS).await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["data"][0].clone()
}

/// Polls the newest operation until it is no longer `in_progress`.
async fn ended_op(app: &TestApp) -> Value {
    let started = Instant::now();
    loop {
        let op = newest_op(app).await;
        if op["status"] != "in_progress" {
            return op;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{op}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(super) fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Checks that `stored` holds none of the tokens of recipes `recipes` nor any of `issued`
/// (the tokens refreshes got) in clear.
pub(super) fn assert_no_token_in_clear(
    stored: &[u8],
    recipes: std::ops::RangeInclusive<usize>,
    issued: &[String],
) {
    for n in recipes {
        assert!(
            !contains(stored, &access_token(n)),
            "access token {n} in clear"
        );
        assert!(
            !contains(stored, &refresh_token(n)),
            "refresh token {n} in clear"
        );
    }
    for token in issued {
        assert!(!contains(stored, token), "refreshed token in clear");
    }
}

/// Whether `user` (asked with `key`) has a connected Oura connection.
async fn connected(app: &TestApp, key: &str, user: &str) -> bool {
    let a = app
        .send(
            "GET",
            &format!("/v2/user/providers/{user}"),
            Some(key),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["providers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["slug"] == "oura" && p["status"] == "connected")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_submission_answers_202_at_once_and_imports_in_the_background_never_in_clear() {
    let (app, fake) = enabled().await;
    let fresh = app.user("fresh").await;
    let expired = app.user("expired").await;
    fake.grant_refresh_token(&refresh_token(2), TEAM_CLIENT_ID, "profile sleep");

    // No runner yet: the answer cannot wait for the work.
    let started = Instant::now();
    let a = submit(
        &app,
        vec![
            recipe(&fresh, 1, now() + 3600),
            recipe(&expired, 2, now() - 60),
        ],
        false,
    )
    .await;
    assert_eq!(a.status, 202, "{}", a.json);
    assert_eq!(
        a.json,
        json!({"user_ids_imported": [], "user_ids_failed": []})
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let op = newest_op(&app).await;
    assert_eq!(op["type"], "link_bulk_import");
    assert_eq!(op["status"], "in_progress");
    assert_eq!(op["provider"], "oura");
    assert_eq!(
        (op["pending"].as_i64(), op["processed"].as_i64()),
        (Some(2), Some(0))
    );
    assert!(
        op["ended_at"].is_null() && op["started_at"].is_string(),
        "{op}"
    );
    let staged = super::sqlite_bytes(app.dir.path());
    assert_no_token_in_clear(&staged, 1..=2, &[]);

    let runner = runner(&app);
    let op = ended_op(&app).await;
    assert_eq!(op["status"], "success", "{op}");
    assert_eq!(
        (
            op["pending"].as_i64(),
            op["processed"].as_i64(),
            op["failed"].as_i64()
        ),
        (Some(0), Some(2), Some(0)),
        "{op}"
    );
    assert!(op["ended_at"].is_string(), "{op}");
    // Only the expired token was refreshed, with the team's client.
    assert_eq!(fake.presented(), vec![refresh_token(2)]);

    for user in [&fresh, &expired] {
        let entry = super::entry(&app, user, "oura").await;
        assert_eq!(entry["status"], "connected", "{entry}");
        let types = app.event_types(user).await;
        assert_eq!(
            types
                .iter()
                .filter(|t| *t == "provider.connection.created")
                .count(),
            1,
            "{types:?}"
        );
    }
    let jobs = app.get("/v2/team/jobs?kind=sync.historical").await;
    assert_eq!(
        jobs.json["total"], 2,
        "one historical pull each: {}",
        jobs.json
    );
    runner.shutdown().await;

    // The connections hold the submitted tokens, or the refreshed ones for the expired recipe.
    let creds = |user: &str| {
        let meta = app.state.meta.clone();
        let key = app.state.secret.clone();
        let user = user.parse().unwrap();
        async move {
            wearhouse::link::lifecycle::credentials(&meta, key.as_ref(), user, "oura")
                .await
                .unwrap()
                .unwrap()
        }
    };
    let kept = creds(&fresh).await;
    assert_eq!(kept.access_token, Some(access_token(1)));
    assert_eq!(kept.refresh_token, Some(refresh_token(1)));
    let renewed = creds(&expired).await;
    assert_eq!(renewed.access_token, fake.issued().first().cloned());
    assert!(renewed.expires_at.unwrap() > now());
    let stored = super::sqlite_bytes(app.dir.path());
    assert_no_token_in_clear(&stored, 1..=2, &fake.issued());
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_for_completion_answers_200_with_the_final_lists_and_each_failure_says_why() {
    let (app, fake) = enabled().await;
    let good = app.user("good").await;
    let refused = app.user("refused").await;
    let elsewhere = app.user("elsewhere").await;
    let theirs = app.foreign_user().await;
    let unknown = uuid::Uuid::new_v4().to_string();
    // `elsewhere`'s grant belongs to the deployment's application, not the team's.
    fake.grant_refresh_token(&refresh_token(3), CLIENT_ID, "profile");
    let runner = runner(&app);

    let started = Instant::now();
    let a = submit(
        &app,
        vec![
            recipe(&good, 1, now() + 3600),
            recipe(&refused, 2, now() - 1),
            recipe(&elsewhere, 3, now() - 1),
            recipe(&theirs, 4, now() + 3600),
            recipe(&unknown, 5, now() + 3600),
        ],
        true,
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        a.json,
        json!({"user_ids_imported": [good], "user_ids_failed": [refused, elsewhere, theirs, unknown]})
    );

    let op = newest_op(&app).await;
    assert_eq!(op["status"], "failure", "{op}");
    assert_eq!(
        (
            op["pending"].as_i64(),
            op["processed"].as_i64(),
            op["failed"].as_i64()
        ),
        (Some(0), Some(5), Some(4)),
        "{op}"
    );
    let reasons: Vec<(String, String)> = op["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["user_id"].as_str().unwrap().to_owned(),
                d["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(reasons.len(), 4, "{op}");
    assert_eq!(reasons[0].0, refused);
    assert!(reasons[0].1.contains("invalid_grant"), "{reasons:?}");
    assert!(reasons[1].1.contains("invalid_grant"), "{reasons:?}");
    // Another team's user fails exactly as a user that does not exist.
    assert_eq!(
        reasons[2].1.replace(&theirs, "ID"),
        reasons[3].1.replace(&unknown, "ID"),
        "{reasons:?}"
    );
    assert!(
        reasons[2].1.contains("not a user of this team"),
        "{reasons:?}"
    );
    assert!(!op.to_string().contains("never-in-clear"), "{op}");

    assert!(connected(&app, &app.key.clone(), &good).await);
    assert!(!connected(&app, &app.key.clone(), &refused).await);
    assert!(!connected(&app, &app.key.clone(), &elsewhere).await);
    assert!(!connected(&app, &app.other_key.clone(), &theirs).await);
    let other = app.other_key.clone();
    // The other team sees none of this team's operations.
    let a = app.send("GET", OPS, Some(&other), None).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json, json!({"data": [], "next_cursor": null}));
    runner.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_for_completion_answers_202_when_the_provider_is_slower_than_20_s() {
    let (app, fake) = enabled().await;
    let user = app.user("slow").await;
    fake.grant_refresh_token(&refresh_token(1), TEAM_CLIENT_ID, "profile");
    fake.set_delay(Duration::from_secs(30));
    let runner = runner(&app);
    let started = Instant::now();
    let a = submit(&app, vec![recipe(&user, 1, now() - 1)], true).await;
    let waited = started.elapsed();
    assert_eq!(a.status, 202, "{}", a.json);
    assert_eq!(
        a.json,
        json!({"user_ids_imported": [], "user_ids_failed": []})
    );
    assert!(
        waited >= Duration::from_millis(19_500) && waited < Duration::from_secs(29),
        "{waited:?}"
    );
    assert_eq!(fake.token_requests(), 1, "the refresh was under way");
    assert_eq!(newest_op(&app).await["status"], "in_progress");
    runner.shutdown().await;
}

#[tokio::test]
async fn bulk_import_is_disabled_until_the_team_sets_its_own_oauth_application() {
    let (app, _fake) = setup().await;
    let user = app.user("disabled").await;
    let body = vec![recipe(&user, 1, now() + 3600)];
    let a = submit(&app, body.clone(), false).await;
    assert_422_at(&a, &[json!("body"), json!("provider")]);
    assert_eq!(a.json["detail"][0]["msg"], DISABLED);

    // Another team's application does not enable it for this team.
    team_app(&app, &app.other_key.clone()).await;
    let a = submit(&app, body.clone(), false).await;
    assert_eq!(a.json["detail"][0]["msg"], DISABLED, "{}", a.json);

    team_app(&app, &app.key.clone()).await;
    assert_eq!(submit(&app, body.clone(), false).await.status, 202);
    let a = app
        .send(
            "DELETE",
            "/v2/team/provider/oura/credentials",
            Some(&app.key.clone()),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let a = submit(&app, body, false).await;
    assert_eq!(a.json["detail"][0]["msg"], DISABLED, "{}", a.json);
    let ops = app.get(OPS).await;
    assert_eq!(
        ops.json["data"].as_array().map(Vec::len),
        Some(1),
        "{}",
        ops.json
    );
}

#[tokio::test]
async fn every_rule_answers_422_at_its_loc_without_echoing_tokens() {
    let (app, _fake) = enabled().await;
    let user = app.user("rules").await;
    let other = app.user("rules-2").await;
    let good = recipe(&user, 1, now() + 3600);
    let with = |member: &str, value: Value| {
        let mut r = good.clone();
        r[member] = value;
        r
    };
    let without = |member: &str| {
        let mut r = good.clone();
        r.as_object_mut().unwrap().remove(member);
        r
    };
    let at = |member: &str| vec![json!("body"), json!("connections"), json!(0), json!(member)];
    let mut cases: Vec<(Value, Vec<Value>)> = vec![
        (
            json!({"connections": [good]}),
            vec![json!("body"), json!("provider")],
        ),
        (
            json!({"provider": "freestyle_libre", "connections": [good]}),
            vec![json!("body"), json!("provider")],
        ),
        (
            json!({"provider": "myspace", "connections": [good]}),
            vec![json!("body"), json!("provider")],
        ),
        (
            json!({"provider": "oura"}),
            vec![json!("body"), json!("connections")],
        ),
        (
            json!({"provider": "oura", "connections": []}),
            vec![json!("body"), json!("connections")],
        ),
        (
            json!({"provider": "oura", "connections": access_token(1)}),
            vec![json!("body"), json!("connections")],
        ),
        (
            json!({"provider": "oura", "connections": [access_token(1)]}),
            vec![json!("body"), json!("connections"), json!(0)],
        ),
        (
            json!({"provider": "oura", "connections": [good], "wait_for_completion": "yes"}),
            vec![json!("body"), json!("wait_for_completion")],
        ),
        (
            json!({"provider": "oura", "connections": [good, recipe(&user, 2, now())]}),
            vec![
                json!("body"),
                json!("connections"),
                json!(1),
                json!("user_id"),
            ],
        ),
        (json!([good]), vec![json!("body")]),
    ];
    for member in [
        "user_id",
        "access_token",
        "refresh_token",
        "provider_id",
        "expires_at",
    ] {
        cases.push((
            json!({"provider": "oura", "connections": [without(member)]}),
            at(member),
        ));
    }
    for (member, value) in [
        ("user_id", json!("not-a-uuid")),
        ("user_id", json!(42)),
        ("access_token", json!("")),
        ("access_token", json!([access_token(1)])),
        ("refresh_token", json!(" ")),
        ("provider_id", json!(7)),
        ("expires_at", json!("soon")),
        ("expires_at", json!(1.5)),
        ("expires_at", json!(-1)),
        ("oauth_scopes", json!("profile")),
    ] {
        cases.push((
            json!({"provider": "oura", "connections": [with(member, value)]}),
            at(member),
        ));
    }
    let mut scopes = at("oauth_scopes");
    scopes.push(json!(1));
    cases.push((
        json!({"provider": "oura", "connections": [with("oauth_scopes", json!(["profile", 3]))]}),
        scopes,
    ));
    for (body, loc) in cases {
        let a = app.post(IMPORT, body.clone()).await;
        assert_422_at(&a, &loc);
        assert!(
            !contains(&a.bytes, "never-in-clear"),
            "{body} echoed a token: {}",
            a.json
        );
    }
    // Malformed JSON is a 422 too, and a valid submission still passes.
    let raw = axum::http::Request::builder()
        .method("POST")
        .uri(IMPORT)
        .header("x-service-api-key", &app.key)
        .header("content-type", "application/json")
        .body(axum::body::Body::from("{\"provider\": \"oura\", "))
        .unwrap();
    assert_eq!(app.raw(raw).await.status, 422);
    assert_eq!(
        app.send("POST", IMPORT, None, Some(json!({}))).await.status,
        401
    );
    let ops = app.get(OPS).await;
    assert_eq!(
        ops.json["data"],
        json!([]),
        "nothing was stored: {}",
        ops.json
    );
    let a = submit(&app, vec![good, recipe(&other, 2, now())], false).await;
    assert_eq!(a.status, 202, "{}", a.json);
}

#[tokio::test]
async fn operations_are_listed_newest_first_a_page_at_a_time_per_team() {
    let (app, _fake) = enabled().await;
    let user = app.user("paged").await;
    for n in 0..3 {
        let a = submit(&app, vec![recipe(&user, n, now() + 3600)], false).await;
        assert_eq!(a.status, 202, "{}", a.json);
    }
    let first = app.get(&format!("{OPS}?page_size=2")).await;
    assert_eq!(first.status, 200, "{}", first.json);
    let page = first.json["data"].as_array().unwrap();
    assert_eq!(page.len(), 2, "{}", first.json);
    let cursor = first.json["next_cursor"].as_str().unwrap();
    assert_eq!(cursor, page[1]["id"].as_str().unwrap());
    let second = app
        .get(&format!("{OPS}?page_size=2&next_cursor={cursor}"))
        .await;
    let rest = second.json["data"].as_array().unwrap();
    assert_eq!(rest.len(), 1, "{}", second.json);
    assert!(second.json["next_cursor"].is_null(), "{}", second.json);
    let all = app.get(OPS).await;
    let ids: Vec<&Value> = all.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["id"])
        .collect();
    assert_eq!(ids, vec![&page[0]["id"], &page[1]["id"], &rest[0]["id"]]);
    let started: Vec<&str> = all.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["started_at"].as_str().unwrap())
        .collect();
    assert!(
        started.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {started:?}"
    );

    // Another team: no operations, and this team's cursor is unknown to it.
    let other = app.other_key.clone();
    let a = app
        .send(
            "GET",
            &format!("{OPS}?next_cursor={cursor}"),
            Some(&other),
            None,
        )
        .await;
    assert_422_at(&a, &[json!("query"), json!("next_cursor")]);
    for bad in [
        "page_size=0",
        "page_size=101",
        "page_size=x",
        "next_cursor=nope",
    ] {
        let a = app.get(&format!("{OPS}?{bad}")).await;
        let name = bad.split('=').next().unwrap();
        assert_422_at(&a, &[json!("query"), json!(name)]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn removing_the_team_application_aborts_the_operation_and_fails_what_waits() {
    let (app, _fake) = enabled().await;
    let user = app.user("aborted").await;
    let a = submit(&app, vec![recipe(&user, 1, now() + 3600)], false).await;
    assert_eq!(a.status, 202, "{}", a.json);
    let a = app
        .send(
            "DELETE",
            "/v2/team/provider/oura/credentials",
            Some(&app.key.clone()),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let runner = runner(&app);
    let op = ended_op(&app).await;
    runner.shutdown().await;
    assert_eq!(op["status"], "aborted", "{op}");
    assert_eq!(
        (
            op["pending"].as_i64(),
            op["processed"].as_i64(),
            op["failed"].as_i64()
        ),
        (Some(0), Some(1), Some(1)),
        "{op}"
    );
    assert!(
        op["details"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("removed its OAuth application"),
        "{op}"
    );
    assert!(!connected(&app, &app.key.clone(), &user).await);
}
