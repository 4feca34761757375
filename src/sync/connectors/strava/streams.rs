//! An activity's `StreamSet` (`key_by_type=true`) to samples: `heartrate` (bpm) at each point's
//! instant, `distance` (m) as one interval sample per step between consecutive points, both
//! tagged with the activity (`source_workout_id`, `source_sport`); and the mean and maximum of
//! its `watts` stream, for a summary that has no power of its own.
//!
//! Each stream is a `{"data": [...]}` as long as `time`, whose values are seconds since the
//! activity's start. Decisions where the documentation is silent:
//! - A heart rate of 0 is a lost signal, left out without counting; a value that is not a
//!   number, above 300 bpm, or at an instant not after the previous sample's is malformed,
//!   left out, and the stream counted once as malformed.
//! - Distance is cumulative: each step `(t[i-1], t[i]]` whose distance grew becomes a sample
//!   `[start + t[i-1], start + t[i])` of the growth (the data model's `distance` is an interval
//!   resource); a step without growth (a stop) is left out, a shrinking one is malformed.
//!   The distance covered before the first point (from the start to `t[0]`) is its own step.
//! - A `StreamSet` without a readable `time`, or with a stream of another length, is malformed:
//!   counted once, and the activity keeps its workout row without samples.

use serde_json::Value;

use super::Wanted;
use super::normalise::{Body, Session};
use crate::ingest::{PulledSample, SampleTags};

/// The highest heart rate kept, in bpm (ingest's bound).
const MAX_BPM: f64 = 300.0;

/// A stream's `data`, if the set has it.
fn data<'a>(set: &'a Value, key: &str) -> Option<&'a Vec<Value>> {
    set.get(key)?.get("data")?.as_array()
}

impl Session {
    /// The sample of `value` `seconds` after the start, in the activity's offset, carrying
    /// `tags` (the activity's, in its series); `None` past what an instant can name.
    fn sample(&self, seconds: i64, value: f64, tags: u32) -> Option<PulledSample> {
        let at = self.start.timestamp().checked_add(seconds)?;
        let sample = PulledSample::at_second(at, value)?;
        Some(sample.in_offset(self.zone.local_minus_utc()).tagged(tags))
    }

    /// The tags its samples carry: the activity's id and sport.
    fn tags(&self) -> SampleTags {
        SampleTags {
            source_workout_id: Some(self.id.clone()),
            source_sport: Some(self.sport.clone()),
            ..SampleTags::default()
        }
    }
}

/// Fills `body`'s samples from the activity's stream set; answers the `watts` stream's mean and
/// maximum when it has one.
pub(super) fn samples(
    body: &mut Body,
    record: &Value,
    set: &Value,
    session: &Session,
    wanted: Wanted,
) -> Option<(f64, f64)> {
    let Some(times) = data(set, "time") else {
        body.malformed("streams", record, "the stream set has no time stream");
        return None;
    };
    let times: Option<Vec<i64>> = times.iter().map(Value::as_i64).collect();
    let Some(times) = times else {
        body.malformed("streams", record, "the time stream holds a non-integer");
        return None;
    };
    let lengths_agree = ["heartrate", "distance", "watts"]
        .iter()
        .filter_map(|k| data(set, k))
        .all(|d| d.len() == times.len());
    if !lengths_agree {
        body.malformed("streams", record, "a stream is not as long as time");
        return None;
    }
    if wanted.heartrate
        && let Some(rates) = data(set, "heartrate")
    {
        heartrate(body, record, session, &times, rates);
    }
    if wanted.workouts
        && let Some(metres) = data(set, "distance")
    {
        distance(body, record, session, &times, metres);
    }
    data(set, "watts").and_then(|w| power(w))
}

fn heartrate(body: &mut Body, record: &Value, session: &Session, times: &[i64], rates: &[Value]) {
    let tags = body.heartrate.add_tags(session.tags());
    let mut bad = 0;
    let mut last: Option<i64> = None;
    for (t, rate) in times.iter().zip(rates) {
        if last.is_some_and(|l| *t <= l) {
            bad += 1;
            continue;
        }
        match rate.as_f64() {
            Some(0.0) => {}
            Some(v) if v > 0.0 && v <= MAX_BPM => {
                last = Some(*t);
                body.heartrate.extend(session.sample(*t, v, tags));
            }
            _ => bad += 1,
        }
    }
    if bad > 0 {
        body.malformed(
            "streams",
            record,
            &format!("{bad} heart rates not in 1-300 bpm or out of time order"),
        );
    }
}

fn distance(body: &mut Body, record: &Value, session: &Session, times: &[i64], metres: &[Value]) {
    let tags = body.distance.add_tags(session.tags());
    let end = |t: i64| {
        let second = session.start.timestamp().checked_add(t)?;
        second.checked_mul(1_000_000)
    };
    let (mut previous_t, mut previous_m) = (0_i64, 0.0_f64);
    let mut bad = 0;
    for (i, (t, m)) in times.iter().zip(metres).enumerate() {
        let Some(m) = m.as_f64().filter(|m| m.is_finite() && *m >= 0.0) else {
            bad += 1;
            continue;
        };
        if i == 0 && *t == 0 {
            // The first point at the start: its distance is where the count begins.
            previous_m = m;
            continue;
        }
        if *t <= previous_t || m < previous_m {
            bad += 1;
            continue;
        }
        if m > previous_m {
            let metres = ((m - previous_m) * 1000.0).round() / 1000.0;
            let sample = session.sample(previous_t, metres, tags);
            if let (Some(sample), Some(end)) = (sample, end(*t)) {
                body.distance.push(sample.ending(end));
            }
        }
        (previous_t, previous_m) = (*t, m);
    }
    if bad > 0 {
        body.malformed(
            "streams",
            record,
            &format!("{bad} distances unreadable, out of time order or shrinking"),
        );
    }
}

/// The mean and maximum of the watts recorded (`null` points, coasting without a reading, left
/// out); `None` without any.
fn power(watts: &[Value]) -> Option<(f64, f64)> {
    let values: Vec<f64> = watts.iter().filter_map(Value::as_f64).collect();
    let max = values
        .iter()
        .copied()
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))?;
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    Some(((mean * 10.0).round() / 10.0, max))
}
