//! The named, seeded scenarios of `testdata/README.md`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wearhouse::schema::{Dataset, Table, resource};

use super::data::{Data, H, M, Row, Val, day, s, sample, source, ts};

const PROVIDERS: [(&str, &str); 4] = [
    ("oura", "ring"),
    ("apple_health_kit", "watch"),
    ("fitbit", "watch"),
    ("withings", "scale"),
];

/// A sleep session.
#[allow(clippy::too_many_arguments)]
fn sleep_row(
    g: &mut ChaCha8Rng,
    id: usize,
    end: i64,
    offset: Option<i64>,
    provider: &str,
    st: &str,
    ingested: i64,
) -> Row {
    let mut r = Row::new();
    let dur = g.gen_range(4 * 3600..10 * 3600) as i64;
    let start = end - dur * 1_000_000;
    let deep = g.gen_range(0..dur / 4);
    let rem = g.gen_range(0..dur / 4);
    let light = g.gen_range(0..dur / 3);
    let awake = dur - deep - rem - light;
    r.insert("id".into(), s(&format!("{provider}-{id}")));
    r.insert("session_start".into(), Val::T(start));
    r.insert("session_end".into(), Val::T(end));
    if let Some(o) = offset {
        r.insert("timezone_offset".into(), Val::I(o));
    }
    r.insert(
        "type".into(),
        s(if dur >= 3 * 3600 {
            "long_sleep"
        } else {
            "short_sleep"
        }),
    );
    r.insert(
        "state".into(),
        s(if g.gen_bool(0.8) {
            "confirmed"
        } else {
            "tentative"
        }),
    );
    r.insert("duration_second".into(), Val::I(dur));
    r.insert("stage_asleep_second".into(), Val::I(deep + rem + light));
    r.insert("stage_awake_second".into(), Val::I(awake));
    r.insert("stage_light_second".into(), Val::I(light));
    r.insert("stage_rem_second".into(), Val::I(rem));
    r.insert("stage_deep_second".into(), Val::I(deep));
    if g.gen_bool(0.9) {
        r.insert("latency_second".into(), Val::I(g.gen_range(0..3600)));
    }
    r.insert("heart_rate_mean".into(), Val::I(g.gen_range(45..70)));
    r.insert(
        "efficiency".into(),
        Val::F(((deep + rem + light) as f64 / dur as f64 * 1000.0).round() / 10.0),
    );
    if g.gen_bool(0.8) {
        r.insert(
            "hrv_mean_rmssd".into(),
            Val::F(g.gen_range(200..900) as f64 / 10.0),
        );
    }
    r.insert("score".into(), Val::I(g.gen_range(40..100)));
    if g.gen_bool(0.7) {
        let n = (dur / 300) as usize;
        let codes: Vec<i8> = (0..n)
            .map(|_| [1, 2, 2, 3, 4, -1][g.gen_range(0..6)])
            .collect();
        r.insert("hypnogram".into(), Val::L(codes));
        r.insert("hypnogram_interval_second".into(), Val::I(300));
    }
    source(&mut r, provider, st, ingested);
    r
}

/// The named scenarios of `testdata/README.md`.
pub fn scenario(name: &str) -> Data {
    let mut data = Data::new();
    let base = ts("2025-03-01T00:00:00");
    match name {
        "empty" => {}
        "sleep_month" => {
            let mut g = rng(11);
            let mut rows = Vec::new();
            for d in 0..31i64 {
                let end = base + d * 24 * H + 6 * H + g.gen_range(0..120) * M;
                rows.push(sleep_row(
                    &mut g,
                    d as usize,
                    end,
                    Some(3600),
                    "oura",
                    "ring",
                    base + 40 * 24 * H + d,
                ));
                if d >= 10 {
                    rows.push(sleep_row(
                        &mut g,
                        d as usize,
                        end + 7 * M,
                        Some(3600),
                        "apple_health_kit",
                        "watch",
                        base + 40 * 24 * H + 100 + d,
                    ));
                }
            }
            data.insert(Dataset::Table(Table::Sleep), rows);
        }
        "hr_two_providers" => {
            // §3.5 example: Oura from day 1, HealthKit from day 5, both hourly over 7 days.
            let hr = resource("heartrate").unwrap();
            let mut rows = Vec::new();
            for h in 0..7 * 24i64 {
                let t = base + h * H;
                rows.push(sample(
                    t,
                    Some(0),
                    50.0 + (h % 24) as f64,
                    "oura",
                    "ring",
                    base + h,
                ));
                if h >= 4 * 24 {
                    rows.push(sample(
                        t + 5 * M,
                        Some(0),
                        70.0 + (h % 24) as f64,
                        "apple_health_kit",
                        "ring",
                        base + h + 1,
                    ));
                }
            }
            data.insert(Dataset::Timeseries(hr), rows);
            let steps = resource("steps").unwrap();
            let srows = (0..7 * 24i64)
                .map(|h| {
                    let mut r = sample(
                        base + h * H,
                        Some(0),
                        (h * 37 % 500) as f64,
                        "oura",
                        "ring",
                        base + h,
                    );
                    r.insert("duration".into(), Val::F(3600.0));
                    r.insert("end".into(), Val::T(base + (h + 1) * H));
                    r
                })
                .collect();
            data.insert(Dataset::Timeseries(steps), srows);
        }
        "dst_berlin" => {
            // Hourly samples without offsets around both 2025 changes (30 March, 26 October).
            let hr = resource("heartrate").unwrap();
            let mut rows = Vec::new();
            for start in [ts("2025-03-29T00:00:00"), ts("2025-10-25T00:00:00")] {
                for h in 0..72i64 {
                    rows.push(sample(
                        start + h * H,
                        None,
                        60.0 + h as f64,
                        "oura",
                        "ring",
                        start + h,
                    ));
                }
            }
            data.insert(Dataset::Timeseries(hr), rows);
        }
        "traveller" => {
            // Offset +01:00 until 10 March, then −05:00 (flew to New York), samples every 2 h.
            let hr = resource("heartrate").unwrap();
            let rows = (0..20 * 12i64)
                .map(|i| {
                    let t = base + i * 2 * H;
                    let off = if t < ts("2025-03-10T12:00:00") {
                        3600
                    } else {
                        -5 * 3600
                    };
                    sample(
                        t,
                        Some(off),
                        55.0 + (i % 12) as f64,
                        "garmin",
                        "watch",
                        base + i,
                    )
                })
                .collect();
            data.insert(Dataset::Timeseries(hr), rows);
        }
        "daily_tables" => {
            let mut g = rng(7);
            let mut act = Vec::new();
            let mut meal = Vec::new();
            let mut body = Vec::new();
            for d in 0..40i32 {
                let date = day("2025-02-20") + d;
                for (p, st) in PROVIDERS.iter().take(2) {
                    let mut r = Row::new();
                    r.insert("id".into(), s(&format!("{p}-{d}")));
                    r.insert("date".into(), Val::D(date));
                    r.insert("steps".into(), Val::I(g.gen_range(1000..20000)));
                    r.insert(
                        "calories_total".into(),
                        Val::F(g.gen_range(15000..35000) as f64 / 10.0),
                    );
                    r.insert("wheelchair_use".into(), Val::B(g.gen_bool(0.1)));
                    source(&mut r, p, st, base + i64::from(d));
                    act.push(r);
                }
                for k in 0..3 {
                    let mut r = Row::new();
                    r.insert("id".into(), s(&format!("meal-{d}-{k}")));
                    r.insert("date".into(), Val::D(date));
                    r.insert("name".into(), s(["breakfast", "lunch", "dinner"][k]));
                    r.insert("calories".into(), Val::F(g.gen_range(200..900) as f64));
                    r.insert("protein_gram".into(), Val::F(g.gen_range(5..60) as f64));
                    source(
                        &mut r,
                        "cronometer",
                        "app",
                        base + i64::from(d) * 10 + k as i64,
                    );
                    meal.push(r);
                }
                if d % 3 == 0 {
                    let mut r = Row::new();
                    r.insert("id".into(), s(&format!("body-{d}")));
                    r.insert(
                        "measured_at".into(),
                        Val::T(base + i64::from(d - 8) * 24 * H + 7 * H),
                    );
                    r.insert("timezone_offset".into(), Val::I(3600));
                    r.insert("weight_kilogram".into(), Val::F(70.0 + f64::from(d) / 10.0));
                    source(&mut r, "withings", "scale", base + i64::from(d));
                    body.push(r);
                }
            }
            let profile = [
                ("oura", "2025-03-02T23:30:00", 180),
                ("withings", "2025-03-05T06:15:30", 181),
            ]
            .iter()
            .map(|(p, at, height)| {
                let mut r = Row::new();
                r.insert("id".into(), s(&format!("profile-{p}")));
                r.insert("height_centimeter".into(), Val::I(*height));
                r.insert("birth_date".into(), Val::D(day("1990-07-14")));
                r.insert("sex".into(), s("female"));
                r.insert("created_at".into(), Val::T(ts("2024-01-01T00:00:00")));
                r.insert("updated_at".into(), Val::T(ts(at)));
                source(&mut r, p, "app", ts(at));
                r
            })
            .collect();
            data.insert(Dataset::Table(Table::Profile), profile);
            data.insert(Dataset::Table(Table::Activity), act);
            data.insert(Dataset::Table(Table::Meal), meal);
            data.insert(Dataset::Table(Table::Body), body);
        }
        "one_resting_sample" => {
            // Issue 13's minimal case: one resting heart-rate sample at offset +01:00.
            let hr = resource("heartrate").unwrap();
            let mut row = sample(base + 8 * H, Some(3600), 52.0, "oura", "ring", base + 9 * H);
            row.insert("type".into(), s("resting"));
            data.insert(Dataset::Timeseries(hr), vec![row]);
        }
        other => panic!("unknown scenario {other}"),
    }
    data
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}
