//! Dexcom end to end: a user links Dexcom through the OAuth round trip (the link tests' fake
//! authorisation server), the `sync.historical` job pulls [`FakeDexcom`] on the real job
//! runner (90 days; the fake refuses windows over 30 days, as Dexcom does), and the glucose
//! getter answers exactly the fixture's readings in mmol/L; the fake then adds a reading and
//! revises it, and `POST /v2/user/refresh` makes each visible, once.

use std::sync::Arc;

use chrono::{DateTime, Duration, SecondsFormat, SubsecRound, Utc};
use serde_json::{Value, json};

use super::fake_dexcom::{FakeDexcom, fixture, fixture_records};
use crate::sync::support::linked::{Linked, expected_at, instant, offset_days, shifted};
use wearhouse::sync::connectors::dexcom::Dexcom;

/// A fake Dexcom serving the fixture's readings moved into the pull's window.
pub(crate) async fn fake_dexcom() -> FakeDexcom {
    let days = offset_days();
    FakeDexcom::start(fixture_records().iter().map(|r| shifted(r, days)).collect()).await
}

/// A user linked to Dexcom whose historical pull has succeeded at its first attempt.
async fn pulled(dexcom: &FakeDexcom) -> Linked {
    Linked::pulled(Arc::new(Dexcom::new(&dexcom.base).unwrap()), &[], dexcom).await
}

fn expected() -> Vec<Value> {
    expected_at(&fixture("egvs.expected.json"), "/timeseries/glucose")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_linked_dexcom_user_is_pulled_and_the_glucose_getter_answers_the_fixture() {
    let dexcom = fake_dexcom().await;
    let l = pulled(&dexcom).await;
    assert_fixtures_stored(&l).await;

    l.assert_created_once(&["glucose"]).await;
}

/// The glucose getter answers the fixture's readings, moved into the pull's window, each once.
pub(crate) async fn assert_fixtures_stored(l: &Linked) {
    let days = Duration::days(offset_days());
    let glucose = l.series("glucose").await;
    let want = expected();
    assert_eq!(
        glucose.len(),
        want.len(),
        "every reading once: {glucose:#?}"
    );
    for (got, want) in glucose.iter().zip(&want) {
        assert_eq!(
            instant(&got["timestamp"]),
            instant(&want["timestamp"]) + days
        );
        assert_eq!(got["value"].as_f64(), want["value"].as_f64(), "{got}");
        assert_eq!(got["unit"], "mmol/L", "{got}");
    }
}

/// An EGV record as Dexcom's iOS app sends it, `systemTime` in UTC and `displayTime` in
/// +01:00, of `mg_dl`.
fn egv(id: &str, at: DateTime<Utc>, mg_dl: i64) -> Value {
    let local = at.with_timezone(&chrono::FixedOffset::east_opt(3600).unwrap());
    json!({
        "recordId": id,
        "systemTime": at.to_rfc3339_opts(SecondsFormat::Secs, false),
        "displayTime": local.to_rfc3339_opts(SecondsFormat::Secs, false),
        "transmitterId": "3F7K2Q", "transmitterTicks": 2_000_000, "value": mg_dl,
        "status": "ok", "trend": "flat", "trendRate": 0.1, "unit": "mg/dL",
        "rateUnit": "mg/dL/min", "displayDevice": "iOS", "transmitterGeneration": "g7"
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn refresh_shows_new_and_changed_readings_once() {
    let dexcom = fake_dexcom().await;
    let l = pulled(&dexcom).await;
    let fixture_readings = expected().len();
    let at = (Utc::now() - Duration::hours(2)).trunc_subsecs(0);
    let id = "6f1d2c3b-0000-4000-8000-000000000001";

    // New: 144 mg/dL is 7.99 mmol/L (÷ 18.0156, two decimals).
    dexcom.put(egv(id, at, 144));
    l.refreshed().await;
    let glucose = l.series("glucose").await;
    assert_eq!(glucose.len(), fixture_readings + 1, "{glucose:#?}");
    let last = glucose.last().unwrap();
    assert_eq!(instant(&last["timestamp"]), at);
    assert_eq!(last["value"].as_f64(), Some(7.99), "{last}");

    // Revised: the same record at 162 mg/dL (8.99 mmol/L) replaces, not adds.
    dexcom.put(egv(id, at, 162));
    l.refreshed().await;
    let glucose = l.series("glucose").await;
    assert_eq!(glucose.len(), fixture_readings + 1, "{glucose:#?}");
    let last = glucose.last().unwrap();
    assert_eq!(instant(&last["timestamp"]), at);
    assert_eq!(last["value"].as_f64(), Some(8.99), "{last}");
}
