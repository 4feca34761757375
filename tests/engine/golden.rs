//! Golden query files: `testdata/queries/NAME.json` holds `{"dataset", "user"?, "request"}`;
//! `NAME.out.json` the expected response (`{"status": 200, "body": ...}` or the 422 detail).
//! `UPDATE_GOLDEN=1 cargo test --test engine golden` rewrites the snapshots (review the diff).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wearhouse::engine::{EngineError, Limits, UserContext, encode_json, execute, parse_request};

use super::data::batches;
use super::scenarios::scenario;

pub fn user_context(v: Option<&Value>) -> UserContext {
    let mut ctx = UserContext::default();
    let Some(v) = v else { return ctx };
    if let Some(z) = v.get("fallback_time_zone").and_then(Value::as_str) {
        ctx.fallback_time_zone = Some(z.parse().unwrap());
    }
    let date = |k: &str| v.get(k).and_then(Value::as_str).map(|s| s.parse().unwrap());
    ctx.ingestion_start = date("ingestion_start");
    ctx.ingestion_end = date("ingestion_end");
    if let Some(p) = v.get("team_priorities").and_then(Value::as_object) {
        ctx.team_priorities = p
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s.as_str().unwrap().to_owned())
                        .collect(),
                )
            })
            .collect();
    }
    ctx
}

/// Runs one case file and renders the response the HTTP layer would send.
pub async fn run_case(case: &Value) -> Value {
    let limits = Limits::default();
    let req = match parse_request(&case["request"], &limits) {
        Ok(r) => r,
        Err(invalid) => return json!({"status": 422, "detail": invalid.0}),
    };
    let ctx = user_context(case.get("user"));
    let data = scenario(case["dataset"].as_str().unwrap());
    match execute(&req, &ctx, batches(&data), &limits)
        .await
        .and_then(|r| encode_json(&r, &limits))
    {
        Ok(body) => json!({"status": 200, "body": body}),
        Err(EngineError::Invalid(i)) => json!({"status": 422, "detail": i.0}),
        Err(e) => panic!("unexpected engine error: {e}"),
    }
}

pub fn case_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/queries");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && !p.to_string_lossy().ends_with(".out.json")
        })
        .collect();
    files.sort();
    files
}

pub async fn check_all() {
    let update = std::env::var("UPDATE_GOLDEN").is_ok();
    let mut failures = Vec::new();
    let mut seen = HashMap::new();
    for f in case_files() {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let got = run_case(&case).await;
        let out = f.with_extension("out.json");
        let rendered = serde_json::to_string_pretty(&got).unwrap() + "\n";
        seen.insert(f.clone(), ());
        match std::fs::read_to_string(&out) {
            Ok(want) if want == rendered => {}
            _ if update => std::fs::write(&out, rendered).unwrap(),
            Ok(_) => failures.push(format!("{} differs from its snapshot", f.display())),
            Err(_) => failures.push(format!(
                "{} has no snapshot (run with UPDATE_GOLDEN=1)",
                f.display()
            )),
        }
    }
    assert!(seen.len() >= 40, "only {} golden cases", seen.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
