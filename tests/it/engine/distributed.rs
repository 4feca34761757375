//! Distributed execution (`analytics.md` §6, `src/distributed/`): one `wearhouse serve` with two
//! `wearhouse worker` processes over the machine's PostgreSQL and a bucket of a real
//! S3-compatible server, beside a second `serve` on the same database and bucket without
//! workers (the one-node reference). Read through the Python ADBC Flight SQL driver
//! (`tests/python/distributed_check.py`).
//!
//! - Every query (per user, across users with a median and a count distinct, by day, a join of
//!   heart rate with workouts, six hours of it by a time filter the store's read takes, a top-3) answers exactly what one node answers, and the per-user
//!   figures equal what was pushed; the node with workers plans the statement across them.
//! - A plan without the workers' token is refused by a worker.
//! - A worker killed (SIGKILL) while statements run back to back: every statement either fails
//!   (`UNAVAILABLE`, saying a worker was lost) or answers exactly the one-node answer, and the
//!   statements after it succeed on the survivor.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::store::support::s3_env;
use crate::support::provision;
use crate::support::server::{Server, SharedStores, http_client};

const TOKEN: &str = "test-worker-token-0123456789";
const USERS: u64 = 8;
/// Minutes of heart rate per user per day, for two days.
const MINUTES: u64 = 720;

/// A `wearhouse worker` process; killed when dropped.
struct Worker {
    child: Child,
    addr: String,
}

impl Worker {
    fn start(bucket: &str, env: &[(String, String)], token: &str) -> Worker {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wearhouse"))
            .args([
                "worker",
                "--listen",
                "127.0.0.1:0",
                "--object-store-url",
                bucket,
            ])
            .env("RUST_LOG", "warn")
            .env("WEARHOUSE_WORKER_TOKEN", token)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn wearhouse worker");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let addr = loop {
            let line = lines
                .next()
                .expect("the worker exited before it listened")
                .unwrap();
            if let Some(addr) = line.strip_prefix("worker listening on ") {
                break addr.trim().to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Worker { child, addr }
    }

    fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("wait");
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn at(minute: u64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339("2025-02-01T00:00:00Z").unwrap();
    (base + chrono::Duration::minutes(minute as i64))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// User `u`'s heart rate on day `day` (whole numbers: exact sums in any order), and one
/// workout covering its first hour.
fn push_body(u: u64, day: u64) -> Value {
    let start = day * 1440;
    let samples: Vec<Value> = (start..start + MINUTES)
        .map(|m| json!({"timestamp": at(m), "unit": "bpm", "value": value(u, m)}))
        .collect();
    json!({
        "provider": "apple_health_kit",
        "source": {"type": "watch"},
        "workouts": [{"id": format!("w{u}-{day}"), "session_start": at(start), "session_end": at(start + 60)}],
        "timeseries": {"heartrate": samples},
    })
}

fn value(u: u64, minute: u64) -> f64 {
    (50 + (minute * 7 + u * 13) % 90) as f64
}

fn run(args: &[&str]) -> String {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    provision::run_python("distributed_check.py", &args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flight_sql_statements_run_on_two_workers_and_survive_losing_one() {
    let shared = SharedStores::new("distributed").await;
    let (bucket, key) = (&shared.bucket, shared.key.clone());
    let [dir_a, dir_b] = &shared.dirs;
    let s3 = s3_env();
    let mut workers = [
        Worker::start(&bucket.location, &s3, TOKEN),
        Worker::start(&bucket.location, &s3, TOKEN),
    ];
    let list = format!("{},{}", workers[0].addr, workers[1].addr);
    let mut env: Vec<(&str, &str)> = s3.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    env.push(("WEARHOUSE_WORKER_TOKEN", TOKEN));
    let mut args = shared.args();
    args.extend(["--flight-listen", "127.0.0.1:0"]);
    let one = Server::start_with(dir_b.path(), &args, "warn", &env);
    args.extend(["--workers", list.as_str(), "--distribute-above-mb", "0"]);
    let dist = Server::start_with(dir_a.path(), &args, "warn", &env);

    // Eight users, two days each, pushed through the node with workers.
    let http = http_client(60);
    let mut pushed: BTreeMap<String, (u64, f64, f64, f64)> = BTreeMap::new();
    for u in 0..USERS {
        let user = dist
            .create_user(
                &http,
                Some(&key),
                json!({"client_user_id": format!("c{u}")}),
            )
            .await;
        let id = user["user_id"].as_str().unwrap().to_owned();
        for day in 0..2 {
            let answer = dist
                .post_json(&format!("/v2/user/{id}/data"), &key, &push_body(u, day))
                .await;
            assert!(answer.get("error").is_none(), "{answer}");
        }
        let values: Vec<f64> = (0..2)
            .flat_map(|d| (d * 1440..d * 1440 + MINUTES).map(move |m| value(u, m)))
            .collect();
        let low = values.iter().copied().fold(f64::INFINITY, f64::min);
        let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        pushed.insert(id, (values.len() as u64, values.iter().sum(), low, high));
    }

    let dist_uri = format!("grpc://{}", dist.flight.clone().unwrap());
    let one_uri = format!("grpc://{}", one.flight.clone().unwrap());
    let report: Value =
        serde_json::from_str(&run(&["compare", &dist_uri, &one_uri, &key])).unwrap();

    // The node with workers plans across them; the one without runs it whole.
    let plans = &report["plans"];
    let (dist_plan, one_plan) = (
        plans["dist"].as_str().unwrap(),
        plans["one"].as_str().unwrap(),
    );
    assert!(dist_plan.contains("DistributedExec"), "{dist_plan}");
    assert_eq!(scan_tasks(dist_plan), 4, "two per worker: {dist_plan}");
    assert!(!one_plan.contains("DistributedExec"), "{one_plan}");
    assert_eq!(scan_tasks(one_plan), 1, "{one_plan}");

    // Same answers, query by query, and the per-user figures are what was pushed.
    for (name, pair) in report["answers"].as_object().unwrap() {
        let pair = pair.as_array().unwrap();
        assert!(!pair[1].as_array().unwrap().is_empty(), "{name}: no rows");
        assert_eq!(pair[0], pair[1], "{name}: distributed vs one node");
    }
    let per_user = report["answers"]["per_user"][0].as_array().unwrap();
    assert_eq!(per_user.len(), USERS as usize);
    for row in per_user {
        let (n, total, low, high) = pushed[row[0].as_str().unwrap()];
        assert_eq!(row[2], json!(n), "{row}");
        assert_eq!(row[3].as_f64(), Some(total), "{row}");
        assert_eq!(
            (row[4].as_f64(), row[5].as_f64()),
            (Some(low), Some(high)),
            "{row}"
        );
    }
    // A time filter reaches the store: only its window is read, on both nodes.
    let six_hours = report["answers"]["six_hours"][0].as_array().unwrap();
    assert_eq!(six_hours.len(), USERS as usize);
    assert!(
        six_hours.iter().all(|r| r[1] == json!(360)),
        "{six_hours:?}"
    );
    for which in ["dist_six_hours", "one_six_hours"] {
        let plan = plans[which].as_str().unwrap();
        let window = "window=[1738454400000000, 1738476000000000)";
        assert!(plan.contains(window), "{which}: {plan}");
    }
    let in_workouts = report["answers"]["in_workouts"][0].as_array().unwrap();
    assert_eq!(in_workouts.len(), USERS as usize);
    assert!(
        in_workouts.iter().all(|r| r[1] == json!(120)),
        "{in_workouts:?}"
    );
    let expected = report["answers"]["per_user"][1].clone();

    // A plan without the token is refused: a node whose token differs gets the worker's error.
    let dir_c = tempfile::tempdir().unwrap();
    let mut wrong_env = env.clone();
    wrong_env.retain(|(k, _)| *k != "WEARHOUSE_WORKER_TOKEN");
    wrong_env.push(("WEARHOUSE_WORKER_TOKEN", "not-the-workers-token"));
    let wrong = Server::start_with(dir_c.path(), &args, "warn", &wrong_env);
    let wrong_uri = format!("grpc://{}", wrong.flight.clone().unwrap());
    let refused = run(&["loop", &wrong_uri, &key, "0.1"]);
    let first: Value = serde_json::from_str(refused.lines().next().unwrap()).unwrap();
    let error = first["error"].as_str().unwrap_or_default();
    assert!(error.contains("shared token"), "{first}");
    drop(wrong);

    // Statements back to back; one worker killed once the first has answered, and the loop
    // stopped once two statements planned after the kill have answered (or after a minute).
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/distributed_check.py");
    let mut looping = provision::python_script(&script)
        .args(["loop", &dist_uri, &key, "300"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let lines = BufReader::new(looping.stdout.take().unwrap()).lines();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                return;
            }
        }
    });
    let next = |wait: Duration| rx.recv_timeout(wait).ok();
    let first = next(Duration::from_secs(120)).expect("a first statement's outcome");
    // A statement takes about half a second here: the next one is running by now.
    let mut outcomes = vec![first];
    tokio::time::sleep(Duration::from_millis(250)).await;
    workers[1].kill();
    let killed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let until = std::time::Instant::now() + Duration::from_secs(60);
    let mut after = 0;
    while after < 2 && std::time::Instant::now() < until {
        let Some(outcome) = next(Duration::from_secs(5)) else {
            continue;
        };
        if outcome.get("rows").is_some() && outcome["t"].as_f64().unwrap() > killed + 1.5 {
            after += 1;
        }
        outcomes.push(outcome);
    }
    let _ = looping.kill();
    let _ = looping.wait();
    let mut failed = Vec::new();
    for outcome in &outcomes {
        match outcome.get("rows") {
            Some(rows) => assert_eq!(rows, &expected, "a wrong answer: {outcome}"),
            None => failed.push(outcome["error"].as_str().unwrap().to_owned()),
        }
    }
    // A statement the kill broke says so, and that running it again works.
    for error in &failed {
        assert!(error.contains("a worker was lost"), "{error}");
    }
    let answered = |from: f64, to: f64| {
        outcomes
            .iter()
            .filter(|o| o.get("rows").is_some())
            .filter(|o| (from..to).contains(&o["t"].as_f64().unwrap()))
            .count()
    };
    assert!(
        answered(0.0, killed) > 0,
        "nothing answered before the kill: {outcomes:?}"
    );
    assert!(
        answered(killed + 1.5, f64::MAX) > 0,
        "nothing answered on the survivor: {failed:?}"
    );
    // After the kill, everything ends well: planned on the survivor alone.
    let after: Value = serde_json::from_str(&run(&["compare", &dist_uri, &one_uri, &key])).unwrap();
    assert_eq!(after["answers"]["per_user"][0], expected);
    let plan = after["plans"]["dist"].as_str().unwrap();
    assert!(plan.contains("DistributedExec"), "{plan}");
    assert_eq!(scan_tasks(plan), 2, "two tasks on the survivor: {plan}");
}

/// How many tasks the plan's store scan is split into (its display: `tasks=[n, n, ...]`).
fn scan_tasks(plan: &str) -> usize {
    let (_, rest) = plan
        .split_once("StoreScanExec:")
        .expect("a store scan in the plan");
    let (_, tasks) = rest.split_once("tasks=[").expect("the scan's tasks");
    let (tasks, _) = tasks.split_once(']').unwrap();
    tasks.split(", ").count()
}
