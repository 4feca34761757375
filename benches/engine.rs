//! Aggregate engine benchmarks (criterion, seeded data, self-checking output sizes).
//!
//! Scenarios:
//! - `daily buckets, 90 days of 1/min heart rate` (129 600 rows): mean/min/max/newest/count;
//! - `hourly buckets, 90 days of 1 Hz heart rate` (7 776 000 rows): the same aggregates;
//! - both again with two fully overlapping providers (Oura ring, Apple watch) and priority on;
//! - `minute buckets, 90 days of 1/min heart rate`: one bucket per sample (129,600 groups);
//! - `encode JSON, ...` for the hourly ones: the answer's encoder alone;
//! - `compile only, 10 select expressions`.
//!
//! The data is seeded and pushed into a temporary health store as users push it (pushes of
//! 50,000 samples, one source after the other, compacted as the `store.compact` job does), then
//! read back: the engine gets exactly the batches a cached read hands it in service, in the
//! segment layout pushes leave (`through_store`).
//!
//! Run with `cargo bench --bench engine`. Diagnostics: `ENGINE_BENCH_EXPLAIN=1` prints each
//! phase's time and the physical plan with its metrics for each scenario
//! (`Engine::explain_analyze`); `ENGINE_BENCH_FUNCS=mean,newest` changes the aggregates.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::arrow::array::{
    ArrayRef, Float64Array, Int32Array, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::record_batch::RecordBatch;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use wearhouse::engine::{
    Catalog, Engine, Limits, UserContext, compile, encode_json_bytes, parse_request,
};
use wearhouse::schema::{Dataset, resource};
use wearhouse::store::health::{HealthStore, StoreOptions};

const DAYS: i64 = 90;
/// 2025-01-01T00:00:00Z in microseconds.
const START: i64 = 1_735_689_600_000_000;
const BATCH_ROWS: i64 = 65_536;

/// Heart rate every `step_seconds` for 90 days from one provider, in 64 Ki-row batches.
fn heart_rate(step_seconds: i64, provider: &str, source_type: &str, seed: u64) -> Vec<RecordBatch> {
    let schema = Dataset::Timeseries(resource("heartrate").unwrap()).schema();
    let total = DAYS * 86_400 / step_seconds;
    let mut g = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    let mut i = 0;
    while i < total {
        let n = BATCH_ROWS.min(total - i);
        let ts: Vec<i64> = (i..i + n)
            .map(|k| START + k * step_seconds * 1_000_000)
            .collect();
        let cols: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| -> ArrayRef {
                let n = n as usize;
                match f.name().as_str() {
                    "timestamp" => {
                        Arc::new(TimestampMicrosecondArray::from(ts.clone()).with_timezone("UTC"))
                    }
                    "ingested_at" => Arc::new(
                        TimestampMicrosecondArray::from(vec![START; n]).with_timezone("UTC"),
                    ),
                    "timezone_offset" => Arc::new(Int32Array::from(vec![0; n])),
                    "value" => Arc::new(Float64Array::from_iter_values(
                        (0..n).map(|_| g.gen_range(45.0..160.0)),
                    )),
                    "unit" => Arc::new(StringArray::from(vec!["bpm"; n])),
                    "source_provider" => Arc::new(StringArray::from(vec![provider; n])),
                    "source_type" => Arc::new(StringArray::from(vec![source_type; n])),
                    _ => Arc::new(StringArray::new_null(n)),
                }
            })
            .collect();
        out.push(RecordBatch::try_new(schema.clone(), cols).unwrap());
        i += n;
    }
    out
}

/// Samples per push: the push API's realistic batch.
const PUSH_ROWS: usize = 50_000;

/// What a read of the health store hands the engine once `sources` were pushed the way users
/// push: each source's rows in pushes of [`PUSH_ROWS`], one source after the other, with the
/// `store.compact` job's compaction (`compact_due`) after every push; then read back once, so
/// the engine gets exactly the batches a cached read hands it in service.
fn through_store(rt: &tokio::runtime::Runtime, sources: Vec<Vec<RecordBatch>>) -> Vec<RecordBatch> {
    let dir = tempfile::tempdir().unwrap();
    let store = HealthStore::open(dir.path().to_str().unwrap(), StoreOptions::default()).unwrap();
    let (team, user) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    let dataset = Dataset::Timeseries(resource("heartrate").unwrap());
    rt.block_on(async {
        for batches in sources {
            let all = concat_batches(&dataset.schema(), &batches).unwrap();
            for offset in (0..all.num_rows()).step_by(PUSH_ROWS) {
                let push = all.slice(offset, PUSH_ROWS.min(all.num_rows() - offset));
                store.write(team, user, dataset, push).await.unwrap();
                store.compact_due(team, user, dataset).await.unwrap();
            }
        }
        store.read(team, user, dataset, None).await.unwrap()
    })
}

fn request(unit: &str) -> serde_json::Value {
    let hr = json!({"timeseries": "heartrate", "field": "value"});
    let funcs =
        std::env::var("ENGINE_BENCH_FUNCS").unwrap_or_else(|_| "mean,min,max,newest,count".into());
    let mut select = vec![json!({"group_key": 0})];
    select.extend(funcs.split(',').map(|f| json!({"func": f, "arg": hr})));
    json!({
        "timeframe": {"anchor": "2025-03-31", "past": {"value": DAYS - 1, "unit": "day"}},
        "queries": [{
            "select": select,
            "group_by": [{"date_trunc": {"value": 1, "unit": unit}, "arg": {"index": "timeseries"}}]
        }]
    })
}

fn bench_case(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    name: &str,
    unit: &str,
    batches: Vec<RecordBatch>,
    rows: usize,
) {
    let engine = Engine::new(Limits::default()).unwrap();
    let req = parse_request(&request(unit), engine.limits()).unwrap();
    let ctx = UserContext::default();
    let dataset = Dataset::Timeseries(resource("heartrate").unwrap());
    let run = || {
        let inputs: HashMap<_, _> = [(dataset, batches.clone())].into_iter().collect();
        rt.block_on(engine.execute(&req, &ctx, inputs, engine.deadline()))
            .unwrap()
    };
    let out = run();
    assert_eq!(out[0].num_rows(), rows, "{name}: wrong number of buckets");
    if std::env::var("ENGINE_BENCH_EXPLAIN").is_ok() {
        explain(rt, &engine, &req, dataset, &batches);
    }
    c.bench_function(name, |b| b.iter(|| black_box(run())));
    if unit == "hour" {
        // The JSON answer of the same result (2,160 buckets): the encoder alone.
        let limits = engine.limits().clone();
        let bytes = encode_json_bytes(&out, &limits).unwrap();
        assert!(bytes.len() > rows * 20, "{name}: JSON answer too short");
        c.bench_function(&format!("encode JSON, {name}"), |b| {
            b.iter(|| black_box(encode_json_bytes(&out, &limits).unwrap()))
        });
    }
}

/// Prints each phase's time and the physical plan with its metrics (diagnostics only).
fn explain(
    rt: &tokio::runtime::Runtime,
    engine: &Engine,
    req: &wearhouse::engine::ValidRequest,
    dataset: Dataset,
    batches: &[RecordBatch],
) {
    for _ in 0..3 {
        let inputs: HashMap<_, _> = [(dataset, batches.to_vec())].into_iter().collect();
        let report = rt
            .block_on(engine.explain_analyze(req, &UserContext::default(), inputs))
            .unwrap();
        eprintln!("{report}");
    }
}

fn engine(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ring = heart_rate(60, "oura", "ring", 1);
    let watch = heart_rate(60, "apple_health_kit", "watch", 2);
    bench_case(
        c,
        &rt,
        "daily buckets, 90 days of 1/min heart rate",
        "day",
        through_store(&rt, vec![ring.clone()]),
        90,
    );
    bench_case(
        c,
        &rt,
        "daily buckets, 90 days of 1/min heart rate, two providers, priority on",
        "day",
        through_store(&rt, vec![ring, watch]),
        90,
    );

    bench_case(
        c,
        &rt,
        "minute buckets, 90 days of 1/min heart rate",
        "minute",
        through_store(&rt, vec![heart_rate(60, "oura", "ring", 5)]),
        90 * 1440,
    );

    let ring = heart_rate(1, "oura", "ring", 3);
    let watch = heart_rate(1, "apple_health_kit", "watch", 4);
    bench_case(
        c,
        &rt,
        "hourly buckets, 90 days of 1 Hz heart rate",
        "hour",
        through_store(&rt, vec![ring.clone()]),
        90 * 24,
    );
    bench_case(
        c,
        &rt,
        "hourly buckets, 90 days of 1 Hz heart rate, two providers, priority on",
        "hour",
        through_store(&rt, vec![ring, watch]),
        90 * 24,
    );

    let limits = Limits::default();
    let sleep = |col: &str| json!({"sleep": col});
    let body = json!({
        "timeframe": {"anchor": "2025-03-31", "past": {"value": 3, "unit": "month"}},
        "queries": [{
            "select": [
                {"group_key": "*"},
                {"func": "mean", "arg": sleep("efficiency")}, {"func": "median", "arg": sleep("duration_second")},
                {"func": "stddev", "arg": sleep("latency_second")}, {"func": "newest", "arg": {"value_macro": "chronotype"}},
                {"func": "oldest", "arg": sleep("hrv_mean_rmssd")}, {"func": "max", "arg": {"value_macro": "sleep_score"}},
                {"func": "min", "arg": sleep("heart_rate_minimum")}, {"func": "sum", "arg": sleep("stage_deep_second")}
            ],
            "group_by": [{"date_trunc": {"value": 1, "unit": "week"}, "arg": {"index": "sleep"}}],
            "where": "type = 'long_sleep' AND efficiency > 50"
        }]
    });
    let req = parse_request(&body, &limits).unwrap();
    let catalog = Catalog::new(UserContext::default(), HashMap::new()).unwrap();
    assert_eq!(
        compile(&req, 0, &catalog).unwrap().schema().fields().len(),
        9
    );
    c.bench_function("compile only, 10 select expressions", |b| {
        b.iter(|| black_box(compile(&req, 0, &catalog).unwrap()))
    });
}

criterion_group! {
    name = benches;
    // 50 samples: on a shared 2-core VM twenty left run-to-run spreads of ±20 % on the
    // millisecond cases, too wide to compare the priority ratio.
    config = Criterion::default().sample_size(50);
    targets = engine
}
criterion_main!(benches);
