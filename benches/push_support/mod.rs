//! Bench data loaded the way users load it: through the push API's own path, in pushes of
//! [`PUSH_ROWS`] samples. Each push is the body of a columnar push (an Arrow IPC stream in the
//! resource's wire columns, `timestamp` and `value`, no offsets), validated by
//! `data::parse_columnar` and committed by `data::store_push`: the gated all-or-nothing write,
//! the connection, the `store.compact` job's schedule and the push's events plan, as
//! `POST /v2/user/{id}/data` does. Only HTTP itself is left out; `benches/http.rs` measures it.
//!
//! A bench chooses the segment layout: [`Layout::AsPushed`] (one segment per push, before any
//! compaction ran) or [`Layout::Compacted`] (the store's `compact_due` after every push, as the
//! `store.compact` job runs it once a push is announced).

// Each bench uses a part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{Float64Array, RecordBatch, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::ipc::writer::StreamWriter;
use wearhouse::data;
use wearhouse::ingest::{Columnar, ColumnarTarget};
use wearhouse::schema::{Dataset, resource};
use wearhouse::store::health::{HealthStore, StoreOptions};
use wearhouse::store::metadata::{MetadataStore, NewUser, User};

/// Samples per push: the push API's realistic batch.
pub const PUSH_ROWS: usize = 50_000;

/// The segment layout a bench reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One segment per push: what a read finds before the `store.compact` job ran.
    AsPushed,
    /// Compacted after every push, as the `store.compact` job does.
    Compacted,
}

/// A metadata store and a health store in `dir`, with one team and one user.
pub struct Pushed {
    pub meta: MetadataStore,
    pub health: HealthStore,
    pub user: User,
    /// The team's API key (its secret).
    pub key: String,
    health_dir: PathBuf,
}

/// The heart-rate dataset.
pub fn heartrate() -> Dataset {
    Dataset::Timeseries(resource("heartrate").expect("heartrate is a resource"))
}

/// The columnar push's heart-rate body schema: the sample's instant and value.
pub fn wire_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
        Field::new("value", DataType::Float64, false),
    ]))
}

/// A wire batch of heart rate: `timestamps` (microseconds) and their `values`.
pub fn wire_batch(timestamps: Vec<i64>, values: Vec<f64>) -> RecordBatch {
    RecordBatch::try_new(
        wire_schema(),
        vec![
            Arc::new(TimestampMicrosecondArray::from(timestamps).with_timezone("UTC")),
            Arc::new(Float64Array::from(values)),
        ],
    )
    .expect("columns match the wire schema")
}

impl Pushed {
    /// Opens both stores in `dir` (SQLite metadata, local Parquet) and creates the user.
    pub async fn open(dir: &Path, options: StoreOptions) -> Pushed {
        let url = format!("sqlite://{}?mode=rwc", dir.join("meta.db").display());
        let meta = MetadataStore::connect(&url).await.expect("metadata store");
        let (team, key) = meta.create_team("bench").await.expect("team");
        let user = meta
            .create_user(
                team.id,
                NewUser {
                    client_user_id: "bench-user".to_owned(),
                    ..NewUser::default()
                },
            )
            .await
            .expect("user");
        let health_dir = dir.join("health");
        let health =
            HealthStore::open(&health_dir.display().to_string(), options).expect("health store");
        Pushed {
            meta,
            health,
            user,
            key: key.secret,
            health_dir,
        }
    }

    /// Where the health store keeps its files, to open another store over them.
    pub fn health_dir(&self) -> &Path {
        &self.health_dir
    }

    /// Pushes the heart-rate `rows` (in [`wire_schema`]) of one source, `(provider, source
    /// type)`, in pushes of [`PUSH_ROWS`] through the push API's path, leaving `layout`.
    pub async fn push_heartrate(&self, source: (&str, &str), rows: &[RecordBatch], layout: Layout) {
        self.push_heartrate_as(&self.user, source, rows, layout)
            .await;
    }

    /// [`Pushed::push_heartrate`] for another user of the team.
    pub async fn push_heartrate_as(
        &self,
        user: &User,
        (provider, source_type): (&str, &str),
        rows: &[RecordBatch],
        layout: Layout,
    ) {
        let all = datafusion::arrow::compute::concat_batches(&wire_schema(), rows).expect("concat");
        let target = ColumnarTarget {
            resource: Some("heartrate".to_owned()),
            provider: Some(provider.to_owned()),
            source_type: Some(source_type.to_owned()),
            ..ColumnarTarget::default()
        };
        for offset in (0..all.num_rows()).step_by(PUSH_ROWS) {
            let push = all.slice(offset, PUSH_ROWS.min(all.num_rows() - offset));
            let now: DateTime<Utc> = Utc::now();
            let parsed = data::parse_columnar(
                arrow_stream(&push),
                Columnar::ArrowStream,
                target.clone(),
                now,
            )
            .await
            .expect("a valid push");
            assert_eq!(parsed.total_rows(), push.num_rows());
            data::store_push(&self.meta, &self.health, user, parsed, now)
                .await
                .expect("push stored");
            if layout == Layout::Compacted {
                self.health
                    .compact_due(user.team_id, user.id, heartrate())
                    .await
                    .expect("compaction");
            }
        }
    }

    /// Pushes a JSON push body (`POST /v2/user/{id}/data`'s) through the push API's path.
    pub async fn push_json(&self, body: &serde_json::Value) {
        let bytes = bytes::Bytes::from(body.to_string());
        data::push_json(&self.meta, &self.health, &self.user, bytes, Utc::now())
            .await
            .expect("push stored");
    }

    /// Everything the user has of `dataset`, as a query's read gets it.
    pub async fn read(&self, dataset: Dataset) -> Vec<RecordBatch> {
        self.health
            .read(self.user.team_id, self.user.id, dataset, None)
            .await
            .expect("read")
    }
}

/// `batch` as the body of a columnar push.
fn arrow_stream(batch: &RecordBatch) -> bytes::Bytes {
    let mut out = Vec::new();
    let mut writer = StreamWriter::try_new(&mut out, &batch.schema()).expect("stream writer");
    writer.write(batch).expect("write batch");
    writer.finish().expect("finish stream");
    drop(writer);
    out.into()
}
