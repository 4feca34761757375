//! Dexcom API v3 records to one push body (`data-model.md`), source `{"type": "automatic"}`
//! (a CGM, per `provider-sync.md`).
//!
//! | Dexcom | push body |
//! |---|---|
//! | `egvs` records | `timeseries.glucose` (mmol/L) |
//!
//! Each estimated glucose value becomes one `glucose` sample:
//! - `timestamp` is the record's `systemTime`, Dexcom's UTC instant (with or without an offset:
//!   records from the mobile apps carry one, records from receivers do not, per Dexcom's notes).
//! - `timezone_offset` is the wearer's offset in seconds: `displayTime`'s own offset when it
//!   carries one, else `displayTime − systemTime` (the receiver's clock is set to local time).
//! - `value` is `value` in mmol/L: mg/dL ÷ 18.0182, rounded to 2 decimals (one mg/dL is
//!   0.055 mmol/L, so the rounding loses nothing of Dexcom's integer mg/dL); a record already
//!   in mmol/L keeps its value, rounded the same way.
//!
//! A record that does not read as its documented shape is skipped, counted and logged; its
//! neighbours are kept.
//!
//! Decisions where the documentation is silent:
//! - `value` may be null (the operation's schema says `integer or null`, without saying when).
//!   Read here as a reading outside the range the sensor reports, shown as HIGH or LOW (Dexcom's
//!   user guides: 40–400 mg/dL), which is what `status` `high` or `low` beside it says. Such a
//!   record is left out, not counted as malformed: the data model's `value` is a measurement,
//!   and a clamped 400 or 40 would enter every mean as if measured.
//! - Samples carry no id (ingest keys a sample by provider, source type, resource and
//!   timestamp): Dexcom's `recordId` is not kept, and a re-pull replaces by `systemTime`. That
//!   matters: Dexcom may change a stored record's `value` later (its v2 notes: retrospective
//!   smoothing fills in values after upload), and the re-pull then updates the sample.
//! - `unit` `unknown` (or any unit but `mg/dL` and `mmol/L`) is malformed: the number cannot be
//!   converted. So is a value outside ingest's 0–50 mmol/L.
//! - A computed offset is rounded to the nearest 15 minutes (every zone's offset is a multiple
//!   of 15 minutes; the difference of two device clocks carries their drift) and dropped when
//!   it is beyond ±18 h; with no usable offset the sample has none and the user's fallback zone
//!   applies at query time.
//! - Trend, trend rate, status, transmitter and display device are not kept: the data model
//!   has no field for them.

use chrono::{DateTime, FixedOffset, NaiveDateTime, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::sync::Pulled;
use crate::sync::body::{MAX_OFFSET_SECONDS, clock_offset, mmol_per_litre};

/// The largest glucose value ingest accepts, in mmol/L.
const MAX_MMOL_L: f64 = 50.0;

/// A push body being filled.
#[derive(Debug, Default)]
pub(crate) struct Body {
    glucose: Vec<Value>,
    skipped: usize,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Egv {
    system_time: String,
    display_time: String,
    value: Option<f64>,
    status: Option<String>,
    unit: String,
}

/// A Dexcom date-time: with an offset (mobile apps) or without (receivers).
#[derive(Debug, Clone, Copy)]
enum Stamp {
    Offset(DateTime<FixedOffset>),
    Naive(NaiveDateTime),
}

fn stamp(text: &str) -> Option<Stamp> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(Stamp::Offset(at));
    }
    text.parse::<NaiveDateTime>().ok().map(Stamp::Naive)
}

/// A `systemTime` as the UTC instant it is: its own offset when it has one, else UTC.
pub(crate) fn system_time(text: &str) -> Option<DateTime<Utc>> {
    Some(match stamp(text)? {
        Stamp::Offset(at) => at.to_utc(),
        Stamp::Naive(at) => at.and_utc(),
    })
}

/// The wearer's offset in seconds east of UTC: `display`'s own, else `display − system`
/// rounded to 15 minutes; `None` beyond ±18 h.
fn offset(system: DateTime<Utc>, display: Stamp) -> Option<i64> {
    match display {
        Stamp::Offset(at) => {
            let seconds = i64::from(at.offset().local_minus_utc());
            (seconds.abs() <= MAX_OFFSET_SECONDS).then_some(seconds)
        }
        Stamp::Naive(at) => clock_offset(system, at),
    }
}

impl Body {
    fn malformed(&mut self, record: &Value, why: &str) {
        let who = ("dexcom_v3", ["recordId"].as_slice());
        crate::sync::body::skip::<()>(&mut self.skipped, who, "egvs", record, why);
    }

    /// Estimated glucose values.
    pub(crate) fn egvs(&mut self, records: &[Value]) {
        for record in records {
            let egv = match Egv::deserialize(record) {
                Ok(egv) => egv,
                Err(e) => {
                    self.malformed(record, &e.to_string());
                    continue;
                }
            };
            let Some(at) = system_time(&egv.system_time) else {
                self.malformed(record, "systemTime is not a date-time");
                continue;
            };
            let Some(display) = stamp(&egv.display_time) else {
                self.malformed(record, "displayTime is not a date-time");
                continue;
            };
            let Some(value) = egv.value else {
                tracing::debug!(
                    status = egv.status.as_deref().unwrap_or("?"),
                    at = %at,
                    "Dexcom EGV without a value (out of the sensor's range)"
                );
                continue;
            };
            let Some(mmol) = mmol_per_litre(value, &egv.unit) else {
                self.malformed(record, "unit is neither mg/dL nor mmol/L");
                continue;
            };
            if !(mmol > 0.0 && mmol <= MAX_MMOL_L) {
                self.malformed(record, "value outside 0–50 mmol/L");
                continue;
            }
            let mut sample = Map::new();
            sample.insert(
                "timestamp".into(),
                at.to_rfc3339_opts(SecondsFormat::AutoSi, true).into(),
            );
            if let Some(seconds) = offset(at, display) {
                sample.insert("timezone_offset".into(), seconds.into());
            }
            sample.insert("unit".into(), "mmol/L".into());
            sample.insert("value".into(), mmol.into());
            self.glucose.push(Value::Object(sample));
        }
    }

    /// The push body, with the glucose series only when it received samples.
    pub(crate) fn finish(self) -> Pulled {
        crate::sync::body::pulled(
            ("dexcom_v3", "automatic"),
            Vec::new(),
            None,
            vec![("glucose", self.glucose.into())],
            self.skipped,
        )
    }
}
