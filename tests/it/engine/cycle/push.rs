//! Push and getter: the JSON push and the columnar push (Arrow IPC and Parquet) store the same
//! cycles, the getter renders them in the reference's `MenstrualCycleResponse` (validated
//! against its published schema and parsed by its SDK), a re-push replaces, and a push emits
//! the table's `daily.data.menstrual_cycle.*` events.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, Date32Array, Float64Array, ListArray, RecordBatch, StringArray,
    StructArray,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema};
use serde_json::{Value, json};

use super::{PROVIDER, cycles, getter, user_with_cycles};
use crate::lab::shapes::{case, check_against_reference};
use crate::support::{TestApp, assert_422_at, carries};

fn days(d: &str) -> i32 {
    let date = chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").unwrap();
    (date - chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()).num_days() as i32
}

/// One list column of the fixture as `list<struct<date, field>>`.
fn list_column(name: &str, field: Option<(&str, DataType)>) -> (Field, ArrayRef) {
    let rows: Vec<Vec<Value>> = cycles()
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[name].as_array().cloned().unwrap_or_default())
        .collect();
    let all: Vec<&Value> = rows.iter().flatten().collect();
    let mut fields = vec![Field::new("date", DataType::Date32, false)];
    let mut arrays: Vec<ArrayRef> = vec![Arc::new(Date32Array::from_iter_values(
        all.iter().map(|e| days(e["date"].as_str().unwrap())),
    ))];
    if let Some((f, t)) = field {
        let array: ArrayRef = match t {
            DataType::Float64 => {
                Arc::new(Float64Array::from_iter(all.iter().map(|e| e[f].as_f64())))
            }
            DataType::Boolean => {
                Arc::new(BooleanArray::from_iter(all.iter().map(|e| e[f].as_bool())))
            }
            _ => Arc::new(StringArray::from_iter(all.iter().map(|e| e[f].as_str()))),
        };
        fields.push(Field::new(f, t, true));
        arrays.push(array);
    }
    let fields = Fields::from(fields);
    let values = StructArray::try_new(fields.clone(), arrays, None).unwrap();
    let item = Arc::new(Field::new("item", DataType::Struct(fields), true));
    let list = ListArray::try_new(
        item,
        OffsetBuffer::from_lengths(rows.iter().map(Vec::len)),
        Arc::new(values),
        None,
    )
    .unwrap();
    (
        Field::new(name, list.data_type().clone(), true),
        Arc::new(list),
    )
}

/// The fixture as the table's columns, as a DataFrame exported to Arrow would carry them.
pub fn fixture_batch() -> RecordBatch {
    let c = cycles();
    let rows = c.as_array().unwrap();
    let date = |k: &str| -> ArrayRef {
        Arc::new(Date32Array::from_iter(
            rows.iter().map(|r| r[k].as_str().map(days)),
        ))
    };
    let mut fields = vec![
        Field::new("period_start", DataType::Date32, false),
        Field::new("period_end", DataType::Date32, true),
        Field::new("cycle_end", DataType::Date32, true),
        Field::new("is_predicted", DataType::Boolean, true),
    ];
    let mut arrays = vec![
        date("period_start"),
        date("period_end"),
        date("cycle_end"),
        Arc::new(BooleanArray::from_iter(
            rows.iter().map(|r| r["is_predicted"].as_bool()),
        )) as ArrayRef,
    ];
    let s = || DataType::Utf8;
    for (name, field) in [
        ("menstrual_flow", Some(("flow", s()))),
        ("cervical_mucus", Some(("quality", s()))),
        ("intermenstrual_bleeding", None),
        ("contraceptive", Some(("type", s()))),
        ("detected_deviations", Some(("deviation", s()))),
        ("ovulation_test", Some(("test_result", s()))),
        ("home_pregnancy_test", Some(("test_result", s()))),
        ("home_progesterone_test", Some(("test_result", s()))),
        (
            "sexual_activity",
            Some(("protection_used", DataType::Boolean)),
        ),
        ("basal_body_temperature", Some(("value", DataType::Float64))),
    ] {
        let (f, a) = list_column(name, field);
        fields.push(f);
        arrays.push(a);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

pub fn arrow_bytes(batch: &RecordBatch) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w =
        datafusion::arrow::ipc::writer::StreamWriter::try_new(&mut out, &batch.schema()).unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
    drop(w);
    out
}

pub fn parquet_bytes(batch: &RecordBatch) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
    out
}

async fn push_columnar(
    app: &TestApp,
    user: &str,
    query: &str,
    content_type: &str,
    body: Vec<u8>,
) -> crate::support::Answer {
    let req = Request::builder()
        .method("POST")
        .uri(format!("/v2/user/{user}/data?{query}"))
        .header("x-service-api-key", &app.key)
        .header("content-type", content_type)
        .body(Body::from(body))
        .unwrap();
    app.raw(req).await
}

/// The rendered cycles without the members that differ between two users' copies.
fn comparable(answer: &Value) -> Vec<Value> {
    answer["menstrual_cycle"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let mut c = c.clone();
            // Ids derived from the data carry the user, so they differ between users.
            for k in ["id", "user_id", "created_at", "updated_at"] {
                c.as_object_mut().unwrap().remove(k);
            }
            c
        })
        .collect()
}

#[tokio::test]
async fn a_json_push_round_trips_through_the_getter_in_the_reference_shape() {
    let app = TestApp::new().await;
    let user = user_with_cycles(&app, "cycles-json").await;
    let a = getter(&app, &user).await;
    assert_eq!(a.status, 200, "{}", a.json);
    let got = a.json["menstrual_cycle"].as_array().unwrap();
    let pushed = cycles();
    assert_eq!(got.len(), 3, "{}", a.json);
    for (p, g) in pushed.as_array().unwrap().iter().zip(got) {
        assert!(carries(p, g), "pushed {p}\nrendered {g}");
        assert_eq!(g["source_provider"], PROVIDER);
        assert_eq!(g["user_id"], user.as_str());
        for list in [
            "menstrual_flow",
            "basal_body_temperature",
            "home_progesterone_test",
        ] {
            assert!(g[list].is_array(), "{list} renders as a list: {g}");
        }
    }
    // Defaults: not predicted unless said, no end for a predicted cycle, empty lists.
    assert_eq!(got[1]["is_predicted"], false);
    assert_eq!(got[2]["period_end"], Value::Null);
    assert_eq!(got[2]["menstrual_flow"], json!([]));
    assert_eq!(got[0]["sexual_activity"][1]["protection_used"], Value::Null);

    // A re-push of the same cycles replaces them (ids derived from the period start).
    let again = app
        .post(
            &format!("/v2/user/{user}/data"),
            json!({"provider": PROVIDER, "menstrual_cycle": [pushed[0].clone()]}),
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.json);
    let after = getter(&app, &user).await;
    assert_eq!(comparable(&after.json), comparable(&a.json));

    // The window selects by period start; a provider filter keeps its own cycles.
    let feb = app
        .get(&format!(
            "/v2/summary/menstrual_cycle/{user}?start_date=2025-01-15&end_date=2025-02-15"
        ))
        .await;
    assert_eq!(
        feb.json["menstrual_cycle"].as_array().unwrap().len(),
        1,
        "{}",
        feb.json
    );
    let none = app
        .get(&format!(
            "/v2/summary/menstrual_cycle/{user}?start_date=2025-01-01&provider=oura"
        ))
        .await;
    assert_eq!(none.json, json!({"menstrual_cycle": []}));

    check_against_reference(&[case(
        "menstrual_cycle",
        "MenstrualCycleResponse",
        "MenstrualCycleResponse",
        &a.json,
    )]);
}

#[tokio::test]
async fn arrow_and_parquet_pushes_store_what_the_json_push_stores() {
    let app = TestApp::new().await;
    let by_json = user_with_cycles(&app, "cycles-by-json").await;
    let expected = comparable(&getter(&app, &by_json).await.json);
    let rows = fixture_batch();
    for (content_type, body) in [
        ("application/vnd.apache.arrow.stream", arrow_bytes(&rows)),
        ("application/vnd.apache.parquet", parquet_bytes(&rows)),
    ] {
        let user = app.user(&format!("cycles-{content_type}")).await;
        let query = format!("resource=menstrual_cycle&provider={PROVIDER}");
        let a = push_columnar(&app, &user, &query, content_type, body).await;
        assert_eq!(a.status, 200, "{content_type}: {}", a.json);
        assert_eq!(a.json["stored"], json!({"menstrual_cycle": 3}));
        let got = getter(&app, &user).await;
        assert_eq!(comparable(&got.json), expected, "{content_type}");
    }
}

#[tokio::test]
async fn a_columnar_row_breaking_a_rule_is_named_like_its_json_record() {
    let app = TestApp::new().await;
    let user = app.user("cycles-bad").await;
    let rows = fixture_batch();
    // An unknown column.
    let extra = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("period_start", DataType::Date32, false),
            Field::new("flow_total", DataType::Float64, true),
        ])),
        vec![
            rows.column(0).clone(),
            Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0])),
        ],
    )
    .unwrap();
    let q = format!("resource=menstrual_cycle&provider={PROVIDER}");
    let a = push_columnar(
        &app,
        &user,
        &q,
        "application/vnd.apache.arrow.stream",
        arrow_bytes(&extra),
    )
    .await;
    assert_422_at(&a, &[json!("body"), json!("flow_total")]);
    // A value out of range in a list: located as in the JSON push.
    let mut bad = cycles();
    bad[1]["basal_body_temperature"][2]["value"] = json!(52.0);
    let a = app
        .post(
            &format!("/v2/user/{user}/data"),
            json!({"provider": PROVIDER, "menstrual_cycle": bad}),
        )
        .await;
    assert_422_at(
        &a,
        &[
            json!("body"),
            json!("menstrual_cycle"),
            json!(1),
            json!("basal_body_temperature"),
            json!(2),
            json!("value"),
        ],
    );
    // An entry without its date, an unknown flow, an end before the start.
    for (patch, at) in [
        (
            json!({"menstrual_flow": [{"flow": "light"}]}),
            vec![json!("menstrual_flow"), json!(0), json!("date")],
        ),
        (
            json!({"menstrual_flow": [{"date": "2025-01-03", "flow": "torrential"}]}),
            vec![json!("menstrual_flow"), json!(0), json!("flow")],
        ),
        (
            json!({"period_end": "2025-01-01"}),
            vec![json!("period_end")],
        ),
        (
            json!({"ovulation_test": [{"date": "2025-01-03", "test_result": "positive", "colour": "blue"}]}),
            vec![json!("ovulation_test"), json!(0), json!("colour")],
        ),
    ] {
        let mut record = cycles()[0].clone();
        for (k, v) in patch.as_object().unwrap() {
            record[k] = v.clone();
        }
        let a = app
            .post(
                &format!("/v2/user/{user}/data"),
                json!({"provider": PROVIDER, "menstrual_cycle": [record]}),
            )
            .await;
        let mut loc = vec![json!("body"), json!("menstrual_cycle"), json!(0)];
        loc.extend(at);
        assert_422_at(&a, &loc);
    }
    assert_eq!(
        getter(&app, &user).await.json,
        json!({"menstrual_cycle": []})
    );
}

/// On the real binary (its job runner announces pushes): the push's
/// `daily.data.menstrual_cycle.created` event carries the cycles as the getter renders them,
/// and a re-push of a changed cycle is announced as `updated`.
#[tokio::test(flavor = "multi_thread")]
async fn a_push_emits_the_tables_daily_events_rendered_as_the_getter() {
    use crate::events::support::{Server, WAIT};
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[], None);
    let user = server.user("cycles-events").await;
    let path = format!("/v2/user/{user}/data");
    server
        .post(
            &path,
            json!({"provider": PROVIDER, "menstrual_cycle": cycles()}),
        )
        .await;
    let query = format!("&user_id={user}&event_type=daily.data.menstrual_cycle.created");
    let created = server.events_until(&query, 1, WAIT).await;
    let rendered = server
        .get(&format!(
            "/v2/summary/menstrual_cycle/{user}?start_date=2025-01-01&end_date=2025-03-31"
        ))
        .await;
    assert_eq!(
        created[0]["data"]["data"], rendered["menstrual_cycle"],
        "event data = getter rendering: {}",
        created[0]
    );
    let mut changed = cycles()[0].clone();
    changed["basal_body_temperature"][0]["value"] = json!(36.5);
    server
        .post(
            &path,
            json!({"provider": PROVIDER, "menstrual_cycle": [changed]}),
        )
        .await;
    let query = format!("&user_id={user}&event_type=daily.data.menstrual_cycle.updated");
    let updated = server.events_until(&query, 1, WAIT).await;
    let data = updated[0]["data"]["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "only the changed cycle: {}", updated[0]);
    assert_eq!(data[0]["basal_body_temperature"][0]["value"], 36.5);
}
