//! The push route parses JSON text in one pass (`parse_push_json`) instead of building a tree;
//! it must agree with parsing the same body as a `Value` (`parse_push`, which the validation
//! cases pin): the same batches for a valid body, the same violation (location, type, message,
//! input) for an invalid one, and `json_invalid` for malformed text wherever it is.

use super::*;
use wearhouse::ingest::parse_push_json;
use wearhouse::validation::Invalid;

fn via_text(text: &str) -> Result<PushBatches, Invalid> {
    parse_push_json(text.as_bytes(), &user(), now())
}

fn assert_agree(text: &str) {
    let tree: Value = serde_json::from_str(text).unwrap();
    match (parse_push(&tree, &user(), now()), via_text(text)) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.provider, b.provider);
            assert_eq!(a.batches.len(), b.batches.len(), "{text}");
            for ((da, ba), (db, bb)) in a.batches.iter().zip(&b.batches) {
                assert_eq!(da, db);
                assert_eq!(ba, bb, "{da:?}");
            }
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "{text}"),
        (a, b) => panic!("{text}: tree {:?}, text {:?}", a.err(), b.err()),
    }
}

#[test]
fn text_and_tree_parsing_agree() {
    let mut bodies = vec![full_body().to_string()];
    let mut bad_sample = full_body();
    bad_sample["timeseries"]["heartrate"][0]["value"] = json!(400.0);
    bodies.push(bad_sample.to_string());
    let mut bad_sleep = full_body();
    bad_sleep["sleep"][0]["score"] = json!("high");
    bodies.push(bad_sleep.to_string());
    bodies.extend(
        [
            r#"[1, 2]"#,
            r#""text""#,
            r#"null"#,
            r#"{}"#,
            r#"{"provider": "manual", "timeseries": null}"#,
            r#"{"provider": "manual", "timeseries": [1]}"#,
            r#"{"provider": "manual", "timeseries": {"heartrate": {"a": 1}}}"#,
            r#"{"provider": "manual", "timeseries": {"heartrate": null}}"#,
            r#"{"provider": "manual", "timeseries": {"heart_rate": [], "steps": [{"x": 1}]}}"#,
            r#"{"provider": "manual", "timeseries": {"steps": [[]]}}"#,
            r#"{"provider": "manual", "timeseries": {"heartrate": []}}"#,
            // Duplicate members: the last value wins, at the first one's place.
            r#"{"provider": "manual", "timeseries": {"steps": [{"x": 1}], "steps": []}}"#,
            r#"{"provider": "manual", "timeseries": {"heartrate": [{"timestamp": "2025-03-02T07:00:00Z", "value": 61}], "heartrate": [{"timestamp": "2025-03-02T07:00:00Z", "value": 1000}]}}"#,
            r#"{"provider": "manual", "timeseries": {"steps": [{"x": 1}]}, "timeseries": {}}"#,
            r#"{"provider": "manual", "provider": "oura", "timeseries": {"heartrate": [{"timestamp": "2025-03-02T07:00:00Z", "value": 61}]}}"#,
        ]
        .map(str::to_owned),
    );
    for text in &bodies {
        assert_agree(text);
    }
}

#[test]
fn body_level_violations_come_before_sample_violations_wherever_they_are() {
    let text = r#"{"timeseries": {"heartrate": [{"timestamp": "2025-03-02T07:00:00Z", "value": 400}]}, "provider": "nope"}"#;
    let err = via_text(text).unwrap_err();
    assert_eq!(err.0[0].loc, vec![Loc::from("body"), Loc::from("provider")]);
    let text = r#"{"timeseries": {"heartrate": [{"value": 1}]}, "sleep": [{"bedtime_start": "x"}], "provider": "manual"}"#;
    let err = via_text(text).unwrap_err();
    assert_eq!(err.0[0].loc[1], Loc::from("sleep"));
}

#[test]
fn malformed_text_is_json_invalid_even_after_a_bad_sample() {
    for text in [
        r#"{"provider": "manual", "timeseries": {"heartrate": [{"value": 400}], "#,
        r#"{"provider": "manual", "timeseries": {"heartrate": [{"value": 400}, }]}}"#,
        r#"{"provider": "manual"} trailing"#,
    ] {
        let err = via_text(text).unwrap_err();
        assert_eq!(err.0[0].kind, "json_invalid", "{text}");
        assert_eq!(err.0[0].loc[0], Loc::from("body"));
    }
}
