//! Polar's continuous heart rate (`/v3/users/continuous-heart-rate/{date}`) to `heartrate`
//! samples (bpm). Each sample's `sample_time` is device time on the document's `date`, with no
//! offset; it is placed with the wearer's offset that day as Polar's other dated documents show
//! it ([`Zones`]: a night's end, else an exercise's start on the same local day, else the
//! nearest earlier day's, else the nearest later day's), else UTC.

use std::collections::BTreeMap;

use chrono::{FixedOffset, NaiveDate, NaiveTime, TimeZone};
use serde::Deserialize;
use serde_json::{Value, json};

use super::normalise::{Body, Documents, Exercise, Night, stamp};
use crate::sync::Window;
use crate::sync::body::num;

#[derive(Debug, Deserialize)]
struct Sample {
    heart_rate: f64,
    sample_time: NaiveTime,
}

#[derive(Debug, Deserialize)]
struct ContinuousHeartRate {
    date: NaiveDate,
    heart_rate_samples: Vec<Sample>,
}

/// The wearer's offset by local day, as Polar's dated documents show it.
#[derive(Debug, Default)]
pub(super) struct Zones(BTreeMap<NaiveDate, i32>);

impl Zones {
    /// The offsets the nights (their ends) and exercises (their starts) show.
    pub(super) fn of(documents: &Documents) -> Zones {
        let mut days = BTreeMap::new();
        for e in documents
            .exercises
            .iter()
            .filter_map(|e| Exercise::deserialize(e).ok())
        {
            days.insert(e.start_time.date(), e.start_time_utc_offset * 60);
        }
        for n in documents
            .nights
            .iter()
            .filter_map(|n| Night::deserialize(n).ok())
        {
            let end = n.sleep_end_time;
            days.insert(end.date_naive(), end.offset().local_minus_utc());
        }
        Zones(days)
    }

    /// The offset of `day`: its own, else the nearest earlier day's, else the nearest later
    /// day's, else UTC.
    pub(super) fn on(&self, day: NaiveDate) -> i32 {
        self.0
            .range(..=day)
            .next_back()
            .or_else(|| self.0.range(day..).next())
            .map_or(0, |(_, offset)| *offset)
    }
}

impl Body {
    /// Continuous heart-rate samples in the window, placed with the day's offset.
    pub(super) fn heart_rate(&mut self, documents: &[Value], zones: &Zones, window: &Window) {
        for document in documents {
            let Some(day) = self.read::<ContinuousHeartRate>("continuous_heart_rate", document)
            else {
                continue;
            };
            let offset = zones.on(day.date);
            let Some(zone) = FixedOffset::east_opt(offset) else {
                continue;
            };
            for s in &day.heart_rate_samples {
                let Some(at) = zone
                    .from_local_datetime(&day.date.and_time(s.sample_time))
                    .single()
                else {
                    continue;
                };
                if window.contains(at.to_utc()) {
                    self.heartrate.push(json!({"timestamp": stamp(at),
                        "timezone_offset": offset, "unit": "bpm", "value": num(s.heart_rate)}));
                }
            }
        }
    }
}
