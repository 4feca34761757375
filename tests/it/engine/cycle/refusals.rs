//! Every rule of the subquery language answers a 422 located at the offending member, whose
//! message names the problem.

use serde_json::{Value, json};

use super::query;
use crate::support::{TestApp, assert_422_at};

fn sub(func: &str, arg: Value, unnest: Value, filter: Option<&str>) -> Value {
    let mut s = json!({"select": {"func": func, "arg": arg}, "from": {"unnest": unnest}});
    if let Some(w) = filter {
        s["where"] = json!(w);
    }
    s
}

fn mc(list: &str) -> Value {
    json!({"menstrual_cycle": list})
}

/// Asserts the 422 at `loc` (under the query's first select item unless `loc` starts with
/// another key) and that its message holds `needle`.
fn refused(a: &crate::support::Answer, loc: &[Value], needle: &str) {
    assert_422_at(a, loc);
    let msg = a.json["detail"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["loc"].as_array().map(Vec::as_slice) == Some(loc))
        .unwrap()["msg"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(msg.contains(needle), "{needle:?} not in {msg:?}");
}

#[tokio::test]
async fn every_subquery_rule_has_its_422() {
    let app = TestApp::new().await;
    let user = app.user("refusals").await;
    let at = |rest: &[&str]| -> Vec<Value> {
        let mut l = vec![
            json!("body"),
            json!("queries"),
            json!(0),
            json!("select"),
            json!(0),
        ];
        l.extend(rest.iter().map(|s| json!(s)));
        l
    };
    let bbt = json!({"basal_body_temperature": "value"});
    let cases: Vec<(Value, Vec<Value>, &str)> = vec![
        // unknown list column
        (
            sub("count", Value::Null, mc("flows"), None),
            at(&["from", "unnest", "menstrual_cycle"]),
            "unknown list column \"flows\"",
        ),
        // a subquery over a scalar column
        (
            sub("count", Value::Null, mc("period_end"), None),
            at(&["from", "unnest", "menstrual_cycle"]),
            "is a scalar column, not a list",
        ),
        // a table without list columns
        (
            sub("count", Value::Null, json!({"activity": "steps"}), None),
            at(&["from", "unnest", "activity"]),
            "has no list columns",
        ),
        // unnest of something that is not a table column
        (
            sub(
                "count",
                Value::Null,
                json!({"timeseries": "heartrate", "field": "value"}),
                None,
            ),
            at(&["from", "unnest"]),
            "one table column",
        ),
        // unknown field
        (
            sub(
                "mean",
                json!({"basal_body_temperature": "celsius"}),
                mc("basal_body_temperature"),
                None,
            ),
            at(&["select", "arg", "basal_body_temperature"]),
            "unknown field \"celsius\"",
        ),
        // element on a list of structs
        (
            sub(
                "mean",
                json!({"element": true}),
                mc("basal_body_temperature"),
                None,
            ),
            at(&["select", "arg", "element"]),
            "only for lists of scalars",
        ),
        // a field on a list of scalars
        (
            sub(
                "max",
                json!({"hypnogram": "stage"}),
                json!({"sleep": "hypnogram"}),
                None,
            ),
            at(&["select", "arg", "hypnogram"]),
            "use {\"element\": true}",
        ),
        // arg null without count
        (
            sub("mean", Value::Null, mc("basal_body_temperature"), None),
            at(&["select", "arg"]),
            "only allowed with count",
        ),
        // arg naming another list than the one unnested
        (
            sub(
                "max",
                json!({"menstrual_flow": "date"}),
                mc("basal_body_temperature"),
                None,
            ),
            at(&["select", "arg", "menstrual_flow"]),
            "but the subquery unnests basal_body_temperature",
        ),
        // a function the field's type does not admit
        (
            sub(
                "mean",
                json!({"menstrual_flow": "flow"}),
                mc("menstrual_flow"),
                None,
            ),
            at(&["select", "func"]),
            "mean cannot reduce menstrual_flow.flow (string)",
        ),
        // unknown function
        (
            sub("mode", bbt.clone(), mc("basal_body_temperature"), None),
            at(&["select", "func"]),
            "mode",
        ),
        // where over an unknown field
        (
            sub(
                "count",
                Value::Null,
                mc("menstrual_flow"),
                Some("colour = 'red'"),
            ),
            at(&["where"]),
            "unknown identifier \"colour\"",
        ),
        // where over `element` on a list of structs
        (
            sub(
                "count",
                Value::Null,
                mc("menstrual_flow"),
                Some("element = 'heavy'"),
            ),
            at(&["where"]),
            "expected one of: date, flow",
        ),
        // where with a type mismatch
        (
            sub(
                "count",
                Value::Null,
                mc("basal_body_temperature"),
                Some("value > 'warm'"),
            ),
            at(&["where"]),
            "type mismatch",
        ),
        // where that is not a predicate
        (
            sub(
                "count",
                Value::Null,
                mc("basal_body_temperature"),
                Some("value"),
            ),
            at(&["where"]),
            "boolean",
        ),
        // a missing from
        (
            json!({"select": {"func": "count", "arg": null}}),
            at(&["from"]),
            "a subquery needs from",
        ),
        // an unknown key in the subquery's select
        (
            json!({"select": {"func": "count", "arg": null, "distinct": true}, "from": {"unnest": mc("menstrual_flow")}}),
            at(&["select", "distinct"]),
            "unknown key \"distinct\"",
        ),
    ];
    for (item, loc, needle) in cases {
        let a = query(&app, &user, json!([{"select": [item.clone()]}]), None).await;
        refused(&a, &loc, needle);
    }

    // A list column selected directly (and aggregated directly).
    for (item, loc) in [
        (mc("menstrual_flow"), at(&["menstrual_cycle"])),
        (
            json!({"func": "count", "arg": mc("menstrual_flow")}),
            at(&["arg", "menstrual_cycle"]),
        ),
    ] {
        let a = query(&app, &user, json!([{"select": [item]}]), None).await;
        refused(&a, &loc, "is a list column and cannot be selected directly");
    }

    // A subquery inside a grouped query without an outer aggregate.
    let grouped = json!([{
        "select": [{"group_key": "*"}, sub("count", Value::Null, mc("menstrual_flow"), None)],
        "group_by": [{"date_trunc": {"value": 1, "unit": "month"}, "arg": {"index": "menstrual_cycle"}}]
    }]);
    let a = query(&app, &user, grouped, None).await;
    let loc = vec![
        json!("body"),
        json!("queries"),
        json!(0),
        json!("select"),
        json!(1),
    ];
    refused(&a, &loc, "wrap it in an outer aggregate");

    // A subquery as a group-by key.
    let a = query(
        &app,
        &user,
        json!([{"select": [{"group_key": "*"}],
                "group_by": [sub("count", Value::Null, mc("menstrual_flow"), None)]}]),
        None,
    )
    .await;
    let loc = vec![
        json!("body"),
        json!("queries"),
        json!(0),
        json!("group_by"),
        json!(0),
    ];
    refused(&a, &loc, "\"select\" is not allowed here");

    // Two subqueries with the same output name.
    let a = query(
        &app,
        &user,
        json!([{"select": [sub("count", Value::Null, mc("menstrual_flow"), None),
                           sub("count", Value::Null, mc("menstrual_flow"), Some("flow = 'heavy'"))]}]),
        None,
    )
    .await;
    let loc = vec![
        json!("body"),
        json!("queries"),
        json!(0),
        json!("select"),
        json!(1),
    ];
    refused(
        &a,
        &loc,
        "duplicate output column name \"count.menstrual_flow\"",
    );
}
