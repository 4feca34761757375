//! The records every provider's body is made of (sleep, activity, profile) and the way devices
//! stamp instants: local time with its offset.

use chrono::{DateTime, Duration, FixedOffset, NaiveDate, Offset, SecondsFormat, TimeZone, Utc};
use chrono_tz::Tz;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::bodies::Spec;
use super::plan::{AWAKE, DEEP, Day, EPOCH, LIGHT, Night, REM, normal, rng_for, round, zone_on};
use crate::ingest::format_offset;

/// Seconds east of UTC of a zone at an instant.
pub(crate) fn offset_of(tz: Tz, t: DateTime<Utc>) -> i32 {
    tz.offset_from_utc_datetime(&t.naive_utc())
        .fix()
        .local_minus_utc()
}

/// An instant as the device reports it: in local time with its offset.
pub(crate) fn stamp(tz: Tz, t: DateTime<Utc>) -> String {
    let fixed = FixedOffset::east_opt(offset_of(tz, t)).unwrap_or(Utc.fix());
    t.with_timezone(&fixed)
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The user's profile: fixed by the seed, the same for every provider.
pub(crate) fn profile(seed: u64) -> Value {
    let mut rng = rng_for(seed, NaiveDate::default(), "profile");
    let female = rng.gen_bool(0.5);
    let height = if female {
        rng.gen_range(155..178)
    } else {
        rng.gen_range(167..192)
    };
    let birth = NaiveDate::from_ymd_opt(
        rng.gen_range(1960..2002),
        rng.gen_range(1..13),
        rng.gen_range(1..29),
    );
    let sex = if female { "female" } else { "male" };
    json!({"height_centimeter": height, "birth_date": birth.map(|d| d.to_string()),
           "wheelchair_use": false, "gender": sex, "sex": sex})
}

/// The device's view of a night: shifted by a few minutes and, for watches, with some epochs
/// read as light sleep.
pub(crate) fn sleep(n: &Night, tz: Tz, rng: &mut ChaCha8Rng, shift_sd: f64, misread: f64) -> Value {
    let shift = Duration::minutes(normal(rng, 0.0, shift_sd).round() as i64);
    let (start, end) = (n.start + shift, n.end + shift);
    let hypnogram: Vec<i8> = n
        .hypnogram
        .iter()
        .map(|s| {
            if *s != AWAKE && rng.gen_bool(misread) {
                LIGHT
            } else {
                *s
            }
        })
        .collect();
    let secs = |stage: i8| hypnogram.iter().filter(|s| **s == stage).count() as i64 * EPOCH;
    let (light, deep, rem, awake) = (secs(LIGHT), secs(DEEP), secs(REM), secs(AWAKE));
    let duration = (end - start).num_seconds();
    let total = light + deep + rem;
    let latency = hypnogram.iter().take_while(|s| **s == AWAKE).count() as i64 * EPOCH;
    let efficiency = round(100.0 * total as f64 / duration.max(1) as f64, 1);
    let rhr = n.resting_hr.round() as i64;
    let score = (40.0 + total as f64 / 3600.0 * 6.0 + (efficiency - 80.0) * 0.5).clamp(1.0, 100.0);
    json!({
        "bedtime_start": stamp(tz, start),
        "bedtime_stop": stamp(tz, end),
        "state": "confirmed",
        "type": if duration >= 3 * 3600 { "long_sleep" } else { "short_sleep" },
        "duration": duration, "total": total, "awake": awake, "light": light, "rem": rem, "deep": deep,
        "latency": latency,
        "hr_lowest": rhr - 2, "hr_average": rhr + 4, "hr_highest": rhr + 22, "hr_resting": rhr,
        "efficiency": efficiency,
        "average_hrv": round(normal(rng, n.hrv, 1.0), 1),
        "hrv_sdnn": round(n.hrv * 1.3, 1),
        "respiratory_rate": round(n.respiratory_rate, 1),
        "score": score.round() as i64,
        "timezone_offset": format_offset(offset_of(tz, end)),
        "sleep_stream": {"hypnogram": hypnogram, "interval": EPOCH},
    })
}

/// The day's activity summary as a device with step factor `factor` counts it.
pub(crate) fn activity(
    spec: &Spec,
    d: &Day,
    rng: &mut ChaCha8Rng,
    factor: f64,
    floors: bool,
) -> Value {
    let tz = zone_on(spec.persona, spec.seed, spec.date);
    let steps = (d.steps * factor * normal(rng, 1.0, 0.03)).round().max(0.0);
    let workout_min = d
        .workout
        .as_ref()
        .map_or(0, |w| (w.end - w.start).num_minutes());
    let active = (steps / 110.0) as i64 * 60 + workout_min * 60;
    let high = workout_min * 40;
    let medium = (steps / 400.0) as i64 * 60;
    let low = (steps / 150.0) as i64 * 60;
    let calories_active = round(steps * 0.04 + workout_min as f64 * 9.0, 1);
    let mut a = json!({
        "date": spec.date.to_string(),
        "calories_total": round(1650.0 + calories_active + normal(rng, 0.0, 30.0), 1),
        "calories_active": calories_active,
        "steps": steps as i64,
        "distance_meter": round(steps * 0.76, 1),
        "duration_active_second": active,
        "intensity_sedentary_second": (16 * 3600 - high - medium - low).max(0),
        "intensity_low_second": low, "intensity_medium_second": medium, "intensity_high_second": high,
        "time_zone": tz.name(),
    });
    if floors && let Some(obj) = a.as_object_mut() {
        obj.insert("floors_climbed".into(), Value::from(rng.gen_range(2..18)));
    }
    a
}
