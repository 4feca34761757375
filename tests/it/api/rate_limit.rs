//! Rate limits over the router: a spent budget answers 429 with `Retry-After` and the
//! `x-ratelimit-*` headers and recovers after the announced wait; keys of one team have their
//! own buckets and share the team's; aggregate queries spend a budget of their own; requests
//! without a valid key spend nothing; `serve`'s flags set the budgets.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;
use wearhouse::http::HttpConfig;
use wearhouse::rate_limit::{Budget, RateLimits};

use crate::support::{Answer, TestApp};

fn app_with(key: Budget, team: Budget, query: Budget) -> HttpConfig {
    HttpConfig {
        rate_limits: RateLimits { key, team, query },
        ..HttpConfig::default()
    }
}

fn header(a: &Answer, name: &str) -> u64 {
    a.headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header: {:?}", a.headers))
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// (limit, remaining, reset) of an answer.
fn numbers(a: &Answer) -> (u64, u64, u64) {
    (
        header(a, "x-ratelimit-limit"),
        header(a, "x-ratelimit-remaining"),
        header(a, "x-ratelimit-reset"),
    )
}

fn detail(a: &Answer) -> &str {
    a.json["detail"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", a.json))
}

#[tokio::test]
async fn a_spent_key_answers_429_with_its_headers_and_recovers_after_retry_after() {
    let app = TestApp::with_config(app_with(
        Budget::new(1.0, 2),
        Budget::DISABLED,
        Budget::DISABLED,
    ))
    .await;
    // Requests without a valid key are refused before any bucket is touched.
    for key in [None, Some("wh_not_a_key")] {
        for _ in 0..5 {
            let a = app.send("GET", "/v2/user/", key, None).await;
            assert_eq!(a.status, StatusCode::UNAUTHORIZED);
            assert!(a.headers.get("x-ratelimit-limit").is_none());
        }
    }
    assert_eq!(app.state.limiter.tracked(), 0);

    let first = app.get("/v2/user/").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.json);
    assert_eq!(numbers(&first), (2, 1, 1));
    let second = app.get("/v2/user/").await;
    assert_eq!(second.status, StatusCode::OK);
    assert_eq!(numbers(&second), (2, 0, 2));
    let refused = app.get("/v2/user/").await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(
        detail(&refused).contains("this API key"),
        "{}",
        refused.json
    );
    let wait = header(&refused, "retry-after");
    assert_eq!(
        wait, 1,
        "one token a second: the next is at most a second away"
    );
    assert_eq!(numbers(&refused), (2, 0, 2));

    tokio::time::sleep(Duration::from_secs(wait)).await;
    let again = app.get("/v2/user/").await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.json);
    assert_eq!(header(&again, "x-ratelimit-limit"), 2);

    let metrics = String::from_utf8(app.send("GET", "/metrics", None, None).await.bytes).unwrap();
    assert!(
        metrics.contains("wearhouse_rate_limited_total{scope=\"key\"} 1\n"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_second_key_has_its_own_bucket_and_shares_the_team_s() {
    let slow = 0.01; // a token every 100 s: nothing refills during the test
    let app = TestApp::with_config(app_with(
        Budget::new(slow, 2),
        Budget::new(slow, 3),
        Budget::DISABLED,
    ))
    .await;
    let team = app.team().await;
    let second = {
        let mut conn = app.state.meta.writer().await.unwrap();
        wearhouse::store::metadata::keys::create_key(&mut conn, team.id, "second")
            .await
            .unwrap()
            .secret
    };
    async fn get(app: &TestApp, key: &str) -> Answer {
        app.send("GET", "/v2/user/", Some(key), None).await
    }
    for _ in 0..2 {
        assert_eq!(get(&app, &app.key).await.status, StatusCode::OK);
    }
    let refused = get(&app, &app.key).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(
        detail(&refused).contains("this API key"),
        "{}",
        refused.json
    );
    assert!(header(&refused, "retry-after") >= 99);

    // The second key's bucket is full, but the team has one request left of three.
    let b = get(&app, &second).await;
    assert_eq!(b.status, StatusCode::OK, "{}", b.json);
    assert_eq!(
        (
            header(&b, "x-ratelimit-limit"),
            header(&b, "x-ratelimit-remaining")
        ),
        (3, 0),
        "the team's bucket is the tighter one"
    );
    let b = get(&app, &second).await;
    assert_eq!(b.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(detail(&b).contains("this team"), "{}", b.json);
    assert_eq!(header(&b, "x-ratelimit-limit"), 3);

    // Another team spends its own budgets.
    assert_eq!(get(&app, &app.other_key).await.status, StatusCode::OK);
}

#[tokio::test]
async fn aggregate_queries_spend_a_budget_of_their_own() {
    let app = TestApp::with_config(app_with(
        Budget::new(0.01, 50),
        Budget::DISABLED,
        Budget::new(0.01, 2),
    ))
    .await;
    let id = app.user("querier").await;
    let query = json!({
        "timeframe": {"type": "relative", "anchor": "2025-03-03", "past": {"value": 1, "unit": "day"}},
        "queries": [{"select": [{"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}}]}]
    });
    let uri = format!("/aggregate/v1/user/{id}/query");
    for left in [1, 0] {
        let a = app.post(&uri, query.clone()).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.json);
        assert_eq!(
            (
                header(&a, "x-ratelimit-limit"),
                header(&a, "x-ratelimit-remaining")
            ),
            (2, left)
        );
    }
    let refused = app.post(&uri, query.clone()).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(
        detail(&refused).contains("aggregate queries"),
        "{}",
        refused.json
    );
    assert!(header(&refused, "retry-after") >= 99);

    // Other requests of the same key pass: the key's bucket paid for two queries, not three.
    let user = app.get(&format!("/v2/user/{id}")).await;
    assert_eq!(user.status, StatusCode::OK);
    assert_eq!(
        (
            header(&user, "x-ratelimit-limit"),
            header(&user, "x-ratelimit-remaining")
        ),
        (50, 46),
        "user creation, two queries and this read"
    );
}

#[tokio::test]
async fn serve_flags_set_the_budgets() {
    let dir = tempfile::tempdir().unwrap();
    let key = crate::support::server::create_team(dir.path(), "limited", &[]);
    // The test harness turns limits off through the environment; flags win over it.
    let server = crate::support::server::Server::start(
        dir.path(),
        &["--rate-limit-rps", "0.5", "--rate-limit-burst", "1"],
    );
    let http = crate::support::server::http_client(10);
    let get = || {
        http.get(server.url("/v2/user/"))
            .header("x-service-api-key", &key)
            .send()
    };
    let first = get().await.unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["x-ratelimit-limit"], "1");
    assert_eq!(first.headers()["x-ratelimit-remaining"], "0");
    let refused = get().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "2");
    let body: serde_json::Value = refused.json().await.unwrap();
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("0.5 requests per second"),
        "{body}"
    );
    // /health and /metrics take no key and spend no budget.
    for path in ["/health", "/metrics"] {
        let a = http.get(server.url(path)).send().await.unwrap();
        assert_eq!(a.status(), 200, "{path}");
        assert!(a.headers().get("x-ratelimit-limit").is_none());
    }
}

#[test]
fn serve_rejects_rates_that_are_not_rates_and_defaults_to_the_documented_budgets() {
    use clap::Parser;
    use wearhouse::config::{Cli, Command};
    let parse = |args: &[&str]| Cli::try_parse_from([&["wearhouse", "serve"], args].concat());
    for bad in [
        &["--rate-limit-rps", "-1"][..],
        &["--query-rate-limit-rps", "NaN"],
        &["--team-rate-limit-rps", "inf"],
        &["--rate-limit-burst", "0"],
    ] {
        assert!(parse(bad).is_err(), "{bad:?} accepted");
    }
    let Command::Serve(args) = parse(&[]).unwrap().command else {
        panic!("not serve");
    };
    assert_eq!(
        args.rate_limits.limits(),
        RateLimits {
            key: wearhouse::rate_limit::DEFAULT_KEY,
            team: wearhouse::rate_limit::DEFAULT_TEAM,
            query: wearhouse::rate_limit::DEFAULT_QUERY,
        }
    );
    let Command::Serve(off) = parse(&["--query-rate-limit-rps", "0"]).unwrap().command else {
        panic!("not serve");
    };
    assert!(!off.rate_limits.limits().query.is_enabled());
}
