//! Google Health's wire as the fake speaks it (see `fake_google_health.rs` for the sources):
//! its error shape, instants, civil dates, a data point's times and the AIP-160 time filter.
//! Test-only; shares nothing with `wearhouse::sync`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Value, json};

/// Google's error answer: `{"error": {"code", "message", "status"}}`.
pub fn error(status: StatusCode, name: &str, message: &str) -> Response {
    let body = json!({"error": {"code": status.as_u16(), "message": message, "status": name}});
    (status, Json(body)).into_response()
}

/// 401 `UNAUTHENTICATED`, as Google answers a missing or refused token.
pub fn unauthenticated() -> Response {
    error(
        StatusCode::UNAUTHORIZED,
        "UNAUTHENTICATED",
        "Request had invalid authentication credentials. Expected OAuth 2 access token.",
    )
}

/// An RFC 3339 instant.
pub fn instant(v: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v.as_str()?)
        .ok()
        .map(|t| t.to_utc())
}

/// A `CivilDateTime`'s (or `{"date": Date}`'s) date.
pub fn civil_date(v: &Value) -> Option<NaiveDate> {
    let d = v.get("date")?;
    NaiveDate::from_ymd_opt(
        d["year"].as_i64()? as i32,
        d["month"].as_u64()? as u32,
        d["day"].as_u64()? as u32,
    )
}

/// A point's (start, filtered) times: a session's interval, a sample's physical time.
pub fn times(member: &str, point: &Value) -> (DateTime<Utc>, DateTime<Utc>) {
    let m = &point[member];
    if member == "sleep" {
        let i = &m["interval"];
        (
            instant(&i["startTime"]).unwrap(),
            instant(&i["endTime"]).unwrap(),
        )
    } else {
        let t = instant(&m["sampleTime"]["physicalTime"]).unwrap();
        (t, t)
    }
}

/// The `[from, to)` of a filter on `field`; `Err` when it filters by something else.
pub fn parse_filter(filter: &str, field: &str) -> Result<(DateTime<Utc>, DateTime<Utc>), String> {
    let (low, high) = filter
        .split_once(" AND ")
        .ok_or_else(|| format!("unsupported filter {filter:?}"))?;
    let bound = |clause: &str, op: &str| -> Result<DateTime<Utc>, String> {
        let rest = clause
            .trim()
            .strip_prefix(field)
            .and_then(|r| r.trim().strip_prefix(op))
            .ok_or_else(|| format!("unsupported clause {clause:?} (want {field} {op} ...)"))?;
        let literal = rest.trim().trim_matches('"');
        instant(&json!(literal)).ok_or_else(|| format!("bad timestamp {literal:?}"))
    };
    Ok((bound(low, ">=")?, bound(high, "<")?))
}
