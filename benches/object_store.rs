//! The health store on object storage against a local directory (criterion, seeded,
//! self-checking): `cargo bench --bench object_store`.
//!
//! Two S3-compatible servers on loopback, provisioned the way the tests provision theirs
//! (`tests/it/provision`, under the target directory, the registries reachable once):
//! - moto's (a virtual environment from PyPI), the tests' server: a Python server holding
//!   objects in memory, whose own cost dominates a cold read;
//! - `s3s-fs` (`cargo install` from crates.io): a native server over a local directory, closer
//!   to what a real bucket costs the store, minus the network.
//!
//! Scenarios:
//! - `read 90 days of 1 Hz heart rate (7,776,000 rows), cold`, the same 90 daily segments on a
//!   local directory and in each bucket: list, fetch, decode, with the cache disabled. Checks
//!   that all return every row, and the same values.
//! - `read 90 days of 1 Hz heart rate, warm`, from a store that shares its dataset versions
//!   (`HealthStore::share_versions`) through SQLite and through PostgreSQL, beside one that does
//!   not: the difference is what the version check adds to a cached read.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

#[path = "heartrate_support/mod.rs"]
mod heartrate_support;
#[path = "../tests/it/postgres.rs"]
mod postgres;
#[path = "../tests/it/provision/mod.rs"]
mod provision;

use std::sync::Arc;

use criterion::{Criterion, criterion_group};
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Float64Type;
use heartrate_support::{SECOND, T0, device_samples, heartrate};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use uuid::Uuid;
use wearhouse::store::health::{HealthStore, StoreOptions};
use wearhouse::store::metadata::MetadataStore;

const DAY_ROWS: usize = 86_400;
const DAYS: i64 = 90;

/// One day of 1 Hz samples from `start`.
fn day(start: i64, rng: &mut ChaCha8Rng) -> RecordBatch {
    device_samples(("apple_health_kit", "watch"), start, DAY_ROWS, rng)
}

/// The configuration that points a store at a provisioned S3 server.
fn s3_options(server: &provision::S3Server, cache_bytes: usize) -> StoreOptions {
    let object_store = [
        ("aws_endpoint", server.endpoint.as_str()),
        ("aws_allow_http", "true"),
        ("aws_access_key_id", "test"),
        ("aws_secret_access_key", "test"),
        ("aws_region", "us-east-1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    StoreOptions {
        cache_bytes,
        object_store,
        ..StoreOptions::default()
    }
}

fn options(cache_bytes: usize) -> StoreOptions {
    StoreOptions {
        cache_bytes,
        ..StoreOptions::default()
    }
}

/// Writes the 90 days, one segment per day (a daily sync), to `store`.
async fn load(store: &HealthStore, (team, user): (Uuid, Uuid)) {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for d in 0..DAYS {
        let batch = day(T0 + d * 86_400 * SECOND, &mut rng);
        store.write(team, user, heartrate(), batch).await.unwrap();
    }
}

/// Every value of a whole read, in order.
async fn values(store: &HealthStore, (team, user): (Uuid, Uuid)) -> Vec<f64> {
    let batches = store.read(team, user, heartrate(), None).await.unwrap();
    batches
        .iter()
        .flat_map(|b| {
            let column = b.column_by_name("value").expect("value column");
            column.as_primitive::<Float64Type>().values().to_vec()
        })
        .collect()
}

/// The rows of one whole read (what the benches time: the store's read, nothing after it).
fn whole_read(
    rt: &tokio::runtime::Runtime,
    store: &HealthStore,
    (team, user): (Uuid, Uuid),
) -> usize {
    let got = rt
        .block_on(store.read(team, user, heartrate(), None))
        .unwrap();
    got.iter().map(RecordBatch::num_rows).sum()
}

fn read(c: &mut Criterion) {
    // Multi-threaded, as the server runs: the object store's requests are driven by it.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let local = dir.path().to_str().expect("utf-8").to_owned();
    let prefix = format!("bench-{}", Uuid::new_v4());
    let (moto, native) = (provision::s3_server(), provision::native_s3_server());
    let bucket = format!("s3://{}/{prefix}", moto.bucket);
    let native_bucket = format!("s3://{}/{prefix}", native.bucket);
    let ids = (Uuid::new_v4(), Uuid::new_v4());
    let cold = rt.block_on(async {
        let cold = [
            HealthStore::open(&local, options(0)).unwrap(),
            HealthStore::open(&bucket, s3_options(moto, 0)).unwrap(),
            HealthStore::open(&native_bucket, s3_options(native, 0)).unwrap(),
        ];
        for store in &cold {
            load(store, ids).await;
        }
        cold
    });
    let expected = rt.block_on(values(&cold[0], ids));
    assert_eq!(expected.len(), DAYS as usize * DAY_ROWS);
    for store in &cold[1..] {
        assert_eq!(
            rt.block_on(values(store, ids)),
            expected,
            "the bucket holds what the directory holds"
        );
    }

    let mut group = c.benchmark_group("object store read");
    group.sample_size(10);
    let name = "read 90 days of 1 Hz heart rate (7,776,000 rows), cold";
    let places = [
        "local directory",
        "S3 on loopback (moto)",
        "S3 on loopback (s3s-fs)",
    ];
    for (place, store) in places.into_iter().zip(&cold) {
        group.bench_function(format!("{name}, {place}"), |b| {
            b.iter(|| assert_eq!(whole_read(&rt, store, ids), expected.len()));
        });
    }

    // Warm reads of the bucket: unshared, and shared through SQLite and PostgreSQL.
    let sqlite_dir = tempfile::tempdir().expect("temp dir");
    let sqlite = format!(
        "sqlite://{}?mode=rwc",
        sqlite_dir.path().join("meta.db").display()
    );
    let pg = rt.block_on(postgres::ScratchDb::create("wearhouse_bench_versions"));
    let mut warm = vec![(
        "not shared",
        HealthStore::open(&bucket, s3_options(moto, 1 << 30)).unwrap(),
    )];
    for (versions, url) in [("SQLite", &sqlite), ("PostgreSQL", &pg.url)] {
        let store = HealthStore::open(&bucket, s3_options(moto, 1 << 30)).unwrap();
        let meta = rt.block_on(MetadataStore::connect(url)).unwrap();
        store.share_versions(Arc::new(meta));
        warm.push((versions, store));
    }
    group.sample_size(100);
    let name = "read 90 days of 1 Hz heart rate, warm";
    for (versions, store) in &warm {
        assert_eq!(rt.block_on(values(store, ids)), expected);
        let hits = store.metrics().cache_hits;
        rt.block_on(values(store, ids));
        assert_eq!(store.metrics().cache_hits, hits + 1, "a warm read is a hit");
        group.bench_function(format!("{name}, versions {versions}"), |b| {
            b.iter(|| assert_eq!(whole_read(&rt, store, ids), expected.len()));
        });
    }
    group.finish();
    drop(warm);
    rt.block_on(pg.drop_db());
}

criterion_group!(benches, read);
criterion::criterion_main!(benches);
