//! Unit tests across the engine's layers: validation locations, the priority switch, plan
//! shapes and the inputs a request needs. Semantics are covered end to end in `tests/it/engine/mod.rs`.

use std::collections::HashMap;

use serde_json::json;

use super::*;
use crate::schema::{Dataset, Table, resource};
use crate::validation::Loc;

fn body(query: serde_json::Value) -> serde_json::Value {
    json!({"timeframe": {"anchor": "2025-03-31", "past": {"value": 3, "unit": "month"}}, "queries": [query]})
}

fn spec_example() -> serde_json::Value {
    json!({
      "timeframe": {"type": "relative", "anchor": "2025-03-31", "past": {"value": 3, "unit": "month"}},
      "queries": [{
          "select": [
            {"group_key": "*"},
            {"func": "mean", "arg": {"sleep": "efficiency"}},
            {"func": "newest", "arg": {"value_macro": "chronotype"}}
          ],
          "group_by": [{"date_trunc": {"value": 1, "unit": "week"}, "arg": {"index": "sleep"}}],
          "where": "type = 'long_sleep'"
      }],
      "config": {"provider_priority_overrides": ["oura", "apple_health_kit"]}
    })
}

#[test]
fn the_spec_example_is_valid_and_named_as_in_section_4_1() {
    let req = parse_request(&spec_example(), &Limits::default()).unwrap();
    let names: Vec<&str> = req.queries[0]
        .select
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["group_key.0", "mean.efficiency", "newest.chronotype"]
    );
    assert_eq!(req.queries[0].source, QuerySource::Table(Table::Sleep));
    assert_eq!(req.priority_overrides, ["oura", "apple_health_kit"]);
    assert!(req.queries[0].prioritised());
}

#[test]
fn an_unknown_column_is_located_at_its_table_key() {
    let b = body(
        json!({"select": [{"func": "mean", "arg": {"sleep": "efficiency"}}, {"sleep": "id"}, {"func": "max", "arg": {"sleep": "efficency"}}]}),
    );
    let err = parse_request(&b, &Limits::default()).unwrap_err();
    let want: Vec<Loc> = crate::loc!["body", "queries", 0, "select", 2, "arg", "sleep"];
    assert_eq!(err.0[0].loc, want);
    assert!(err.0[0].msg.contains("efficiency"), "{}", err.0[0].msg);
}

#[test]
fn instructions_is_an_alias_but_not_alongside_queries() {
    let mut b = spec_example();
    let q = b.as_object_mut().unwrap().remove("queries").unwrap();
    b["instructions"] = q.clone();
    assert!(parse_request(&b, &Limits::default()).is_ok());
    b["queries"] = q;
    assert!(parse_request(&b, &Limits::default()).is_err());
}

#[test]
fn grouping_by_provider_and_source_type_turns_priority_off() {
    let q = |group_by| body(json!({"select": [{"group_key": "*"}], "group_by": group_by}));
    let both =
        q(json!([{"source": "source_provider"}, {"source": "source_type"}, {"sleep": "type"}]));
    let one = q(json!([{"source": "source_provider"}, {"sleep": "type"}]));
    let limits = Limits::default();
    assert!(!parse_request(&both, &limits).unwrap().queries[0].prioritised());
    assert!(parse_request(&one, &limits).unwrap().queries[0].prioritised());
}

#[test]
fn limits_are_configurable() {
    let limits = Limits {
        max_where_chars: 5,
        ..Limits::default()
    };
    let b = body(json!({"select": [{"sleep": "id"}], "where": "type = 'x'"}));
    let err = parse_request(&b, &limits).unwrap_err();
    assert!(err.0[0].msg.contains("longer than 5"), "{}", err.0[0].msg);
}

#[test]
fn prioritised_plans_keep_the_best_sub_group_with_a_second_aggregate() {
    let catalog = Catalog::new(UserContext::default(), HashMap::new()).unwrap();
    let req = parse_request(&spec_example(), &Limits::default()).unwrap();
    let plan = compile(&req, 0, &catalog)
        .unwrap()
        .display_indent()
        .to_string();
    assert!(plan.contains("best_source"), "{plan}");
    assert!(plan.contains("__source"), "{plan}");
    let rows = body(json!({"select": [{"index": "sleep"}, {"sleep": "efficiency"}]}));
    let req = parse_request(&rows, &Limits::default()).unwrap();
    let plan = compile(&req, 0, &catalog)
        .unwrap()
        .display_indent()
        .to_string();
    assert!(
        !plan.contains("best_source") && !plan.contains("Aggregate"),
        "{plan}"
    );
}

#[test]
fn required_inputs_widen_the_window_by_the_largest_offset() {
    let b = json!({"timeframe": {"anchor": "2025-03-31", "past": {"value": 1, "unit": "day"}},
        "queries": [{"select": [{"timeseries": "heartrate", "field": "value"}, {"timeseries": "steps", "field": "value"}]},
                    {"select": [{"timeseries": "heartrate", "field": "value"}]}]});
    let req = parse_request(&b, &Limits::default()).unwrap();
    let inputs = required_inputs(&req, &UserContext::default());
    let hr = Dataset::Timeseries(resource("heartrate").unwrap());
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[0].0, hr);
    assert_eq!(inputs[0].1.start.to_rfc3339(), "2025-03-29T06:00:00+00:00");
    assert_eq!(inputs[0].1.end.to_rfc3339(), "2025-04-01T18:00:00+00:00");
}
