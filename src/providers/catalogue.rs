//! The catalogue's data: one entry per provider slug of `data-model.md`.

use std::sync::LazyLock;

use super::{AuthType, Provider};

const SLEEP_SET: &[&str] = &[
    "profile",
    "sleep",
    "sleep_stream",
    "heartrate",
    "hrv",
    "activity",
    "workouts",
    "respiratory_rate",
    "body_temperature_delta",
    "steps",
    "calories_active",
    "stress_level",
];
/// What the WHOOP connector pulls (`sync::connectors::whoop`).
const WHOOP_SET: &[&str] = &[
    "profile",
    "sleep",
    "activity",
    "workouts",
    "body",
    "heartrate",
    "hrv",
    "blood_oxygen",
    "body_temperature",
];
/// What the Google Health API connector pulls (`sync::connectors::google_health`).
const GOOGLE_HEALTH_SET: &[&str] = &[
    "profile",
    "sleep",
    "activity",
    "body",
    "heartrate",
    "hrv",
    "blood_oxygen",
    "weight",
    "fat",
];
/// What the Strava connector pulls (`sync::connectors::strava`).
const STRAVA_SET: &[&str] = &[
    "profile",
    "workouts",
    "workout_stream",
    "heartrate",
    "distance",
];
/// What the Polar AccessLink connector pulls (`sync::connectors::polar`).
const POLAR_SET: &[&str] = &["profile", "sleep", "activity", "workouts", "heartrate"];
/// What the Ultrahuman connector pulls (`sync::connectors::ultrahuman`). No profile: its
/// `user_info` names none of the profile table's fields.
const ULTRAHUMAN_SET: &[&str] = &[
    "sleep",
    "activity",
    "heartrate",
    "hrv",
    "blood_oxygen",
    "body_temperature",
    "vo2_max",
    "glucose",
];
/// What the Garmin connector pulls (`sync::connectors::garmin`).
const GARMIN_SET: &[&str] = &[
    // No profile: the Health API has no user profile endpoint the connector pulls.
    "sleep",
    "activity",
    "workouts",
    "body",
    "heartrate",
    "blood_oxygen",
    "stress_level",
];
/// What every watch and phone source records, followed by its own resources (`$extra`).
macro_rules! wearable_set {
    ($($extra:literal),* $(,)?) => {
        &[
            "profile",
            "activity",
            "sleep",
            "workouts",
            "body",
            "heartrate",
            "hrv",
            "steps",
            "distance",
            "calories_active",
            "calories_basal",
            "floors_climbed",
            "blood_oxygen",
            $($extra),*
        ]
    };
}
const WATCH_SET: &[&str] = wearable_set![
    "respiratory_rate",
    "vo2_max",
    "stress_level",
    "workout_stream",
];
const PHONE_SET: &[&str] = wearable_set![
    "blood_pressure",
    "glucose",
    "weight",
    "fat",
    "water",
    "caffeine",
    "mindfulness_minutes",
    "respiratory_rate",
    "vo2_max",
    "body_temperature",
    "stand_hour",
    "stand_duration",
    "afib_burden",
    "electrocardiogram_voltage",
    "insulin_injection",
    "carbohydrates",
    "meal",
    "note",
    "workout_duration",
    "daylight_exposure",
    "uv_exposure",
    "handwashing",
    "fall",
    "inhaler_usage",
    "wheelchair_push",
    "heart_rate_alert",
    "sleep_apnea_alert",
    "sleep_breathing_disturbance",
    "basal_body_temperature",
    "body_mass_index",
    "lean_body_mass",
    "waist_circumference",
    "workout_distance",
    "workout_swimming_stroke",
    "heart_rate_recovery_one_minute",
    "forced_expiratory_volume_1",
    "forced_vital_capacity",
    "peak_expiratory_flow_rate",
];
const CGM_SET: &[&str] = &["profile", "glucose"];
const SCALE_SET: &[&str] = &[
    "profile",
    "body",
    "weight",
    "fat",
    "heartrate",
    "blood_pressure",
];
/// Withings: its scales and cuffs, and the sleep and activity of its watches and sleep mat.
const WITHINGS_SET: &[&str] = &[
    "profile",
    "body",
    "weight",
    "fat",
    "heartrate",
    "blood_pressure",
    "sleep",
    "activity",
    "workouts",
    "steps",
];
const CYCLING_SET: &[&str] = &[
    "profile",
    "workouts",
    "workout_stream",
    "heartrate",
    "calories_active",
    "distance",
];
const NUTRITION_SET: &[&str] = &["profile", "meal", "water", "caffeine", "carbohydrates"];
const BP_SET: &[&str] = &["profile", "blood_pressure", "heartrate"];
const MANUAL_SET: &[&str] = &[
    "profile",
    "activity",
    "sleep",
    "workouts",
    "body",
    "meal",
    "heartrate",
    "glucose",
    "steps",
    "weight",
    "blood_pressure",
    "water",
    "note",
];

#[allow(clippy::too_many_arguments)]
fn p(
    id: u32,
    slug: &'static str,
    name: &'static str,
    auth_type: AuthType,
    default_source_type: &'static str,
    supported_resources: &'static [&'static str],
    demo: bool,
    description: &'static str,
) -> Provider {
    Provider {
        id,
        name,
        slug,
        description,
        logo: format!("https://storage.wearhouse.dev/providers/{slug}.png"),
        auth_type,
        supported_resources,
        default_source_type,
        demo,
    }
}

/// Every provider, alphabetically by slug. The first number is the provider's `id`, fixed once
/// given: a new provider takes the next free number wherever its slug sorts, and a removed
/// provider's number is not reused (clients key on it).
#[rustfmt::skip]
pub static CATALOGUE: LazyLock<Vec<Provider>> = LazyLock::new(|| {
    use AuthType::{App, Email, Oauth, Password, Sdk, TeamOauth};
    vec![
        p( 1, "abbott_libreview", "Abbott LibreView", Password, "automatic", CGM_SET, false, "Continuous glucose data shared from Abbott's LibreView platform."),
        p( 2, "apple_health_kit", "Apple HealthKit", Sdk, "watch", PHONE_SET, true, "Health data from an iPhone and Apple Watch through the mobile SDK."),
        p( 3, "cronometer", "Cronometer", Oauth, "app", NUTRITION_SET, false, "Nutrition and meal logging."),
        p( 4, "dexcom_v3", "Dexcom", Oauth, "automatic", CGM_SET, false, "Continuous glucose monitoring from Dexcom sensors."),
        p( 5, "eight_sleep", "Eight Sleep", Password, "automatic", SLEEP_SET, false, "Sleep sessions from the Eight Sleep smart mattress cover."),
        p( 6, "fitbit", "Fitbit", Oauth, "watch", WATCH_SET, true, "Activity, sleep and heart rate from Fitbit trackers."),
        p( 7, "freestyle_libre", "FreeStyle Libre", Email, "automatic", CGM_SET, true, "Continuous glucose readings from FreeStyle Libre sensors."),
        p( 8, "freestyle_libre_ble", "FreeStyle Libre (Bluetooth)", Sdk, "automatic", CGM_SET, false, "FreeStyle Libre sensors read directly over Bluetooth by the mobile SDK."),
        p( 9, "garmin", "Garmin", Oauth, "watch", GARMIN_SET, false, "Activity, sleep, workouts, heart rate, SpO2, stress and body composition from Garmin devices."),
        p(10, "google_fit", "Google Fit", Oauth, "phone", PHONE_SET, false, "Activity and body data from Google Fit."),
        p(27, "google_health", "Google Health (Fitbit)", Oauth, "watch", GOOGLE_HEALTH_SET, false, "Sleep, activity, heart rate, HRV, SpO2 and weight from Fitbit trackers and Pixel Watches through the Google Health API, the Fitbit Web API's successor."),
        p(11, "health_connect", "Health Connect", Sdk, "phone", PHONE_SET, false, "Android Health Connect data through the mobile SDK."),
        p(12, "ihealth", "iHealth", Oauth, "cuff", BP_SET, false, "Blood pressure, weight and glucose from iHealth devices."),
        p(13, "manual", "Manual", App, "manual_scan", MANUAL_SET, false, "Data the team's own app pushes through the push API."),
        p(14, "omron", "Omron", Oauth, "cuff", BP_SET, false, "Blood pressure from Omron cuffs."),
        p(15, "omron_ble", "Omron (Bluetooth)", Sdk, "cuff", BP_SET, false, "Omron cuffs read directly over Bluetooth by the mobile SDK."),
        p(16, "oura", "Oura", Oauth, "ring", SLEEP_SET, true, "Sleep, readiness, heart rate and HRV from the Oura ring."),
        p(17, "peloton", "Peloton", Password, "exercise_machine", CYCLING_SET, false, "Workouts from Peloton bikes and treads."),
        p(18, "polar", "Polar", Oauth, "watch", POLAR_SET, false, "Training, sleep and heart rate from Polar watches and straps."),
        p(19, "renpho", "Renpho", Password, "scale", SCALE_SET, false, "Body composition from Renpho smart scales."),
        p(20, "samsung_health", "Samsung Health", Sdk, "watch", PHONE_SET, false, "Samsung Health data through the mobile SDK."),
        p(21, "strava", "Strava", Oauth, "app", STRAVA_SET, false, "Workouts recorded with Strava, with their heart rate and distance."),
        p(22, "ultrahuman", "Ultrahuman", TeamOauth, "ring", ULTRAHUMAN_SET, false, "Sleep, heart rate, HRV, temperature, SpO2, steps and VO2 max from the Ultrahuman ring, and glucose from its M1 sensor."),
        p(23, "wahoo", "Wahoo", Oauth, "exercise_machine", CYCLING_SET, false, "Workouts from Wahoo bike computers and trainers."),
        p(24, "whoop_v2", "WHOOP", Oauth, "automatic", WHOOP_SET, false, "Sleep, recovery, strain and workouts from WHOOP straps."),
        p(25, "withings", "Withings", Oauth, "scale", WITHINGS_SET, false, "Weight, body composition, blood pressure and sleep from Withings devices."),
        p(26, "zwift", "Zwift", Password, "exercise_machine", CYCLING_SET, false, "Virtual rides and runs from Zwift."),
    ]
});
