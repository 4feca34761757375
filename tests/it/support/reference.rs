//! The reference's published models as an oracle (issue 42): answers checked against a file of
//! the reference's OpenAPI components under `testdata/reference/` (JSON Schema 2020-12) and, where
//! named, parsed by the pinned `vital` SDK's pydantic model, by `tests/python/reference_models.py`.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

/// One answer to check: a name for the report, the reference component it must satisfy and the
/// SDK class that must parse it (`None` where the pinned SDK has no such class).
pub fn case(name: &str, component: &str, sdk_model: Option<&str>, answer: &Value) -> Value {
    json!({"name": name, "component": component, "sdk_model": sdk_model, "answer": answer})
}

/// Checks `cases` against the components of `testdata/reference/<schemas>`; panics with the
/// script's report when one is refused or when fewer than all were checked.
pub fn check(schemas: &str, cases: &[Value]) {
    let root = env!("CARGO_MANIFEST_DIR");
    let script = format!("{root}/tests/python/reference_models.py");
    let schemas = format!("{root}/testdata/reference/{schemas}");
    let mut child = crate::support::provision::python_script(Path::new(&script))
        .arg(schemas)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = serde_json::to_vec(cases).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the reference's models refuse our answers: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["checked"], cases.len(), "{report}");
}
