//! Withings measure groups (`/measure?action=getmeas`, `body.measuregrps[]`) to `body` rows and
//! `weight`, `fat`, `blood_pressure` and `heartrate` samples. The shared rules are in
//! `normalise.rs`.
//!
//! A measure's value is `value × 10^unit` (the reference's "Measure" object). Types read
//! (the reference's `meastype` table): 1 weight (kg), 5 fat-free mass (kg), 6 fat ratio (%),
//! 8 fat mass (kg), 9 diastolic and 10 systolic blood pressure (mmHg), 11 heart pulse (bpm),
//! 76 muscle mass (kg), 77 hydration (kg), 88 bone mass (kg), 170 visceral fat (an index).
//!
//! Decisions where the documentation is silent:
//! - One `body` row per group holding any body-composition type, `id` = `grpid`: `weight`,
//!   `fat` (type 6, else fat mass over weight; to 2 decimals), `lean_body_mass_kilogram` (type 5), and muscle,
//!   hydration and bone mass as percentages of the group's weight (`muscle_mass_percentage`,
//!   `water_percentage`, `bone_mass_percentage`; left out without a weight),
//!   `visceral_fat_index`; `time_zone` is the answer's zone.
//! - Each weight and fat value is also a sample; a group with both 9 and 10 is one
//!   `blood_pressure` sample (one of the two alone is left out); type 11 is a `heartrate`
//!   sample, with [`Resource::Heartrate`](crate::sync::Resource::Heartrate) only.
//! - A group of `category` 2 (a user's objective, not a measurement) is left out. A group with
//!   a value out of its sane range (weight 0–700 kg, fat 0–100 %, pulse 1–300 bpm, pressures
//!   1–300 mmHg) is malformed: skipped whole, counted.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::normalise::{Body, instant, num, offset, put, stamp, zone_of};

#[derive(Debug, Deserialize)]
struct Measure {
    value: i64,
    #[serde(rename = "type")]
    kind: i64,
    unit: i32,
}

#[derive(Debug, Deserialize)]
struct Group {
    grpid: u64,
    date: i64,
    category: Option<i64>,
    measures: Vec<Measure>,
}

/// `value × 10^unit`, divided rather than multiplied for a negative unit so that the result is
/// the double nearest the decimal (`72345, -3` is `72.345`, not `72.34500000000001`).
fn scaled(m: &Measure) -> f64 {
    let v = m.value as f64;
    if m.unit < 0 {
        v / 10f64.powi(-m.unit)
    } else {
        v * 10f64.powi(m.unit)
    }
}

fn within(v: Option<f64>, lo: f64, hi: f64) -> bool {
    v.is_none_or(|v| v.is_finite() && v >= lo && v <= hi)
}

impl Body {
    /// The groups of a `getmeas` answer whose zone is `timezone`; `(body, pulse)` say whether
    /// body measures and heart pulses are wanted.
    pub(crate) fn measure_groups(
        &mut self,
        groups: &[Value],
        timezone: Option<&str>,
        (body, pulse): (bool, bool),
    ) {
        let zone = zone_of(timezone);
        for record in groups {
            let Some(g) = self.read::<Group>("body", record) else {
                continue;
            };
            if g.category == Some(2) {
                continue;
            }
            let Some(at) = instant(zone, g.date) else {
                self.malformed::<()>("body", record, "date out of range");
                continue;
            };
            let by_type: HashMap<i64, f64> =
                g.measures.iter().map(|m| (m.kind, scaled(m))).collect();
            let get = |t: i64| by_type.get(&t).copied();
            let weight = get(1);
            let fat = get(6).or_else(|| match (get(8), weight) {
                (Some(mass), Some(w)) if w > 0.0 => Some(mass / w * 100.0),
                _ => None,
            });
            let (diastolic, systolic, heart) = (get(9), get(10), get(11));
            let sane = within(weight, f64::MIN_POSITIVE, 700.0)
                && within(fat, 0.0, 100.0)
                && within(heart, 1.0, 300.0)
                && within(diastolic, 1.0, 300.0)
                && within(systolic, 1.0, 300.0);
            if !sane {
                self.malformed::<()>("body", record, "a value out of its sane range");
                continue;
            }
            if !self.in_window(at) {
                continue;
            }
            if pulse && let Some(b) = heart {
                self.heartrate.push(Body::sample(at, "bpm", b));
            }
            if !body {
                continue;
            }
            if let (Some(sys), Some(dia)) = (systolic, diastolic) {
                self.blood_pressure.push(json!({
                    "timestamp": stamp(at),
                    "timezone_offset": offset(at),
                    "unit": "mmHg",
                    "systolic": num(sys),
                    "diastolic": num(dia),
                }));
            }
            let share = |t: i64| match (get(t), weight) {
                (Some(part), Some(w)) if w > 0.0 => Some(round2(part / w * 100.0)),
                _ => None,
            };
            let mut row = Map::new();
            put(&mut row, "weight", weight.map(num));
            put(&mut row, "fat", fat.map(|f| num(round2(f))));
            put(&mut row, "lean_body_mass_kilogram", get(5).map(num));
            put(&mut row, "muscle_mass_percentage", share(76).map(num));
            put(&mut row, "water_percentage", share(77).map(num));
            put(&mut row, "bone_mass_percentage", share(88).map(num));
            put(&mut row, "visceral_fat_index", get(170).map(num));
            if row.is_empty() {
                continue;
            }
            row.insert("id".into(), g.grpid.to_string().into());
            row.insert("measured_at".into(), stamp(at).into());
            row.insert("time_zone".into(), zone.name().into());
            self.body
                .push(crate::sync::body::with_payload(Value::Object(row), record));
            if let Some(w) = weight {
                self.weight.push(Body::sample(at, "kg", w));
            }
            if let Some(f) = fat {
                self.fat.push(Body::sample(at, "%", round2(f)));
            }
        }
    }
}

/// A derived percentage to two decimals (the precision Withings' own ratios have).
fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}
