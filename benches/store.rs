//! Health-store benches (criterion, seeded, self-checking): `cargo bench` (module `store`).
//!
//! Scenarios:
//! - `push 1,000,000 heart-rate samples in batches of 10,000`, sequential (every write waits
//!   for its fsyncs) and with 8 writes in flight (as concurrent pushes are; the file system
//!   batches their journal commits);
//! - `read 90 days of 1 Hz heart rate (7,776,000 rows)`: cold (cache disabled: list, fetch,
//!   decode Parquet) and warm (cached), on a current-thread runtime;
//! - `read one day of 90 days of 1 Hz heart rate, cold`: segment pruning at work;
//! - `read 90 days of 1 Hz heart rate from two devices, pushed (15,552,000 rows)`, cold and
//!   warm: a watch and a ring covering the same 90 days, each pushed through the push API's
//!   path (`push_support`: columnar pushes of 50,000 samples, validated and committed as
//!   `POST /v2/user/{id}/data` does) with the `store.compact` job's compaction after every push,
//!   so the layout is the one pushes leave: each device's segments disjoint, the two devices'
//!   segments overlapping in time. Checks that the read resolves nothing and returns every row.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use chrono::DateTime;
use criterion::{Criterion, Throughput, criterion_group};
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, TimestampMicrosecondType};
use futures::{StreamExt, TryStreamExt};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use uuid::Uuid;
use wearhouse::store::health::{HealthStore, StoreOptions};

use crate::heartrate_support;

use heartrate_support::{SECOND, T0, device_samples, heartrate};

use crate::push_support;
use push_support::{Layout, Pushed};
const DAY_ROWS: usize = 86_400;

/// `rows` 1 Hz samples from `start`, values a seeded random walk in 45..=185 bpm.
fn samples(start: i64, rows: usize, rng: &mut ChaCha8Rng) -> RecordBatch {
    device_samples(("apple_health_kit", "watch"), start, rows, rng)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(|b| b.num_rows()).sum()
}

/// One push of all `batches` into a fresh store, `in_flight` writes at a time; returns the rows
/// stored.
fn push_all(rt: &tokio::runtime::Runtime, batches: &[RecordBatch], in_flight: usize) -> usize {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = HealthStore::open(dir.path().to_str().expect("utf-8"), StoreOptions::default())
        .expect("open");
    let (team, user) = (Uuid::new_v4(), Uuid::new_v4());
    rt.block_on(async {
        futures::stream::iter(batches.iter().cloned())
            .map(|batch| store.write(team, user, heartrate(), batch))
            .buffer_unordered(in_flight)
            .map_ok(|receipt| receipt.rows)
            .try_fold(0, |acc, n| async move { Ok(acc + n) })
            .await
            .expect("writes succeed")
    })
}

/// 1,000,000 samples in 100 batches of 10,000.
fn push_batches() -> Vec<RecordBatch> {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    (0..100)
        .map(|i| samples(T0 + i * 10_000 * SECOND, 10_000, &mut rng))
        .collect()
}

fn push(c: &mut Criterion) {
    let rt = runtime();
    let batches = push_batches();
    let mut group = c.benchmark_group("store push");
    group
        .sample_size(10)
        .throughput(Throughput::Elements(1_000_000));
    for in_flight in [1usize, 8] {
        let name = format!(
            "push 1,000,000 heart-rate samples in batches of 10,000, {in_flight} in flight"
        );
        group.bench_function(name, |b| {
            b.iter(|| assert_eq!(push_all(&rt, &batches, in_flight), 1_000_000));
        });
    }
    group.finish();
}

/// A store holding 90 days of 1 Hz heart rate, one segment per day (a daily sync).
fn ninety_days(rt: &tokio::runtime::Runtime, dir: &std::path::Path) -> (Uuid, Uuid) {
    let store =
        HealthStore::open(dir.to_str().expect("utf-8"), StoreOptions::default()).expect("open");
    let (team, user) = (Uuid::new_v4(), Uuid::new_v4());
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    rt.block_on(async {
        for day in 0..90 {
            let batch = samples(T0 + day * 86_400 * SECOND, DAY_ROWS, &mut rng);
            store
                .write(team, user, heartrate(), batch)
                .await
                .expect("write");
        }
    });
    (team, user)
}

/// A store on `path` without a cache (every read lists, fetches and decodes) and one whose
/// cache holds a whole dataset.
fn cold_and_warm(path: &std::path::Path) -> (HealthStore, HealthStore) {
    let open = |cache_bytes| {
        let options = StoreOptions {
            cache_bytes,
            ..StoreOptions::default()
        };
        HealthStore::open(path.to_str().expect("utf-8"), options).expect("open")
    };
    (open(0), open(1 << 30))
}

/// Benches whole-dataset reads of `store` under `name`, each checked to hold `expected` rows.
fn bench_whole_reads(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    name: &str,
    store: &HealthStore,
    (team, user): (Uuid, Uuid),
    expected: usize,
) {
    group.bench_function(name, |b| {
        b.iter(|| {
            let got = rt
                .block_on(store.read(team, user, heartrate(), None))
                .expect("read");
            assert_eq!(rows(&got), expected);
        });
    });
}

/// Checks that a second whole read of `store` is a cache hit with `expected` rows (before the
/// warm bench, so a bench filter cannot skip the check).
fn assert_cached(
    rt: &tokio::runtime::Runtime,
    store: &HealthStore,
    (team, user): (Uuid, Uuid),
    expected: usize,
) {
    let hits = store.metrics().cache_hits;
    let again = rt
        .block_on(store.read(team, user, heartrate(), None))
        .expect("read");
    assert_eq!(rows(&again), expected);
    assert!(
        store.metrics().cache_hits > hits,
        "warm reads are cache hits"
    );
}

fn read(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("temp dir");
    let (team, user) = ninety_days(&rt, dir.path());
    let (cold, warm) = cold_and_warm(dir.path());
    let all_rows = 90 * DAY_ROWS;

    let mut group = c.benchmark_group("store read");
    group
        .sample_size(10)
        .throughput(Throughput::Elements(all_rows as u64));
    let name = "read 90 days of 1 Hz heart rate (7,776,000 rows)";
    bench_whole_reads(
        &mut group,
        &rt,
        &format!("{name}, cold"),
        &cold,
        (team, user),
        all_rows,
    );
    assert_eq!(
        rows(
            &rt.block_on(warm.read(team, user, heartrate(), None))
                .expect("read")
        ),
        all_rows
    );
    assert_cached(&rt, &warm, (team, user), all_rows);
    group.sample_size(100);
    bench_whole_reads(
        &mut group,
        &rt,
        &format!("{name}, warm"),
        &warm,
        (team, user),
        all_rows,
    );

    group.throughput(Throughput::Elements(DAY_ROWS as u64));
    let day = |d: i64| DateTime::from_timestamp_micros(T0 + d * 86_400 * SECOND).expect("instant");
    group.bench_function("read one day of 90 days of 1 Hz heart rate, cold", |b| {
        b.iter(|| {
            let got = rt
                .block_on(cold.read(team, user, heartrate(), Some(day(45)..day(46))))
                .expect("read");
            assert_eq!(rows(&got), DAY_ROWS);
        });
    });
    group.finish();
}

/// 90 days of 1 Hz heart rate from a watch and from a ring pushed through the push API's path
/// (`push_support`) in `dir`, the watch first, compacted after every push as the
/// `store.compact` job does; answers the pushing user's (team, user) and the store's folder.
fn two_devices_pushed(
    rt: &tokio::runtime::Runtime,
    dir: &std::path::Path,
) -> ((Uuid, Uuid), std::path::PathBuf) {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let total = 90 * DAY_ROWS;
    rt.block_on(async {
        let pushed = Pushed::open(dir, StoreOptions::default()).await;
        for device in [("apple_health_kit", "watch"), ("oura", "ring")] {
            let rows = device_samples(device, T0, total, &mut rng);
            let wire = push_support::wire_batch(
                rows.column_by_name("timestamp")
                    .expect("timestamp")
                    .as_primitive::<TimestampMicrosecondType>()
                    .values()
                    .to_vec(),
                rows.column_by_name("value")
                    .expect("value")
                    .as_primitive::<Float64Type>()
                    .values()
                    .to_vec(),
            );
            pushed
                .push_heartrate(device, &[wire], Layout::Compacted)
                .await;
        }
        (
            (pushed.user.team_id, pushed.user.id),
            pushed.health_dir().to_path_buf(),
        )
    })
}

fn read_two_devices(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("temp dir");
    let ((team, user), health_dir) = two_devices_pushed(&rt, dir.path());
    let (cold, warm) = cold_and_warm(&health_dir);
    let all_rows = 2 * 90 * DAY_ROWS;
    let mut group = c.benchmark_group("store read");
    group
        .sample_size(10)
        .throughput(Throughput::Elements(all_rows as u64));
    let name = "read 90 days of 1 Hz heart rate from two devices, pushed (15,552,000 rows)";
    bench_whole_reads(
        &mut group,
        &rt,
        &format!("{name}, cold"),
        &cold,
        (team, user),
        all_rows,
    );
    let m = cold.metrics();
    assert_eq!(
        m.rows_resolved, 0,
        "two devices' rows never replace each other"
    );
    eprintln!(
        "store read/two devices: {} segments per cold read",
        m.segments_read / m.cache_misses.max(1)
    );
    let first = rt
        .block_on(warm.read(team, user, heartrate(), None))
        .expect("read");
    assert_eq!(rows(&first), all_rows);
    eprintln!(
        "store read/two devices: the cached result holds {} MiB (the default cache: {} MiB)",
        warm.cache_bytes() >> 20,
        StoreOptions::default().cache_bytes >> 20
    );
    assert_cached(&rt, &warm, (team, user), all_rows);
    group.sample_size(100);
    bench_whole_reads(
        &mut group,
        &rt,
        &format!("{name}, warm"),
        &warm,
        (team, user),
        all_rows,
    );
    group.finish();
}

criterion_group!(benches, push, read, read_two_devices);
