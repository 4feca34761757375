//! Aggregate engine benchmarks (criterion, seeded data, self-checking output sizes).
//!
//! Scenarios:
//! - `daily buckets, 90 days of 1/min heart rate` (129 600 rows): mean/min/max/newest/count;
//! - `hourly buckets, 90 days of 1 Hz heart rate` (7 776 000 rows): the same aggregates;
//! - both again with two fully overlapping providers (Oura ring, Apple watch) and priority on;
//! - `minute buckets, 90 days of 1/min heart rate`: one bucket per sample (129,600 groups);
//! - `encode JSON, ...` for the hourly ones: the answer's encoder alone;
//! - `compile only, 10 select expressions`;
//! - `daily buckets, a year of 1/min heart rate with a day in nine missing`, with and without
//!   `align` (carry_forward, at most 2 days): ALIGN's cost over the same query (issue 39: at
//!   most 10 %);
//! - `readiness: derived_readiness rows, 90 days ...` against `readiness baseline: sleep rows,
//!   the same 90 days`: one user's nights, activity days, workouts, profile and 1/min heart
//!   rate over 111 days (the window and its 21-day baseline), every readiness column against
//!   eight sleep columns (issue 39: at most 2×).
//!
//! Each ratio target is also timed with its two sides interleaved (`interleaved`: rounds of ten
//! runs alternating which side goes first), printed after its cases as one line, e.g.
//! `a year of 1/min, with align against without: interleaved medians …`: the figure to read
//! against the target, since criterion times one case minutes after the other.
//!
//! The data is seeded and pushed through the push API's own path (`push_support`: columnar
//! pushes of 50,000 samples, validated and committed as `POST /v2/user/{id}/data` does them),
//! one source after the other, then read back: the engine gets exactly the batches a cached
//! read hands it in service, in the segment layout pushes leave, and runs them as the service
//! does (`Inputs::stored`, a JSON answer). Every case reads the layout
//! after the `store.compact` job's compaction; the 1 Hz cases also read it as pushed, before
//! any compaction (`, as pushed`).
//!
//! Run with `cargo bench` (module `engine`). Diagnostics: `ENGINE_BENCH_EXPLAIN=1` prints each
//! phase's time and the physical plan with its metrics for each scenario
//! (`Engine::explain_analyze`); `ENGINE_BENCH_FUNCS=mean,newest` changes the aggregates.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group};
use datafusion::arrow::record_batch::RecordBatch;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use wearhouse::engine::{
    Catalog, Engine, Inputs, Limits, OutputFormat, UserContext, compile, encode_json_bytes,
    parse_request,
};
use wearhouse::schema::Dataset;
use wearhouse::store::health::StoreOptions;

use crate::push_support;
use push_support::{Layout, Pushed, heartrate, wire_batch};

const DAYS: i64 = 90;
/// 2025-01-01T00:00:00Z in microseconds.
const START: i64 = 1_735_689_600_000_000;

/// Heart rate every `step_seconds` for 90 days, as a columnar push carries it: timestamps
/// and seeded values, no offsets (a push without zones, for a user without a fallback zone).
fn heart_rate(step_seconds: i64, seed: u64) -> RecordBatch {
    let total = DAYS * 86_400 / step_seconds;
    let mut g = ChaCha8Rng::seed_from_u64(seed);
    let ts = (0..total)
        .map(|k| START + k * step_seconds * 1_000_000)
        .collect();
    let values = (0..total).map(|_| g.gen_range(45.0..160.0)).collect();
    wire_batch(ts, values)
}

const RING: (&str, &str) = ("oura", "ring");
const WATCH: (&str, &str) = ("apple_health_kit", "watch");

/// What a read of the health store hands the engine once `sources` were pushed through the
/// push API's path (`push_support`), one source after the other, in `layout`: read back once,
/// so the engine gets exactly the batches a cached read hands it in service.
fn through_push(
    rt: &tokio::runtime::Runtime,
    sources: &[((&str, &str), &RecordBatch)],
    layout: Layout,
) -> Vec<RecordBatch> {
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        let pushed = Pushed::open(dir.path(), StoreOptions::default()).await;
        for (source, rows) in sources {
            pushed
                .push_heartrate(*source, std::slice::from_ref(*rows), layout)
                .await;
        }
        pushed.read(heartrate()).await
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

/// Whether criterion's filter (the first argument not starting with `-`) can select `name`:
/// a filter without regex syntax must be part of it. The seeding and pushing before a case
/// take seconds, so a run with a filter skips those of the cases it will not time.
fn selected(name: &str) -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(filter) = args.iter().find(|a| !a.starts_with('-')) else {
        return true;
    };
    let plain = !filter.chars().any(|c| "^$.|?*+()[]{}\\".contains(c));
    !plain || name.contains(filter.as_str())
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
    let dataset = heartrate();
    let run = || {
        let inputs: HashMap<_, _> = [(dataset, batches.clone())].into_iter().collect();
        // As the service runs it: store batches, declared sorted by time.
        let json = OutputFormat::Json;
        rt.block_on(engine.execute(&req, &ctx, Inputs::stored(inputs), engine.deadline(), json))
            .unwrap()
    };
    let out = run();
    assert_eq!(out[0].num_rows(), rows, "{name}: wrong number of buckets");
    if std::env::var("ENGINE_BENCH_EXPLAIN").is_ok() {
        explain(rt, &engine, &req, &[(dataset, batches.clone())].into());
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
    inputs: &HashMap<Dataset, Vec<RecordBatch>>,
) {
    for _ in 0..3 {
        let inputs = inputs.clone();
        let report = rt
            .block_on(engine.explain_analyze(req, &UserContext::default(), Inputs::stored(inputs)))
            .unwrap();
        eprintln!("{report}");
    }
}

/// Heart rate every minute for a year from 2025-01-01, without the days `d % 9 == 4`.
fn year_with_gaps(seed: u64) -> RecordBatch {
    let mut g = ChaCha8Rng::seed_from_u64(seed);
    let ts: Vec<i64> = (0..365 * 1440i64)
        .filter(|k| (k / 1440) % 9 != 4)
        .map(|k| START + k * 60_000_000)
        .collect();
    let values = ts.iter().map(|_| g.gen_range(45.0..160.0)).collect();
    wire_batch(ts, values)
}

/// A ratio target's two sides timed in alternating rounds (`REPS` runs of one side, then of
/// the other, the side that goes first alternating), so drift in the machine's load or heap
/// lands on both: criterion times one function after the other, minutes apart. Prints each
/// side's median run time and their ratio; `ENGINE_BENCH_ROUNDS` changes the rounds (60).
fn interleaved(label: &str, a: &dyn Fn(), b: &dyn Fn()) {
    const REPS: u32 = 10;
    let rounds: usize = std::env::var("ENGINE_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(60);
    let time = |f: &dyn Fn()| {
        let began = std::time::Instant::now();
        for _ in 0..REPS {
            f();
        }
        began.elapsed().as_secs_f64() * 1e6 / f64::from(REPS)
    };
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            ta.push(time(a));
            tb.push(time(b));
        } else {
            tb.push(time(b));
            ta.push(time(a));
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (ma, mb) = (median(&mut ta), median(&mut tb));
    eprintln!(
        "{label}: interleaved medians {ma:.1} us against {mb:.1} us ({:.3}x, {:+.1} %), {rounds} rounds of {REPS} runs",
        ma / mb,
        (ma / mb - 1.0) * 100.0
    );
}

/// The same daily query over a year, without and with ALIGN.
fn align_cases(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    if !selected("daily buckets, a year of 1/min heart rate with a day in nine missing, align") {
        return;
    }
    let batches = through_push(rt, &[(RING, &year_with_gaps(6))], Layout::Compacted);
    let engine = Engine::new(Limits::default()).unwrap();
    let hr = json!({"timeseries": "heartrate", "field": "value"});
    let gaps = (0..365).filter(|d| d % 9 == 4).count();
    let mut requests = Vec::new();
    for (label, align, rows) in [
        ("", None, 365 - gaps),
        (
            ", align carry_forward 2 days",
            Some(
                json!({"carry": {"mode": "carry_forward", "max_age": {"value": 2, "unit": "day"}}}),
            ),
            365,
        ),
    ] {
        let mut query = json!({
            "select": [{"group_key": 0}, {"func": "mean", "arg": hr}, {"func": "max", "arg": hr},
                       {"func": "count", "arg": hr}],
            "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}]
        });
        if let Some(a) = align {
            query["align"] = a;
        }
        let body = json!({
            "timeframe": {"anchor": "2025-12-31", "past": {"value": 364, "unit": "day"}},
            "queries": [query]
        });
        let req = parse_request(&body, engine.limits()).unwrap();
        let ctx = UserContext::default();
        let run = || {
            let inputs: HashMap<_, _> = [(heartrate(), batches.clone())].into_iter().collect();
            let json = OutputFormat::Json;
            rt.block_on(engine.execute(&req, &ctx, Inputs::stored(inputs), engine.deadline(), json))
                .unwrap()
        };
        assert_eq!(
            run()[0].num_rows(),
            rows,
            "align{label}: wrong number of buckets"
        );
        if std::env::var("ENGINE_BENCH_EXPLAIN").is_ok() {
            explain(rt, &engine, &req, &[(heartrate(), batches.clone())].into());
        }
        let name =
            format!("daily buckets, a year of 1/min heart rate with a day in nine missing{label}");
        c.bench_function(&name, |b| b.iter(|| black_box(run())));
        requests.push(req);
    }
    let ctx = UserContext::default();
    let run = |req: &wearhouse::engine::ValidRequest| {
        let inputs: HashMap<_, _> = [(heartrate(), batches.clone())].into_iter().collect();
        let json = OutputFormat::Json;
        let out = engine.execute(req, &ctx, Inputs::stored(inputs), engine.deadline(), json);
        black_box(rt.block_on(out).unwrap());
    };
    interleaved(
        "a year of 1/min, with align against without",
        &|| run(&requests[1]),
        &|| run(&requests[0]),
    );
}

fn engine(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let compacted = Layout::Compacted;
    let daily = "daily buckets, 90 days of 1/min heart rate";
    let priority = "daily buckets, 90 days of 1/min heart rate, two providers, priority on";
    if selected(daily) || selected(priority) {
        let ring = heart_rate(60, 1);
        let watch = heart_rate(60, 2);
        if selected(daily) {
            bench_case(
                c,
                &rt,
                daily,
                "day",
                through_push(&rt, &[(RING, &ring)], compacted),
                90,
            );
        }
        if selected(priority) {
            let both = through_push(&rt, &[(RING, &ring), (WATCH, &watch)], compacted);
            bench_case(c, &rt, priority, "day", both, 90);
        }
    }
    let minute = "minute buckets, 90 days of 1/min heart rate";
    if selected(minute) {
        let batches = through_push(&rt, &[(RING, &heart_rate(60, 5))], compacted);
        bench_case(c, &rt, minute, "minute", batches, 90 * 1440);
    }

    let hourly = |label: &str| format!("hourly buckets, 90 days of 1 Hz heart rate{label}");
    let hourly2 = |label: &str| {
        format!("hourly buckets, 90 days of 1 Hz heart rate, two providers, priority on{label}")
    };
    let layouts = [(compacted, ""), (Layout::AsPushed, ", as pushed")];
    // Each hourly case is also timed as `encode JSON, {name}`.
    let wanted = |name: &str| selected(name) || selected(&format!("encode JSON, {name}"));
    if layouts
        .iter()
        .any(|(_, l)| wanted(&hourly(l)) || wanted(&hourly2(l)))
    {
        let ring = heart_rate(1, 3);
        let watch = heart_rate(1, 4);
        for (layout, label) in layouts {
            if wanted(&hourly(label)) {
                let batches = through_push(&rt, &[(RING, &ring)], layout);
                bench_case(c, &rt, &hourly(label), "hour", batches, 90 * 24);
            }
            if wanted(&hourly2(label)) {
                let batches = through_push(&rt, &[(RING, &ring), (WATCH, &watch)], layout);
                bench_case(c, &rt, &hourly2(label), "hour", batches, 90 * 24);
            }
        }
    }

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
    align_cases(c, &rt);
    readiness_cases(c, &rt);
}

/// 111 days from 2025-01-01 of one Oura ring's nights, activity days, a workout every other
/// day and a profile (one JSON push), and heart rate every minute (columnar pushes), read back
/// as a query's reads get them.
fn readiness_data(rt: &tokio::runtime::Runtime) -> HashMap<Dataset, Vec<RecordBatch>> {
    use chrono::{Duration, NaiveDate};
    let mut g = ChaCha8Rng::seed_from_u64(39);
    let day0 = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
    let at = |d: i64, h: i64, m: i64| {
        let t =
            day0.and_hms_opt(0, 0, 0).unwrap() + Duration::days(d) + Duration::minutes(h * 60 + m);
        format!("{}+00:00", t.format("%Y-%m-%dT%H:%M:%S"))
    };
    let days = 111i64;
    let mut sleep = Vec::new();
    let (mut activity, mut workouts) = (Vec::new(), Vec::new());
    for d in 0..days {
        let total: i64 = g.gen_range(21_600..28_800);
        sleep.push(json!({
            "id": format!("n{d}"), "bedtime_start": at(d - 1, 23, g.gen_range(0..50)),
            "bedtime_stop": at(d, 7, g.gen_range(0..50)), "type": "long_sleep", "state": "confirmed",
            "duration": 29_000, "total": total, "awake": 29_000 - total, "deep": total / 5,
            "rem": total / 4, "light": total - total / 5 - total / 4, "latency": g.gen_range(120..1800),
            "efficiency": total as f64 / 290.0, "average_hrv": g.gen_range(30.0..80.0),
            "hr_resting": g.gen_range(45..60), "timezone_offset": 0
        }));
        activity.push(json!({
            "date": format!("{}T00:00:00+00:00", day0 + Duration::days(d)),
            "low": g.gen_range(10..120), "medium": g.gen_range(0..60), "high": g.gen_range(0..30),
            "heart_rate": {"resting_bpm": g.gen_range(45.0..60.0)}, "timezone_offset": 0
        }));
        if d % 2 == 0 {
            let zones: Vec<f64> = (0..6).map(|_| g.gen_range(0.0..900.0)).collect();
            workouts.push(json!({
                "id": format!("w{d}"), "time_start": at(d, 18, 0), "time_end": at(d, 19, 0),
                "hr_zones": zones, "sport": {"name": "Running", "slug": "running"}
            }));
        }
    }
    let body = json!({
        "provider": "oura", "source": {"type": "ring"}, "sleep": sleep, "activity": activity,
        "workouts": workouts,
        "profile": {"birth_date": "1985-07-01", "updated_at": "2025-01-01T00:00:00Z",
                    "created_at": "2025-01-01T00:00:00Z"}
    });
    let start = 1_735_689_600_000_000i64; // 2025-01-01T00:00:00Z
    let minutes = days * 1440;
    let ts = (0..minutes).map(|k| start + k * 60_000_000).collect();
    let values = (0..minutes).map(|_| g.gen_range(45.0..170.0)).collect();
    let hr = wire_batch(ts, values);
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        let pushed = Pushed::open(dir.path(), StoreOptions::default()).await;
        pushed.push_json(&body).await;
        pushed
            .push_heartrate(RING, std::slice::from_ref(&hr), Layout::Compacted)
            .await;
        let mut inputs = HashMap::new();
        for table in [
            "sleep",
            "activity",
            "workout",
            "profile",
            "timeseries/heartrate",
        ] {
            let dataset = Dataset::from_path(table).unwrap();
            inputs.insert(dataset, pushed.read(dataset).await);
        }
        inputs
    })
}

/// A `derived_readiness` query over 90 days against a `sleep` query over the same days.
fn readiness_cases(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    if !selected("readiness: derived_readiness rows") && !selected("readiness baseline: sleep rows")
    {
        return;
    }
    let all = readiness_data(rt);
    let engine = Engine::new(Limits::default()).unwrap();
    let ctx = UserContext::default();
    let timeframe = json!({"anchor": "2025-04-21", "past": {"value": 89, "unit": "day"}});
    let readiness: Vec<_> = [
        "chronotype",
        "sleep_score",
        "recovery_score",
        "recovery_zone",
        "stress_score",
        "strain_score",
        "strain_zone",
    ]
    .iter()
    .map(|col| json!({"derived_readiness": col}))
    .chain([json!({"index": "derived_readiness"})])
    .collect();
    let sleep: Vec<_> = [
        "efficiency",
        "duration_second",
        "stage_asleep_second",
        "stage_deep_second",
        "stage_rem_second",
        "hrv_mean_rmssd",
        "heart_rate_resting",
    ]
    .iter()
    .map(|col| json!({"sleep": col}))
    .chain([json!({"index": "sleep"})])
    .collect();
    let mut runs = Vec::new();
    for (name, select) in [
        (
            "readiness: derived_readiness rows, 90 days of nights, activity, workouts and 1/min heart rate",
            readiness,
        ),
        ("readiness baseline: sleep rows, the same 90 days", sleep),
    ] {
        let body = json!({"timeframe": timeframe, "queries": [{"select": select}]});
        let req = parse_request(&body, engine.limits()).unwrap();
        let needed: Vec<Dataset> = wearhouse::engine::required_inputs(&req, &ctx)
            .into_iter()
            .map(|(d, _)| d)
            .collect();
        let run = || {
            let inputs: HashMap<_, _> = needed
                .iter()
                .filter_map(|d| all.get(d).map(|b| (*d, b.clone())))
                .collect();
            let json = OutputFormat::Json;
            rt.block_on(engine.execute(&req, &ctx, Inputs::stored(inputs), engine.deadline(), json))
                .unwrap()
        };
        let out = run();
        assert_eq!(out[0].num_rows(), 90, "{name}: wrong number of days");
        if std::env::var("ENGINE_BENCH_EXPLAIN").is_ok() {
            let inputs = needed
                .iter()
                .filter_map(|d| all.get(d).map(|b| (*d, b.clone())))
                .collect();
            explain(rt, &engine, &req, &inputs);
        }
        let json = wearhouse::engine::encode_json(&out, engine.limits()).unwrap();
        let table = &json["results"][0]["table"];
        if let Some(recovery) = table.get("recovery_score") {
            // Every day of the window has its baseline (the 21 days before hold 21 nights).
            assert!(
                recovery.as_array().unwrap().iter().all(|v| v.is_i64()),
                "{table}"
            );
            let strain = table["strain_score"].as_array().unwrap();
            assert!(
                strain.iter().all(|v| v.as_f64().is_some_and(|s| s > 0.0)),
                "{table}"
            );
        }
        c.bench_function(name, |b| b.iter(|| black_box(run())));
        runs.push((req, needed));
    }
    let run = |(req, needed): &(wearhouse::engine::ValidRequest, Vec<Dataset>)| {
        let inputs: HashMap<_, _> = needed
            .iter()
            .filter_map(|d| all.get(d).map(|b| (*d, b.clone())))
            .collect();
        let json = OutputFormat::Json;
        let out = engine.execute(req, &ctx, Inputs::stored(inputs), engine.deadline(), json);
        black_box(rt.block_on(out).unwrap());
    };
    interleaved(
        "readiness against sleep rows, 90 days",
        &|| run(&runs[0]),
        &|| run(&runs[1]),
    );
}

criterion_group! {
    name = benches;
    // 50 samples: on a shared 2-core VM twenty left run-to-run spreads of ±20 % on the
    // millisecond cases, too wide to compare the priority ratio.
    config = Criterion::default().sample_size(50);
    targets = engine
}
