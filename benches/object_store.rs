//! The health store on object storage against a local directory (criterion, seeded,
//! self-checking): `cargo bench` (module `object_store`).
//!
//! The S3-compatible server is moto's, on loopback, provisioned the way the tests provision it
//! (`tests/it/support/provision`: a virtual environment under the target directory, PyPI reachable
//! once). It is a Python server holding objects in memory, so its figures are a stand-in for a
//! real bucket's: no network latency, but a slower server than S3 itself. So the bench also
//! times the server's own share: the same objects fetched with nothing decoded. (A native
//! server from the registries was tried: `s3s-fs` keeps a side file named after the base64 of
//! each key, and the store's keys, two ids and a segment name long, exceed the file system's
//! 255-byte names.)
//!
//! Scenarios:
//! - `read 90 days of 1 Hz heart rate (7,776,000 rows), cold`, the same 90 daily segments on a
//!   local directory and in the bucket: list, fetch, decode, with the cache disabled. Checks
//!   that both return every row, and the same values. Beside them, the bucket's 90 objects
//!   fetched alone, eight at a time, nothing decoded: the server's floor. And the same 90 days
//!   once compacted (8 segments of up to 1,048,576 rows), the layout the `store.compact` job
//!   leaves.
//! - `read 90 days of 1 Hz heart rate, warm`, from a store that shares its dataset versions
//!   (`HealthStore::share_versions`) through SQLite and through PostgreSQL, beside one that does
//!   not: the difference is what the version check adds to a cached read.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use crate::heartrate_support;
use crate::{postgres, provision};

use std::sync::Arc;

use criterion::{Criterion, criterion_group};
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Float64Type;
use futures::StreamExt;
use heartrate_support::{SECOND, T0, device_samples, heartrate};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
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
        retired_grace: std::time::Duration::ZERO,
        ..StoreOptions::default()
    }
}

fn options(cache_bytes: usize) -> StoreOptions {
    StoreOptions {
        cache_bytes,
        retired_grace: std::time::Duration::ZERO,
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

/// The bucket of `server`, through `object_store`'s own client (no store around it).
fn raw_bucket(server: &provision::S3Server) -> object_store::aws::AmazonS3 {
    object_store::aws::AmazonS3Builder::new()
        .with_endpoint(&server.endpoint)
        .with_allow_http(true)
        .with_access_key_id("test")
        .with_secret_access_key("test")
        .with_region("us-east-1")
        .with_bucket_name(&server.bucket)
        .build()
        .unwrap()
}

/// Fetches every object of `paths`, eight at a time (as a store's read does); answers the
/// bytes fetched.
async fn fetch_all(bucket: &object_store::aws::AmazonS3, paths: &[ObjectPath]) -> usize {
    let sizes: Vec<usize> = futures::stream::iter(paths)
        .map(|path| async move { bucket.get(path).await.unwrap().bytes().await.unwrap().len() })
        .buffered(8)
        .collect()
        .await;
    sizes.iter().sum()
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
    let moto = provision::s3_server();
    let bucket = format!("s3://{}/{prefix}", moto.bucket);
    let ids = (Uuid::new_v4(), Uuid::new_v4());
    let cold = rt.block_on(async {
        let cold = [
            HealthStore::open(&local, options(0)).unwrap(),
            HealthStore::open(&bucket, s3_options(moto, 0)).unwrap(),
        ];
        for store in &cold {
            load(store, ids).await;
        }
        cold
    });
    let expected = rt.block_on(values(&cold[0], ids));
    assert_eq!(expected.len(), DAYS as usize * DAY_ROWS);
    assert_eq!(
        rt.block_on(values(&cold[1], ids)),
        expected,
        "the bucket holds what the directory holds"
    );

    // The same days once the `store.compact` job has merged them (segments of up to 1,048,576
    // rows: 8 instead of 90), as a user's data is most of the time. No grace period, so the
    // bucket holds the merged segments alone.
    let merged_ids = (ids.0, Uuid::new_v4());
    rt.block_on(async {
        let compacting = [
            HealthStore::open(&local, options(0)).unwrap(),
            HealthStore::open(&bucket, s3_options(moto, 0)).unwrap(),
        ];
        for store in &compacting {
            load(store, merged_ids).await;
            let report = store
                .compact(merged_ids.0, merged_ids.1, heartrate())
                .await
                .unwrap();
            assert_eq!((report.segments_merged, report.segments_written), (90, 8));
        }
    });
    for store in &cold {
        assert_eq!(rt.block_on(values(store, merged_ids)), expected);
    }

    let mut group = c.benchmark_group("object store read");
    group.sample_size(10);
    let name = "read 90 days of 1 Hz heart rate (7,776,000 rows), cold";
    let places = ["local directory", "S3 on loopback"];
    for (place, store) in places.into_iter().zip(&cold) {
        group.bench_function(format!("{name}, {place}"), |b| {
            b.iter(|| assert_eq!(whole_read(&rt, store, ids), expected.len()));
        });
        group.bench_function(format!("{name}, compacted, {place}"), |b| {
            b.iter(|| assert_eq!(whole_read(&rt, store, merged_ids), expected.len()));
        });
    }
    // The server's own share: the same segments fetched straight from the bucket, as the
    // store fetches them (eight at a time), with nothing decoded.
    let raw = raw_bucket(moto);
    let folder = ObjectPath::from(format!(
        "{prefix}/team={}/user={}/dataset=timeseries/resource=heartrate",
        ids.0, ids.1
    ));
    let segments: Vec<ObjectPath> = rt.block_on(async {
        let listed = raw.list_with_delimiter(Some(&folder)).await.unwrap();
        listed.objects.into_iter().map(|m| m.location).collect()
    });
    assert_eq!(segments.len(), DAYS as usize, "one segment per day");
    let bytes = rt.block_on(fetch_all(&raw, &segments));
    eprintln!("object store read: {bytes} bytes of segments per cold read");
    group.bench_function(
        "fetch the same 90 segments' bytes only, S3 on loopback",
        |b| b.iter(|| assert_eq!(rt.block_on(fetch_all(&raw, &segments)), bytes)),
    );

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
