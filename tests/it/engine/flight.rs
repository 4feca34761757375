//! Arrow Flight SQL (`serve --flight-listen`, `src/flight/`) from a real client: the Python ADBC
//! Flight SQL driver into pandas and Polars (`tests/python/flight_check.py`), against a real
//! server process with the demo team and a second team. Browsing (GetTables with schemas), every
//! table view and a timeseries view queried, a prepared statement, the handshake's Basic
//! authentication, a wrong key refused, a write refused, another team's rows never visible
//! (each key sees its own team only), and a query past the time limit cancelled. The per-user
//! counts and means read over Flight SQL equal what the REST team query answers.

use serde_json::{Value, json};

use crate::support::provision;
use crate::support::server::{Server, create_team, http_client};

#[tokio::test]
async fn a_notebook_reads_the_teams_views_over_flight_sql() {
    let dir = tempfile::tempdir().unwrap();
    let other_key = create_team(dir.path(), "other", &[]);
    let server = Server::start(
        dir.path(),
        &[
            "--demo",
            "--demo-days",
            "3",
            "--flight-listen",
            "127.0.0.1:0",
            "--query-timeout-secs",
            "3",
        ],
    );
    let flight = server.flight.clone().expect("a flight sql address");
    // The other team: one user, one sample no demo user has.
    let theirs = server
        .post_json("/v2/user", &other_key, &json!({"client_user_id": "theirs"}))
        .await;
    let theirs = theirs["user_id"].as_str().unwrap().to_owned();
    let push = json!({"provider": "oura", "timeseries": {"heartrate": [
        {"timestamp": "2025-03-01T10:00:00Z", "value": 222.0, "unit": "bpm"}]}});
    server
        .post_json(&format!("/v2/user/{theirs}/data"), &other_key, &push)
        .await;
    // What the REST team query answers per demo user: every heart-rate sample (no group key
    // but the user's: every source), in a window holding all of the demo's days.
    let anchor = (chrono::Utc::now() + chrono::Duration::days(2)).date_naive();
    let every_sample = json!({
        "timeframe": {"anchor": anchor.to_string(), "past": {"value": 1, "unit": "year"}},
        "queries": [{"select": [{"group_key": "*"},
                                {"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}},
                                {"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}}],
                     "group_by": [{"user": "user_id"}]}]
    });
    let team = server
        .post_json("/aggregate/v1/team/query", server.key(), &every_sample)
        .await;
    let table = &team["results"][0]["table"];
    let ids = table["group_key.0"].as_array().expect("a team answer");
    assert!(!ids.is_empty(), "the demo users have heart rate: {team}");

    let uri = format!("grpc://{flight}");
    let args = [uri.as_str(), server.key(), other_key.as_str()].map(std::ffi::OsStr::new);
    let report: Value =
        serde_json::from_str(&provision::run_python("flight_check.py", &args)).unwrap();

    // Browsing: every table and resource is a view, with the user's ids first.
    let views: Vec<&str> = report["views"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        views.len(),
        8 + wearhouse::schema::RESOURCES.len(),
        "{views:?}"
    );
    for v in [
        "derived_readiness",
        "sleep",
        "workouts",
        "menstrual_cycle",
        "timeseries_heartrate",
        "timeseries_glucose",
    ] {
        assert!(views.contains(&v), "{v} missing: {views:?}");
    }
    let columns = report["heartrate_columns"].as_array().unwrap();
    assert_eq!(columns[..2], [json!("user_id"), json!("client_user_id")]);
    assert!(columns.contains(&json!("value")), "{columns:?}");
    // Every view answers; the demo pushed sleep and heart rate.
    let counts = report["counts"].as_object().unwrap();
    assert_eq!(counts.len(), 10, "{counts:?}");
    assert!(counts["sleep"].as_i64().unwrap() > 0, "{counts:?}");

    // derived_readiness: each user's days as the per-user endpoint computes them.
    let readiness = report["readiness"].as_object().unwrap();
    assert_eq!(readiness.len(), ids.len(), "{readiness:?}");
    for (id, days) in readiness {
        let rest = server
            .post_json(
                &format!("/aggregate/v1/user/{id}/query"),
                server.key(),
                &json!({
                    "timeframe": {"anchor": anchor.to_string(), "past": {"value": 30, "unit": "day"}},
                    "queries": [{"select": [{"index": "derived_readiness"},
                                            {"derived_readiness": "sleep_score"},
                                            {"derived_readiness": "strain_score"}]}]
                }),
            )
            .await;
        let t = &rest["results"][0]["table"];
        let expected: Vec<Value> = (0..t["timestamp"].as_array().unwrap().len())
            .map(|i| json!([t["timestamp"][i], t["sleep_score"][i], t["strain_score"][i]]))
            .collect();
        assert!(!expected.is_empty(), "{id}: no readiness days {rest}");
        assert_eq!(days.as_array().unwrap(), &expected, "{id}");
    }

    // pandas: the per-user counts and means are the REST team query's.
    let per_user = report["per_user"].as_object().unwrap();
    assert_eq!(per_user.len(), ids.len(), "{per_user:?} vs {table}");
    for (i, id) in ids.iter().enumerate() {
        let id = id.as_str().unwrap();
        let row = per_user
            .get(id)
            .unwrap_or_else(|| panic!("{id} not read: {per_user:?}"));
        assert_eq!(row[1], table["count.heartrate.value"][i], "{id}");
        let (flight_mean, rest_mean) = (
            row[2].as_f64().unwrap(),
            table["mean.heartrate.value"][i].as_f64().unwrap(),
        );
        assert!((flight_mean - rest_mean).abs() < 1e-9 * rest_mean, "{id}");
        let client = &server
            .demo_users
            .iter()
            .find(|(_, u)| u == id)
            .expect("a demo user")
            .0;
        assert_eq!(row[0], json!(client));
    }
    assert!(
        !per_user.contains_key(&theirs),
        "another team's user is visible"
    );
    for read in ["polars_rows", "prepared_rows", "basic_auth_rows"] {
        assert_eq!(report[read], json!(per_user.len()), "{read}");
    }
    // The other team's key sees its one sample and nothing of the demo team.
    assert_eq!(report["other_team"], json!({theirs.as_str(): [1, 222.0]}));

    // Refusals: a wrong key, a write, a query past the 3 s time limit (cancelled, not waited
    // out: it would run for minutes).
    let wrong = report["wrong_key"]
        .as_str()
        .expect("a wrong key is refused");
    assert!(wrong.contains("Invalid API key"), "{wrong}");
    let write = report["refused_write"]
        .as_str()
        .expect("a write is refused");
    assert!(
        write.to_lowercase().contains("not supported") || write.contains("DDL"),
        "{write}"
    );
    let timeout = report["timeout"].as_str().expect("the slow query fails");
    assert!(timeout.contains("time limit"), "{timeout}");
    assert!(
        report["timeout_seconds"].as_f64().unwrap() < 20.0,
        "{report}"
    );
    // And the server still answers.
    let health = http_client(10)
        .get(server.url("/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    server.stop();
}
