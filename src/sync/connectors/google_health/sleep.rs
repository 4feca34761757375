//! Google Health `sleep` data points to `sleep` rows.
//!
//! A sleep point is a session: `interval` (`startTime`/`endTime` with their UTC offsets),
//! `type` (`CLASSIC`: awake, restless, asleep; `STAGES`: awake, light, deep, REM), `metadata`
//! (`nap`, `processed`, `stagesStatus`) and the read-only `summary` (`minutesAsleep`,
//! `minutesAwake`, `minutesToFallAsleep`, `minutesInSleepPeriod`, and `stagesSummary`: minutes
//! per stage type).
//!
//! Decisions where the documentation is silent:
//! - `id` is the data point id (the last segment of `name`); a point without one is malformed
//!   (nothing else identifies it across pulls).
//! - `duration` is the session's span; `total` is `minutesAsleep` (light + deep + REM for a
//!   staged night, the asleep minutes of a classic one); `awake` is `minutesAwake`; `light`,
//!   `deep` and `rem` come from a staged night's `stagesSummary` (a classic night has none);
//!   `latency` is `minutesToFallAsleep`; `efficiency` is total ÷ duration in percent (the data
//!   model's definition; Google gives none), to 2 decimals.
//! - `type`: a nap (`metadata.nap`) is an `acknowledged_nap`; otherwise none, so ingest derives
//!   it from the duration. `state`: `tentative` while Google's algorithms have not finished
//!   (`metadata.processed` false), else `confirmed`.
//! - The row's `timezone_offset` is the offset at the session's end.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::normalise::{Body, duration, int64, num, point_id, stamp};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Interval {
    start_time: DateTime<Utc>,
    #[serde(deserialize_with = "duration")]
    start_utc_offset: i64,
    end_time: DateTime<Utc>,
    #[serde(deserialize_with = "duration")]
    end_utc_offset: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    #[serde(default)]
    nap: bool,
    processed: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StageSummary {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default, deserialize_with = "int64")]
    minutes: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    #[serde(default, deserialize_with = "int64")]
    minutes_asleep: Option<i64>,
    #[serde(default, deserialize_with = "int64")]
    minutes_awake: Option<i64>,
    #[serde(default, deserialize_with = "int64")]
    minutes_to_fall_asleep: Option<i64>,
    #[serde(default)]
    stages_summary: Vec<StageSummary>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sleep {
    interval: Interval,
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    metadata: Metadata,
    #[serde(default)]
    summary: Summary,
}

impl Body {
    /// Sleep sessions.
    pub(crate) fn sleep(&mut self, points: &[Value]) {
        for point in points {
            let Some(s) = self.read::<Sleep>("sleep", point) else {
                continue;
            };
            let Some(id) = point_id(point) else {
                self.malformed::<()>("sleep", point, "no data point name");
                continue;
            };
            let i = &s.interval;
            if i.end_time < i.start_time {
                self.malformed::<()>("sleep", point, "endTime is before startTime");
                continue;
            }
            let span = (i.end_time - i.start_time).num_seconds();
            let mut row = Map::new();
            row.insert("id".into(), id.into());
            row.insert(
                "bedtime_start".into(),
                stamp(i.start_time, i.start_utc_offset).into(),
            );
            row.insert(
                "bedtime_stop".into(),
                stamp(i.end_time, i.end_utc_offset).into(),
            );
            if s.metadata.nap {
                row.insert("type".into(), "acknowledged_nap".into());
            }
            let state = if s.metadata.processed == Some(false) {
                "tentative"
            } else {
                "confirmed"
            };
            row.insert("state".into(), state.into());
            row.insert("duration".into(), span.into());
            let m = &s.summary;
            if let Some(asleep) = m.minutes_asleep {
                row.insert("total".into(), (asleep * 60).into());
                if span > 0 {
                    let pct = (asleep * 60) as f64 * 100.0 / span as f64;
                    row.insert("efficiency".into(), num((pct * 100.0).round() / 100.0));
                }
            }
            if let Some(awake) = m.minutes_awake {
                row.insert("awake".into(), (awake * 60).into());
            }
            if s.kind.as_deref() == Some("STAGES") {
                for (stage, key) in [("LIGHT", "light"), ("DEEP", "deep"), ("REM", "rem")] {
                    let minutes = m
                        .stages_summary
                        .iter()
                        .find(|st| st.kind == stage)
                        .and_then(|st| st.minutes);
                    if let Some(min) = minutes {
                        row.insert(key.into(), (min * 60).into());
                    }
                }
            }
            if let Some(latency) = m.minutes_to_fall_asleep {
                row.insert("latency".into(), (latency * 60).into());
            }
            row.insert("timezone_offset".into(), i.end_utc_offset.into());
            self.sleep.push(Value::Object(row).into());
        }
    }
}
