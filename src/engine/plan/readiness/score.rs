//! The readiness formulas as pure functions over plain numbers: the baseline's z-scores, the
//! recovery score and its zone, the training impulse and the strain score and its zone, the
//! maximum heart rate and the chronotype of a baseline. The module docs of
//! [`super`] state them; these are their only implementation.

use crate::engine::plan::macros::chronotype;

/// Days of the rolling baseline before a day (the days D−21 … D−1).
pub const BASELINE_DAYS: i64 = 21;
/// Nights the baseline must hold for the day to be scored.
pub const BASELINE_NIGHTS: usize = 7;
/// The smallest standard deviation a z-score divides by (ms of HRV, bpm of resting heart rate).
pub const SD_FLOOR: f64 = 1.0;
/// Weights of the recovery components: HRV, resting heart rate, sleep score.
pub const RECOVERY_WEIGHTS: [f64; 3] = [0.5, 0.25, 0.25];
/// The longest time one heart-rate sample stands for, in seconds.
pub const SAMPLE_CAP_SECONDS: f64 = 300.0;
/// The training impulse (weighted minutes) the strain scale reaches 21 at.
pub const TRIMP_AT_MAX_STRAIN: f64 = 800.0;
/// The softening constant of the strain's logarithm (weighted minutes).
pub const TRIMP_SCALE: f64 = 30.0;
/// The maximum heart rate without a birth date: 220 − 30.
pub const DEFAULT_HR_MAX: f64 = 190.0;

/// Mean and sample standard deviation (n − 1) of at least two values.
pub fn mean_sd(values: &[f64]) -> Option<(f64, f64)> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, var.sqrt()))
}

/// A 0–100 component from the night's value against its baseline: `50 + 25·z` (or `50 − 25·z`
/// when lower is better), clamped; `z = (x − mean) / max(sd, 1)`. None without the night's
/// value or with fewer than two baseline values.
pub fn z_component(x: Option<f64>, baseline: &[f64], higher_is_better: bool) -> Option<f64> {
    let x = x?;
    let (mean, sd) = mean_sd(baseline)?;
    let z = (x - mean) / sd.max(SD_FLOOR);
    let signed = if higher_is_better { z } else { -z };
    Some((50.0 + 25.0 * signed).clamp(0.0, 100.0))
}

/// The recovery score: the weighted mean of the components present (HRV 0.5, resting heart
/// rate 0.25, sleep score 0.25, renormalised over those present), rounded half away from
/// zero; None when none is present.
pub fn recovery(hrv: Option<f64>, rhr: Option<f64>, sleep: Option<i64>) -> Option<i64> {
    let parts = [hrv, rhr, sleep.map(|s| s as f64)];
    let (num, den) =
        parts
            .iter()
            .zip(RECOVERY_WEIGHTS)
            .fold((0.0, 0.0), |(n, d), (p, w)| match p {
                Some(p) => (n + w * p, d + w),
                None => (n, d),
            });
    (den > 0.0).then(|| (num / den).round() as i64)
}

/// `Red` 0–33, `Amber` 34–66, `Green` 67–100.
pub fn recovery_zone(score: i64) -> &'static str {
    match score {
        ..=33 => "Red",
        34..=66 => "Amber",
        _ => "Green",
    }
}

/// The weight of a heart rate by its share of the maximum: below 50 % 0, then 1 to 5 for the
/// bands 50–60, 60–70, 70–80, 80–90 and ≥ 90 % (the workout table's zones 1–6):
/// `clamp(⌊10 · hr / hr_max⌋ − 4, 0, 5)`.
pub fn zone_weight(heart_rate: f64, hr_max: f64) -> f64 {
    let tenths = (10.0 * heart_rate / hr_max).floor();
    if tenths.is_finite() {
        (tenths - 4.0).clamp(0.0, 5.0)
    } else {
        0.0
    }
}

/// The strain score of a training impulse `t` (weighted minutes):
/// `min(21, 21 · ln(1 + t/30) / ln(1 + 800/30))`, rounded to one decimal.
pub fn strain(t: f64) -> f64 {
    let s = 21.0 * (1.0 + t.max(0.0) / TRIMP_SCALE).ln()
        / (1.0 + TRIMP_AT_MAX_STRAIN / TRIMP_SCALE).ln();
    (s.min(21.0) * 10.0).round() / 10.0
}

/// By the integer part of the strain: `Low` 0–6, `Moderate` 7–13, `High` 14–17, `Very High`
/// 18–21.
pub fn strain_zone(strain: f64) -> &'static str {
    match strain.floor() as i64 {
        ..=6 => "Low",
        7..=13 => "Moderate",
        14..=17 => "High",
        _ => "Very High",
    }
}

/// `220 − age` on `day` (full years since the birth date; both day numbers since
/// 1970-01-01), or [`DEFAULT_HR_MAX`] without a birth date.
pub fn hr_max(birth_day: Option<i64>, day: i64) -> f64 {
    let Some(birth) = birth_day else {
        return DEFAULT_HR_MAX;
    };
    let (by, bm, bd) = crate::engine::time::civil_from_days(birth);
    let (y, m, d) = crate::engine::time::civil_from_days(day);
    let age = y - by - i64::from((m, d) < (bm, bd));
    220.0 - age.max(0) as f64
}

/// The chronotype of a baseline from its nights' floating midpoints (seconds of the day): the
/// median on a clock that starts at noon (so nights around midnight do not wrap; the mean of
/// the two middle values, rounded down, for an even count), read by §2.3's `chronotype`
/// thresholds. None without nights.
pub fn baseline_chronotype(midpoints: &[i64]) -> Option<&'static str> {
    const HALF: i64 = 43_200;
    let mut from_noon: Vec<i64> = midpoints
        .iter()
        .map(|s| (s + HALF).rem_euclid(2 * HALF))
        .collect();
    from_noon.sort_unstable();
    let n = from_noon.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => from_noon[n / 2],
        _ => (from_noon[n / 2 - 1] + from_noon[n / 2]).div_euclid(2),
    };
    Some(chronotype((median - HALF).rem_euclid(2 * HALF)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_and_recovery() {
        // Baseline 40, 50, 60: mean 50, sd 10; 60 is z = 1.
        assert_eq!(
            z_component(Some(60.0), &[40.0, 50.0, 60.0], true),
            Some(75.0)
        );
        assert_eq!(
            z_component(Some(60.0), &[40.0, 50.0, 60.0], false),
            Some(25.0)
        );
        assert_eq!(z_component(Some(60.0), &[50.0], true), None);
        // A flat baseline divides by the floor: z = 3 → 125 → 100.
        assert_eq!(z_component(Some(53.0), &[50.0, 50.0], true), Some(100.0));
        assert_eq!(recovery(Some(75.0), Some(25.0), Some(80)), Some(64));
        assert_eq!(recovery(None, None, Some(80)), Some(80));
        assert_eq!(recovery(None, None, None), None);
        assert_eq!(recovery_zone(33), "Red");
        assert_eq!(recovery_zone(34), "Amber");
        assert_eq!(recovery_zone(67), "Green");
    }

    #[test]
    fn strain_scale_and_zones() {
        assert_eq!(strain(0.0), 0.0);
        assert_eq!(strain(800.0), 21.0);
        assert_eq!(strain(5000.0), 21.0);
        // 21 · ln 3 / ln(83/3) = 6.949 → 6.9, still Low.
        assert_eq!(strain(60.0), 6.9);
        assert_eq!(strain_zone(6.9), "Low");
        assert_eq!(strain_zone(7.0), "Moderate");
        assert_eq!(strain_zone(17.9), "High");
        assert_eq!(strain_zone(18.0), "Very High");
        assert_eq!(zone_weight(94.0, 190.0), 0.0);
        assert_eq!(zone_weight(95.0, 190.0), 1.0);
        assert_eq!(zone_weight(171.0, 190.0), 5.0);
        assert_eq!(zone_weight(250.0, 190.0), 5.0);
    }

    #[test]
    fn hr_max_and_chronotype() {
        // Born 1990-06-15; on 2025-06-14 34 years old, on 2025-06-15 35.
        let birth = crate::engine::time::days_from_civil(1990, 6, 15);
        let day = crate::engine::time::days_from_civil(2025, 6, 14);
        assert_eq!(hr_max(Some(birth), day), 186.0);
        assert_eq!(hr_max(Some(birth), day + 1), 185.0);
        assert_eq!(hr_max(None, day), 190.0);
        // 23:00 and 01:00 have their median at midnight, not at noon: a lark (≤ 03:30).
        assert_eq!(baseline_chronotype(&[23 * 3600, 3600]), Some("lark"));
        assert_eq!(
            baseline_chronotype(&[4 * 3600, 5 * 3600, 7 * 3600]),
            Some("third")
        );
        assert_eq!(baseline_chronotype(&[]), None);
    }
}
