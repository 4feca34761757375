//! Schema fuzzing: schemathesis (pinned in `tests/python/requirements.txt`) generates requests
//! from the real server's `/openapi.json`, with the team's real API key, a real link token and a
//! real id for every path parameter (a user with data, a lab test, an order, a webhook endpoint, a
//! key), and checks every answer:
//! - no 5xx; every status documented; content type and body as the document declares;
//! - **a request the document admits is not refused** (`positive_data_acceptance`): the document
//!   states every rule the validation enforces (`src/http/doc_rules/`), so a generated client
//!   never sends what will be refused. A 400 is accepted: `rest-conventions.md` reserves it for
//!   a request well formed but not allowed in the current state (a consumed code, a user id
//!   taken, a failed link). The rules JSON Schema cannot state are [`UNSTATABLE`], each with
//!   its reason; only their operations skip this one check.
//!
//! `cargo test` runs a bounded, seeded run (every phase but stateful, 8 examples per operation);
//! the long run is the same test with `WEARHOUSE_FUZZ_EXAMPLES` (and `WEARHOUSE_FUZZ_SEED`) set
//! (README, "The API contract").

use std::fmt::Write as _;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::provision;
use crate::support::server::Server;

/// The schemathesis checks every answer must pass.
const CHECKS: [&str; 5] = [
    "not_a_server_error",
    "response_schema_conformance",
    "status_code_conformance",
    "content_type_conformance",
    "positive_data_acceptance",
];

/// Rules the validation enforces that the document can state only in prose, because they
/// depend on stored state, the clock, or the path and the body together: (method, path, why).
/// Their operations skip `positive_data_acceptance` (every other check still runs). The
/// cross-field rules a generated case can be kept from breaking are not here but in
/// `tests/python/fuzz_rules.py`.
pub const UNSTATABLE: &[(&str, &str, &str)] = &[
    (
        "GET",
        "/v2/provider/{provider}/notify",
        "verification_token is required for Oura's handshake only: a rule on the path and the query together",
    ),
    (
        "POST",
        "/v2/provider/{provider}/notify",
        "the body's media type depends on the provider (JSON for Oura and WHOOP, a form for Withings)",
    ),
    (
        "PUT",
        "/v2/team/provider/{provider}/credentials",
        "verification_token is accepted for Oura only: a rule on the path and the body together",
    ),
    (
        "POST",
        "/v2/link/code/create",
        "expires_at must lie within the next 7 days: a rule on the clock",
    ),
    (
        "POST",
        "/v2/link/bulk_import",
        "the team must have its own OAuth application for the provider: a rule on stored state",
    ),
    (
        "GET",
        "/v3/order/area/info",
        "the ZIP code must be one the reference data knows (about 33,000 codes, not inlined)",
    ),
    (
        "GET",
        "/v3/order/psc/info",
        "the ZIP code must be one the reference data knows",
    ),
    (
        "POST",
        "/v3/order/psc/appointment/availability",
        "the ZIP code must be one the reference data knows",
    ),
    (
        "POST",
        "/v3/order/phlebotomy/appointment/availability",
        "the ZIP code must be one the reference data knows",
    ),
    (
        "POST",
        "/v3/lab_tests",
        "every marker must belong to the chosen lab, which must offer the method",
    ),
    (
        "POST",
        "/v3/lab_tests/list_order_set_markers",
        "the lab tests must exist (ids of stored state)",
    ),
    (
        "POST",
        "/aggregate/v1/user/{user_id}/query",
        "the query language's semantic rules (which columns a table has, expression types); the golden and differential suites cover them",
    ),
    (
        "POST",
        "/aggregate/v1/continuous_query",
        "its `query` member is the query language (its semantic rules as for the aggregate query) and its slug must be free among the team's queries",
    ),
    (
        "POST",
        "/aggregate/v1/continuous_query/validate",
        "its `query` member is the query language, with its semantic rules as for the aggregate query",
    ),
];

/// The environment's value of `name`, else `default` (the long run sets them).
fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// POSTs `body` with `key`; the answer's JSON (asserting a 200).
async fn post(server: &Server, key: &str, path: &str, body: Value) -> Value {
    let answer = reqwest::Client::new()
        .post(server.url(path))
        .header("x-service-api-key", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "POST {path} {body}");
    answer.json().await.unwrap()
}

fn id(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no {pointer} in {value}"))
        .to_owned()
}

/// The schemathesis configuration: real ids for every path parameter, the operations whose
/// rules cannot be stated, and a disposable user and key for the operations that delete them.
fn config(ids: &[(&str, String)], spare_user: &str, spare_key: &str) -> String {
    let mut toml = String::from("[parameters]\n");
    for (name, value) in ids {
        writeln!(toml, "\"path.{name}\" = \"{value}\"").unwrap();
    }
    toml.push_str("\n[checks]\nenabled = false\n");
    for check in CHECKS {
        writeln!(toml, "{check}.enabled = true").unwrap();
    }
    toml.push_str(
        "positive_data_acceptance.expected-statuses = \
         [\"2xx\", \"3xx\", \"400\", \"401\", \"403\", \"404\", \"409\", \"429\"]\n",
    );
    for (method, path, _) in UNSTATABLE {
        writeln!(
            toml,
            "\n[[operations]]\ninclude-method = \"{method}\"\ninclude-path = \"{path}\"\n\
             checks.positive_data_acceptance.enabled = false"
        )
        .unwrap();
    }
    // The reference's operations served as a documented 501 (`src/http/unserved.rs`): their
    // one answer is that 5xx, for any input.
    toml.push_str(
        "\n[[operations]]\ninclude-tag = \"unserved\"\n\
         checks.not_a_server_error.enabled = false\n\
         checks.positive_data_acceptance.enabled = false\n",
    );
    writeln!(
        toml,
        "\n[[operations]]\ninclude-method = \"DELETE\"\ninclude-path = \"/v2/user/{{user_id}}\"\n\
         parameters = {{ \"path.user_id\" = \"{spare_user}\" }}"
    )
    .unwrap();
    for path in [
        "/v2/team/keys/{key_id}/revoke",
        "/v2/team/keys/{key_id}/rotate",
    ] {
        writeln!(
            toml,
            "\n[[operations]]\ninclude-method = \"POST\"\ninclude-path = \"{path}\"\n\
             parameters = {{ \"path.key_id\" = \"{spare_key}\" }}"
        )
        .unwrap();
    }
    toml
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_requests_get_documented_answers_and_admitted_ones_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--demo", "--demo-days", "3"]);
    let key = server.key().to_owned();
    let user = server.demo_user("demo-ring-and-watch").to_owned();

    // Real ids: the getters' and the aggregate endpoint's user has data; the lab ids exist.
    let tests = server.get_json("/v3/lab_tests", &key).await;
    let lab_test = tests
        .as_array()
        .and_then(|t| t.iter().find(|t| t["method"] == "at_home_phlebotomy"))
        .map(|t| id(t, "/id"))
        .unwrap_or_else(|| panic!("no phlebotomy test in {tests}"));
    let order = post(
        &server,
        &key,
        "/v3/order",
        json!({
            "user_id": user,
            "patient_details": {"first_name": "Ada", "last_name": "Lovelace", "dob": "1985-12-10",
                "gender": "female", "phone_number": "+16025550123", "email": "ada@example.com"},
            "patient_address": {"first_line": "100 N 1st Ave", "city": "Phoenix", "state": "AZ",
                "zip": "85004", "country": "US"},
            "order_set": {"lab_test_ids": [lab_test]}
        }),
    )
    .await;
    let endpoint = post(
        &server,
        &key,
        "/v2/team/webhooks",
        json!({"url": "https://receiver.example.com/hooks"}),
    )
    .await;
    let own_keys = server.get_json("/v2/team/keys", &key).await;
    let spare_key = post(&server, &key, "/v2/team/keys", json!({"name": "fuzz"})).await;
    let http = crate::support::server::http_client(30);
    let spare_user = server
        .create_user(&http, Some(&key), json!({"client_user_id": "fuzz-spare"}))
        .await;
    let link_token = post(&server, &key, "/v2/link/token", json!({"user_id": user})).await;
    let ids = [
        ("user_id", user.clone()),
        ("client_user_id", "demo-ring-and-watch".to_owned()),
        ("lab_test_id", lab_test),
        ("order_id", id(&order, "/order/id")),
        ("transaction_id", id(&order, "/order/order_transaction/id")),
        ("team_id", id(&order, "/order/team_id")),
        ("id", id(&endpoint, "/id")),
        ("key_id", id(&own_keys, "/keys/0/id")),
    ];
    let config_file = dir.path().join("schemathesis.toml");
    std::fs::write(
        &config_file,
        config(&ids, &id(&spare_user, "/user_id"), &id(&spare_key, "/id")),
    )
    .unwrap();

    let out = Command::new(provision::python())
        .args(["-m", "schemathesis.cli", "--config-file"])
        .arg(&config_file)
        .arg("run")
        .arg(server.url("/openapi.json"))
        .args(["-H", &format!("x-service-api-key: {key}")])
        .args([
            "-H",
            &format!("x-link-token: {}", id(&link_token, "/link_token")),
        ])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args(["--max-examples", &env_or("WEARHOUSE_FUZZ_EXAMPLES", "8")])
        .args(["--seed", &env_or("WEARHOUSE_FUZZ_SEED", "20261127")])
        .arg("--no-color")
        .env(
            "SCHEMATHESIS_HOOKS",
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/fuzz_rules.py"),
        )
        .current_dir(dir.path())
        .output()
        .expect("run schemathesis");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis found failures:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // "  9104 generated, 9104 passed"
    let generated: u64 = report
        .lines()
        .find(|l| l.contains(" generated, "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no case count in:\n{report}"));
    assert!(generated >= 2000, "only {generated} cases:\n{report}");
    let operations = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("Tested: "))
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or(0);
    assert!(
        operations >= 85,
        "{operations} operations tested:\n{report}"
    );
}
