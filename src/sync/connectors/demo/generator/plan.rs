//! The provider-independent life of a demo user: where they are (zone) on each day, when they
//! sleep and in which stages, how much they move, when they train and eat.
//!
//! Everything here is a function of (seed, persona, date) only, never of the provider, so two
//! providers of one user see the same nights, workouts and meals and overlap the way a ring and
//! a watch worn together do.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc, Weekday};
use chrono_tz::Tz;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

use super::Persona;

/// A generator seeded from (seed, date, salt): the same inputs always draw the same numbers.
pub(crate) fn rng_for(seed: u64, date: NaiveDate, salt: &str) -> ChaCha8Rng {
    let mut hasher = Sha256::new();
    hasher.update(seed.to_le_bytes());
    hasher.update(date.num_days_from_ce().to_le_bytes());
    hasher.update(salt.as_bytes());
    ChaCha8Rng::from_seed(hasher.finalize().into())
}

/// An approximately normal draw (sum of three uniforms; unit variance, bounded at ±3 sd).
pub(crate) fn normal(rng: &mut ChaCha8Rng, mean: f64, sd: f64) -> f64 {
    let z: f64 = (0..3).map(|_| rng.gen_range(-1.0..1.0)).sum();
    mean + sd * z
}

/// Rounds to `places` decimals, so generated numbers read like device output.
pub(crate) fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

/// The zone the persona lives in on a date.
///
/// The traveller lives in Berlin and spends 8 of every 42 days in New York (a 6 h trip west
/// and back); both zones observe daylight saving, so any window spanning late March or late
/// October also has a DST change.
pub(crate) fn zone_on(persona: Persona, seed: u64, date: NaiveDate) -> Tz {
    match persona {
        Persona::Regular => chrono_tz::Europe::London,
        Persona::Athlete => chrono_tz::America::Denver,
        Persona::Traveller => {
            let phase = (i64::from(date.num_days_from_ce()) + (seed % 42) as i64).rem_euclid(42);
            if phase < 8 {
                chrono_tz::America::New_York
            } else {
                chrono_tz::Europe::Berlin
            }
        }
    }
}

/// A local wall-clock time on `date` (minutes after midnight, may exceed a day) as an instant;
/// a time in a DST gap moves forward an hour.
pub(crate) fn local(tz: Tz, date: NaiveDate, minutes: i64) -> DateTime<Utc> {
    let naive = date.and_hms_opt(0, 0, 0).unwrap_or_default() + Duration::minutes(minutes);
    tz.from_local_datetime(&naive)
        .earliest()
        .or_else(|| {
            tz.from_local_datetime(&(naive + Duration::hours(1)))
                .earliest()
        })
        .map_or_else(|| naive.and_utc(), |t| t.with_timezone(&Utc))
}

/// The span of a local calendar day: local midnight of `date` in its zone to local midnight of
/// the next day in that day's zone (longer or shorter than 24 h when the zone changes).
pub(crate) fn day_bounds(
    persona: Persona,
    seed: u64,
    date: NaiveDate,
) -> (DateTime<Utc>, DateTime<Utc>) {
    let next = date.succ_opt().unwrap_or(date);
    (
        local(zone_on(persona, seed, date), date, 0),
        local(zone_on(persona, seed, next), next, 0),
    )
}

fn is_weekend(date: NaiveDate) -> bool {
    matches!(date.weekday(), Weekday::Sat | Weekday::Sun)
}

/// Hypnogram stage codes.
pub(crate) const DEEP: i8 = 1;
/// Light sleep.
pub(crate) const LIGHT: i8 = 2;
/// REM sleep.
pub(crate) const REM: i8 = 3;
/// Awake.
pub(crate) const AWAKE: i8 = 4;
/// Seconds per hypnogram epoch.
pub(crate) const EPOCH: i64 = 300;

/// The night that ends on the morning of a date.
#[derive(Debug, Clone)]
pub(crate) struct Night {
    pub(crate) start: DateTime<Utc>,
    pub(crate) end: DateTime<Utc>,
    pub(crate) hypnogram: Vec<i8>,
    pub(crate) resting_hr: f64,
    pub(crate) hrv: f64,
    pub(crate) respiratory_rate: f64,
    pub(crate) temperature_delta: f64,
}

impl Night {
    /// The stage at an instant, if within the night.
    pub(crate) fn stage_at(&self, t: DateTime<Utc>) -> Option<i8> {
        if t < self.start || t >= self.end {
            return None;
        }
        let i = ((t - self.start).num_seconds() / EPOCH) as usize;
        self.hypnogram.get(i).copied()
    }
}

fn baseline_rhr(persona: Persona) -> f64 {
    match persona {
        Persona::Athlete => 47.0,
        Persona::Regular => 57.0,
        Persona::Traveller => 60.0,
    }
}

/// The night ending on `date` (wake date), in the zone of that date.
pub(crate) fn night(persona: Persona, seed: u64, date: NaiveDate) -> Night {
    let mut rng = rng_for(seed, date, "night");
    let tz = zone_on(persona, seed, date);
    let weekend = is_weekend(date);
    let bed = normal(&mut rng, if weekend { 23.6 } else { 22.9 } * 60.0, 20.0) as i64;
    let wake = normal(&mut rng, if weekend { 8.2 } else { 6.8 } * 60.0, 15.0) as i64;
    let prev = date.pred_opt().unwrap_or(date);
    let start = local(tz, prev, bed);
    let end = local(tz, date, wake).max(start + Duration::hours(4));
    let epochs = ((end - start).num_seconds() / EPOCH) as usize;
    let latency = rng.gen_range(2..6);
    let (deep_scale, rem_scale) = (rng.gen_range(0.7..1.3), rng.gen_range(0.7..1.3));
    let mut hypnogram = Vec::with_capacity(epochs);
    for i in 0..epochs {
        let stage = if i < latency {
            AWAKE
        } else {
            let minute = (i - latency) as f64 * 5.0;
            let cycle = (minute / 90.0) as usize;
            let within = minute % 90.0;
            let deep_len = deep_scale * if cycle < 2 { 30.0 } else { 10.0 };
            let rem_len = rem_scale * (10.0 + 6.0 * cycle as f64);
            if rng.gen_bool(0.04) {
                AWAKE
            } else if within < 20.0 {
                LIGHT
            } else if within < 20.0 + deep_len {
                DEEP
            } else if within >= 90.0 - rem_len {
                REM
            } else {
                LIGHT
            }
        };
        hypnogram.push(stage);
    }
    if let Some(last) = hypnogram.last_mut() {
        *last = AWAKE;
    }
    // a short or late night shows in the next morning's numbers
    let short = ((8.0 * 3600.0 - (end - start).num_seconds() as f64) / 3600.0).max(0.0);
    Night {
        start,
        end,
        hypnogram,
        resting_hr: normal(&mut rng, baseline_rhr(persona) + 1.5 * short, 1.5),
        hrv: normal(&mut rng, 48.0 - 3.0 * short, 5.0).max(10.0),
        respiratory_rate: normal(&mut rng, 14.5, 0.5),
        temperature_delta: normal(&mut rng, 0.0, 0.15),
    }
}

/// A workout of the day.
#[derive(Debug, Clone)]
pub(crate) struct Workout {
    pub(crate) start: DateTime<Utc>,
    pub(crate) end: DateTime<Utc>,
    pub(crate) sport: &'static str,
    pub(crate) intensity: f64,
}

/// A meal of the day, with its carbohydrates in grams.
#[derive(Debug, Clone)]
pub(crate) struct Meal {
    pub(crate) at: DateTime<Utc>,
    pub(crate) name: &'static str,
    pub(crate) carbs: f64,
}

/// The waking day of a date.
#[derive(Debug, Clone)]
pub(crate) struct Day {
    pub(crate) steps: f64,
    pub(crate) workout: Option<Workout>,
    pub(crate) meals: Vec<Meal>,
}

const SPORTS: [&str; 4] = ["running", "cycling", "walking", "strength_training"];

/// The day plan of a date.
pub(crate) fn day(persona: Persona, seed: u64, date: NaiveDate) -> Day {
    let mut rng = rng_for(seed, date, "day");
    let tz = zone_on(persona, seed, date);
    let weekend = is_weekend(date);
    let (mean_steps, p_workout) = match persona {
        Persona::Athlete => (12_000.0, 0.7),
        Persona::Regular => (if weekend { 10_000.0 } else { 8_000.0 }, 0.3),
        Persona::Traveller => (if weekend { 7_000.0 } else { 9_000.0 }, 0.2),
    };
    let steps = normal(&mut rng, mean_steps, mean_steps * 0.2).max(800.0);
    let workout = rng.gen_bool(p_workout).then(|| {
        let at = if weekend { 10.0 } else { 18.0 } * 60.0;
        let start = local(tz, date, normal(&mut rng, at, 30.0) as i64);
        let minutes = rng.gen_range(30..76);
        Workout {
            start,
            end: start + Duration::minutes(minutes),
            sport: SPORTS[rng.gen_range(0..SPORTS.len())],
            intensity: rng.gen_range(0.6..0.9),
        }
    });
    let meals = [
        ("breakfast", 7.6, 45.0),
        ("lunch", 12.6, 70.0),
        ("dinner", 19.1, 85.0),
    ]
    .into_iter()
    .map(|(name, hour, carbs)| Meal {
        at: local(
            tz,
            date,
            normal(
                &mut rng,
                hour * 60.0 + if weekend { 45.0 } else { 0.0 },
                20.0,
            ) as i64,
        ),
        name,
        carbs: normal(&mut rng, carbs, carbs * 0.25).max(5.0),
    })
    .collect();
    Day {
        steps,
        workout,
        meals,
    }
}

/// How much the user moves in the 15 minutes around an instant, 0 (still) to 1 (brisk walk):
/// a function of (seed, quarter hour) only, so the watch's steps and every device's heart rate
/// agree on when the user walked.
pub(crate) fn movement(seed: u64, t: DateTime<Utc>) -> f64 {
    // splitmix64 of (seed, quarter hour): cheap, stateless and well mixed
    let mut z = seed ^ (t.timestamp().div_euclid(900) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let u = (z >> 11) as f64 / (1u64 << 53) as f64;
    if u < 0.65 { 0.0 } else { (u - 0.65) / 0.35 }
}

/// A plausible heart rate at an instant: sleep stages at night, a workout's effort, and a
/// diurnal waking rhythm in between.
pub(crate) fn heart_rate(
    persona: Persona,
    seed: u64,
    nights: &[&Night],
    day: &Day,
    (t, offset): (DateTime<Utc>, i32),
    noise: f64,
) -> f64 {
    let rhr = baseline_rhr(persona);
    if let Some((night, stage)) = nights.iter().find_map(|n| n.stage_at(t).map(|s| (n, s))) {
        let lift = match stage {
            DEEP => 0.0,
            LIGHT => 3.0,
            REM => 6.0,
            _ => 10.0,
        };
        return (night.resting_hr + lift + noise).max(35.0);
    }
    if let Some(w) = day.workout.as_ref().filter(|w| w.start <= t && t < w.end) {
        let ramp = ((t - w.start).num_minutes() as f64 / 8.0).min(1.0);
        return rhr + ramp * (185.0 - rhr) * w.intensity + noise * 2.0;
    }
    let hour = (t.timestamp() + i64::from(offset)).rem_euclid(86_400) as f64 / 3600.0;
    let diurnal = 8.0 * (std::f64::consts::PI * (hour - 9.0) / 12.0).sin().max(0.0);
    (rhr + 12.0 + diurnal + 35.0 * movement(seed, t) + noise * 2.0).max(40.0)
}

/// Glucose in mmol/L at an instant: a fasting baseline plus a peak after every meal.
pub(crate) fn glucose(day: &Day, previous: Option<&Day>, t: DateTime<Utc>, noise: f64) -> f64 {
    let meals = day
        .meals
        .iter()
        .chain(previous.into_iter().flat_map(|d| d.meals.iter()));
    let rise: f64 = meals
        .filter(|m| m.at <= t)
        .map(|m| {
            let x = (t - m.at).num_minutes() as f64 / 45.0;
            m.carbs / 40.0 * 2.2 * x * (1.0 - x).exp()
        })
        .sum();
    (5.0 + rise + noise * 0.15).clamp(3.0, 15.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn local_days_stretch_and_shrink_with_dst() {
        let hours = |d| {
            let (a, b) = day_bounds(Persona::Regular, 1, d);
            (b - a).num_hours()
        };
        assert_eq!(hours(date(2025, 3, 30)), 23);
        assert_eq!(hours(date(2025, 10, 26)), 25);
        assert_eq!(hours(date(2025, 6, 1)), 24);
    }

    #[test]
    fn the_traveller_spends_8_of_42_days_in_new_york() {
        for seed in [0, 7, 41] {
            let away = date(2025, 1, 1)
                .iter_days()
                .take(42)
                .filter(|d| zone_on(Persona::Traveller, seed, *d) == chrono_tz::America::New_York)
                .count();
            assert_eq!(away, 8, "seed {seed}");
        }
    }

    #[test]
    fn nights_are_plausible_and_end_awake() {
        for d in date(2025, 1, 1).iter_days().take(60) {
            let n = night(Persona::Regular, 3, d);
            let hours = (n.end - n.start).num_minutes() as f64 / 60.0;
            assert!((4.0..11.0).contains(&hours), "{d}: {hours} h");
            assert_eq!(n.hypnogram.last(), Some(&AWAKE));
            assert!(n.hypnogram.contains(&DEEP) && n.hypnogram.contains(&REM));
            assert!((35.0..80.0).contains(&n.resting_hr));
        }
    }

    #[test]
    fn movement_is_a_fraction_shared_within_a_quarter_hour() {
        let t: DateTime<Utc> = "2025-01-01T10:00:00Z".parse().unwrap();
        assert_eq!(movement(1, t), movement(1, t + Duration::minutes(14)));
        let all: Vec<f64> = (0..200)
            .map(|i| movement(1, t + Duration::minutes(15 * i)))
            .collect();
        assert!(all.iter().all(|m| (0.0..=1.0).contains(m)));
        assert!(all.contains(&0.0) && all.iter().any(|m| *m > 0.5));
    }
}
