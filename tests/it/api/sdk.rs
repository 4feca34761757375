//! The reference `vital` Python SDK (pinned in `tests/python/requirements.txt`) as a client of
//! the real server: `tests/python/sdk_check.py` finds every SDK method whose route this server
//! serves (by matching the SDK's paths against `/openapi.json`, leaving out the documented 501s),
//! calls each through the SDK (the later surface's calls are in `tests/python/sdk_surface.py`)
//! with only the base URL and the key set, and checks that each returns the SDK's parsed model
//! holding the values the raw API answers.

use std::path::Path;

use serde_json::Value;

use crate::support::provision;
use crate::support::server::Server;

/// Every method in scope is called and passes, except the ones whose request cannot succeed as
/// the SDK builds it, which fail the way the script expects (and are listed).
#[test]
fn the_reference_sdk_works_against_wearhouse() {
    let dir = tempfile::tempdir().unwrap();
    // An OAuth application for `generate_oauth_link`: making its authorisation URL needs no
    // call to the provider.
    let apps = dir.path().join("oauth-apps.json");
    let oura = serde_json::json!({"oura": {
        "client_id": "sdk-check-client", "client_secret": "sdk-check-secret",
        "authorize_url": "https://cloud.ouraring.com/oauth/authorize",
        "token_url": "https://api.ouraring.com/oauth/token"}});
    std::fs::write(&apps, oura.to_string()).unwrap();
    let apps = apps.to_str().unwrap();
    // Peloton's sign-in at a closed port: `connect_password_provider` gets a link error, which
    // is all the SDK check needs to see parsed.
    let server = Server::start_with(
        dir.path(),
        &["--demo", "--demo-days", "5", "--oauth-apps", apps],
        "warn",
        &[
            (
                wearhouse::sync::connectors::peloton::access::API_URL_ENV,
                "http://127.0.0.1:9",
            ),
            (
                wearhouse::sync::connectors::peloton::access::AUTH_URL_ENV,
                "http://127.0.0.1:9",
            ),
        ],
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/sdk_check.py");
    let out = provision::python_script(Path::new(script))
        .arg(&server.base)
        .arg(server.key())
        .output()
        .expect("run the test environment's python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "no report from the SDK check:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    println!("SDK report: {report:#}");
    assert!(
        out.status.success(),
        "SDK check failed: {report:#}\n{}",
        server.log()
    );
    let in_scope = report["in_scope"].as_u64().unwrap();
    assert!(
        in_scope >= 165,
        "fewer SDK methods in scope than before: {report:#}"
    );
    // Every method in scope is called: the script's NOT_YET (methods in scope it does not
    // call yet) is empty and may stay so.
    let not_yet = report["not_yet"].as_array().unwrap().len() as u64;
    assert_eq!(not_yet, 0, "every method in scope is called: {report:#}");
    assert_eq!(
        report["called"].as_u64().unwrap() + not_yet,
        in_scope,
        "{report:#}"
    );
    let expected = report["expected_failures"].as_array().unwrap();
    let passed = report["passed"].as_u64().unwrap();
    assert_eq!(
        passed + expected.len() as u64 + not_yet,
        in_scope,
        "{report:#}"
    );
    let mut known: Vec<&str> = expected
        .iter()
        .map(|e| e["method"].as_str().unwrap())
        .collect();
    known.sort_unstable();
    assert_eq!(known, ["team.update_source_priorities"]);
}
