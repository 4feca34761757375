//! Arbitrary JSON bodies and WHERE strings for the robustness test: a mix of plausible keys
//! and values and hostile shapes, seeded.

use rand::Rng;
use serde_json::{Value, json};

/// Arbitrary JSON: a mix of plausible and hostile shapes.
pub fn arbitrary_json<R: Rng>(g: &mut R, depth: u32) -> Value {
    let keys = [
        "timeframe",
        "queries",
        "select",
        "group_by",
        "where",
        "func",
        "arg",
        "sleep",
        "index",
        "timeseries",
        "field",
        "date_trunc",
        "date_part",
        "group_key",
        "value",
        "unit",
        "anchor",
        "past",
        "source",
        "value_macro",
        "config",
        "instructions",
        "placeholder",
        "type",
        "x",
    ];
    let strings = [
        "sleep",
        "efficiency",
        "mean",
        "day",
        "week",
        "month",
        "2025-03-01",
        "heartrate",
        "value",
        "*",
        "relative",
        "",
        "timeseries",
        "chronotype",
        "source_provider",
        "x = 1",
        "'",
    ];
    match if depth == 0 {
        g.gen_range(0..4)
    } else {
        g.gen_range(0..7)
    } {
        0 => Value::Null,
        1 => json!(g.gen_range(-3i64..70)),
        2 => json!(strings[g.gen_range(0..strings.len())]),
        3 => [json!(true), json!(false), json!(1.5), json!(-1e300)][g.gen_range(0..4)].clone(),
        4 | 5 => {
            let mut m = serde_json::Map::new();
            for _ in 0..g.gen_range(0..4) {
                m.insert(
                    keys[g.gen_range(0..keys.len())].into(),
                    arbitrary_json(g, depth - 1),
                );
            }
            Value::Object(m)
        }
        _ => Value::Array(
            (0..g.gen_range(0..4))
                .map(|_| arbitrary_json(g, depth - 1))
                .collect(),
        ),
    }
}

/// Arbitrary WHERE text built from SQL-ish tokens.
pub fn arbitrary_where<R: Rng>(g: &mut R) -> String {
    let toks = [
        "value",
        "type",
        "efficiency",
        "steps",
        "session_end",
        "source_provider",
        "=",
        "<>",
        "!=",
        "<",
        ">=",
        "AND",
        "OR",
        "NOT",
        "(",
        ")",
        "IN",
        "BETWEEN",
        "IS",
        "NULL",
        "TRUE",
        "'a'",
        "'2025-03-01'",
        "42",
        "-1",
        "1e999",
        "3.5",
        ",",
        "+",
        "*",
        "LIKE",
        "CAST",
        "abs(",
        "SELECT",
        "\"value\"",
        "x.y",
        "'",
        ";",
        "--",
        "9223372036854775808",
    ];
    (0..g.gen_range(0..12))
        .map(|_| toks[g.gen_range(0..toks.len())])
        .collect::<Vec<_>>()
        .join(" ")
}
