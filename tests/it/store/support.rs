//! Batch builders for the store tests: rows of any dataset, filled from the storage schema so
//! every table and family can be written without hand-written column lists.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray, new_null_array,
};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::DataType;
use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt};
use uuid::Uuid;
use wearhouse::schema::{Dataset, INGESTED_AT, Table, resource};
use wearhouse::store::health::{HealthStore, StoreOptions};

/// Microseconds per day.
pub const DAY: i64 = 86_400_000_000;
/// 2026-01-01T00:00:00Z in microseconds.
pub const T0: i64 = 1_767_225_600_000_000;

/// One row: what the tests vary.
#[derive(Debug, Clone)]
pub struct Row {
    pub time: i64,
    pub id: String,
    pub provider: &'static str,
    pub value: f64,
    pub ingested: i64,
}

/// A row at `time` with id `id`, value `value`, ingested at `T0`.
pub fn row(time: i64, id: &str, value: f64) -> Row {
    Row {
        time,
        id: id.to_owned(),
        provider: "oura",
        value,
        ingested: T0,
    }
}

/// A batch of `dataset` holding `rows`; columns not driven by `Row` get type-appropriate values.
pub fn batch(dataset: Dataset, rows: &[Row]) -> RecordBatch {
    let schema = dataset.schema();
    let time_col = dataset.time_column();
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| -> ArrayRef {
            let name = f.name().as_str();
            let times = || rows.iter().map(|r| r.time);
            match (name, f.data_type()) {
                ("id", _) => Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.id))),
                ("source_provider", _) => Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|r| r.provider),
                )),
                ("source_type", _) => {
                    Arc::new(StringArray::from_iter_values(rows.iter().map(|_| "watch")))
                }
                (n, _) if n == INGESTED_AT => Arc::new(
                    TimestampMicrosecondArray::from_iter_values(rows.iter().map(|r| r.ingested))
                        .with_timezone("UTC"),
                ),
                (n, DataType::Timestamp(..)) if n == time_col => Arc::new(
                    TimestampMicrosecondArray::from_iter_values(times()).with_timezone("UTC"),
                ),
                (_, DataType::Timestamp(..)) => Arc::new(
                    TimestampMicrosecondArray::from_iter_values(times().map(|t| t + 60_000_000))
                        .with_timezone("UTC"),
                ),
                (_, DataType::Date32) => Arc::new(Date32Array::from_iter_values(
                    times().map(|t| t.div_euclid(DAY) as i32),
                )),
                (_, DataType::Float64) => {
                    Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.value)))
                }
                (_, DataType::Int64) => Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|r| r.value as i64),
                )),
                (_, DataType::Int32) => {
                    Arc::new(Int32Array::from_iter_values(rows.iter().map(|_| 3600)))
                }
                (_, DataType::Boolean) => {
                    Arc::new(BooleanArray::from_iter(rows.iter().map(|_| Some(false))))
                }
                (_, DataType::Utf8) => {
                    Arc::new(StringArray::from_iter_values(rows.iter().map(|_| name)))
                }
                (_, other) => new_null_array(other, rows.len()),
            }
        })
        .collect();
    RecordBatch::try_new(schema, columns).expect("test batch matches the schema")
}

/// All batches as one (empty batch of the schema when there are none).
pub fn one(dataset: Dataset, batches: &[RecordBatch]) -> RecordBatch {
    concat_batches(&dataset.schema(), batches).expect("same schema")
}

/// The `Float64` column `name` as values.
pub fn floats(batch: &RecordBatch, name: &str) -> Vec<f64> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
        .expect("float column")
        .values()
        .to_vec()
}

/// The time column of `dataset` as microseconds (`Date32` days as midnight UTC).
pub fn times(dataset: Dataset, batch: &RecordBatch) -> Vec<i64> {
    let col = batch
        .column_by_name(dataset.time_column())
        .expect("time column");
    if let Some(ts) = col.as_any().downcast_ref::<TimestampMicrosecondArray>() {
        return ts.values().to_vec();
    }
    let days = col
        .as_any()
        .downcast_ref::<Date32Array>()
        .expect("date column");
    days.values().iter().map(|d| i64::from(*d) * DAY).collect()
}

pub fn heartrate() -> Dataset {
    Dataset::Timeseries(resource("heartrate").unwrap())
}

pub fn at(us: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(us).unwrap()
}

pub fn open(dir: &tempfile::TempDir, options: StoreOptions) -> HealthStore {
    HealthStore::open(dir.path().to_str().unwrap(), options).unwrap()
}

pub fn ids() -> (Uuid, Uuid) {
    (Uuid::new_v4(), Uuid::new_v4())
}

/// A user's folder, relative to the store, as the layout promises other engines: Hive-style
/// partitions.
pub fn user_folder(team: Uuid, user: Uuid) -> String {
    format!("team={team}/user={user}")
}

/// A dataset's folder, relative to the store: `…/dataset=sleep`,
/// `…/dataset=timeseries/resource=heartrate`.
pub fn dataset_folder(team: Uuid, user: Uuid, dataset: Dataset) -> String {
    let user = user_folder(team, user);
    match dataset {
        Dataset::Table(t) => format!("{user}/dataset={}", t.name()),
        Dataset::Timeseries(r) => format!("{user}/dataset=timeseries/resource={}", r.name),
    }
}

/// Segment files (not temp files) in a dataset folder of a local store.
pub fn segment_files(store: &HealthStore, team: Uuid, user: Uuid, dataset: Dataset) -> Vec<String> {
    let dir = store
        .root()
        .expect("a local store")
        .join(dataset_folder(team, user, dataset));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".parquet"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Where a store test keeps its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// A fresh temporary directory.
    Local,
    /// A fresh prefix in the bucket of the tests' S3-compatible server
    /// ([`crate::support::provision::s3_server`]).
    S3,
}

/// A test's store location, and a view of its files that goes around the store (through
/// `object_store` directly), so a test can look at or tamper with what the store wrote.
pub struct Site {
    pub backing: Backing,
    /// What `HealthStore::open` is given.
    pub location: String,
    /// The configuration an S3 location needs (endpoint, credentials).
    config: Vec<(String, String)>,
    files: Arc<dyn ObjectStore>,
    _dir: Option<tempfile::TempDir>,
}

impl Site {
    pub fn new(backing: Backing) -> Site {
        match backing {
            Backing::Local => {
                let dir = tempfile::tempdir().unwrap();
                let files = Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
                Site {
                    backing,
                    location: dir.path().to_str().unwrap().to_owned(),
                    config: Vec::new(),
                    files,
                    _dir: Some(dir),
                }
            }
            Backing::S3 => Site::s3(&format!("store-{}", Uuid::new_v4())),
        }
    }

    /// The site at `prefix` in the bucket of the tests' S3-compatible server.
    pub fn s3(prefix: &str) -> Site {
        let server = crate::support::provision::s3_server();
        let config: Vec<(String, String)> = s3_env()
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        let bucket = s3_bucket();
        Site {
            backing: Backing::S3,
            location: format!("s3://{}/{prefix}", server.bucket),
            config,
            files: Arc::new(PrefixStore::new(bucket, prefix)),
            _dir: None,
        }
    }

    /// Opens a store on the site with `options` (plus the site's own configuration) and no
    /// grace period for retired segments, so that a compaction removes its inputs on both
    /// backings alike; the grace period's own tests open with [`Site::open_at`].
    pub fn open(&self, options: StoreOptions) -> HealthStore {
        let options = StoreOptions {
            retired_grace: std::time::Duration::ZERO,
            ..options
        };
        self.open_at(&self.location, options)
    }

    /// Opens a store at another `location` with the site's configuration (its server and
    /// credentials).
    pub fn open_at(&self, location: &str, options: StoreOptions) -> HealthStore {
        let options = StoreOptions {
            object_store: self.config.clone(),
            ..options
        };
        HealthStore::open(location, options).unwrap()
    }

    /// The names of the files directly in `folder` (relative to the store), sorted.
    pub async fn files_in(&self, folder: &str) -> Vec<String> {
        let listed = match self
            .files
            .list_with_delimiter(Some(&ObjectPath::from(folder)))
            .await
        {
            Ok(listed) => listed.objects,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(e) => panic!("listing {folder}: {e}"),
        };
        let mut names: Vec<String> = listed
            .iter()
            .filter_map(|m| m.location.filename().map(str::to_owned))
            .collect();
        names.sort();
        names
    }

    /// The segment files of a dataset, sorted.
    pub async fn segment_files(&self, team: Uuid, user: Uuid, dataset: Dataset) -> Vec<String> {
        let mut names = self.files_in(&dataset_folder(team, user, dataset)).await;
        names.retain(|n| n.ends_with(".parquet"));
        names
    }

    /// Every file below `folder` (relative to the store), at any depth.
    pub async fn all_files(&self, folder: &str) -> Vec<String> {
        let found: Vec<_> = self
            .files
            .list(Some(&ObjectPath::from(folder)))
            .try_collect()
            .await
            .unwrap_or_default();
        found.into_iter().map(|m| m.location.to_string()).collect()
    }

    /// The content of the file at `path`.
    pub async fn get(&self, path: &str) -> Vec<u8> {
        let got = self.files.get(&ObjectPath::from(path)).await.unwrap();
        got.bytes().await.unwrap().to_vec()
    }

    /// Writes a file behind the store's back.
    pub async fn put(&self, path: &str, bytes: &[u8]) {
        self.files
            .put(&ObjectPath::from(path), bytes.to_vec().into())
            .await
            .unwrap();
    }

    /// Removes every file below `folder` behind the store's back.
    pub async fn remove_all(&self, folder: &str) {
        for path in self.all_files(folder).await {
            self.files.delete(&ObjectPath::from(path)).await.unwrap();
        }
        if let Some(dir) = &self._dir {
            // Locally the folders go too, as `rm -r` would leave it.
            let _ = std::fs::remove_dir_all(dir.path().join(folder));
        }
    }
}

/// The whole bucket of the tests' S3-compatible server, through `object_store`'s own client
/// (what another engine would be given).
pub fn s3_bucket() -> object_store::aws::AmazonS3 {
    let server = crate::support::provision::s3_server();
    AmazonS3Builder::new()
        .with_endpoint(&server.endpoint)
        .with_allow_http(true)
        .with_access_key_id("test")
        .with_secret_access_key("test")
        .with_region("us-east-1")
        .with_bucket_name(&server.bucket)
        .build()
        .unwrap()
}

/// The standard environment variables that point `object_store` at the tests' S3 server, as a
/// `wearhouse serve` process reads them.
pub fn s3_env() -> Vec<(String, String)> {
    let server = crate::support::provision::s3_server();
    [
        ("AWS_ENDPOINT", server.endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// Runs each named store test, an `async fn(Backing)`, once on a local directory (in module
/// `local`) and once on the S3-compatible server (in module `s3`).
#[macro_export]
macro_rules! on_every_backing {
    ($($name:ident),* $(,)?) => {
        mod local {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::store::support::Backing::Local).await
                }
            )*
        }
        mod s3 {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::store::support::Backing::S3).await
                }
            )*
        }
    };
}

/// A push across two datasets: the sleep record `night` (efficiency 80) and heart-rate
/// `samples` (time in µs, bpm).
pub fn night_and_samples(samples: &[(i64, f64)]) -> Vec<(Dataset, RecordBatch)> {
    let (sleep, hr) = (Dataset::Table(Table::Sleep), heartrate());
    let samples: Vec<_> = samples.iter().map(|(t, bpm)| row(*t, "", *bpm)).collect();
    vec![
        (sleep, batch(sleep, &[row(T0, "night", 80.0)])),
        (hr, batch(hr, &samples)),
    ]
}
