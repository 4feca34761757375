//! Subquery answers: count, min, max, mean (and a date max, a string newest, a filtered count)
//! over struct fields of the pushed cycles and over the scalar elements of a pushed hypnogram,
//! each against the value computed here from the fixture; a grouped query with outer
//! aggregates; and the Parquet answer (read with the `parquet` crate) equal to the JSON one.

use std::io::Read;

use serde_json::{Map, Value, json};

use super::{cycles, query, user_with_cycles};
use crate::support::TestApp;

const PARQUET_TAR: &str = "application/vnd.service.tar+gzip+parquet";

fn sub(func: &str, arg: Value, list: &str, filter: Option<&str>) -> Value {
    let mut s = json!({"select": {"func": func, "arg": arg},
                       "from": {"unnest": {"menstrual_cycle": list}}});
    if let Some(w) = filter {
        s["where"] = json!(w);
    }
    s
}

fn entries<'a>(cycle: &'a Value, list: &str) -> Vec<&'a Value> {
    cycle[list]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn floats(es: &[&Value], field: &str) -> Vec<f64> {
    es.iter().filter_map(|e| e[field].as_f64()).collect()
}

fn mean(x: &[f64]) -> Value {
    if x.is_empty() {
        Value::Null
    } else {
        json!(x.iter().sum::<f64>() / x.len() as f64)
    }
}

fn extreme(x: &[f64], max: bool) -> Value {
    let v = x
        .iter()
        .copied()
        .reduce(|a, b| if (b > a) == max { b } else { a });
    v.map_or(Value::Null, |v| json!(v))
}

/// Asserts two JSON tables equal, floats within 1e-9.
fn assert_table(got: &Value, expected: &Value) {
    let (g, e) = (got.as_object().unwrap(), expected.as_object().unwrap());
    assert_eq!(
        g.keys().collect::<Vec<_>>(),
        e.keys().collect::<Vec<_>>(),
        "{got}"
    );
    for (k, ev) in e {
        let (gs, es) = (g[k].as_array().unwrap(), ev.as_array().unwrap());
        assert_eq!(gs.len(), es.len(), "{k}: {got}");
        for (a, b) in gs.iter().zip(es) {
            match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) => assert!((x - y).abs() < 1e-9, "{k}: {a} vs {b}"),
                _ => assert_eq!(a, b, "{k}: {got}"),
            }
        }
    }
}

/// Every member of the Parquet answer as a column-major JSON table, read with the `parquet`
/// crate and written by Arrow's JSON writer (dates as `YYYY-MM-DD`, nulls explicit).
fn parquet_tables(bytes: &[u8]) -> Vec<Value> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut raw = Vec::new();
        entry.unwrap().read_to_end(&mut raw).unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            bytes::Bytes::from(raw),
        )
        .unwrap();
        let names: Vec<String> = reader
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let batches: Vec<_> = reader.build().unwrap().map(Result::unwrap).collect();
        let mut text = Vec::new();
        let mut w = datafusion::arrow::json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, datafusion::arrow::json::writer::JsonArray>(&mut text);
        for b in &batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
        drop(w);
        let rows: Vec<Map<String, Value>> = if text.is_empty() {
            Vec::new()
        } else {
            serde_json::from_slice(&text).unwrap()
        };
        let mut table = Map::new();
        for n in names {
            table.insert(n.clone(), rows.iter().map(|r| r[&n].clone()).collect());
        }
        out.push(Value::Object(table));
    }
    out
}

/// Runs `queries` as JSON and as Parquet; asserts both answer the same tables; the tables.
async fn both(app: &TestApp, user: &str, queries: Value) -> Vec<Value> {
    let a = query(app, user, queries.clone(), None).await;
    assert_eq!(a.status, 200, "{}", a.json);
    let tables: Vec<Value> = a.json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["table"].clone())
        .collect();
    let p = query(app, user, queries, Some(PARQUET_TAR)).await;
    assert_eq!(p.status, 200);
    let from_parquet = parquet_tables(&p.bytes);
    assert_eq!(from_parquet.len(), tables.len());
    for (pq, js) in from_parquet.iter().zip(&tables) {
        assert_table(pq, js);
    }
    tables
}

#[tokio::test]
async fn row_level_subqueries_reduce_each_cycles_lists() {
    let app = TestApp::new().await;
    let user = user_with_cycles(&app, "cycles-sub").await;
    let bbt = json!({"basal_body_temperature": "value"});
    let queries = json!([{
        "select": [
            {"menstrual_cycle": "period_start"},
            {"menstrual_cycle": "is_predicted"},
            sub("count", Value::Null, "menstrual_flow", None),
            sub("count", json!({"menstrual_flow": "flow"}), "menstrual_flow", Some("flow = 'heavy'")),
            sub("min", bbt.clone(), "basal_body_temperature", None),
            sub("max", bbt.clone(), "basal_body_temperature", None),
            sub("mean", bbt.clone(), "basal_body_temperature", None),
            sub("count", bbt.clone(), "basal_body_temperature", Some("value >= 36.5 AND date < '2025-02-20'")),
            sub("max", json!({"menstrual_flow": "date"}), "menstrual_flow", None),
            sub("newest", json!({"ovulation_test": "test_result"}), "ovulation_test", None),
            sub("count", json!({"sexual_activity": "protection_used", "field_for": "menstrual_cycle"}), "sexual_activity", None),
        ]
    }]);
    let tables = both(&app, &user, queries).await;

    let fixture = cycles();
    let cs = fixture.as_array().unwrap();
    let col = |f: &dyn Fn(&Value) -> Value| Value::Array(cs.iter().map(f).collect());
    let expected = json!({
        "period_start": col(&|c| c["period_start"].clone()),
        "is_predicted": col(&|c| json!(c["is_predicted"].as_bool().unwrap_or(false))),
        "count.menstrual_flow": col(&|c| json!(entries(c, "menstrual_flow").len())),
        "count.menstrual_flow.flow": col(&|c| json!(entries(c, "menstrual_flow").iter().filter(|e| e["flow"] == "heavy").count())),
        "min.basal_body_temperature.value": col(&|c| extreme(&floats(&entries(c, "basal_body_temperature"), "value"), false)),
        "max.basal_body_temperature.value": col(&|c| extreme(&floats(&entries(c, "basal_body_temperature"), "value"), true)),
        "mean.basal_body_temperature.value": col(&|c| mean(&floats(&entries(c, "basal_body_temperature"), "value"))),
        "count.basal_body_temperature.value": col(&|c| json!(entries(c, "basal_body_temperature").iter()
            .filter(|e| e["value"].as_f64().unwrap() >= 36.5 && e["date"].as_str().unwrap() < "2025-02-20").count())),
        "max.menstrual_flow.date": col(&|c| entries(c, "menstrual_flow").iter().map(|e| e["date"].clone())
            .max_by(|a, b| a.as_str().cmp(&b.as_str())).unwrap_or(Value::Null)),
        "newest.ovulation_test.test_result": col(&|c| entries(c, "ovulation_test").iter()
            .max_by(|a, b| a["date"].as_str().cmp(&b["date"].as_str())).map_or(Value::Null, |e| e["test_result"].clone())),
        "count.sexual_activity.protection_used": col(&|c| json!(entries(c, "sexual_activity").iter().filter(|e| e["protection_used"].is_boolean()).count())),
    });
    assert_table(&tables[0], &expected);
    // The fixture is not degenerate: the filters keep some elements and drop others.
    assert_eq!(tables[0]["count.menstrual_flow.flow"], json!([2, 1, 0]));
    assert_eq!(
        tables[0]["count.basal_body_temperature.value"],
        json!([2, 2, 0])
    );
}

#[tokio::test]
async fn a_grouped_query_wraps_its_subqueries_in_outer_aggregates() {
    let app = TestApp::new().await;
    let user = user_with_cycles(&app, "cycles-grouped").await;
    let bbt = json!({"basal_body_temperature": "value"});
    let queries = json!([{
        "select": [
            {"group_key": "*"},
            {"func": "mean", "arg": sub("mean", bbt.clone(), "basal_body_temperature", None)},
            {"func": "sum", "arg": sub("count", Value::Null, "menstrual_flow", None)},
            {"func": "max", "arg": sub("max", bbt, "basal_body_temperature", Some("date >= '2025-01-10'"))},
            {"func": "count", "arg": {"menstrual_cycle": "period_start"}},
        ],
        "group_by": [{"date_trunc": {"value": 1, "unit": "month"}, "arg": {"index": "menstrual_cycle"}}]
    }]);
    let tables = both(&app, &user, queries).await;
    let fixture = cycles();
    let cs = fixture.as_array().unwrap();
    let temps = |c: &Value| floats(&entries(c, "basal_body_temperature"), "value");
    let late = |c: &Value| {
        let es: Vec<&Value> = entries(c, "basal_body_temperature")
            .into_iter()
            .filter(|e| e["date"].as_str().unwrap() >= "2025-01-10")
            .collect();
        floats(&es, "value")
    };
    // January holds the cycles starting 01-03 and 01-31; February the predicted one.
    let jan = [&cs[0], &cs[1]];
    let jan_means: Vec<f64> = jan
        .iter()
        .map(|c| mean(&temps(c)).as_f64().unwrap())
        .collect();
    let jan_max: Vec<f64> = jan
        .iter()
        .filter_map(|c| extreme(&late(c), true).as_f64())
        .collect();
    let expected = json!({
        "group_key.0": ["2025-01-01T00:00:00", "2025-02-01T00:00:00"],
        "mean.mean.basal_body_temperature.value": [mean(&jan_means), null],
        "sum.count.menstrual_flow": [
            entries(&cs[0], "menstrual_flow").len() + entries(&cs[1], "menstrual_flow").len(), 0],
        "max.max.basal_body_temperature.value": [extreme(&jan_max, true), null],
        "count.period_start": [2, 1],
    });
    assert_table(&tables[0], &expected);
}

#[tokio::test]
async fn subqueries_over_scalar_elements_reduce_a_hypnogram() {
    let app = TestApp::new().await;
    let user = app.user("hypnogram").await;
    let stages = [2, 1, 1, 3, 4, 2, 2, 3, 4, 4, -1, 2];
    let a = app
        .post(
            &format!("/v2/user/{user}/data"),
            json!({"provider": "oura", "sleep": [{
                "bedtime_start": "2025-03-01T23:00:00+00:00",
                "bedtime_stop": "2025-03-02T07:00:00+00:00",
                "sleep_stream": {"hypnogram": stages, "interval": 300}
            }]}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    let el = |func: &str, filter: Option<&str>| {
        let mut s = json!({"select": {"func": func, "arg": {"element": true}},
                           "from": {"unnest": {"sleep": "hypnogram"}}});
        if let Some(w) = filter {
            s["where"] = json!(w);
        }
        s
    };
    let queries = json!([{
        "select": [
            {"select": {"func": "count", "arg": null}, "from": {"unnest": {"sleep": "hypnogram"}}, "where": "element = 4"},
            el("min", None),
            el("max", None),
            el("mean", Some("element > 0")),
            el("oldest", None),
            el("median", Some("element IN (1, 3, 4)")),
        ]
    }]);
    let tables = both(&app, &user, queries).await;
    let positive: Vec<f64> = stages
        .iter()
        .filter(|s| **s > 0)
        .map(|s| f64::from(*s))
        .collect();
    let mut some: Vec<i32> = stages
        .iter()
        .copied()
        .filter(|s| [1, 3, 4].contains(s))
        .collect();
    some.sort();
    let median = if some.len() % 2 == 1 {
        f64::from(some[some.len() / 2])
    } else {
        f64::from(some[some.len() / 2 - 1] + some[some.len() / 2]) / 2.0
    };
    let expected = json!({
        "count.hypnogram": [stages.iter().filter(|s| **s == 4).count()],
        "min.hypnogram.element": [stages.iter().min()],
        "max.hypnogram.element": [stages.iter().max()],
        "mean.hypnogram.element": [mean(&positive)],
        "oldest.hypnogram.element": [stages[0]],
        "median.hypnogram.element": [median],
    });
    assert_table(&tables[0], &expected);
}

#[tokio::test]
async fn the_readme_example_answers_what_it_shows() {
    let app = TestApp::new().await;
    let user = user_with_cycles(&app, "cycles-readme").await;
    let queries = json!([{
        "select": [
            {"menstrual_cycle": "period_start"},
            {"menstrual_cycle": "cycle_end"},
            {"select": {"func": "count", "arg": null},
             "from": {"unnest": {"menstrual_cycle": "menstrual_flow"}},
             "where": "flow IN ('medium', 'heavy')"},
            {"select": {"func": "mean", "arg": {"basal_body_temperature": "value"}},
             "from": {"unnest": {"menstrual_cycle": "basal_body_temperature"}}}
        ],
        "where": "is_predicted = FALSE"
    }]);
    let tables = both(&app, &user, queries).await;
    assert_eq!(
        tables[0],
        json!({
            "period_start": ["2025-01-03", "2025-01-31"],
            "cycle_end": ["2025-01-30", "2025-02-27"],
            "count.menstrual_flow": [3, 3],
            "mean.basal_body_temperature.value": [36.452000000000005, 36.513333333333335]
        })
    );
}
