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
    for persona in [Persona::Regular, Persona::Traveller] {
        for provider in ["oura", "fitbit", "freestyle_libre", "apple_health_kit"] {
            let bodies = demo::generate(provider, persona, 3, end(), 30).unwrap();
            assert!(bodies.len() >= 25, "{provider}: {} bodies", bodies.len());
            let mut rows = 0;
            for body in &bodies {
                let parsed = parse_push(body, &PushUser::default(), now())
                    .unwrap_or_else(|e| panic!("{provider} {persona:?}: {:?}", e.0));
                rows += parsed.total_rows();
            }
            assert!(rows > 30 * 20, "{provider}: only {rows} rows");
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
