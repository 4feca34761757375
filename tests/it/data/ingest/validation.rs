//! Every validation rule rejects the whole body at the offending record and field.

use super::*;

fn with(path: &[&str], value: Value) -> Value {
    let mut body = full_body();
    let mut target = &mut body;
    for (i, seg) in path.iter().enumerate() {
        if i + 1 == path.len() {
            target
                .as_object_mut()
                .unwrap()
                .insert((*seg).to_owned(), value);
            break;
        }
        target = match seg.parse::<usize>() {
            Ok(n) => &mut target[n],
            Err(_) => &mut target[*seg],
        };
    }
    body
}

#[test]
fn each_rule_rejects_at_its_location() {
    let cases: Vec<(Value, &[&str], &str)> = vec![
        (with(&["provider"], json!("nope")), &["provider"], "enum"),
        (with(&["extra"], json!(1)), &["extra"], "extra_forbidden"),
        (
            with(&["source", "type"], json!("toaster")),
            &["source", "type"],
            "enum",
        ),
        (
            with(&["sleep", "0", "bedtime_start"], json!("yesterday")),
            &["sleep", "0", "bedtime_start"],
            "value_error",
        ),
        (
            with(&["sleep", "0", "bedtime_start"], json!(null)),
            &["sleep", "0", "bedtime_start"],
            "missing",
        ),
        (
            with(
                &["sleep", "0", "bedtime_start"],
                json!("2025-03-02T08:00:00+01:00"),
            ),
            &["sleep", "0", "bedtime_stop"],
            "value_error",
        ),
        (
            with(&["sleep", "0", "hr_lowest"], json!(301)),
            &["sleep", "0", "hr_lowest"],
            "value_error",
        ),
        (
            with(&["sleep", "0", "hr_lowest"], json!("low")),
            &["sleep", "0", "hr_lowest"],
            "type_error",
        ),
        (
            with(&["sleep", "0", "efficiency"], json!(101.0)),
            &["sleep", "0", "efficiency"],
            "value_error",
        ),
        (
            with(&["sleep", "0", "deep"], json!(-1)),
            &["sleep", "0", "deep"],
            "value_error",
        ),
        (
            with(&["sleep", "0", "state"], json!("asleep")),
            &["sleep", "0", "state"],
            "enum",
        ),
        (
            with(&["sleep", "0", "timezone_offset"], json!("Mars/Base")),
            &["sleep", "0", "timezone_offset"],
            "value_error",
        ),
        (
            with(&["sleep", "0", "wake"], json!(1)),
            &["sleep", "0", "wake"],
            "extra_forbidden",
        ),
        (
            with(&["sleep", "0", "sleep_stream", "hypnogram"], json!([1, 9])),
            &["sleep", "0", "sleep_stream", "hypnogram", "1"],
            "value_error",
        ),
        (
            with(&["activity", "0", "date"], json!("2025-02-30")),
            &["activity", "0", "date"],
            "value_error",
        ),
        (
            with(&["activity", "0", "steps"], json!(12.5)),
            &["activity", "0", "steps"],
            "type_error",
        ),
        (
            with(
                &["workouts", "0", "time_end"],
                json!("2025-03-02T17:00:00+01:00"),
            ),
            &["workouts", "0", "time_end"],
            "value_error",
        ),
        (
            with(&["workouts", "0", "max_hr"], json!(400)),
            &["workouts", "0", "max_hr"],
            "value_error",
        ),
        (
            with(&["body", "0", "fat"], json!(120.0)),
            &["body", "0", "fat"],
            "value_error",
        ),
        (
            with(&["meals", "0", "energy", "value"], json!(-5.0)),
            &["meals", "0", "energy", "value"],
            "value_error",
        ),
        (
            with(&["profile", "sex"], json!("robot")),
            &["profile", "sex"],
            "enum",
        ),
        (
            with(&["profile", "birth_date"], json!("2999-01-01")),
            &["profile", "birth_date"],
            "value_error",
        ),
        (
            with(&["timeseries", "heart_rate"], json!([])),
            &["timeseries", "heart_rate"],
            "extra_forbidden",
        ),
        (
            with(&["timeseries", "heartrate", "0", "unit"], json!("bpm/s")),
            &["timeseries", "heartrate", "0", "unit"],
            "enum",
        ),
        (
            with(&["timeseries", "heartrate", "0", "value"], json!(350.0)),
            &["timeseries", "heartrate", "0", "value"],
            "value_error",
        ),
        (
            with(
                &["timeseries", "heartrate", "0", "end"],
                json!("2025-03-02T07:00:00Z"),
            ),
            &["timeseries", "heartrate", "0", "end"],
            "extra_forbidden",
        ),
        (
            with(
                &["timeseries", "steps", "0", "end"],
                json!("2025-03-02T08:00:00+01:00"),
            ),
            &["timeseries", "steps", "0", "end"],
            "value_error",
        ),
        (
            with(&["timeseries", "steps", "0", "duration"], json!(5.0)),
            &["timeseries", "steps", "0", "duration"],
            "value_error",
        ),
        (
            with(
                &["timeseries", "blood_pressure", "0", "systolic"],
                json!(null),
            ),
            &["timeseries", "blood_pressure", "0", "systolic"],
            "missing",
        ),
        (
            with(&["timeseries", "note", "0", "tags"], json!("mood")),
            &["timeseries", "note", "0", "tags"],
            "type_error",
        ),
        (
            json!({"provider": "manual", "timeseries": {"glucose": [{"timestamp": "2025-03-02T07:00:00Z", "value": 60.0}]}}),
            &["timeseries", "glucose", "0", "value"],
            "value_error",
        ),
        (json!([1, 2]), &[], "type_error"),
    ];
    for (body, path, kind) in cases {
        let err =
            parse_push(&body, &user(), now()).expect_err(&format!("{path:?} should be rejected"));
        let mut expected = vec![Loc::from("body")];
        expected.extend(
            path.iter()
                .map(|s| s.parse::<usize>().map_or(Loc::from(*s), Loc::from)),
        );
        assert_eq!(err.0.len(), 1);
        assert_eq!(err.0[0].loc, expected, "{}", err.0[0].msg);
        assert_eq!(err.0[0].kind, kind, "{path:?}: {}", err.0[0].msg);
    }
}

#[test]
fn hostile_input_is_rejected_not_panicked_on() {
    let bodies = [
        json!(null),
        json!({}),
        json!({"provider": 7}),
        json!({"provider": "manual", "sleep": {"not": "a list"}}),
        json!({"provider": "manual", "sleep": [[]]}),
        json!({"provider": "manual", "activity": [{"date": "2025-01-01", "steps": 1e300}]}),
        json!({"provider": "manual", "activity": [{"date": "2025-01-01", "time_zone_offset": 1e12}]}),
        json!({"provider": "manual", "sleep": [{"bedtime_start": "0001-01-01T00:00:00Z",
               "bedtime_stop": "9999-12-31T23:59:59Z", "timezone_offset": 99999999999i64}]}),
        json!({"provider": "manual", "sleep": [{"bedtime_start": "2025-01-01T00:00:00Z",
               "bedtime_stop": "2025-01-01T01:00:00Z", "sleep_stream": {"hypnogram": [1, 2], "interval": -5}}]}),
        json!({"provider": "manual", "sleep": [{"bedtime_start": "2025-01-01T00:00:00Z",
               "bedtime_stop": "2025-01-01T01:00:00Z", "sleep_stream": {"hypnogram": vec![1; 100]}}]}),
        json!({"provider": "manual", "timeseries": {"steps": [{"timestamp": "2025-01-01T00:00:00Z",
               "duration": 1e300, "value": 1}]}}),
        json!({"provider": "manual", "timeseries": []}),
        json!({"provider": "manual", "source": {"type": "ring", "app_id": 5}}),
    ];
    for body in bodies {
        let err = parse_push(&body, &user(), now()).expect_err(&body.to_string());
        assert_eq!(err.0[0].loc.first(), Some(&Loc::from("body")), "{body}");
    }
}
