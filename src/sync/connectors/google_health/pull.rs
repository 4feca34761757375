//! Reading the Google Health API: a data type's list, all pages followed, filtered to a window
//! (`users.dataTypes.dataPoints.list`), its newest point, and daily roll-ups
//! (`users.dataTypes.dataPoints.dailyRollUp`). The module docs of `google_health` give the wire.

use std::collections::HashSet;

use chrono::{Datelike, Days, NaiveDate, TimeDelta};
use serde_json::{Value, json};

use super::{MAX_PAGES, ROLLUP_MAX_DAYS, rfc3339};
use crate::sync::http::Api;
use crate::sync::{SyncError, Window};

/// A listed data type: its path segment, the member its points carry, how its filter names
/// the time it is asked by, and its largest page.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// The kebab-case data type of the path (`heart-rate`).
    pub data_type: &'static str,
    /// The camel-case member of each data point (`heartRate`).
    pub member: &'static str,
    /// The filter's field for the time asked by (`heart_rate.sample_time.physical_time`).
    pub filter_field: &'static str,
    /// The largest `pageSize` the type takes.
    pub page_size: usize,
}

/// `sleep` sessions, asked by their end.
pub const SLEEP: Kind = Kind {
    data_type: "sleep",
    member: "sleep",
    filter_field: "sleep.interval.end_time",
    page_size: 25,
};

/// `heart-rate` samples.
pub const HEART_RATE: Kind = sample(
    "heart-rate",
    "heartRate",
    "heart_rate.sample_time.physical_time",
);

/// `heart-rate-variability` samples.
pub const HRV: Kind = sample(
    "heart-rate-variability",
    "heartRateVariability",
    "heart_rate_variability.sample_time.physical_time",
);

/// `oxygen-saturation` samples.
pub const OXYGEN: Kind = sample(
    "oxygen-saturation",
    "oxygenSaturation",
    "oxygen_saturation.sample_time.physical_time",
);

/// `weight` samples.
pub const WEIGHT: Kind = sample("weight", "weight", "weight.sample_time.physical_time");

/// `body-fat` samples.
pub const BODY_FAT: Kind = sample("body-fat", "bodyFat", "body_fat.sample_time.physical_time");

/// `height` samples.
pub const HEIGHT: Kind = sample("height", "height", "height.sample_time.physical_time");

/// The data types rolled up per day into activity rows.
pub const ROLLED_UP: [&str; 4] = [
    "steps",
    "distance",
    "total-calories",
    "active-energy-burned",
];

/// The largest page of a sample type.
const SAMPLE_PAGE: usize = 10_000;

/// A sample type, asked by `{snake}.sample_time.physical_time` (`filter_field`).
const fn sample(data_type: &'static str, member: &'static str, filter_field: &'static str) -> Kind {
    Kind {
        data_type,
        member,
        filter_field,
        page_size: SAMPLE_PAGE,
    }
}

/// The AIP-160 filter of `kind` over `window`.
pub fn filter(kind: &Kind, window: &Window) -> String {
    let field = kind.filter_field;
    format!(
        "{field} >= \"{}\" AND {field} < \"{}\"",
        rfc3339(window.start),
        rfc3339(window.end)
    )
}

/// The collection path of a data type.
fn path(data_type: &str) -> String {
    format!("/v4/users/me/dataTypes/{data_type}/dataPoints")
}

/// Every data point of `kind` in `window` (all of them without one), all pages followed.
pub async fn list(
    api: &Api,
    token: &str,
    kind: &Kind,
    window: Option<&Window>,
) -> Result<Vec<Value>, SyncError> {
    let path = path(kind.data_type);
    let mut base = vec![("pageSize", kind.page_size.to_string())];
    if let Some(w) = window {
        base.push(("filter", filter(kind, w)));
    }
    let mut points = Vec::new();
    let mut next: Option<String> = None;
    let mut seen = HashSet::new();
    for _ in 0..MAX_PAGES {
        let mut query = base.clone();
        if let Some(t) = &next {
            query.push(("pageToken", t.clone()));
        }
        let page = api.get(token, &path, &query).await?;
        let (data, after) = envelope(page, kind.data_type)?;
        points.extend(data);
        match after {
            None => return Ok(points),
            Some(t) if !seen.insert(t.clone()) => {
                return Err(SyncError::Permanent {
                    reason: format!(
                        "Google Health {}: nextPageToken {t:?} came back a second time",
                        kind.data_type
                    ),
                });
            }
            Some(t) => next = Some(t),
        }
    }
    Err(SyncError::Permanent {
        reason: format!(
            "Google Health {}: more than {MAX_PAGES} pages",
            kind.data_type
        ),
    })
}

/// The newest data point of `kind` (lists answer newest first), if any.
pub async fn newest(api: &Api, token: &str, kind: &Kind) -> Result<Option<Value>, SyncError> {
    let page = api
        .get(token, &path(kind.data_type), &[("pageSize", "1".into())])
        .await?;
    let (data, _) = envelope(page, kind.data_type)?;
    Ok(data.into_iter().next())
}

/// The daily roll-ups of `data_type` over the UTC days `window` touches, asked in ranges of at
/// most [`ROLLUP_MAX_DAYS`].
pub async fn daily_rollup(
    api: &Api,
    token: &str,
    data_type: &str,
    window: &Window,
) -> Result<Vec<Value>, SyncError> {
    let path = format!("{}:dailyRollUp", path(data_type));
    let mut points = Vec::new();
    for (start, end) in day_ranges(window) {
        let body = json!({
            "range": {"start": civil(start), "end": civil(end)},
            "windowSizeDays": 1
        });
        let answer = api.post_json(token, &path, &body).await?;
        points.extend(rollup_points(answer, data_type)?);
    }
    Ok(points)
}

/// The half-open day ranges `[start, end)` covering the UTC days `window` touches.
pub fn day_ranges(window: &Window) -> Vec<(NaiveDate, NaiveDate)> {
    let first = window.start.date_naive();
    let last = (window.end - TimeDelta::nanoseconds(1)).date_naive();
    let mut out = Vec::new();
    let mut from = first;
    while from <= last {
        let to = from
            .checked_add_days(Days::new(ROLLUP_MAX_DAYS))
            .map_or(last, |t| t.min(last + Days::new(1)));
        let to = to.max(from + Days::new(1));
        out.push((from, to));
        from = to;
    }
    out
}

/// A civil date as a `CivilDateTime` (midnight).
fn civil(day: NaiveDate) -> Value {
    json!({"date": {"year": day.year(), "month": day.month(), "day": day.day()}})
}

/// A list page's `dataPoints` and `nextPageToken` (absent or empty: the last page).
pub fn envelope(page: Value, data_type: &str) -> Result<(Vec<Value>, Option<String>), SyncError> {
    let bad = |what: &str| SyncError::Permanent {
        reason: format!("Google Health {data_type}: {what}"),
    };
    let Value::Object(mut page) = page else {
        return Err(bad("the page is not a JSON object"));
    };
    // An empty collection may come as `{}`: protobuf's JSON leaves empty lists out.
    let points = match page.remove("dataPoints") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(bad("`dataPoints` is not an array")),
    };
    let next = match page.remove("nextPageToken") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) if t.is_empty() => None,
        Some(Value::String(t)) => Some(t),
        Some(_) => return Err(bad("`nextPageToken` is not a string")),
    };
    Ok((points, next))
}

/// A roll-up answer's `rollupDataPoints`.
fn rollup_points(answer: Value, data_type: &str) -> Result<Vec<Value>, SyncError> {
    match answer {
        Value::Object(mut obj) => match obj.remove("rollupDataPoints") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(SyncError::Permanent {
                reason: format!("Google Health {data_type}: `rollupDataPoints` is not an array"),
            }),
        },
        _ => Err(SyncError::Permanent {
            reason: format!("Google Health {data_type}: the roll-up is not a JSON object"),
        }),
    }
}
