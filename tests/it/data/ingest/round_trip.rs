//! Push -> batches -> getter JSON gives back what was pushed; derived columns are filled;
//! grouped samples page by cursor.

use super::*;

#[test]
fn every_table_and_family_round_trips() {
    let body = full_body();
    let parsed = parse_push(&body, &user(), now()).unwrap();
    let user_id = Uuid::nil();
    for table in [
        Table::Sleep,
        Table::Activity,
        Table::Workout,
        Table::Body,
        Table::Meal,
    ] {
        let key = wearhouse::ingest::push_key(table);
        let rendered =
            render_summaries(table, &batches_of(&parsed, Dataset::Table(table)), user_id);
        let pushed = body[key].as_array().unwrap();
        assert_eq!(rendered.len(), pushed.len(), "{key}");
        assert_round_trip(&pushed[0], &rendered[0], key);
        assert_eq!(rendered[0]["source"]["provider"], "manual");
        assert_eq!(rendered[0]["source"]["type"], "app");
        assert_eq!(rendered[0]["source"]["name"], "Manual");
        assert_eq!(rendered[0]["created_at"], "2025-03-10T12:00:00Z");
        assert_eq!(rendered[0]["user_id"], user_id.to_string());
        assert_eq!(rendered[0]["calendar_date"], "2025-03-02", "{key}");
    }
    let profile = render_profile(
        &batches_of(&parsed, Dataset::Table(Table::Profile)),
        user_id,
    )
    .unwrap();
    assert_round_trip(&body["profile"], &profile, "profile");
    // A profile's id is derived from its user and provider (`user()` is the nil user).
    let profile_id = wearhouse::ingest::derive_id(&[&user_id.to_string(), "manual", "profile"]);
    assert_eq!(profile["id"], profile_id.as_str());
    for (name, samples) in body["timeseries"].as_object().unwrap() {
        let res = resource(name).unwrap();
        let rendered = render_samples(res, &batches_of(&parsed, Dataset::Timeseries(res)));
        assert_eq!(rendered.len(), 1, "{name}");
        assert_round_trip(&samples[0], &rendered[0], name);
        assert_eq!(rendered[0]["unit"], res.unit);
    }
    let counts = parsed.counts();
    assert_eq!(counts["sleep"], 1);
    assert_eq!(counts["timeseries"]["note"], 1);
}

#[test]
fn a_rendered_record_can_be_pushed_back_unchanged() {
    let parsed = parse_push(&full_body(), &user(), now()).unwrap();
    let sleep = render_summaries(
        Table::Sleep,
        &batches_of(&parsed, Dataset::Table(Table::Sleep)),
        Uuid::nil(),
    );
    let again = parse_push(
        &json!({"provider": "manual", "sleep": sleep}),
        &user(),
        now(),
    )
    .unwrap();
    let twice = render_summaries(
        Table::Sleep,
        &batches_of(&again, Dataset::Table(Table::Sleep)),
        Uuid::nil(),
    );
    assert_eq!(sleep[0]["id"], twice[0]["id"]);
    assert_eq!(sleep[0]["sleep_stream"], twice[0]["sleep_stream"]);
    assert_eq!(sleep[0]["bedtime_start"], twice[0]["bedtime_start"]);
}

#[test]
fn derived_columns_are_filled() {
    let body = json!({
        "provider": "oura",
        "sleep": [{"bedtime_start": "2025-07-01T22:00:00Z", "bedtime_stop": "2025-07-02T05:00:00Z",
                   "light": 10000, "deep": 5000, "rem": 5000}],
        "activity": [{"date": "2025-07-01", "steps": 100}, {"date": "2025-07-02", "time_zone": "America/New_York"}],
        "timeseries": {"heartrate": [{"timestamp": "2025-07-01T22:00:00Z", "value": 60}],
                       "steps": [{"timestamp": "2025-07-01T22:00:00Z", "duration": 60, "value": 3}]}
    });
    let parsed = parse_push(&body, &user(), now()).unwrap();
    let sleep = render_summaries(
        Table::Sleep,
        &batches_of(&parsed, Dataset::Table(Table::Sleep)),
        Uuid::nil(),
    );
    let s = &sleep[0];
    assert_eq!(s["duration"], 25200);
    assert_eq!(s["total"], 20000);
    assert_eq!(s["type"], "long_sleep");
    assert_eq!(
        s["source"]["type"], "ring",
        "the catalogue's default source type"
    );
    // No zone on the record: no offset is stored (the engine applies the fallback zone at
    // query time), so the instant renders in UTC.
    assert_eq!(s["bedtime_stop"], "2025-07-02T05:00:00Z");
    assert_eq!(s["timezone_offset"], Value::Null);
    assert!(Uuid::parse_str(s["id"].as_str().unwrap()).is_ok());
    let again = parse_push(&body, &user(), now()).unwrap();
    let sleep2 = render_summaries(
        Table::Sleep,
        &batches_of(&again, Dataset::Table(Table::Sleep)),
        Uuid::nil(),
    );
    assert_eq!(
        sleep2[0]["id"], s["id"],
        "ids are derived deterministically"
    );

    let act = render_summaries(
        Table::Activity,
        &batches_of(&parsed, Dataset::Table(Table::Activity)),
        Uuid::nil(),
    );
    assert_eq!(act[0]["timezone_offset"], 7200);
    assert_eq!(act[1]["timezone_offset"], -14400);
    assert_ne!(act[0]["id"], act[1]["id"]);
    let res = resource("steps").unwrap();
    let steps = render_samples(res, &batches_of(&parsed, Dataset::Timeseries(res)));
    assert_eq!(steps[0]["end"], "2025-07-01T22:01:00Z");
    assert_eq!(steps[0]["timezone_offset"], Value::Null);

    let no_fallback = parse_push(&body, &PushUser::default(), now()).unwrap();
    let sleep = render_summaries(
        Table::Sleep,
        &batches_of(&no_fallback, Dataset::Table(Table::Sleep)),
        Uuid::nil(),
    );
    assert_eq!(sleep[0]["bedtime_stop"], "2025-07-02T05:00:00Z");
}

#[test]
fn grouped_samples_page_by_cursor() {
    let samples: Vec<Value> = (0..5)
        .map(|i| json!({"timestamp": format!("2025-03-02T07:0{i}:00Z"), "value": 60 + i}))
        .collect();
    let a = parse_push(
        &json!({"provider": "oura", "timeseries": {"heartrate": samples}}),
        &user(),
        now(),
    )
    .unwrap();
    let b = parse_push(
        &json!({"provider": "fitbit", "timeseries": {"heartrate": samples}}),
        &user(),
        now(),
    )
    .unwrap();
    let res = resource("heartrate").unwrap();
    let batches: Vec<RecordBatch> = a
        .batches
        .iter()
        .chain(&b.batches)
        .map(|(_, b)| b.clone())
        .collect();
    let mut seen = 0;
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = render_grouped(res, &batches, cursor.as_deref(), 4).unwrap();
        for (provider, groups) in page["groups"].as_object().unwrap() {
            assert!(provider == "oura" || provider == "fitbit");
            assert_eq!(groups[0]["source"]["provider"], provider.as_str());
            seen += groups[0]["data"].as_array().unwrap().len();
        }
        pages += 1;
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!((seen, pages), (10, 3));
    let err = render_grouped(res, &batches, Some("not-a-cursor"), 4).unwrap_err();
    assert_eq!(err.0[0].loc, vec![Loc::from("query"), Loc::from("cursor")]);
}

/// The getters' exact JSON shape, for reviewers and for the HTTP layer's OpenAPI types.
#[test]
fn rendered_shapes_are_snapshotted() {
    let parsed = parse_push(&full_body(), &user(), now()).unwrap();
    let sleep = render_summaries(
        Table::Sleep,
        &batches_of(&parsed, Dataset::Table(Table::Sleep)),
        Uuid::nil(),
    );
    insta::assert_json_snapshot!("rendered_sleep", sleep);
    let steps = resource("steps").unwrap();
    let samples = render_samples(steps, &batches_of(&parsed, Dataset::Timeseries(steps)));
    insta::assert_json_snapshot!("rendered_steps", samples);
    let grouped = render_grouped(
        steps,
        &batches_of(&parsed, Dataset::Timeseries(steps)),
        None,
        10,
    )
    .unwrap();
    insta::assert_json_snapshot!("rendered_grouped_steps", grouped);
    insta::assert_json_snapshot!("push_counts", parsed.counts());
}

/// A value given under its column's own name is in the column's unit: the wire's factor applies
/// to the wire name only (`low` travels in minutes, `intensity_low_second` is seconds).
#[test]
fn a_column_named_directly_keeps_its_own_unit() {
    let mut by_wire = full_body()["activity"][0].clone();
    let mut by_column = by_wire.clone();
    by_wire["low"] = json!(10);
    by_column.as_object_mut().unwrap().remove("low");
    by_column["intensity_low_second"] = json!(600);
    let rendered: Vec<Value> = [by_wire, by_column]
        .into_iter()
        .map(|record| {
            let body = json!({"provider": "manual", "activity": [record]});
            let parsed = parse_push(&body, &user(), now()).unwrap();
            let batches = batches_of(&parsed, Dataset::Table(Table::Activity));
            render_summaries(Table::Activity, &batches, Uuid::nil()).remove(0)
        })
        .collect();
    assert_eq!(rendered[0]["low"].as_f64(), Some(10.0));
    assert_eq!(
        rendered[1]["low"].as_f64(),
        Some(10.0),
        "600 seconds are 10 minutes"
    );
}
