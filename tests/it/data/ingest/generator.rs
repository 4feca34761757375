//! The demo generator: deterministic, valid push bodies, overlapping providers, and a
//! traveller whose offsets change.

use super::*;

fn end() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 4, 15).unwrap()
}

#[test]
fn same_seed_same_bytes_and_different_seed_differs() {
    for provider in ["oura", "fitbit", "freestyle_libre", "apple_health_kit"] {
        let a = demo::generate(provider, Persona::Regular, 7, end(), 5).unwrap();
        let b = demo::generate(provider, Persona::Regular, 7, end(), 5).unwrap();
        let c = demo::generate(provider, Persona::Regular, 8, end(), 5).unwrap();
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap(),
            "{provider}"
        );
        assert_ne!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&c).unwrap(),
            "{provider}"
        );
    }
    assert!(demo::generate("garmin", Persona::Regular, 7, end(), 5).is_err());
    assert!(demo::is_demo_provider("oura") && !demo::is_demo_provider("manual"));
}

#[test]
fn every_generated_body_passes_parse_push() {
    for persona in [Persona::Regular, Persona::Traveller, Persona::Athlete] {
        for provider in ["oura", "fitbit", "freestyle_libre", "apple_health_kit"] {
            let bodies = demo::generate(provider, persona, 3, end(), 21).unwrap();
            assert!(bodies.len() >= 17, "{provider}: {} bodies", bodies.len());
            let mut rows = 0;
            for body in &bodies {
                let parsed = parse_push(body, &PushUser::default(), now())
                    .unwrap_or_else(|e| panic!("{provider} {persona:?}: {:?}", e.0));
                rows += parsed.total_rows();
            }
            assert!(rows > 21 * 20, "{provider}: only {rows} rows");
        }
    }
}

fn nights(provider: &str) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    demo::generate(provider, Persona::Regular, 11, end(), 30)
        .unwrap()
        .iter()
        .flat_map(|b| b["sleep"].as_array().cloned().unwrap_or_default())
        .map(|s| {
            let t = |k: &str| s[k].as_str().unwrap().parse::<DateTime<Utc>>().unwrap();
            (t("bedtime_start"), t("bedtime_stop"))
        })
        .collect()
}

#[test]
fn ring_and_watch_see_the_same_nights() {
    let ring = nights("oura");
    let watch = nights("apple_health_kit");
    assert!(ring.len() >= 20 && watch.len() >= 20);
    let overlapping = ring
        .iter()
        .filter(|(s, e)| {
            watch
                .iter()
                .any(|(ws, we)| ws < e && s < we && (*ws - *s).num_minutes().abs() < 45)
        })
        .count();
    assert!(
        overlapping * 10 >= ring.len() * 8,
        "{overlapping} of {} nights overlap",
        ring.len()
    );
}

#[test]
fn the_travellers_offsets_change() {
    let offsets = |persona| -> std::collections::BTreeSet<i64> {
        demo::generate("fitbit", persona, 5, end(), 60)
            .unwrap()
            .iter()
            .flat_map(|b| {
                b["timeseries"]["heartrate"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|s| s["timezone_offset"].as_i64())
            .collect()
    };
    let traveller = offsets(Persona::Traveller);
    assert!(traveller.len() >= 3, "trip and DST: {traveller:?}");
    let regular = offsets(Persona::Regular);
    assert!(regular.len() <= 2, "{regular:?}");
}

#[test]
fn ninety_days_of_watch_heart_rate_stay_at_one_a_minute() {
    let bodies = demo::generate("apple_health_kit", Persona::Regular, 1, end(), 90).unwrap();
    let samples: usize = bodies
        .iter()
        .map(|b| b["timeseries"]["heartrate"].as_array().map_or(0, Vec::len))
        .sum();
    // 1440 a day (1380 or 1500 on a DST day), minus the days the watch was not worn
    assert!(samples <= 90 * 1440 + 60, "{samples}");
    assert!(samples >= 75 * 1440, "{samples}");
    let workouts = bodies
        .iter()
        .filter(|b| b.get("workouts").is_some())
        .count();
    assert!(
        (10..60).contains(&workouts),
        "{workouts} workouts in 90 days"
    );
}

#[test]
fn glucose_peaks_follow_meal_times() {
    let bodies = demo::generate("freestyle_libre", Persona::Regular, 9, end(), 21).unwrap();
    for body in &bodies {
        let samples = body["timeseries"]["glucose"].as_array().unwrap();
        let peak = samples
            .iter()
            .max_by(|a, b| {
                a["value"]
                    .as_f64()
                    .partial_cmp(&b["value"].as_f64())
                    .unwrap()
            })
            .unwrap();
        let local = DateTime::parse_from_rfc3339(peak["timestamp"].as_str().unwrap()).unwrap();
        let hour = local.format("%H").to_string().parse::<u32>().unwrap();
        assert!(
            matches!(hour, 7..=10 | 12..=15 | 18..=22),
            "peak {} at {local}",
            peak["value"]
        );
        let values: Vec<f64> = samples.iter().filter_map(|s| s["value"].as_f64()).collect();
        let fasting = values[..48].iter().sum::<f64>() / 48.0;
        assert!(
            peak["value"].as_f64().unwrap() > fasting + 1.5,
            "a meal raises glucose"
        );
    }
}

/// Pins the bytes of one small generation, so a change to the generator (which changes every
/// demo user's data) is a visible, deliberate edit of this hash. The ring's body uses only
/// IEEE-exact arithmetic (no `sin`/`exp`), so the hash holds on every platform.
#[test]
fn ring_output_is_pinned() {
    use sha2::{Digest, Sha256};
    let end = NaiveDate::from_ymd_opt(2025, 1, 31).unwrap();
    let bodies = demo::generate("oura", Persona::Traveller, 42, end, 3).unwrap();
    let hash = hex::encode(Sha256::digest(serde_json::to_vec(&bodies).unwrap()));
    assert_eq!(
        hash,
        "f8b50a92d6756ca79568dd7f1fdaf6b2c5ab246d853423cae65666835a539976"
    );
}

/// Derived ids are record keys in the store: changing the derivation would duplicate every
/// re-pushed activity day instead of replacing it.
#[test]
fn derived_ids_are_stable() {
    let id = wearhouse::ingest::derive_id(&["oura", "ring", "activity", "2025-01-31"]);
    assert_eq!(id, "81fe3bbd-a935-822b-b36d-28e308d7d5c5");
}
