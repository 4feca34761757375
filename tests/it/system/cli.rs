//! The command-line operations through the real binary: team create/list, import of a push
//! file, query (JSON and Parquet), and demo generation as Parquet.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use wearhouse::store::metadata::{MetadataStore, NewUser};

/// Runs the binary with `--data-dir` appended.
fn wearhouse(data_dir: &Path, args: &[&str]) -> Output {
    let dir = data_dir.display().to_string();
    let mut all = args.to_vec();
    all.extend(["--data-dir", &dir]);
    run(&all)
}

/// Runs the binary and insists on success.
fn run(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_wearhouse"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run wearhouse");
    assert!(
        out.status.success(),
        "wearhouse {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn testdata(path: &str) -> String {
    format!("{}/testdata/{path}", env!("CARGO_MANIFEST_DIR"))
}

#[tokio::test]
async fn team_import_and_query_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let created = wearhouse(dir.path(), &["team", "create", "acme"]);
    let text = String::from_utf8(created.stdout).unwrap();
    assert!(
        text.contains("team_id: ") && text.contains("api_key: wh_"),
        "{text}"
    );
    let listed = String::from_utf8(wearhouse(dir.path(), &["team", "list"]).stdout).unwrap();
    assert!(listed.contains("\tacme\t"), "{listed}");

    // A user, made through the same database the binary uses.
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("wearhouse.db").display()
    );
    let meta = MetadataStore::connect(&url).await.unwrap();
    let team = meta.team_by_name("acme").await.unwrap().unwrap();
    let new = NewUser {
        client_user_id: "cli-user".into(),
        ..NewUser::default()
    };
    meta.create_user(team.id, new).await.unwrap();
    meta.close().await;

    let imported = wearhouse(
        dir.path(),
        &[
            "import",
            "--team",
            "acme",
            "--user",
            "cli-user",
            &testdata("push/full.json"),
        ],
    );
    let counts: Value = serde_json::from_slice(&imported.stdout).unwrap();
    assert_eq!(counts["sleep"], 1);
    assert_eq!(counts["timeseries"]["heartrate"], 1);

    let request = testdata("requests/full_push_sleep.json");
    let answered = wearhouse(
        dir.path(),
        &["query", "--team", "acme", "--user", "cli-user", &request],
    );
    let answer: Value = serde_json::from_slice(&answered.stdout).unwrap();
    let sleep = &answer["results"][0]["table"];
    assert_eq!(
        sleep["group_key.0"],
        serde_json::json!(["2025-03-02T00:00:00"])
    );
    assert_eq!(sleep["mean.efficiency"], serde_json::json!([88.4]));
    assert_eq!(
        answer["results"][1]["table"]["heartrate.value"],
        serde_json::json!([55.5])
    );

    let tarball = dir.path().join("answer.tar.gz");
    let tar_arg = tarball.display().to_string();
    wearhouse(
        dir.path(),
        &[
            "query", "--team", "acme", "--user", "cli-user", &request, "--format", "parquet",
            "--out", &tar_arg,
        ],
    );
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(&tarball).unwrap(),
    ));
    let names: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    assert_eq!(names, ["0.parquet", "1.parquet"]);

    // A bad file is refused with the validation errors, and nothing is stored.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"provider": "manual", "sleep": [{"bedtime_start": "nope"}]}"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_wearhouse"))
        .args(["import", "--team", "acme", "--user", "cli-user"])
        .arg(&bad)
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bedtime_start"));
}

#[test]
fn demo_generate_writes_readable_parquet_per_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("demo");
    let out_arg = out_dir.display().to_string();
    let printed = run(&[
        "demo",
        "generate",
        "--days",
        "3",
        "--out",
        &out_arg,
        "--end",
        "2025-03-10",
    ]);
    let text = String::from_utf8(printed.stdout).unwrap();
    for dataset in ["sleep.parquet", "timeseries/heartrate.parquet"] {
        let path = out_dir.join(dataset);
        let file = std::fs::File::open(&path)
            .unwrap_or_else(|_| panic!("{dataset} missing; printed:\n{text}"));
        let reader =
            datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                file,
            )
            .unwrap()
            .build()
            .unwrap();
        let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
        assert!(rows > 0, "{dataset} is empty");
    }
    // Deterministic: the same command writes the same rows.
    let again = String::from_utf8(
        run(&[
            "demo",
            "generate",
            "--days",
            "3",
            "--out",
            &out_arg,
            "--end",
            "2025-03-10",
        ])
        .stdout,
    )
    .unwrap();
    assert_eq!(text, again);
}

#[tokio::test]
async fn continuous_queries_are_listed_shown_and_validated_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    wearhouse(dir.path(), &["team", "create", "acme"]);
    let body = serde_json::json!({
        "slug": "daily-hr", "title": "Daily heart rate",
        "query": {
            "select": [{"group_key": "*"}, {"func": "max", "arg": {"timeseries": "heartrate", "field": "value"}}],
            "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]
        }
    });
    let file = dir.path().join("cq.json");
    std::fs::write(&file, body.to_string()).unwrap();
    let validated = run(&["cq", "validate", file.to_str().unwrap()]);
    let answer: Value = serde_json::from_slice(&validated.stdout).unwrap();
    assert_eq!(
        answer["result_table_schema"]["max.heartrate.value"],
        "float64"
    );
    assert_eq!(
        answer["resource_dependencies"],
        serde_json::json!(["heartrate"])
    );

    // A query breaking a continuous rule: a non-zero exit naming where.
    let mut bad = body.clone();
    bad["query"]["group_by"] = serde_json::json!([{"source": "source_provider"}]);
    std::fs::write(&file, bad.to_string()).unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_wearhouse"))
        .args(["cq", "validate", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("body.query.group_by"), "{stderr}");

    // Registered through the API's own function on the binary's database, then listed.
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("wearhouse.db").display()
    );
    let meta = MetadataStore::connect(&url).await.unwrap();
    let team = meta.team_by_name("acme").await.unwrap().unwrap();
    let engine = wearhouse::engine::Engine::new(Default::default()).unwrap();
    let q = wearhouse::continuous::manage::create(&meta, &engine, team.id, &body)
        .await
        .unwrap();
    meta.close().await;
    let listed =
        String::from_utf8(wearhouse(dir.path(), &["cq", "list", "--team", "acme"]).stdout).unwrap();
    assert!(
        listed.starts_with(&format!(
            "{}\tdaily-hr\tactive\t0/0\tDaily heart rate",
            q.id
        )),
        "{listed}"
    );
    let shown = wearhouse(dir.path(), &["cq", "show", "--team", "acme", "daily-hr"]);
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["id"], q.id.to_string());
    assert_eq!(shown["query"], body["query"]);
}
