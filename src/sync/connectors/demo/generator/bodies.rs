//! One push body per provider and day, drawn from the shared plan (`plan.rs`) with the
//! provider's own sampling, devices and measurement noise.
//!
//! - oura (ring): the night's sleep with stages and hypnogram, nightly HRV and heart rate every
//!   5 minutes in bed, a daily activity summary;
//! - apple_health_kit (watch): heart rate every minute, steps in 15-minute intervals, workouts,
//!   daily activity, logged meals and the watch's own sleep estimate;
//! - fitbit (watch): daily activity, sleep with stages, heart rate every 5 minutes;
//! - freestyle_libre (CGM): glucose every 5 minutes, with a peak after every meal.

use chrono::{DateTime, Duration, NaiveDate, Timelike, Utc};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};

use super::Persona;
use super::plan::{
    self, DEEP, Day, Night, REM, day, day_bounds, night, normal, rng_for, round, zone_on,
};
use super::records::{activity, offset_of, profile, sleep, stamp};

/// What one body is generated from.
pub(crate) struct Spec<'a> {
    pub(crate) provider: &'a str,
    pub(crate) persona: Persona,
    pub(crate) seed: u64,
    pub(crate) date: NaiveDate,
    pub(crate) with_profile: bool,
}

/// The body of one provider for one day, or `None` on a day the device was not worn.
pub(crate) fn body(spec: &Spec) -> Option<Value> {
    let mut rng = rng_for(spec.seed, spec.date, spec.provider);
    if rng.gen_bool(0.05) {
        return None;
    }
    let (source, parts) = match spec.provider {
        "oura" => (
            json!({"type": "ring", "device_id": "oura-ring-gen3"}),
            oura(spec, &mut rng),
        ),
        "apple_health_kit" => (
            json!({"type": "watch", "app_id": "com.apple.health", "device_id": "apple-watch-s9"}),
            apple(spec, &mut rng),
        ),
        "fitbit" => (
            json!({"type": "watch", "device_id": "fitbit-charge-6"}),
            fitbit(spec, &mut rng),
        ),
        _ => (
            json!({"type": "automatic", "device_id": "libre-3-sensor"}),
            libre(spec, &mut rng),
        ),
    };
    let mut body = Map::new();
    body.insert("provider".into(), Value::from(spec.provider));
    body.insert("source".into(), source);
    body.extend(parts);
    if spec.with_profile {
        body.insert("profile".into(), profile(spec.seed));
    }
    Some(Value::Object(body))
}

fn nights(spec: &Spec) -> (Night, Night) {
    let next = spec.date.succ_opt().unwrap_or(spec.date);
    (
        night(spec.persona, spec.seed, spec.date),
        night(spec.persona, spec.seed, next),
    )
}

/// Heart rate every `step` across the local day.
fn heart_rates(spec: &Spec, d: &Day, rng: &mut ChaCha8Rng, step: Duration) -> Vec<Value> {
    let (this, next) = nights(spec);
    let (from, to) = day_bounds(spec.persona, spec.seed, spec.date);
    let mut out = Vec::new();
    let mut t = from;
    while t < to {
        let tz = zone_on(spec.persona, spec.seed, spec.date);
        let offset = offset_of(tz, t);
        let hr = plan::heart_rate(
            spec.persona,
            spec.seed,
            &[&this, &next],
            d,
            (t, offset),
            normal(rng, 0.0, 1.5),
        );
        out.push(json!({"timestamp": stamp(tz, t), "timezone_offset": offset, "unit": "bpm", "value": hr.round()}));
        t += step;
    }
    out
}

fn oura(spec: &Spec, rng: &mut ChaCha8Rng) -> Map<String, Value> {
    let n = night(spec.persona, spec.seed, spec.date);
    let d = day(spec.persona, spec.seed, spec.date);
    let tz = zone_on(spec.persona, spec.seed, spec.date);
    let mut hr = Vec::new();
    let mut hrv = Vec::new();
    let mut t = n.start;
    while t < n.end {
        let offset = offset_of(tz, t);
        let value = plan::heart_rate(
            spec.persona,
            spec.seed,
            &[&n],
            &d,
            (t, offset),
            normal(rng, 0.0, 1.0),
        );
        hr.push(json!({"timestamp": stamp(tz, t), "timezone_offset": offset, "unit": "bpm", "value": value.round()}));
        let deep = if n.stage_at(t) == Some(DEEP) {
            8.0
        } else if n.stage_at(t) == Some(REM) {
            -4.0
        } else {
            0.0
        };
        let v = normal(rng, n.hrv + deep, 6.0).max(5.0);
        hrv.push(json!({"timestamp": stamp(tz, t), "timezone_offset": offset, "unit": "ms", "value": round(v, 1)}));
        t += Duration::minutes(5);
    }
    let mut s = sleep(&n, tz, rng, 0.0, 0.0);
    if let Some(obj) = s.as_object_mut() {
        obj.insert(
            "temperature_delta".into(),
            Value::from(round(n.temperature_delta, 2)),
        );
    }
    let mut out = Map::new();
    out.insert("sleep".into(), json!([s]));
    out.insert(
        "activity".into(),
        json!([activity(spec, &d, rng, 0.95, false)]),
    );
    out.insert("timeseries".into(), json!({"heartrate": hr, "hrv": hrv}));
    out
}

fn apple(spec: &Spec, rng: &mut ChaCha8Rng) -> Map<String, Value> {
    let n = night(spec.persona, spec.seed, spec.date);
    let d = day(spec.persona, spec.seed, spec.date);
    let tz = zone_on(spec.persona, spec.seed, spec.date);
    let hr = heart_rates(spec, &d, rng, Duration::minutes(1));
    let mut out = Map::new();
    out.insert("sleep".into(), json!([sleep(&n, tz, rng, 6.0, 0.15)]));
    out.insert(
        "activity".into(),
        json!([activity(spec, &d, rng, 1.0, true)]),
    );
    if let Some(w) = &d.workout {
        let heart: Vec<f64> = hr
            .iter()
            .filter(|s| {
                s["timestamp"]
                    .as_str()
                    .and_then(|t| t.parse::<DateTime<Utc>>().ok())
                    .is_some_and(|t| w.start <= t && t < w.end)
            })
            .filter_map(|s| s["value"].as_f64())
            .collect();
        let mean = heart.iter().sum::<f64>() / heart.len().max(1) as f64;
        let max = heart.iter().copied().fold(0.0, f64::max);
        let min = heart.iter().copied().fold(300.0, f64::min).min(max);
        let minutes = (w.end - w.start).num_minutes();
        let speed = match w.sport {
            "running" => 2.9,
            "cycling" => 7.0,
            "walking" => 1.4,
            _ => 0.0,
        };
        let morning = w.start.with_timezone(&tz).hour() < 12;
        let title = format!(
            "{} {}",
            if morning { "Morning" } else { "Evening" },
            w.sport.replace('_', " ")
        );
        out.insert(
            "workouts".into(),
            json!([{
                "session_start": stamp(tz, w.start), "session_end": stamp(tz, w.end),
                "title": title, "sport_name": w.sport.replace('_', " "), "sport_slug": w.sport,
                "duration_active_second": minutes * 60,
                "heart_rate_mean": mean.round() as i64, "heart_rate_minimum": min.round() as i64,
                "heart_rate_maximum": max.round() as i64,
                "distance_meter": round(speed * minutes as f64 * 60.0 * w.intensity / 0.75, 1),
                "calories": round(minutes as f64 * 9.0 * w.intensity / 0.75, 1),
                "external_id": format!("hk-{}", w.start.timestamp()),
                "time_zone": tz.name(),
            }]),
        );
    }
    let meals: Vec<Value> = d
        .meals
        .iter()
        .filter_map(|m| {
            if !rng.gen_bool(0.6) {
                return None;
            }
            let protein = round(normal(rng, m.carbs * 0.4, 4.0).max(2.0), 1);
            let fat = round(normal(rng, m.carbs * 0.3, 3.0).max(1.0), 1);
            Some(json!({"date": spec.date.to_string(), "name": m.name,
                   "calories": round(m.carbs * 4.0 + protein * 4.0 + fat * 9.0, 1),
                   "carbohydrate_gram": round(m.carbs, 1), "protein_gram": protein, "total_fat_gram": fat}))
        })
        .collect();
    if !meals.is_empty() {
        out.insert("meals".into(), Value::Array(meals));
    }
    out.insert(
        "timeseries".into(),
        json!({"heartrate": hr, "steps": steps(spec, &n, &d, rng)}),
    );
    out
}

/// Steps in 15-minute intervals between waking and bedtime, heavier during walks and runs.
fn steps(spec: &Spec, n: &Night, d: &Day, rng: &mut ChaCha8Rng) -> Vec<Value> {
    let tz = zone_on(spec.persona, spec.seed, spec.date);
    let (_, day_end) = day_bounds(spec.persona, spec.seed, spec.date);
    let (_, next) = nights(spec);
    let until = next.start.min(day_end);
    let mut slots = Vec::new();
    let mut t = n.end;
    while t + Duration::minutes(15) <= until {
        let on_foot = d
            .workout
            .as_ref()
            .is_some_and(|w| w.start <= t && t < w.end && matches!(w.sport, "running" | "walking"));
        let moving = plan::movement(spec.seed, t + Duration::minutes(7));
        let weight = if on_foot {
            12.0
        } else {
            4.0 * moving + rng.gen_range(0.0..0.4)
        };
        slots.push((t, weight));
        t += Duration::minutes(15);
    }
    let total: f64 = slots.iter().map(|(_, w)| w).sum::<f64>().max(1.0);
    slots
        .into_iter()
        .filter_map(|(t, w)| {
            let count = (d.steps * w / total).round();
            (count > 0.0).then(|| {
                json!({
                    "timestamp": stamp(tz, t), "end": stamp(tz, t + Duration::minutes(15)),
                    "timezone_offset": offset_of(tz, t), "unit": "count", "value": count,
                })
            })
        })
        .collect()
}

fn fitbit(spec: &Spec, rng: &mut ChaCha8Rng) -> Map<String, Value> {
    let n = night(spec.persona, spec.seed, spec.date);
    let d = day(spec.persona, spec.seed, spec.date);
    let tz = zone_on(spec.persona, spec.seed, spec.date);
    let mut out = Map::new();
    out.insert("sleep".into(), json!([sleep(&n, tz, rng, 8.0, 0.2)]));
    out.insert(
        "activity".into(),
        json!([activity(spec, &d, rng, 1.05, true)]),
    );
    out.insert(
        "timeseries".into(),
        json!({"heartrate": heart_rates(spec, &d, rng, Duration::minutes(5))}),
    );
    out
}

fn libre(spec: &Spec, rng: &mut ChaCha8Rng) -> Map<String, Value> {
    let d = day(spec.persona, spec.seed, spec.date);
    let previous = spec
        .date
        .pred_opt()
        .map(|p| day(spec.persona, spec.seed, p));
    let tz = zone_on(spec.persona, spec.seed, spec.date);
    let (from, to) = day_bounds(spec.persona, spec.seed, spec.date);
    let mut samples = Vec::new();
    let mut t = from;
    while t < to {
        let g = plan::glucose(&d, previous.as_ref(), t, normal(rng, 0.0, 1.0));
        samples.push(json!({"timestamp": stamp(tz, t), "timezone_offset": offset_of(tz, t), "unit": "mmol/L", "value": round(g, 1)}));
        t += Duration::minutes(5);
    }
    let mut out = Map::new();
    out.insert("timeseries".into(), json!({"glucose": samples}));
    out
}
