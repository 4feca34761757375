//! The README's worked query examples, run the way a reader runs them. Each example's shell
//! command runs in bash with `curl` defined as a function that prints the body it would send,
//! so the body is what the shell really makes of the README's quoting; that body goes to the
//! service as JSON and as the Parquet tarball. Where the README shows the answer in full, the
//! JSON answer must be it. Then the example's pandas snippet runs as written over the Parquet
//! answer (`tests/python/readme_snippet.py`): every DataFrame it reads must hold its query's
//! JSON table, and every output the snippet shows in a comment must be what pandas prints.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::TestApp;

const PARQUET: &str = "application/vnd.service.tar+gzip+parquet";

/// The README's section under `## {title}`, up to the next section.
fn section(title: &str) -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let start = readme
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("no README section `{title}`"));
    let rest = &readme[start + 4..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_owned()
}

/// The first fenced block of `lang` in `text`.
fn block(text: &str, lang: &str) -> String {
    let open = format!("```{lang}\n");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("no {lang} block"))
        + open.len();
    let len = text[start..].find("```").expect("an unclosed block");
    text[start..start + len].to_owned()
}

/// The body the shell command sends: bash runs it with `curl` printing its `-d`/`--data`
/// argument (or its standard input for `@-`).
fn body_sent(command: &str) -> Value {
    let fake_curl = r#"curl() {
  while [ $# -gt 0 ]; do
    case "$1" in
      -d|--data) if [ "$2" = "@-" ]; then cat; else printf '%s' "$2"; fi; shift 2 ;;
      *) shift ;;
    esac
  done
}
"#;
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("{fake_curl}{command}"))
        .env("USER_ID", "readme-user")
        .env("KEY", "readme-key")
        .output()
        .expect("run bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&sent)
        .unwrap_or_else(|e| panic!("the README's command sends no JSON ({e}):\n{sent}"))
}

/// The answer the command's trailing comment shows, when it shows one in full (from its first
/// line opening with `{`).
fn answer_shown(command: &str) -> Option<Value> {
    let comment: Vec<&str> = command
        .lines()
        .filter_map(|l| l.strip_prefix("# "))
        .skip_while(|l| !l.starts_with('{'))
        .collect();
    serde_json::from_str(&comment.join("\n")).ok()
}

async fn ask(
    app: &TestApp,
    uri: &str,
    body: &Value,
    accept: Option<&str>,
) -> crate::support::Answer {
    let req = axum::http::Request::builder()
        .method("POST")
        .uri(uri)
        .header("x-service-api-key", &app.key)
        .header("content-type", "application/json");
    let req = match accept {
        Some(a) => req.header("accept", a),
        None => req,
    };
    let a = app
        .raw(req.body(axum::body::Body::from(body.to_string())).unwrap())
        .await;
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.bytes));
    a
}

/// Two JSON values equal, numbers compared as numbers (a Parquet integer column with a null
/// reads back into pandas as floats).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        _ => a == b,
    }
}

/// Runs the section's example for `user` (`None`: the team query); `shows_answer` says whether
/// its comment must show the whole answer.
async fn run_example(app: &TestApp, user: Option<&str>, title: &str, shows_answer: bool) {
    let text = section(title);
    let command = block(&text, "sh");
    let uri = match user {
        Some(user) => format!("/aggregate/v1/user/{user}/query"),
        None => "/aggregate/v1/team/query".to_owned(),
    };
    let shown_path = match user {
        Some(_) => "/aggregate/v1/user/$USER_ID/query",
        None => "/aggregate/v1/team/query",
    };
    assert!(
        command.contains(shown_path),
        "{title}: the example does not post to {shown_path}"
    );
    let body = body_sent(&command);
    let answer = ask(app, &uri, &body, None).await.json;
    match answer_shown(&command) {
        Some(shown) => assert_eq!(answer, shown, "{title}: the README shows another answer"),
        None => assert!(
            !shows_answer,
            "{title}: no whole answer shown in the README"
        ),
    }
    let tarball = ask(app, &uri, &body, Some(PARQUET)).await.bytes;

    let dir = tempfile::tempdir().unwrap();
    let (snippet, answer_file) = (dir.path().join("snippet.py"), dir.path().join("answer"));
    std::fs::write(&snippet, block(&text, "python")).unwrap();
    std::fs::write(&answer_file, &tarball).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/readme_snippet.py"
    );
    let out = crate::support::provision::python_script(Path::new(script))
        .arg(&snippet)
        .arg(&answer_file)
        .output()
        .expect("run the test environment's python");
    assert!(
        out.status.success(),
        "{title}: the README's pandas snippet fails:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();

    let frames = report["frames"].as_object().unwrap();
    assert!(!frames.is_empty(), "{title}: the snippet reads no answer");
    for (name, frame) in frames {
        let file = frame["file"].as_str().unwrap();
        let index: usize = file.trim_end_matches(".parquet").parse().unwrap();
        let table = answer["results"][index]["table"].as_object().unwrap();
        for (column, values) in table {
            let read = &frame["table"][column];
            assert!(
                same(read, values),
                "{title}: `{name}[{column:?}]` read from {file} is {read}, the JSON answer {values}"
            );
        }
    }
    for shown in report["shown"].as_array().unwrap() {
        let words = |s: &Value| -> Vec<String> {
            s.as_str()
                .unwrap()
                .split_whitespace()
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(
            words(&shown["printed"]),
            words(&shown["comment"]),
            "{title}: `{}` prints another output than the README shows",
            shown["expr"]
        );
    }
}

/// Pushes `user`'s resting heart rate of each (day, bpm) as its Oura activity summary.
async fn push_resting_rates(app: &TestApp, user: &str, days: &[(&str, i64)]) {
    let activity: Vec<Value> = days
        .iter()
        .map(|(d, v)| json!({"date": d, "heart_rate": {"resting_bpm": v}}))
        .collect();
    let a = app
        .post(
            &format!("/v2/user/{user}/data"),
            json!({"provider": "oura", "activity": activity}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
}

#[tokio::test]
async fn the_align_example_sends_answers_and_reads_as_shown() {
    let app = TestApp::new().await;
    let user = app.user("readme-align").await;
    let days = [("2025-03-01", 54), ("2025-03-02", 55), ("2025-03-07", 53)];
    push_resting_rates(&app, &user, &days).await;
    run_example(&app, Some(&user), "Filling gaps: ALIGN", true).await;
}

#[tokio::test]
async fn the_readiness_example_sends_answers_and_reads_as_shown() {
    let (app, user, _) = crate::engine::readiness::pushed().await;
    run_example(
        &app,
        Some(&user),
        "Daily scores: `derived_readiness`",
        false,
    )
    .await;
}

#[tokio::test]
async fn the_cycles_example_sends_answers_and_reads_as_shown() {
    let app = TestApp::new().await;
    let user = crate::engine::cycle::user_with_cycles(&app, "readme-cycles").await;
    run_example(
        &app,
        Some(&user),
        "Cycles and list columns: subqueries",
        true,
    )
    .await;
}

#[tokio::test]
async fn the_team_example_sends_answers_and_reads_as_shown() {
    let app = TestApp::new().await;
    let measured: [(&str, &[(&str, i64)]); 3] = [
        ("alice", &[("2025-03-01", 54), ("2025-03-02", 56)]),
        ("bob", &[("2025-03-01", 60), ("2025-03-02", 62)]),
        ("chen", &[("2025-03-01", 57)]),
    ];
    for (client, days) in measured {
        let user = app.user(client).await;
        push_resting_rates(&app, &user, days).await;
    }
    run_example(&app, None, "Analysing a whole team", true).await;
}
