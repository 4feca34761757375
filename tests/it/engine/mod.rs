//! The query engine (`src/engine/`) and the ways it is served. Here: golden query files, a
//! differential test against a simple row-by-row reference evaluator, and robustness over
//! generated bodies and WHERE strings. Beside them: ALIGN, readiness and the menstrual cycle
//! (`align`, `readiness`, `cycle`), the aggregate endpoint (`aggregate_api`), its time and memory
//! limits (`cancel`, `memory`), team-wide queries (`team`), Arrow Flight SQL (`flight`) and
//! distributed execution (`distributed`).
// Test code (helpers included): panicking on a broken fixture is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod aggregate_api;
mod align;
mod arbitrary;
mod calendar;
mod cancel;
pub(crate) mod cycle;
mod data;
mod distributed;
mod flight;
mod golden;
mod memory;
mod random;
pub mod readiness;
mod reference;
mod reference_align;
mod reference_where;
mod scenarios;
mod team;

use std::collections::{BTreeMap, HashMap};

use datafusion::arrow::array::{AsArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::take;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use wearhouse::engine::{
    Catalog, Engine, EngineError, Inputs, Limits, OutputFormat, UserContext, compile, encode_json,
    encode_parquet_tar, execute, explain_analyze, parse_request,
};
use wearhouse::schema::Dataset;

#[test]
fn golden_query_files_match_their_snapshots() {
    golden::check_all();
}

/// Equal JSON, numbers within 1e-9 relative.
fn same(a: &Value, b: &Value, path: &str) -> Result<(), String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(i), Some(j)) = (x.as_i64(), y.as_i64()) {
                return if i == j {
                    Ok(())
                } else {
                    Err(format!("{path}: {i} != {j}"))
                };
            }
            let (f, g) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            let tol = 1e-9 * f.abs().max(g.abs()).max(1e-300);
            if (f - g).abs() <= tol {
                Ok(())
            } else {
                Err(format!("{path}: {f} != {g}"))
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .try_for_each(|(i, (p, q))| same(p, q, &format!("{path}[{i}]"))),
        (Value::Object(x), Value::Object(y)) if x.keys().eq(y.keys()) => x
            .iter()
            .zip(y.values())
            .try_for_each(|((k, p), q)| same(p, q, &format!("{path}.{k}"))),
        _ if a == b => Ok(()),
        _ => Err(format!("{path}: {a} != {b}")),
    }
}

#[tokio::test]
async fn engine_agrees_with_the_reference_on_random_queries() {
    let limits = Limits::default();
    let engine = Engine::new(limits.clone()).unwrap();
    let mut failures = Vec::new();
    let (mut non_empty, mut aligned, mut subqueries) = (0, 0, 0);
    let only: Option<u64> = std::env::var("DIFF_SEED").ok().and_then(|s| s.parse().ok());
    for seed in 0..520u64 {
        if only.is_some_and(|o| o != seed) {
            continue;
        }
        let mut g = ChaCha8Rng::seed_from_u64(seed);
        let data = data_for(seed);
        let body = random::random_request(&mut g);
        let user = golden::user_context(Some(&random::random_user(&mut g)));
        let req = match parse_request(&body, &limits) {
            Ok(r) => r,
            Err(e) => panic!("seed {seed}: generated request rejected: {:?}\n{body}", e.0),
        };
        let got = engine
            .execute(
                &req,
                &user,
                Inputs::new(data::batches(&data)),
                engine.deadline(),
                OutputFormat::ParquetTar,
            )
            .await
            .and_then(|r| encode_json(&r, &limits));
        let got = match got {
            Ok(v) => v,
            Err(e) => panic!("seed {seed}: engine failed: {e}\n{body}"),
        };
        let want = reference::evaluate(&req, &user, &data);
        if first_query_rows(&want) > 0 {
            non_empty += 1;
            aligned += usize::from(req.queries[0].align.is_some());
            subqueries += usize::from(body["queries"][0].to_string().contains("\"unnest\""));
        }
        if only.is_some() {
            println!("got  {got}\nwant {want}");
        }
        if let Err(diff) = same(&got, &want, "") {
            failures.push(format!(
                "seed {seed}: {diff}\nrequest: {body}\nuser: {user:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 520 differ:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n\n")
    );
    if only.is_some() {
        println!(
            "{}",
            serde_json::to_string(&reference::evaluate(
                &parse_request(
                    &random::random_request(&mut ChaCha8Rng::seed_from_u64(only.unwrap_or(0))),
                    &limits
                )
                .unwrap(),
                &Default::default(),
                &data_for(0)
            ))
            .unwrap()
        );
        return;
    }
    assert!(
        non_empty > 250,
        "only {non_empty} random queries had rows: the generator is too narrow"
    );
    assert!(
        aligned > 40,
        "only {aligned} random queries with rows had an align clause"
    );
    assert!(
        subqueries > 10,
        "only {subqueries} random queries with rows had a subquery over a list column"
    );
}

/// Group keys pinned by WHERE (`k = v AND ...`, so the key is constant after the filter), in
/// both priority modes, over every field: issue 13 found such queries planned into a
/// SanityCheckPlan failure (500) when priority was on.
#[tokio::test]
async fn engine_agrees_with_the_reference_when_where_pins_group_keys() {
    let limits = Limits::default();
    let (mut failures, mut non_empty, mut prioritised) = (Vec::new(), 0, 0);
    for seed in 0..200u64 {
        let mut g = ChaCha8Rng::seed_from_u64(70_000 + seed);
        let data = data_for(seed);
        let body = random::random_pinned_request(&mut g);
        let user = golden::user_context(Some(&random::random_user(&mut g)));
        let req = parse_request(&body, &limits)
            .unwrap_or_else(|e| panic!("seed {seed}: request rejected: {:?}\n{body}", e.0));
        prioritised += usize::from(req.queries[0].prioritised());
        let got = execute(&req, &user, data::batches(&data), &limits)
            .await
            .and_then(|r| encode_json(&r, &limits));
        let got = match got {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("seed {seed}: engine failed: {e}\n{body}"));
                continue;
            }
        };
        let want = reference::evaluate(&req, &user, &data);
        if first_query_rows(&want) > 0 {
            non_empty += 1;
        }
        if let Err(diff) = same(&got, &want, "") {
            failures.push(format!(
                "seed {seed}: {diff}\nrequest: {body}\nuser: {user:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 200 failed:\n{}",
        failures.len(),
        failures[..failures.len().min(3)].join("\n\n")
    );
    assert!(non_empty > 40, "only {non_empty} pinned queries had rows");
    assert!(
        (40..180).contains(&prioritised),
        "{prioritised} of 200 prioritised: both modes must be covered"
    );
}

/// The same rows as one batch per (provider, source type) of each input batch: the store's
/// usual layout (a push is one source), which the bucket operator reads without per-row work.
fn split_by_source(
    inputs: &HashMap<Dataset, Vec<RecordBatch>>,
) -> HashMap<Dataset, Vec<RecordBatch>> {
    let mut out = HashMap::new();
    for (d, batches) in inputs {
        let mut parts = Vec::new();
        for b in batches {
            let text = |name: &str| b.column_by_name(name).unwrap().as_string::<i32>().clone();
            let (p, t) = (text("source_provider"), text("source_type"));
            let mut rows: BTreeMap<(String, String), Vec<u32>> = BTreeMap::new();
            for i in 0..b.num_rows() {
                let key = (p.value(i).to_owned(), t.value(i).to_owned());
                rows.entry(key).or_default().push(i as u32);
            }
            for idx in rows.into_values() {
                let idx = UInt32Array::from(idx);
                let cols = b
                    .columns()
                    .iter()
                    .map(|c| take(c.as_ref(), &idx, None).unwrap())
                    .collect();
                parts.push(RecordBatch::try_new(b.schema(), cols).unwrap());
            }
        }
        out.insert(*d, parts);
    }
    out
}

/// The time-bucket operator (`src/engine/plan/bucket/`) against the general plan and the reference,
/// on queries of its shape: identical tables, schemas included, whether a batch holds one
/// source or many.
#[tokio::test]
async fn bucket_operator_agrees_with_the_general_plan_and_the_reference() {
    let limits = Limits::default();
    let general = Limits {
        bucket_operator: false,
        ..Limits::default()
    };
    let mut failures = Vec::new();
    let mut non_empty = 0;
    for seed in 0..300u64 {
        let mut g = ChaCha8Rng::seed_from_u64(50_000 + seed);
        let data = data_for(seed);
        let body = random::random_bucket_request(&mut g);
        let user = golden::user_context(Some(&random::random_user(&mut g)));
        let req = parse_request(&body, &limits)
            .unwrap_or_else(|e| panic!("seed {seed}: request rejected: {:?}\n{body}", e.0));
        let inputs = data::batches(&data);
        let plan = compile(
            &req,
            0,
            &Catalog::new(user.clone(), inputs.clone()).unwrap(),
        )
        .unwrap();
        assert!(
            plan.display_indent()
                .to_string()
                .contains("BucketAggregate"),
            "seed {seed}: not planned as a bucket aggregate:\n{}\n{body}",
            plan.display_indent()
        );
        let run = |inputs: HashMap<Dataset, Vec<RecordBatch>>, limits: Limits| {
            let (req, user) = (req.clone(), user.clone());
            async move {
                let r = execute(&req, &user, inputs, &limits).await.unwrap();
                let schema = r[0].schema.clone();
                (encode_json(&r, &limits).unwrap(), schema)
            }
        };
        let (want, want_schema) = run(inputs.clone(), general.clone()).await;
        let reference = reference::evaluate(&req, &user, &data);
        if let Err(diff) = same(&want, &reference, "") {
            failures.push(format!(
                "seed {seed}: general plan vs reference: {diff}\n{body}"
            ));
        }
        if first_query_rows(&want) > 0 {
            non_empty += 1;
        }
        for (layout, inputs, limits) in [
            ("mixed", inputs.clone(), limits.clone()),
            ("split", split_by_source(&inputs), limits.clone()),
            ("split, sliced", split_by_source(&inputs), sliced()),
        ] {
            let (got, schema) = run(inputs, limits).await;
            if schema != want_schema {
                failures.push(format!(
                    "seed {seed} ({layout}): schema {schema:?} != {want_schema:?}"
                ));
            }
            if let Err(diff) = same(&got, &want, "") {
                failures.push(format!(
                    "seed {seed} ({layout}): {diff}\nrequest: {body}\nuser: {user:?}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n\n")
    );
    assert!(
        non_empty > 150,
        "only {non_empty} of 300 bucket queries had rows"
    );
}

/// Dense, overlapping sources in small single-source batches (offsets fixed per batch, some
/// batches without offsets): the bucket operator's whole-batch skipping and run splitting at
/// bucket, window and source edges, against the general plan.
#[tokio::test]
async fn bucket_operator_skips_owned_batches_exactly() {
    use rand::Rng;
    use rand::seq::SliceRandom;
    let hr = wearhouse::schema::resource("heartrate").unwrap();
    let dataset = Dataset::Timeseries(hr);
    let general = Limits {
        bucket_operator: false,
        ..Limits::default()
    };
    for seed in 0..40u64 {
        let mut g = ChaCha8Rng::seed_from_u64(90_000 + seed);
        let base = data::ts("2025-03-01T00:00:00");
        let sources = [
            ("oura", "ring"),
            ("apple_health_kit", "watch"),
            ("fitbit", "watch"),
        ];
        let mut batches = Vec::new();
        let mut ingest = 0;
        for (k, (provider, source_type)) in sources.iter().enumerate() {
            // Each source covers its own stretch of days, with holes of whole hours.
            let from = base + g.gen_range(0..4) * 24 * data::H + k as i64 * 7 * data::M;
            let step = [data::M, 7 * data::M, 30 * data::M][g.gen_range(0..3)];
            let count = (g.gen_range(3..9) * 24 * data::H / step) as usize;
            let mut rows: Vec<data::Row> = Vec::new();
            for i in 0..count {
                let t = from + i as i64 * step;
                if (t / data::H) % 11 == seed as i64 % 11 {
                    continue;
                }
                ingest += 1;
                let v = g.gen_range(40..180) as f64;
                rows.push(data::sample(t, None, v, provider, source_type, ingest));
            }
            while !rows.is_empty() {
                let n = g.gen_range(20..400).min(rows.len());
                let offset =
                    [None, Some(0), Some(3600), Some(-18_000), Some(50_400)][g.gen_range(0..5)];
                let mut chunk: Vec<data::Row> = rows.drain(..n).collect();
                if let Some(o) = offset {
                    for r in &mut chunk {
                        r.insert("timezone_offset".into(), data::Val::I(o));
                    }
                }
                batches.push(data::to_batch(dataset, &chunk));
            }
        }
        batches.shuffle(&mut g);
        let (unit, value) = [
            ("minute", 30),
            ("hour", 1),
            ("hour", 5),
            ("day", 1),
            ("week", 1),
        ][g.gen_range(0..5)];
        let hrv = json!({"timeseries": "heartrate", "field": "value"});
        let preferred = ["oura", "fitbit", "apple_health_kit"][g.gen_range(0..3)];
        let past = g.gen_range(4..12);
        let body = json!({
            "timeframe": {"anchor": "2025-03-10", "past": {"value": past, "unit": "day"}},
            "queries": [{
                "select": [{"group_key": 0}, {"func": "count", "arg": hrv}, {"func": "mean", "arg": hrv},
                           {"func": "newest", "arg": hrv}, {"func": "oldest", "arg": hrv}],
                "group_by": [{"date_trunc": {"value": value, "unit": unit}, "arg": {"index": "timeseries"}}]
            }],
            "config": {"provider_priority_overrides": [preferred]}
        });
        let zone = [None, Some("Europe/Berlin"), Some("America/New_York")][g.gen_range(0..3)];
        let user = golden::user_context(Some(&json!({"fallback_time_zone": zone})));
        let req = parse_request(&body, &Limits::default()).unwrap();
        let run = |limits: Limits| {
            let inputs: HashMap<_, _> = [(dataset, batches.clone())].into_iter().collect();
            let (req, user) = (req.clone(), user.clone());
            async move {
                let r = execute(&req, &user, inputs, &limits).await.unwrap();
                encode_json(&r, &limits).unwrap()
            }
        };
        let want = run(general.clone()).await;
        let rows = first_query_rows(&want);
        assert!(rows > 0, "seed {seed}: no buckets\n{body}");
        for (how, limits) in [("whole", Limits::default()), ("sliced", sliced())] {
            let got = run(limits).await;
            if let Err(diff) = same(&got, &want, "") {
                panic!("seed {seed} ({how}): {diff}\n{body}\nuser {user:?}");
            }
        }
        // Every batch here is sorted by time and of one source, as the store's are: declared
        // so (bounds from the first and last rows, the source from the first), the answer must
        // not change.
        let engine = Engine::new(sliced()).unwrap();
        let inputs: HashMap<_, _> = [(dataset, batches.clone())].into_iter().collect();
        let declared = engine
            .execute(
                &req,
                &user,
                Inputs::stored(inputs),
                engine.deadline(),
                OutputFormat::Json,
            )
            .await
            .unwrap();
        let got = encode_json(&declared, &sliced()).unwrap();
        if let Err(diff) = same(&got, &want, "") {
            panic!("seed {seed} (declared sorted): {diff}\n{body}\nuser {user:?}");
        }
        if seed == 0 {
            // The sliced runs are cut: three slices folded on their own tasks.
            let inputs: HashMap<_, _> = [(dataset, batches.clone())].into_iter().collect();
            let report = wearhouse::engine::explain_analyze(&req, &user, inputs, &sliced())
                .await
                .unwrap();
            assert!(report.contains("slices=3"), "{report}");
        }
    }
}

/// Limits that cut every bucket aggregate of more than a few rows into three slices.
fn sliced() -> Limits {
    Limits {
        bucket_slices: 3,
        bucket_slice_rows: 16,
        ..Limits::default()
    }
}

/// Rows of the first query's table in a JSON answer.
fn first_query_rows(answer: &Value) -> usize {
    answer["results"][0]["table"]
        .as_object()
        .and_then(|t| t.values().next())
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

fn data_for(seed: u64) -> data::Data {
    // Ten datasets shared by the 520 queries keep the test fast.
    let mut g = ChaCha8Rng::seed_from_u64(10_000 + seed % 10);
    random::random_data(&mut g)
}

#[tokio::test]
async fn arbitrary_bodies_never_panic_or_fail_internally() {
    let limits = Limits::default();
    let data = data_for(0);
    let user = Default::default();
    let mut accepted = 0;
    for seed in 0..3000u64 {
        let mut g = ChaCha8Rng::seed_from_u64(seed);
        let mut body = if seed % 3 == 0 {
            arbitrary::arbitrary_json(&mut g, 5)
        } else {
            random::random_request(&mut g)
        };
        if seed % 3 == 1 {
            body["queries"][0]["where"] = json!(arbitrary::arbitrary_where(&mut g));
        }
        if seed % 3 == 2 {
            let path = ["timeframe", "queries", "config"][seed as usize % 3];
            body[path] = arbitrary::arbitrary_json(&mut g, 3);
        }
        let Ok(req) = parse_request(&body, &limits) else {
            continue;
        };
        accepted += 1;
        match execute(&req, &user, data::batches(&data), &limits).await {
            Ok(r) => {
                encode_json(&r, &limits).unwrap();
            }
            Err(EngineError::Internal(e)) => panic!("seed {seed}: internal error {e} for {body}"),
            Err(_) => {}
        }
    }
    assert!(accepted > 100, "only {accepted} bodies were valid");
}

#[tokio::test]
async fn parquet_tar_holds_one_member_per_query_with_the_json_columns() {
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::io::Read;
    let limits = Limits::default();
    let body = json!({
        "timeframe": {"anchor": "2025-03-07", "past": {"value": 7, "unit": "day"}},
        "queries": [
            {"select": [{"group_key": "*"}, {"func": "count", "arg": {"timeseries": "heartrate", "field": "value"}}, {"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}}],
             "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}, {"date_part": "weekday", "arg": {"index": "timeseries"}}]},
            {"select": [{"index": "timeseries"}, {"timeseries": "heartrate", "field": "value"}]}
        ]
    });
    let req = parse_request(&body, &limits).unwrap();
    let data = scenarios::scenario("hr_two_providers");
    let results = execute(&req, &Default::default(), data::batches(&data), &limits)
        .await
        .unwrap();
    let bytes = encode_parquet_tar(&results).unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    let mut names = Vec::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        names.push(entry.path().unwrap().to_string_lossy().into_owned());
        let mut buf = Vec::new();
        entry.read_to_end(&mut buf).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(buf)).unwrap();
        let schema = reader.schema().clone();
        let i = names.len() - 1;
        if i == 1 {
            // The time column is delta-encoded, without a dictionary; the values keep theirs.
            use datafusion::parquet::basic::Encoding;
            let group = reader.metadata().row_group(0);
            let time = group.column(0);
            assert!(time.encodings().any(|e| e == Encoding::DELTA_BINARY_PACKED));
            assert_eq!(time.dictionary_page_offset(), None);
            assert!(group.column(1).dictionary_page_offset().is_some());
        }
        let read: Vec<_> = reader.build().unwrap().map(|b| b.unwrap()).collect();
        let rows: usize = read.iter().map(|b| b.num_rows()).sum();
        if i == 1 {
            // Every time and value as the result holds them.
            let got = datafusion::arrow::compute::concat_batches(&read[0].schema(), &read).unwrap();
            let want =
                datafusion::arrow::compute::concat_batches(&results[i].schema, &results[i].batches)
                    .unwrap();
            assert_eq!(got.columns(), want.columns());
        }
        assert_eq!(
            schema
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect::<Vec<_>>(),
            results[i]
                .schema
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect::<Vec<_>>()
        );
        assert_eq!(rows, results[i].num_rows());
        if i == 0 {
            use datafusion::arrow::datatypes::{DataType, TimeUnit};
            assert_eq!(
                schema.field(0).data_type(),
                &DataType::Timestamp(TimeUnit::Microsecond, None)
            );
            assert_eq!(schema.field(1).data_type(), &DataType::Int64);
            assert_eq!(schema.field(2).data_type(), &DataType::Int64);
            assert_eq!(rows, 7);
        }
    }
    assert_eq!(names, ["0.parquet", "1.parquet"]);
}

#[tokio::test]
async fn json_cell_limit_advises_parquet() {
    let limits = Limits {
        max_json_cells: 10,
        ..Limits::default()
    };
    let body = json!({"timeframe": {"anchor": "2025-03-07", "past": {"value": 7, "unit": "day"}},
        "queries": [{"select": [{"index": "timeseries"}, {"timeseries": "heartrate", "field": "value"}]}]});
    let req = parse_request(&body, &limits).unwrap();
    let results = execute(
        &req,
        &Default::default(),
        data::batches(&scenarios::scenario("hr_two_providers")),
        &limits,
    )
    .await
    .unwrap();
    let err = encode_json(&results, &limits).unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::ResultTooLarge {
                query: 0,
                limit: 10,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("application/vnd.service.tar+gzip+parquet")
    );
}

/// For a JSON answer the engine refuses an over-large result while it is being produced: the
/// run stops at the batch that passes the limit, long before the whole result exists. The same
/// request for Parquet runs to the end.
#[tokio::test]
async fn a_json_answer_over_the_cell_limit_stops_the_run_early() {
    let limits = Limits {
        max_json_cells: 10,
        ..Limits::default()
    };
    let engine = Engine::new(limits.clone()).unwrap();
    // Five batches of 20,000 one-second samples; the query selects every row (2 columns).
    let start = data::ts("2025-03-01T00:00:00");
    let hr = Dataset::Timeseries(wearhouse::schema::resource("heartrate").unwrap());
    let batches: Vec<RecordBatch> = (0..5)
        .map(|b| {
            let rows: Vec<_> = (0..20_000)
                .map(|i| {
                    let t = start + (b * 20_000 + i) * 1_000_000;
                    data::sample(t, Some(0), 60.0, "oura", "ring", start)
                })
                .collect();
            data::to_batch(hr, &rows)
        })
        .collect();
    let body = json!({"timeframe": {"anchor": "2025-03-07", "past": {"value": 7, "unit": "day"}},
        "queries": [{"select": [{"index": "timeseries"}, {"timeseries": "heartrate", "field": "value"}]}]});
    let req = parse_request(&body, &limits).unwrap();
    let inputs = || {
        [(hr, batches.clone())]
            .into_iter()
            .collect::<HashMap<_, _>>()
    };
    let ctx = UserContext::default();
    let err = engine
        .execute(
            &req,
            &ctx,
            Inputs::new(inputs()),
            engine.deadline(),
            OutputFormat::Json,
        )
        .await
        .unwrap_err();
    let EngineError::ResultTooLarge {
        query,
        cells,
        limit,
    } = err
    else {
        panic!("{err}");
    };
    assert_eq!((query, limit), (0, 10));
    assert!(
        cells > 10 && cells < 2 * 100_000,
        "stopped at the first batch past the limit, not after all 200,000 cells: {cells}"
    );
    let all = engine
        .execute(
            &req,
            &ctx,
            Inputs::new(inputs()),
            engine.deadline(),
            OutputFormat::ParquetTar,
        )
        .await
        .unwrap();
    assert_eq!(all[0].num_rows(), 100_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_time_limit_times_out() {
    use datafusion::arrow::array::{
        Float64Array, Int32Array, StringArray, TimestampMicrosecondArray,
    };
    use datafusion::arrow::record_batch::RecordBatch;
    use std::sync::Arc;
    let hr = wearhouse::schema::resource("heartrate").unwrap();
    let d = wearhouse::schema::Dataset::Timeseries(hr);
    let schema = d.schema();
    let n = 2_000_000usize;
    let base = data::ts("2025-03-01T00:00:00");
    let cols: Vec<datafusion::arrow::array::ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| -> datafusion::arrow::array::ArrayRef {
            match f.name().as_str() {
                "timestamp" | "ingested_at" => Arc::new(
                    TimestampMicrosecondArray::from_iter_values(
                        (0..n as i64).map(|i| base + i * 1_000_000),
                    )
                    .with_timezone("UTC"),
                ),
                "timezone_offset" => Arc::new(Int32Array::from(vec![0; n])),
                "value" => Arc::new(Float64Array::from_iter_values(
                    (0..n).map(|i| (i % 97) as f64),
                )),
                "source_provider" => Arc::new(StringArray::from(vec!["oura"; n])),
                "source_type" => Arc::new(StringArray::from(vec!["ring"; n])),
                _ => Arc::new(StringArray::new_null(n)),
            }
        })
        .collect();
    let batch = RecordBatch::try_new(schema, cols).unwrap();
    let limits = Limits {
        timeout: std::time::Duration::from_millis(1),
        ..Limits::default()
    };
    let body = json!({"timeframe": {"anchor": "2025-03-31", "past": {"value": 1, "unit": "month"}},
        "queries": [{"select": [{"group_key": 0}, {"func": "median", "arg": {"timeseries": "heartrate", "field": "value"}}],
                     "group_by": [{"date_trunc": {"value": 1, "unit": "minute"}, "arg": {"index": "timeseries"}}]}]});
    let req = parse_request(&body, &limits).unwrap();
    let started = std::time::Instant::now();
    let inputs = [(d, vec![batch])].into_iter().collect();
    let r = execute(&req, &Default::default(), inputs, &limits).await;
    let err = r.unwrap_err();
    assert!(matches!(err, EngineError::Timeout { .. }), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "the timeout answered late: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_tiny_memory_pool_is_resources_exhausted_not_internal() {
    let limits = Limits {
        memory_limit_bytes: 4 * 1024,
        ..Limits::default()
    };
    let body = json!({"timeframe": {"anchor": "2025-03-07", "past": {"value": 7, "unit": "day"}},
        "queries": [{"select": [{"group_key": 0}, {"func": "median", "arg": {"timeseries": "heartrate", "field": "value"}}],
                     "group_by": [{"date_trunc": {"value": 1, "unit": "minute"}, "arg": {"index": "timeseries"}}]}]});
    let req = parse_request(&body, &limits).unwrap();
    let err = execute(
        &req,
        &Default::default(),
        data::batches(&scenarios::scenario("hr_two_providers")),
        &limits,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::ResourcesExhausted {
                limit_bytes: 4096,
                ..
            }
        ),
        "{err}"
    );
}

/// Two sources covering the same ten days, a day per batch: the watch outranks the ring, so the
/// bucket operator scans only the watch's rows and skips every ring batch whole, as its
/// EXPLAIN ANALYZE counters report; the answer is the watch's alone.
#[tokio::test]
async fn bucket_operator_reports_skipped_parts_and_scanned_rows() {
    let dataset = Dataset::Timeseries(wearhouse::schema::resource("heartrate").unwrap());
    let base = data::ts("2025-03-01T00:00:00");
    let mut batches = Vec::new();
    for (provider, source_type, value) in
        [("oura", "ring", 50.0), ("apple_health_kit", "watch", 70.0)]
    {
        for day in 0..10 {
            let rows: Vec<data::Row> = (0..24)
                .map(|h| {
                    data::sample(
                        base + (day * 24 + h) * data::H,
                        Some(0),
                        value,
                        provider,
                        source_type,
                        1,
                    )
                })
                .collect();
            batches.push(data::to_batch(dataset, &rows));
        }
    }
    let body = json!({
        "timeframe": {"anchor": "2025-03-10", "past": {"value": 9, "unit": "day"}},
        "queries": [{
            "select": [{"group_key": 0}, {"func": "mean", "arg": {"timeseries": "heartrate", "field": "value"}}],
            "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]
        }]
    });
    let limits = Limits::default();
    let req = parse_request(&body, &limits).unwrap();
    let inputs = || {
        [(dataset, batches.clone())]
            .into_iter()
            .collect::<HashMap<_, _>>()
    };
    let report = explain_analyze(&req, &UserContext::default(), inputs(), &limits)
        .await
        .unwrap();
    assert!(report.contains("BucketAggregateExec"), "{report}");
    assert!(report.contains("parts_skipped=10"), "{report}");
    assert!(report.contains("rows_scanned=240"), "{report}");
    let out = execute(&req, &UserContext::default(), inputs(), &limits)
        .await
        .unwrap();
    let means = out[0].batches[0]
        .column(1)
        .as_primitive::<datafusion::arrow::datatypes::Float64Type>();
    assert_eq!(means.values().to_vec(), vec![70.0; 10]);
}
