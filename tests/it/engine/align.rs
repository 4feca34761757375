//! ALIGN (`analytics.md` §1) against an independent implementation: pandas' `ffill`/`bfill`
//! with `limit` (`tests/python/align_reference.py`), over seeded random sparse daily series:
//! every mode, caps from none to a week, one partition or one per provider, with and without
//! the "now" clamp, and values missing inside non-empty days (each column carries on its own).
//! Also: the JSON and Parquet answers of aligned queries hold the same table.

use std::collections::HashMap;

use chrono::{Duration, NaiveDate, TimeZone, Utc};
use datafusion::arrow::compute::concat_batches;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use wearhouse::engine::{
    Limits, UserContext, encode_json, encode_parquet_tar, execute, parse_request,
};
use wearhouse::schema::{Dataset, resource};

use super::data::{self, Row, ts};
use crate::support::provision;

const PROVIDERS: [(&str, &str); 3] = [
    ("oura", "ring"),
    ("apple_health_kit", "watch"),
    ("fitbit", "phone"),
];

/// One random case: the rows, the request, the user and what pandas gets.
struct Case {
    rows: Vec<Row>,
    body: Value,
    user: UserContext,
    reference_input: Value,
}

fn random_case(seed: u64) -> Case {
    let mut g = ChaCha8Rng::seed_from_u64(seed);
    let start = NaiveDate::from_ymd_opt(2025, 3, 1).unwrap();
    let partitioned = g.gen_bool(0.5);
    let providers = if partitioned { g.gen_range(1..=3) } else { 1 };
    let density = [0.1, 0.3, 0.6][g.gen_range(0..3)];
    let (mut rows, mut observations) = (Vec::new(), Vec::new());
    let mut ingest = 0;
    for (provider, source_type) in &PROVIDERS[..providers] {
        for d in 0..31 {
            if !g.gen_bool(density) {
                continue;
            }
            let day = start + Duration::days(d);
            let t = ts(&format!("{day}T{:02}:00:00", g.gen_range(0..24)));
            ingest += 1;
            let value = f64::from(g.gen_range(40..90)) + 0.5;
            let mut row = data::sample(t, Some(0), value, provider, source_type, ingest);
            let missing = g.gen_bool(0.15);
            if missing {
                row.remove("value");
            }
            rows.push(row);
            observations.push(json!({
                "day": day.to_string(), "provider": provider,
                "value": if missing { Value::Null } else { json!(value) },
            }));
        }
    }
    let mode = ["carry_forward", "carry_backward", "carry_nearest"][g.gen_range(0..3)];
    // The cap as the request writes it, and in days for pandas.
    let (cap, cap_days) = match g.gen_range(0..6) {
        0 => (Value::Null, None),
        1 => (json!({"value": 1, "unit": "week"}), Some(7)),
        2 => (json!({"value": 48, "unit": "hour"}), Some(2)),
        _ => {
            let n = g.gen_range(1..6);
            (json!({"value": n, "unit": "day"}), Some(n))
        }
    };
    let cap_name = if mode == "carry_nearest" {
        "span"
    } else {
        "max_age"
    };
    let mut carry = json!({"mode": mode});
    if !cap.is_null() || g.gen_bool(0.5) {
        carry[cap_name] = cap;
    }
    let hr = json!({"timeseries": "heartrate", "field": "value"});
    let mut group_by =
        vec![json!({"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}})];
    if partitioned {
        group_by.push(json!({"source": "source_provider"}));
    }
    let body = json!({
        "timeframe": {"anchor": "2025-03-31", "past": {"value": 30, "unit": "day"}},
        "queries": [{
            "select": [{"group_key": "*"}, {"func": "mean", "arg": hr}, {"func": "count", "arg": hr}],
            "group_by": group_by,
            "align": {"carry": carry},
        }],
    });
    let now_day = g
        .gen_bool(0.5)
        .then(|| start + Duration::days(g.gen_range(5..35)));
    let user = UserContext {
        now: now_day.map(|d| Utc.from_utc_datetime(&d.and_hms_opt(10, 30, 0).unwrap())),
        ..UserContext::default()
    };
    let reference_input = json!({
        "observations": observations,
        "mode": mode,
        "cap_days": cap_days,
        "now_day": now_day.map(|d| d.to_string()),
        "window": ["2025-03-01", "2025-03-31"],
        "partitioned": partitioned,
    });
    Case {
        rows,
        body,
        user,
        reference_input,
    }
}

/// The pandas answers of many cases, from one Python process.
fn pandas(inputs: &[&Value]) -> Vec<Value> {
    let out = provision::run_python_with_input("align_reference.py", &json!(inputs).to_string());
    serde_json::from_str(&out).unwrap()
}

fn inputs(rows: &[Row]) -> HashMap<Dataset, Vec<datafusion::arrow::array::RecordBatch>> {
    let hr = Dataset::Timeseries(resource("heartrate").unwrap());
    [(hr, vec![data::to_batch(hr, rows)])].into_iter().collect()
}

#[tokio::test]
async fn align_agrees_with_pandas_ffill_and_bfill_on_random_sparse_series() {
    let limits = Limits::default();
    let cases: Vec<Case> = (0..300).map(|s| random_case(30_000 + s)).collect();
    let (mut failures, mut filled, mut clamped) = (Vec::new(), 0, 0);
    let wanted = pandas(&cases.iter().map(|c| &c.reference_input).collect::<Vec<_>>());
    for ((seed, case), want) in cases.iter().enumerate().zip(wanted) {
        let req = parse_request(&case.body, &limits)
            .unwrap_or_else(|e| panic!("seed {seed}: rejected {:?}\n{}", e.0, case.body));
        let got = execute(&req, &case.user, inputs(&case.rows), &limits)
            .await
            .and_then(|r| encode_json(&r, &limits))
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", case.body));
        let rows = |v: &Value| {
            v["results"][0]["table"]["group_key.0"]
                .as_array()
                .map_or(0, Vec::len)
        };
        filled += usize::from(rows(&want) > case.rows.len());
        clamped += usize::from(case.user.now.is_some());
        if let Err(diff) = super::same(&got, &want, "") {
            failures.push(format!(
                "seed {seed}: {diff}\nrequest {}\nreference input {}\ngot  {got}\nwant {want}",
                case.body, case.reference_input
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        cases.len(),
        failures[..failures.len().min(3)].join("\n\n")
    );
    assert!(filled > 150, "only {filled} cases filled any bucket");
    assert!(clamped > 100, "only {clamped} cases had a now");
}

/// The now clamp by hand: data on 03-05 only, carried forward 5 days, now on 03-07 (10:30):
/// the spine ends at 03-07, not 03-10; without a now it ends at 03-10.
#[tokio::test]
async fn carry_forward_stops_at_the_bucket_of_now() {
    let limits = Limits::default();
    let hr = json!({"timeseries": "heartrate", "field": "value"});
    let body = json!({
        "timeframe": {"anchor": "2025-03-31", "past": {"value": 30, "unit": "day"}},
        "queries": [{
            "select": [{"group_key": "*"}, {"func": "max", "arg": hr}],
            "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "timeseries"}}],
            "align": {"carry": {"mode": "carry_forward", "max_age": {"value": 5, "unit": "day"}}},
        }],
    });
    let rows = vec![data::sample(
        ts("2025-03-05T08:00:00"),
        Some(0),
        61.0,
        "oura",
        "ring",
        1,
    )];
    let req = parse_request(&body, &limits).unwrap();
    let now = UserContext {
        now: Some(Utc.with_ymd_and_hms(2025, 3, 7, 10, 30, 0).unwrap()),
        ..UserContext::default()
    };
    let answer = |user: UserContext| {
        let req = req.clone();
        let rows = rows.clone();
        let limits = limits.clone();
        async move {
            let r = execute(&req, &user, inputs(&rows), &limits).await.unwrap();
            encode_json(&r, &limits).unwrap()
        }
    };
    let table = &answer(now).await["results"][0]["table"];
    assert_eq!(
        table["group_key.0"],
        json!([
            "2025-03-05T00:00:00",
            "2025-03-06T00:00:00",
            "2025-03-07T00:00:00"
        ])
    );
    assert_eq!(table["max.heartrate.value"], json!([61.0, 61.0, 61.0]));
    let table = &answer(UserContext::default()).await["results"][0]["table"];
    assert_eq!(table["group_key.0"].as_array().unwrap().len(), 6);
}

/// The Parquet member of an aligned query holds the very table the JSON answer encodes: the
/// filled cells, the explicit nulls and the partitions.
#[tokio::test]
async fn aligned_json_and_parquet_answers_agree() {
    use std::io::Read;
    let limits = Limits::default();
    for seed in 0..12 {
        let case = random_case(40_000 + seed);
        let req = parse_request(&case.body, &limits).unwrap();
        let results = execute(&req, &case.user, inputs(&case.rows), &limits)
            .await
            .unwrap();
        let json = encode_json(&results, &limits).unwrap();
        let bytes = encode_parquet_tar(&results).unwrap();
        let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
        let mut entry = tar.entries().unwrap().next().unwrap().unwrap();
        let mut buf = Vec::new();
        entry.read_to_end(&mut buf).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(buf))
            .unwrap()
            .build()
            .unwrap();
        let read: Vec<_> = reader.map(|b| b.unwrap()).collect();
        let want = concat_batches(&results[0].schema, &results[0].batches).unwrap();
        let rows: usize = read.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, want.num_rows(), "seed {seed}");
        if rows > 0 {
            let got = concat_batches(&read[0].schema(), &read).unwrap();
            assert_eq!(got.columns(), want.columns(), "seed {seed}");
        }
        let cols = json["results"][0]["table"].as_object().unwrap();
        assert_eq!(cols.len(), want.num_columns());
        assert!(cols.values().all(|c| c.as_array().unwrap().len() == rows));
    }
}

/// The README's worked example: a week of daily resting heart rate measured on three days,
/// carried forward at most 2 days.
#[tokio::test]
async fn the_readme_example_answers_as_documented() {
    use wearhouse::schema::Table;
    let limits = Limits::default();
    let body = json!({
    "timeframe": {"anchor": "2025-03-07", "past": {"value": 6, "unit": "day"}},
    "queries": [{
      "select": [{"group_key": "*"}, {"func": "mean", "arg": {"activity": "heart_rate_resting"}}],
      "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "activity"}}],
      "align": {"carry": {"mode": "carry_forward", "max_age": {"value": 2, "unit": "day"}}}
    }]});
    let rows: Vec<Row> = [
        ("2025-03-01", 54.0),
        ("2025-03-02", 55.0),
        ("2025-03-07", 53.0),
    ]
    .iter()
    .enumerate()
    .map(|(i, (d, v))| {
        let mut r = Row::new();
        r.insert("id".into(), data::s(&format!("a{i}")));
        r.insert("date".into(), data::Val::D(data::day(d)));
        r.insert("heart_rate_resting".into(), data::Val::F(*v));
        data::source(&mut r, "oura", "ring", i as i64);
        r
    })
    .collect();
    let activity = Dataset::Table(Table::Activity);
    let inputs = [(activity, vec![data::to_batch(activity, &rows)])]
        .into_iter()
        .collect();
    let req = parse_request(&body, &limits).unwrap();
    let r = execute(&req, &UserContext::default(), inputs, &limits)
        .await
        .unwrap();
    assert_eq!(
        encode_json(&r, &limits).unwrap(),
        json!({"results": [{"table": {
            "group_key.0": ["2025-03-01T00:00:00", "2025-03-02T00:00:00", "2025-03-03T00:00:00",
                            "2025-03-04T00:00:00", "2025-03-05T00:00:00", "2025-03-06T00:00:00",
                            "2025-03-07T00:00:00"],
            "mean.heart_rate_resting": [54.0, 55.0, 55.0, 55.0, null, null, 53.0]}}]})
    );
}
