//! Scale-out (`spec/scale-out.md`): two real `wearhouse serve` processes on one PostgreSQL
//! database (the machine's) and one bucket of a real S3-compatible server (moto's, provisioned
//! by the tests), under concurrent pushes and queries at both, with compaction running, and then
//! with one of them killed by SIGKILL mid-load.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::Row;

use crate::support::server::{Server, SharedStores, http_client};

/// Heart-rate samples per push; push `n` holds seconds `n * 1000 ..` of them.
const SAMPLES: u64 = 50;
/// Pushes before the crash, spread over both processes.
const CALM_PUSHES: u64 = 40;
/// Writers pushing at once.
const WRITERS: usize = 4;

fn at(seconds: u64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z").unwrap();
    (base + chrono::Duration::seconds(seconds as i64))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Push `n`: `SAMPLES` heart-rate samples and one workout `p{n}`: two datasets, so each push
/// is a multi-dataset commit.
fn body(n: u64) -> Value {
    let start = n * 1000;
    let samples: Vec<Value> = (start..start + SAMPLES)
        .map(|s| json!({"timestamp": at(s), "unit": "bpm", "value": (s % 60) as f64 + 50.0}))
        .collect();
    json!({
        "provider": "apple_health_kit",
        "source": {"type": "watch"},
        "workouts": [{"id": format!("p{n}"), "session_start": at(start), "session_end": at(start + 600)}],
        "timeseries": {"heartrate": samples},
    })
}

/// What one server answers for the user: heart-rate seconds, and workout push numbers (read
/// in that order).
async fn contents(
    http: &reqwest::Client,
    server: &Server,
    key: &str,
    user: &str,
) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let range = format!("start_date={}&end_date={}", at(0), at(1_000_000));
    let get = |path: String| {
        let request = http
            .get(server.url(&path))
            .header("x-service-api-key", key)
            .send();
        async move {
            let answer = request.await.unwrap();
            assert_eq!(answer.status(), 200);
            answer.json::<Value>().await.unwrap()
        }
    };
    let base = chrono::DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z").unwrap();
    let mut seconds = BTreeSet::new();
    let samples = get(format!("/v2/timeseries/{user}/heartrate?{range}")).await;
    for s in samples.as_array().expect("samples") {
        let t = chrono::DateTime::parse_from_rfc3339(s["timestamp"].as_str().unwrap()).unwrap();
        assert!(
            seconds.insert((t - base).num_seconds() as u64),
            "a sample twice"
        );
    }
    let workouts = get(format!("/v2/summary/workouts/{user}?{range}")).await;
    let pushes = workouts["workouts"]
        .as_array()
        .expect("workouts")
        .iter()
        .map(|w| w["id"].as_str().unwrap()[1..].parse().unwrap())
        .collect();
    (seconds, pushes)
}

/// The seconds pushes `ns` hold.
fn seconds_of(ns: &BTreeSet<u64>) -> BTreeSet<u64> {
    ns.iter()
        .flat_map(|n| n * 1000..n * 1000 + SAMPLES)
        .collect()
}

/// Pushes numbered from `next` by `WRITERS` writers, each to `targets[n % len]`, until
/// `stop` or `until` pushes; acknowledged numbers go to `acked`. A writer whose server is gone
/// moves on to the next number.
fn spawn_writers(
    http: &reqwest::Client,
    targets: Vec<String>,
    key: &str,
    next: &Arc<AtomicU64>,
    until: u64,
    acked: &Arc<Mutex<BTreeSet<u64>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..WRITERS)
        .map(|_| {
            let (http, targets, key) = (http.clone(), targets.clone(), key.to_owned());
            let (next, acked) = (next.clone(), acked.clone());
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= until {
                        return;
                    }
                    let url = &targets[n as usize % targets.len()];
                    let sent = http
                        .post(url)
                        .header("x-service-api-key", &key)
                        .json(&body(n))
                        .send()
                        .await;
                    match sent {
                        Ok(r) if r.status() == 200 => {
                            acked.lock().unwrap().insert(n);
                        }
                        Ok(r) => panic!("push {n} answered {}", r.status()),
                        Err(_) => {} // that server is gone
                    }
                }
            })
        })
        .collect()
}

/// A webhook receiver whose first request is never answered, so the process sending it holds
/// its `webhook.deliver` job until it dies; every later request is answered 204 at once. It
/// notes each request's `webhook-id` (the event id) as it arrives, and those it answered.
struct HangingHook {
    url: String,
    arrived: Arc<Mutex<Vec<String>>>,
    answered: Arc<Mutex<BTreeSet<String>>>,
}

impl HangingHook {
    async fn start() -> HangingHook {
        let arrived: Arc<Mutex<Vec<String>>> = Arc::default();
        let answered: Arc<Mutex<BTreeSet<String>>> = Arc::default();
        let (seen, done) = (arrived.clone(), answered.clone());
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: axum::http::HeaderMap| {
                let (seen, done) = (seen.clone(), done.clone());
                async move {
                    let id = headers
                        .get("webhook-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    let first = {
                        let mut seen = seen.lock().unwrap();
                        seen.push(id.clone());
                        seen.len() == 1
                    };
                    if first {
                        std::future::pending::<()>().await;
                    }
                    done.lock().unwrap().insert(id);
                    axum::http::StatusCode::NO_CONTENT
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        HangingHook {
            url,
            arrived,
            answered,
        }
    }

    fn arrived(&self) -> Vec<String> {
        self.arrived.lock().unwrap().clone()
    }
}

/// One row of the jobs table.
#[derive(Debug)]
struct Job {
    id: String,
    kind: String,
    state: String,
    owner: String,
    run_at: chrono::DateTime<chrono::Utc>,
    /// Read in failure messages (through `Debug`).
    #[allow(dead_code)]
    last_error: String,
}

/// The compaction, announcing and delivery jobs, in any state.
async fn background_jobs(meta: &wearhouse::store::metadata::MetadataStore) -> Vec<Job> {
    let rows = sqlx::query(
        "SELECT id, kind, state, lease_owner, run_at, last_error FROM jobs \
         WHERE kind IN ('store.compact', 'events.push', 'webhook.deliver')",
    )
    .fetch_all(&mut *meta.reader().await.unwrap())
    .await
    .unwrap();
    rows.iter()
        .map(|r| {
            let text = |c: &str| r.get::<Option<String>, _>(c).unwrap_or_default();
            Job {
                id: text("id"),
                kind: text("kind"),
                state: text("state"),
                owner: text("lease_owner"),
                run_at: text("run_at").parse().expect("an RFC 3339 run_at"),
                last_error: text("last_error"),
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_one_database_and_bucket_serve_the_same_users_through_a_crash() {
    let shared = SharedStores::new("scale-out").await;
    let (db, bucket, key) = (&shared.db, &shared.bucket, shared.key.clone());
    let [dir_a, dir_b] = &shared.dirs;
    let env = shared.env();
    let mut args = shared.args();
    args.extend([
        "--job-lease-secs",
        "3",
        "--compaction-delay-secs",
        "2",
        "--compaction-grace-secs",
        "2",
        "--webhook-allow-private",
    ]);
    let a = Server::start_with(dir_a.path(), &args, "warn", &env);
    let b = Server::start_with(dir_b.path(), &args, "warn", &env);
    let http = http_client(30);
    let user = a
        .create_user(&http, Some(&key), json!({"client_user_id": "two-nodes"}))
        .await;
    let user = user["user_id"].as_str().unwrap().to_owned();
    let push_url = |s: &Server| s.url(&format!("/v2/user/{user}/data"));

    // Concurrent pushes at both, with queries at both meanwhile; the store.compact jobs merge
    // as they go (every 8 segments of a dataset).
    let next = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let writers = spawn_writers(
        &http,
        vec![push_url(&a), push_url(&b)],
        &key,
        &next,
        CALM_PUSHES,
        &acked,
    );
    let clock = Instant::now();
    let mut queries = 0;
    while !writers.iter().all(|w| w.is_finished()) {
        for server in [&a, &b] {
            // Samples are read before workouts, so every push whose samples were seen has its
            // workout seen too; and every push's samples appear whole.
            let (seconds, pushes) = contents(&http, server, &key, &user).await;
            let sampled: BTreeSet<u64> = seconds.iter().map(|s| s / 1000).collect();
            assert_eq!(
                seconds,
                seconds_of(&sampled),
                "a push torn inside a dataset"
            );
            assert!(sampled.is_subset(&pushes), "a push torn across datasets");
            queries += 1;
        }
    }
    for w in writers {
        w.await.unwrap();
    }
    eprintln!(
        "scale-out: calm pushes in {:?}, {queries} queries",
        clock.elapsed()
    );
    let calm: BTreeSet<u64> = acked.lock().unwrap().clone();
    assert_eq!(calm.len() as u64, CALM_PUSHES, "every push acknowledged");
    assert!(queries >= 2, "queries ran during the pushes");
    // Every acknowledged write is visible from both, the same at both (either may hold the
    // dataset cached: the shared versions keep it exact).
    let from_a = contents(&http, &a, &key, &user).await;
    let from_b = contents(&http, &b, &key, &user).await;
    assert_eq!(from_a.1, calm);
    assert_eq!(from_a.0, seconds_of(&calm));
    assert_eq!(from_a, from_b);

    // Wait for the compaction jobs, then check that they merged in the bucket (an output has a
    // generation above 0) and that nothing changed for readers.
    let meta = wearhouse::store::metadata::MetadataStore::connect(&db.url)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let jobs = background_jobs(&meta).await;
        if jobs.iter().all(|j| j.state == "succeeded") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "background jobs never finished: {jobs:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "scale-out: calm pushes and their jobs in {:?}",
        clock.elapsed()
    );
    let files = bucket.all_files("").await;
    let merged = files
        .iter()
        .filter(|f| f.ends_with(".parquet"))
        .filter(|f| {
            let name = f.rsplit('/').next().unwrap();
            name.split('-')
                .nth(1)
                .is_some_and(|generation| generation != "0000")
        })
        .count();
    assert!(merged > 0, "no compaction output in the bucket: {files:?}");
    // The merged inputs were retired, and removed by the jobs once their grace period (2 s)
    // was over.
    let retired: Vec<&String> = files.iter().filter(|f| f.contains("/_retired-")).collect();
    assert!(retired.is_empty(), "retirements never swept: {retired:?}");
    assert_eq!(contents(&http, &a, &key, &user).await, from_b);
    assert_eq!(contents(&http, &b, &key, &user).await, from_b);

    // A webhook endpoint whose first delivery is never answered: one push later, one process
    // holds a `webhook.deliver` job, waiting on it. That process is the one killed.
    let hook = HangingHook::start().await;
    let endpoint = http
        .post(a.url("/v2/team/webhooks"))
        .header("x-service-api-key", &key)
        .json(&json!({ "url": hook.url }))
        .send()
        .await
        .unwrap();
    assert_eq!(endpoint.status(), 200);
    let endpoint: Value = endpoint.json().await.unwrap();
    let endpoint = endpoint["id"].as_str().unwrap().to_owned();
    let urls = vec![push_url(&a), push_url(&b)];
    // (Finished writers each took one number past their last.)
    let one_more = next.load(Ordering::SeqCst) + 1;
    let trigger = spawn_writers(&http, urls.clone(), &key, &next, one_more, &acked);
    for w in trigger {
        w.await.unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let (hung, holder) = loop {
        let sending = background_jobs(&meta)
            .await
            .into_iter()
            .find(|j| j.kind == "webhook.deliver" && j.state == "running");
        if let (Some(job), Some(hung)) = (sending, hook.arrived().first().cloned()) {
            break (hung, job);
        }
        if Instant::now() > deadline {
            let events: i64 = sqlx::query("SELECT COUNT(*) AS n FROM events")
                .fetch_one(&mut *meta.reader().await.unwrap())
                .await
                .unwrap()
                .get("n");
            panic!(
                "no delivery was ever sent: {events} events, jobs {:?}",
                background_jobs(&meta).await
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let a_holds = holder.owner.contains(&format!(":{}:", a.pid()));
    let (victim, survivor) = if a_holds { (a, b) } else { (b, a) };
    let killed_pid = victim.pid();
    let victim_owner = format!(":{killed_pid}:");
    assert!(holder.owner.contains(&victim_owner), "{holder:?}");

    // SIGKILL it in the middle of pushes to both.
    let writers = spawn_writers(&http, urls, &key, &next, CALM_PUSHES + 160, &acked);
    tokio::time::sleep(Duration::from_millis(700)).await;
    victim.kill();
    let held_by_victim: Vec<String> = background_jobs(&meta)
        .await
        .into_iter()
        .filter(|j| j.state == "running" && j.owner.contains(&victim_owner))
        .map(|j| j.id)
        .collect();
    assert!(
        held_by_victim.contains(&holder.id),
        "the delivery job was the victim's: {held_by_victim:?}"
    );
    for w in writers {
        w.await.unwrap();
    }
    let acked: BTreeSet<u64> = acked.lock().unwrap().clone();
    eprintln!(
        "scale-out: pushes through the crash in {:?}",
        clock.elapsed()
    );
    assert!(
        acked.len() as u64 > CALM_PUSHES + 10,
        "the survivor kept acknowledging after the victim died"
    );
    // The survivor takes over every job the dead process held once its claim's lease (3 s)
    // expired: it finishes it, or runs or reschedules it itself. Jobs left pending may wait
    // for push rows the crash left unreleased (`data::announce::LEASE`), never longer.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let jobs = background_jobs(&meta).await;
        let still_victims: Vec<&Job> = jobs
            .iter()
            .filter(|j| held_by_victim.contains(&j.id) && j.owner.contains(&victim_owner))
            .collect();
        if still_victims.is_empty() {
            for job in &jobs {
                assert!(
                    !job.owner.contains(&victim_owner),
                    "{job:?} still the dead process's"
                );
                let latest = chrono::Utc::now() + wearhouse::data::announce::LEASE;
                if job.state == "pending" {
                    assert!(job.run_at <= latest, "{job:?} scheduled too late");
                }
            }
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the dead process's jobs were never taken over ({killed_pid}): {still_victims:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Nothing acknowledged is lost, nothing is torn; a push whose answer the crash swallowed
    // may have landed, whole.
    let (seconds, pushes) = contents(&http, &survivor, &key, &user).await;
    assert!(acked.is_subset(&pushes), "an acknowledged push was lost");
    assert_eq!(seconds, seconds_of(&pushes), "a push torn across datasets");
    // The delivery the victim was sending is sent again by the survivor (at least once, the
    // same `webhook-id`), and every event reaches the endpoint: none lost in the crash.
    let deadline = Instant::now() + Duration::from_secs(60);
    let events = loop {
        let rows =
            sqlx::query("SELECT event_id, status FROM webhook_deliveries WHERE endpoint_id = $1")
                .bind(&endpoint)
                .fetch_all(&mut *meta.reader().await.unwrap())
                .await
                .unwrap();
        let events: BTreeSet<String> = rows.iter().map(|r| r.get("event_id")).collect();
        let answered = hook.answered.lock().unwrap().clone();
        let all_sent = rows
            .iter()
            .all(|r| r.get::<String, _>("status") == "succeeded");
        if all_sent && events.is_subset(&answered) {
            break events;
        }
        assert!(
            Instant::now() < deadline,
            "deliveries never all sent: {} events, {} answered",
            events.len(),
            answered.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        events.contains(&hung),
        "the hung delivery is the endpoint's"
    );
    let resent = hook.arrived().iter().filter(|id| **id == hung).count();
    assert!(resent >= 2, "the hung delivery was sent {resent} time(s)");
    eprintln!(
        "scale-out: {} pushes acknowledged, {} visible, {} jobs taken over from the killed process, {} events delivered",
        acked.len(),
        pushes.len(),
        held_by_victim.len(),
        events.len()
    );
    survivor.stop();
    drop(meta);
    shared.db.drop_db().await;
}
