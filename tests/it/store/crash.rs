//! End-to-end crash consistency: the real `wearhouse` binary is killed with SIGKILL at random
//! (seeded) moments while clients push multi-dataset bodies, then restarted on the same data
//! dir. Every push must come back fully visible or fully absent, and every acknowledged push
//! fully visible.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::support::server::{Server, create_team};

const ROUNDS: usize = 20;
const WRITERS: usize = 4;
/// Samples per timeseries resource in one push.
const SAMPLES: u64 = 100;
/// The timeseries resources every push carries (plus one workout).
const RESOURCES: [(&str, &str); 3] = [
    ("heartrate", "bpm"),
    ("steps", "count"),
    ("respiratory_rate", "breaths/min"),
];

/// Seconds after 2025-01-01T00:00:00Z of push `n`'s first sample: pushes never overlap.
fn first_second(n: u64) -> u64 {
    n * 1000
}

fn at(seconds: u64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z").unwrap();
    (base + chrono::Duration::seconds(seconds as i64))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Push `n`: `SAMPLES` samples of each resource and one workout `p{n}`, four datasets.
fn body(n: u64) -> Value {
    let start = first_second(n);
    let mut series = serde_json::Map::new();
    for (name, unit) in RESOURCES {
        let samples: Vec<Value> = (start..start + SAMPLES)
            .map(|s| json!({"timestamp": at(s), "unit": unit, "value": (s % 50) as f64 + 1.0}))
            .collect();
        series.insert(name.to_owned(), Value::Array(samples));
    }
    json!({
        "provider": "apple_health_kit",
        "source": {"type": "watch"},
        "workouts": [{"id": format!("p{n}"), "session_start": at(start), "session_end": at(start + 600)}],
        "timeseries": series,
    })
}

/// Which of `pushes` each of the four datasets holds, by push number.
async fn visible(
    http: &reqwest::Client,
    server: &Server,
    key: &str,
    user: &str,
    pushes: std::ops::Range<u64>,
) -> Vec<HashSet<u64>> {
    let get = |path: String| {
        let (http, url, key) = (http.clone(), server.url(&path), key.to_owned());
        async move {
            let r = http
                .get(url)
                .header("x-service-api-key", key)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "reading after the crash failed");
            r.json::<Value>().await.unwrap()
        }
    };
    let range = format!(
        "start_date={}&end_date={}",
        at(first_second(pushes.start)),
        at(first_second(pushes.end))
    );
    let mut out = Vec::new();
    for (name, _) in RESOURCES {
        let samples = get(format!("/v2/timeseries/{user}/{name}?{range}")).await;
        let base = chrono::DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z").unwrap();
        let mut seconds = HashSet::new();
        for s in samples.as_array().unwrap() {
            let t = chrono::DateTime::parse_from_rfc3339(s["timestamp"].as_str().unwrap()).unwrap();
            assert!(
                seconds.insert((t - base).num_seconds() as u64),
                "{name}: sample twice"
            );
        }
        let pushes: HashSet<u64> = seconds.iter().map(|s| s / 1000).collect();
        for n in &pushes {
            let whole =
                (first_second(*n)..first_second(*n) + SAMPLES).all(|t| seconds.contains(&t));
            assert!(whole, "{name}: push {n} torn inside one dataset");
        }
        out.push(pushes);
    }
    let workouts = get(format!("/v2/summary/workouts/{user}?{range}")).await;
    let ids = workouts["workouts"].as_array().expect("workouts array");
    out.push(
        ids.iter()
            .map(|w| w["id"].as_str().unwrap()[1..].parse().unwrap())
            .collect(),
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_dataset_pushes_are_all_or_nothing_across_sigkill() {
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(13);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let key = create_team(dir.path(), "crash", &[]);
    let http = crate::support::server::http_client(30);
    let mut server = Server::start(dir.path(), &[]);
    let user = server
        .create_user(&http, Some(&key), json!({"client_user_id": "crash"}))
        .await;
    let user = user["user_id"].as_str().unwrap().to_owned();
    let bodies: Vec<Value> = (0..2000).map(body).collect();
    let bodies = Arc::new(bodies);
    let next = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(Mutex::new(HashSet::<u64>::new()));
    let (mut sent_total, mut partial_total, mut in_flight_total) = (0, 0, 0);

    for round in 0..ROUNDS {
        let started = next.load(Ordering::SeqCst);
        let mut writers = Vec::new();
        for _ in 0..WRITERS {
            let (http, next, acked, bodies) =
                (http.clone(), next.clone(), acked.clone(), bodies.clone());
            let (url, key) = (server.url(&format!("/v2/user/{user}/data")), key.clone());
            writers.push(tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    let sent = http
                        .post(&url)
                        .header("x-service-api-key", &key)
                        .json(&bodies[n as usize])
                        .send()
                        .await;
                    match sent {
                        Ok(r) if r.status() == 200 => {
                            acked.lock().unwrap().insert(n);
                        }
                        Ok(r) => panic!("push {n} answered {}", r.status()),
                        Err(_) => return, // the server is gone
                    }
                }
            }));
        }
        let delay = rng.gen_range(50..600);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        server.kill();
        for w in writers {
            w.await.unwrap();
        }
        let sent: Vec<u64> = (started..next.load(Ordering::SeqCst)).collect();
        let clock = std::time::Instant::now();
        server = Server::start(dir.path(), &[]);
        let restart = clock.elapsed();
        let seen = visible(
            &http,
            &server,
            &key,
            &user,
            started..started + sent.len() as u64,
        )
        .await;
        let read = clock.elapsed() - restart;
        let acked = acked.lock().unwrap().clone();
        let mut partial = Vec::new();
        let mut in_flight = 0;
        for n in &sent {
            let count = seen.iter().filter(|d| d.contains(n)).count();
            if !acked.contains(n) {
                in_flight += 1;
            }
            if count != 0 && count != seen.len() {
                partial.push((*n, count));
            }
        }
        for n in sent.iter().filter(|n| acked.contains(n)) {
            assert!(
                seen.iter().all(|d| d.contains(n)),
                "round {round}: acknowledged push {n} not fully visible"
            );
        }
        eprintln!(
            "round {round}: killed after {delay} ms, {} pushes sent, {in_flight} in flight, \
             {} partly visible {partial:?} (restart {restart:?}, read back {read:?})",
            sent.len(),
            partial.len()
        );
        sent_total += sent.len();
        in_flight_total += in_flight;
        partial_total += partial.len();
    }
    // Nothing a later recovery did removed an earlier acknowledged push.
    let all = next.load(Ordering::SeqCst);
    let seen = visible(&http, &server, &key, &user, 0..all).await;
    for n in acked.lock().unwrap().iter() {
        assert!(
            seen.iter().all(|d| d.contains(n)),
            "acknowledged push {n} lost by a later round"
        );
    }
    eprintln!(
        "seed {seed}: {ROUNDS} rounds, {sent_total} pushes, {in_flight_total} unacknowledged \
         in flight at the kill, {partial_total} partly visible"
    );
    assert_eq!(
        partial_total, 0,
        "pushes visible in part after a crash (seed {seed})"
    );
    server.kill();
}
