//! Memory bounds of the data plane (issue 13, items 3 and 5), measured on the real `wearhouse`
//! binary in a child process through `/proc/<pid>/status` (`VmRSS` before, `VmHWM` after):
//! - a timeseries getter over a whole month of 1 Hz heart rate answers a page, not the month,
//!   and walking every page stays under a fixed RSS increase;
//! - a 10^6-sample push (about 50 MB of JSON) stays under 4× its body size.
//!
//! Before the fix the getter took the server from ~30 MB to over 3 GB and the push added about
//! 20× its body; the bounds here are generous for a loaded 2-core machine and far below those.
//! The getter's peak varies with the machine's load (111–275 MiB seen: glibc's per-thread
//! arenas on the blocking threads that read slices), so its bound is `GETTER_BOUND`, still a
//! seventh of the 3 GB it replaced.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Float64Array, RecordBatch, StringArray, TimestampMicrosecondArray, new_null_array,
};
use serde_json::Value;

use crate::support::server::Server;
use wearhouse::schema::{Dataset, resource};
use wearhouse::store::health::{HealthStore, StoreOptions};

const MIB: u64 = 1024 * 1024;
/// Peak RSS growth allowed to the getter, on its first page and over the whole walk.
const GETTER_BOUND: u64 = 400 * MIB;

/// The demo team, with one day of demo history.
const DEMO: &[&str] = &["--demo", "--demo-days", "1"];

fn client() -> reqwest::Client {
    crate::support::server::http_client(600)
}

/// The part of a sample the walk checks (the rest is skipped unparsed).
#[derive(serde::Deserialize)]
struct Stamp {
    timestamp: String,
}

const DAY_SECONDS: i64 = 86_400;
/// 2025-01-01T00:00:00Z in microseconds.
const JAN_1: i64 = 1_735_689_600_000_000;

/// One day of 1 Hz heart rate from `apple_health_kit`'s watch, in the store's schema.
fn heart_rate_day(day: i64) -> RecordBatch {
    let schema = Dataset::Timeseries(resource("heartrate").unwrap()).schema();
    let n = DAY_SECONDS as usize;
    let first = JAN_1 + day * DAY_SECONDS * 1_000_000;
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| -> ArrayRef {
            let strings = |s: &str| Arc::new(StringArray::from(vec![s; n])) as ArrayRef;
            let micros = |v: Vec<i64>| {
                Arc::new(TimestampMicrosecondArray::from(v).with_data_type(f.data_type().clone()))
                    as ArrayRef
            };
            match f.name().as_str() {
                "timestamp" => micros((0..n as i64).map(|s| first + s * 1_000_000).collect()),
                "ingested_at" => micros(vec![JAN_1; n]),
                "unit" => strings("bpm"),
                "source_provider" => strings("apple_health_kit"),
                "source_type" => strings("watch"),
                "value" => Arc::new(Float64Array::from_iter_values(
                    (0..n).map(|s| 60.0 + (s % 40) as f64),
                )),
                _ => new_null_array(f.data_type(), n),
            }
        })
        .collect();
    RecordBatch::try_new(schema, columns).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_getter_over_a_month_of_1hz_samples_pages_in_bounded_memory() {
    const DAYS: i64 = 30;
    let dir = tempfile::tempdir().unwrap();
    let http = client();
    let server = Server::start(dir.path(), DEMO);
    let (team, user) = server.demo_team_user(&http, "month-of-1hz").await;
    server.stop();
    // Seeded through the store (a push of 2.6 M samples would take minutes in a debug build).
    let store = HealthStore::open(
        dir.path().join("health").to_str().unwrap(),
        StoreOptions::default(),
    )
    .unwrap();
    let heartrate = Dataset::Timeseries(resource("heartrate").unwrap());
    for day in 0..DAYS {
        store
            .write(team, user, heartrate, heart_rate_day(day))
            .await
            .unwrap();
    }
    drop(store);

    let server = Server::start(dir.path(), DEMO);
    let before = server.proc_status("VmRSS:");
    let path = format!("/v2/timeseries/{user}/heartrate?start_date=2025-01-01&end_date=2025-01-30");
    let (mut seen, mut pages, mut cursor) = (0usize, 0, None::<String>);
    let mut last = String::new();
    loop {
        let mut request = http
            .get(server.url(&path))
            .header("x-service-api-key", server.key());
        if let Some(c) = &cursor {
            request = request.query(&[("cursor", c)]);
        }
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status(), 200);
        let next = answer
            .headers()
            .get("x-next-cursor")
            .map(|v| v.to_str().unwrap().to_owned());
        let samples: Vec<Stamp> = answer.json().await.unwrap();
        if pages == 0 {
            let grew = server.proc_status("VmHWM:").saturating_sub(before);
            eprintln!(
                "getter, first page: {} samples, RSS before {} MiB, peak increase {} MiB",
                samples.len(),
                before / MIB,
                grew / MIB
            );
            assert!(
                grew < GETTER_BOUND,
                "the first page raised peak RSS by {} MiB",
                grew / MIB
            );
            assert_eq!(samples.len(), 100_000, "the first page is capped");
            assert_eq!(samples[0].timestamp, "2025-01-01T00:00:00Z");
            assert!(next.is_some(), "a capped page carries x-next-cursor");
        }
        let first = samples[0].timestamp.clone();
        assert!(
            first > last,
            "pages follow each other: {first} after {last}"
        );
        last = samples.last().unwrap().timestamp.clone();
        seen += samples.len();
        pages += 1;
        match next {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen, (DAYS * DAY_SECONDS) as usize, "every sample once");
    assert_eq!(last, "2025-01-30T23:59:59Z");
    let grew = server.proc_status("VmHWM:").saturating_sub(before);
    eprintln!(
        "getter: {pages} pages, RSS before {} MiB, peak increase {} MiB",
        before / MIB,
        grew / MIB
    );
    assert!(
        grew < GETTER_BOUND,
        "walking a month of 1 Hz samples raised peak RSS by {} MiB",
        grew / MIB
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_sample_push_costs_at_most_four_times_its_body() {
    const SAMPLES: i64 = 1_000_000;
    let dir = tempfile::tempdir().unwrap();
    let http = client();
    let server = Server::start(dir.path(), &[DEMO, &["--body-limit", "100000000"]].concat());
    let (_, user) = server.demo_team_user(&http, "big-push").await;
    let mut body = String::with_capacity(60 * 1024 * 1024);
    body.push_str(
        r#"{"provider":"apple_health_kit","source":{"type":"watch"},"timeseries":{"heartrate":["#,
    );
    for s in 0..SAMPLES {
        if s > 0 {
            body.push(',');
        }
        let t = chrono::DateTime::from_timestamp(JAN_1 / 1_000_000 + s, 0).unwrap();
        body.push_str(&format!(
            r#"{{"timestamp":"{}","unit":"bpm","value":{}}}"#,
            t.format("%Y-%m-%dT%H:%M:%SZ"),
            60 + s % 40
        ));
    }
    body.push_str("]}}");
    let size = body.len() as u64;
    let before = server.proc_status("VmRSS:");
    let answer = http
        .post(server.url(&format!("/v2/user/{user}/data")))
        .header("x-service-api-key", server.key())
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let stored: Value = answer.json().await.unwrap();
    assert_eq!(stored["stored"]["timeseries"]["heartrate"], SAMPLES);
    let grew = server.proc_status("VmHWM:").saturating_sub(before);
    eprintln!(
        "push: body {} MiB, RSS before {} MiB, peak increase {} MiB ({:.1}x the body)",
        size / MIB,
        before / MIB,
        grew / MIB,
        grew as f64 / size as f64
    );
    assert!(
        grew < 4 * size,
        "a {} MiB push raised peak RSS by {} MiB",
        size / MIB,
        grew / MIB
    );
}
