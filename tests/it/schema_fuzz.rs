//! Schema fuzzing: schemathesis (pinned in `tests/python/requirements.txt`) generates requests
//! from the real server's `/openapi.json` and checks every answer: no 5xx, every answer's status
//! documented, its content type and body conforming to the declared schema. A bounded run (a few
//! hundred cases, fixed seed); the README shows the longer one.

use std::process::Command;

use crate::provision;
use crate::server::Server;

/// The schemathesis checks every answer must pass.
const CHECKS: &str = "not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance";

#[test]
fn generated_requests_get_documented_answers_and_never_a_5xx() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--demo", "--demo-days", "3"]);
    // The getters' and the aggregate endpoint's `user_id` is a demo user with data, so their
    // answers (not only their 404s) are checked against their schemas.
    let config = dir.path().join("schemathesis.toml");
    let user = server.demo_user("demo-ring-and-watch");
    std::fs::write(
        &config,
        format!("[parameters]\n\"path.user_id\" = \"{user}\"\n"),
    )
    .unwrap();
    let out = Command::new(provision::python())
        .args(["-m", "schemathesis.cli", "--config-file"])
        .arg(&config)
        .arg("run")
        .arg(server.url("/openapi.json"))
        .args(["-H", &format!("x-service-api-key: {}", server.key())])
        .args([
            "--phases",
            "fuzzing,stateful",
            "--max-examples",
            "8",
            "--seed",
            "20261124",
        ])
        .args(["--checks", CHECKS, "--no-color"])
        .current_dir(dir.path())
        .output()
        .expect("run schemathesis");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis found failures:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // "  208 generated, 208 passed"
    let generated: u64 = report
        .lines()
        .find(|l| l.contains(" generated, "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no case count in:\n{report}"));
    assert!(generated >= 200, "only {generated} cases:\n{report}");
    let operations = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("Tested: "))
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or(0);
    assert!(
        operations >= 35,
        "{operations} operations tested:\n{report}"
    );
}
