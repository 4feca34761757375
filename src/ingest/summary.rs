//! One summary record (sleep, activity, workout, body, meal, profile) of a push body to one row
//! of its table: typed, range-checked, and with its derived columns filled.
//!
//! Decisions where the spec is silent:
//! - `id` is optional on push; when absent it is derived from (user, provider, source type,
//!   table, index time) so re-pushing the same record replaces it. Activity ids are always
//!   derived from (user, provider, source type, date) and profile ids from (user, provider); a
//!   pushed `id` there is ignored. The user is part of every derived id, so two users with the
//!   same data never share an id (ids answered by the getters and named by events and
//!   `GET /v2/summary/...` are unique across users, as the reference's are). Records stored
//!   before the user was part of it keep their ids (`ingest` never rewrites stored rows).
//! - Sleep `duration` defaults to `bedtime_stop − bedtime_start`, `total` to light + deep + rem,
//!   `type` to `long_sleep` (≥ 3 h) or `short_sleep`.
//! - The zone of a sleep (`timezone_offset`), workout or body record (`time_zone`) is `±HH:MM`,
//!   `Z`, an IANA name or seconds east of UTC. The derived `timezone_offset` column is its offset
//!   at the row's index instant (sleep: `bedtime_stop`), else null: the engine applies the
//!   user's fallback zone at query time, so a change of fallback zone needs no rewrite. Sleep stores the zone as `+HH:MM` (as it renders); workouts and body
//!   store it as given. An activity's `time_zone_offset` defaults to its zone's (else the
//!   fallback zone's) offset at local noon of its date.
//! - The hypnogram is pushed as `"sleep_stream": {"hypnogram": [1, 2, 3, 4, ...], "interval":
//!   300}`: stage codes 1 deep, 2 light, 3 rem, 4 awake, 5 manual, −1 missing, one per
//!   `interval` seconds (default 300) from `bedtime_start`, and may not run past the session.
//! - Profile `created_at` and `updated_at` default to the push time; `birth_date` may not be in
//!   the future.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::columns::{Cell, Row};
use super::context::Ctx;
use super::fields::{Wire, allowed_values, range, read_only, wire};
use super::zone::{MAX_OFFSET, Zone, format_offset};
use crate::schema::{Kind, Table};
use crate::validation::read::{self, Obj, at};
use crate::validation::{Loc, Violation};

/// The default hypnogram sample interval, in seconds.
pub const DEFAULT_HYPNOGRAM_INTERVAL: i64 = 300;
const STAGES: [i64; 6] = [1, 2, 3, 4, 5, -1];

/// A stable id from its parts: a version-8 UUID over their SHA-256.
pub fn derive_id(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    let digest = hasher.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// Days since 1970-01-01, the `Date32` encoding.
pub(crate) fn epoch_days(date: NaiveDate) -> i32 {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    i32::try_from((date - epoch).num_days()).unwrap_or(i32::MAX)
}

/// Reads a zone member: a zone string or seconds east of UTC.
pub(crate) fn zone(obj: &Obj, key: &str, loc: &[Loc]) -> Result<Option<Zone>, Violation> {
    let Some(value) = obj.get(key).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let parsed = match value {
        Value::String(s) => Zone::parse(s),
        Value::Number(n) => n
            .as_i64()
            .filter(|s| s.abs() <= MAX_OFFSET)
            .and_then(|s| i32::try_from(s).ok())
            .map(Zone::Fixed),
        _ => None,
    };
    parsed.map(Some).ok_or_else(|| {
        Violation::value(
            at(loc, key),
            "Input should be a UTC offset (+HH:MM), an IANA time zone or seconds east of UTC",
        )
        .with_input(value.clone())
    })
}

/// Members a table's record code reads itself (beyond the columns' wire places).
fn own_member(table: Table, key: &str) -> bool {
    key == "id"
        || match table {
            Table::Sleep => matches!(key, "sleep_stream" | "timezone_offset"),
            Table::Activity | Table::Meal => key == "date",
            Table::Workout => matches!(key, "hr_zones" | "timezone_offset"),
            Table::Body => key == "timezone_offset",
            Table::Profile => false,
            Table::MenstrualCycle => super::cycle::own_member(key),
        }
}

/// The wire paths of a table's columns.
fn paths(table: Table) -> impl Iterator<Item = &'static str> {
    table
        .columns()
        .iter()
        .filter_map(move |c| wire(table, c.name))
        .map(|w| w.path)
}

/// Rejects unknown members, at the top and inside the nested objects of the wire shape
/// (`heart_rate`, `macros.fats`, ...). A column's own name is accepted too (the shape pushes
/// had before the wire followed the reference).
fn forbid_unknown(table: Table, obj: &Obj, loc: &[Loc]) -> Result<(), Violation> {
    read::forbid_extra(obj, loc, |key| {
        paths(table).any(|p| p.split('.').next() == Some(key))
            || table.columns().iter().any(|c| c.name == key)
            || read_only(table, key)
            || own_member(table, key)
    })?;
    let mut prefixes: Vec<&str> = Vec::new();
    for path in paths(table) {
        for (i, _) in path.match_indices('.') {
            if !prefixes.contains(&&path[..i]) {
                prefixes.push(&path[..i]);
            }
        }
    }
    for prefix in prefixes {
        let Some((parent, key, here)) = locate(obj, prefix, loc)? else {
            continue;
        };
        let Some(inner) = parent.get(key).filter(|v| !v.is_null()) else {
            continue;
        };
        let inner_loc = at(&here, key);
        let inner = read::object(inner, &inner_loc)?;
        let dotted = format!("{prefix}.");
        read::forbid_extra(inner, &inner_loc, |k| {
            paths(table).any(|p| {
                p.strip_prefix(dotted.as_str())
                    .and_then(|rest| rest.split('.').next())
                    == Some(k)
            }) || matches!((prefix, k), ("energy", "unit") | ("sport", "id"))
        })?;
    }
    Ok(())
}

/// A member's place: its parent object, its key and the parent's location.
type Place<'a> = (&'a Obj, &'static str, Vec<Loc>);

/// The member a wire path names: its parent object, its key and the parent's location;
/// `None` when an object on the way is absent or null.
fn locate<'a>(
    obj: &'a Obj,
    path: &'static str,
    loc: &[Loc],
) -> Result<Option<Place<'a>>, Violation> {
    let mut parent = obj;
    let mut here = loc.to_vec();
    let mut segments = path.split('.').peekable();
    while let Some(seg) = segments.next() {
        if segments.peek().is_none() {
            return Ok(Some((parent, seg, here)));
        }
        match parent.get(seg).filter(|v| !v.is_null()) {
            None => return Ok(None),
            Some(v) => {
                here.push(Loc::from(seg));
                parent = read::object(v, &here)?;
            }
        }
    }
    Ok(None)
}

/// Where a column's value is read: its wire place, else (when that is absent) a member named
/// after the column itself, which is in the column's own unit (see [`parse`]).
fn source_of<'a>(
    obj: &'a Obj,
    column: &'static str,
    place: Wire,
    loc: &[Loc],
) -> Result<Place<'a>, Violation> {
    let present = |o: &Obj, k: &str| o.get(k).is_some_and(|v| !v.is_null());
    Ok(match locate(obj, place.path, loc)? {
        Some((parent, key, here)) if present(parent, key) => (parent, key, here),
        _ if present(obj, column) => (obj, column, loc.to_vec()),
        Some(found) => found,
        None => (obj, column, loc.to_vec()),
    })
}

/// Parses one summary record.
pub(crate) fn parse(table: Table, value: &Value, loc: &[Loc], ctx: &Ctx) -> Result<Row, Violation> {
    let obj = read::object(value, loc)?;
    forbid_unknown(table, obj, loc)?;
    let mut row = Row::default();
    for column in table.columns() {
        let Some(place) = wire(table, column.name) else {
            continue;
        };
        let (parent, key, here) = source_of(obj, column.name, place, loc)?;
        // A value given under the column's own name is in the column's unit: the wire's factor
        // (minutes to seconds, say) applies to the wire name only.
        let by_column = std::ptr::eq(parent, obj) && key == column.name;
        let factor = if by_column { 1.0 } else { place.factor };
        row.set(
            column.name,
            typed(table, column.name, column.kind, parent, key, &here, factor)?,
        );
    }
    match table {
        Table::Sleep => sleep(obj, loc, ctx, &mut row)?,
        Table::Workout => {
            hr_zones(obj, loc, &mut row)?;
            timed(
                obj,
                loc,
                ctx,
                &mut row,
                "workout",
                "session_start",
                Some("session_end"),
            )?
        }
        Table::Body => timed(obj, loc, ctx, &mut row, "body", "measured_at", None)?,
        Table::Activity => activity(obj, loc, ctx, &mut row)?,
        Table::Meal => meal(obj, loc, ctx, &mut row)?,
        Table::Profile => profile(obj, loc, ctx, &mut row)?,
        Table::MenstrualCycle => super::cycle::parse(obj, loc, ctx, &mut row)?,
    }
    ctx.fill_source(&mut row);
    Ok(row)
}

/// The workout's `hr_zones`: seconds in each of the six zones, in order.
fn hr_zones(obj: &Obj, loc: &[Loc], row: &mut Row) -> Result<(), Violation> {
    let zones: Vec<Option<f64>> = match obj.get("hr_zones").filter(|v| !v.is_null()) {
        Some(raw) => {
            let here = at(loc, "hr_zones");
            let items = read::array(raw, &here)?;
            if items.len() > 6 {
                return Err(Violation::value(here, "hr_zones has at most 6 entries")
                    .with_input(raw.clone()));
            }
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let value = match item {
                    Value::Null => None,
                    v => Some(
                        v.as_f64()
                            .filter(|f| f.is_finite() && *f >= 0.0)
                            .ok_or_else(|| {
                                Violation::value(
                                    at(&here, i),
                                    "Input should be a number of seconds, 0 or more",
                                )
                                .with_input(v.clone())
                            })?,
                    ),
                };
                out.push(value);
            }
            out
        }
        None => (1..=6)
            .map(|i| {
                let key = ZONES[i - 1];
                read::float(obj, key, loc)
            })
            .collect::<Result<_, _>>()?,
    };
    for (i, column) in ZONES.iter().enumerate() {
        let cell = zones
            .get(i)
            .copied()
            .flatten()
            .map_or(Cell::Null, Cell::Float);
        row.set(column, cell);
    }
    Ok(())
}

const ZONES: [&str; 6] = [
    "heart_rate_zone_1",
    "heart_rate_zone_2",
    "heart_rate_zone_3",
    "heart_rate_zone_4",
    "heart_rate_zone_5",
    "heart_rate_zone_6",
];

fn typed(
    table: Table,
    column: &str,
    kind: Kind,
    obj: &Obj,
    key: &str,
    loc: &[Loc],
    factor: f64,
) -> Result<Cell, Violation> {
    Ok(match kind {
        Kind::Str => match read::string(obj, key, loc)? {
            Some(s) => {
                if let Some(allowed) = allowed_values(table, column) {
                    read::one_of(s, allowed, key, loc)?;
                }
                Cell::Str(s.to_owned())
            }
            None => Cell::Null,
        },
        Kind::Int if factor != 1.0 => match read::float(obj, key, loc)? {
            Some(v) => {
                let v = (v * factor).round();
                read::in_range(v, range(column), obj, key, loc)?;
                Cell::Int(v as i64)
            }
            None => Cell::Null,
        },
        Kind::Int => match read::int(obj, key, loc)? {
            Some(v) => {
                read::in_range(v as f64, range(column), obj, key, loc)?;
                Cell::Int(v)
            }
            None => Cell::Null,
        },
        Kind::Float => match read::float(obj, key, loc)? {
            Some(v) => {
                let v = v * factor;
                read::in_range(v, range(column), obj, key, loc)?;
                Cell::Float(v)
            }
            None => Cell::Null,
        },
        Kind::Bool => read::boolean(obj, key, loc)?.map_or(Cell::Null, Cell::Bool),
        Kind::Date => read::date(obj, key, loc)?.map_or(Cell::Null, |d| Cell::Date(epoch_days(d))),
        Kind::Instant => {
            read::instant(obj, key, loc)?.map_or(Cell::Null, |t| Cell::Micros(t.timestamp_micros()))
        }
    })
}

fn micros(row: &Row, column: &str) -> Option<i64> {
    match row.get(column) {
        Some(Cell::Micros(v)) => Some(*v),
        _ => None,
    }
}

fn int(row: &Row, column: &str) -> Option<i64> {
    match row.get(column) {
        Some(Cell::Int(v)) => Some(*v),
        _ => None,
    }
}

fn utc(micros: i64) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp_micros(micros).unwrap_or_default()
}

/// Requires the start (and end) instants and checks their order; returns them in microseconds.
fn span(
    row: &Row,
    obj: &Obj,
    loc: &[Loc],
    table: Table,
    start: &'static str,
    end: Option<&'static str>,
) -> Result<(i64, Option<i64>), Violation> {
    let s = read::required(micros(row, start), loc, json_name_of(table, start))?;
    let Some(end) = end else { return Ok((s, None)) };
    let e = read::required(micros(row, end), loc, json_name_of(table, end))?;
    if e < s {
        let key = json_name_of(table, end);
        return Err(Violation::value(
            at(loc, key),
            format!("{key} must not be before {}", json_name_of(table, start)),
        )
        .with_input(obj.get(key).cloned().unwrap_or(Value::Null)));
    }
    Ok((s, Some(e)))
}

fn json_name_of(table: Table, column: &'static str) -> &'static str {
    wire(table, column).map_or(column, |w| w.path)
}

fn record_id(obj: &Obj, loc: &[Loc], ctx: &Ctx, parts: &[&str]) -> Result<String, Violation> {
    match read::string(obj, "id", loc)? {
        Some(id) if !id.is_empty() => Ok(id.to_owned()),
        Some(_) => Err(Violation::value(at(loc, "id"), "id must not be empty")),
        None => {
            let mut all = vec![ctx.user.as_str(), ctx.provider, ctx.source_type.as_str()];
            all.extend_from_slice(parts);
            Ok(derive_id(&all))
        }
    }
}

fn sleep(obj: &Obj, loc: &[Loc], ctx: &Ctx, row: &mut Row) -> Result<(), Violation> {
    let (start, end) = span(
        row,
        obj,
        loc,
        Table::Sleep,
        "session_start",
        Some("session_end"),
    )?;
    let end = end.unwrap_or(start);
    let duration = (end - start) / 1_000_000;
    if int(row, "duration_second").is_none() {
        row.set("duration_second", Cell::Int(duration));
    }
    if int(row, "stage_asleep_second").is_none() {
        let stages = [
            "stage_light_second",
            "stage_deep_second",
            "stage_rem_second",
        ]
        .map(|c| int(row, c));
        if let [Some(l), Some(d), Some(r)] = stages {
            row.set("stage_asleep_second", Cell::Int(l + d + r));
        }
    }
    if row.get("type") == Some(&Cell::Null) {
        let kind = if duration >= 3 * 3600 {
            "long_sleep"
        } else {
            "short_sleep"
        };
        row.set("type", Cell::Str(kind.to_owned()));
    }
    let zone = zone(obj, "timezone_offset", loc)?;
    let at_end = utc(end);
    row.set(
        "time_zone",
        Cell::opt_str(zone.map(|z| format_offset(z.offset_at(at_end))).as_deref()),
    );
    row.set("timezone_offset", ctx.offset_cell(zone, at_end));
    hypnogram(obj, loc, duration, row)?;
    let id = record_id(obj, loc, ctx, &["sleep", &start.to_string()])?;
    row.set("id", Cell::Str(id));
    Ok(())
}

fn hypnogram(obj: &Obj, loc: &[Loc], duration: i64, row: &mut Row) -> Result<(), Violation> {
    let Some(stream) = obj.get("sleep_stream").filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let loc = at(loc, "sleep_stream");
    let stream = read::object(stream, &loc)?;
    read::forbid_extra(stream, &loc, |k| matches!(k, "hypnogram" | "interval"))?;
    let Some(raw) = stream.get("hypnogram").filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let hloc = at(&loc, "hypnogram");
    let items = read::array(raw, &hloc)?;
    let mut interval = read::int(stream, "interval", &loc)?;
    let mut stages = Vec::new();
    for (i, v) in items.iter().enumerate() {
        let (stage, span) = match v {
            // The reference's form: one sample per stage, `{start, end, value, ...}`.
            Value::Object(sample) => {
                let here = at(&hloc, i);
                let start = read::instant(sample, "start", &here)?.or(read::instant(
                    sample,
                    "timestamp",
                    &here,
                )?);
                let end = read::instant(sample, "end", &here)?;
                let span = start.zip(end).map(|(s, e)| (e - s).num_seconds());
                (sample.get("value").and_then(Value::as_f64), span)
            }
            other => (other.as_f64(), None),
        };
        if interval.is_none() {
            interval = span;
        }
        match stage
            .filter(|s| s.fract() == 0.0)
            .map(|s| s as i64)
            .filter(|s| STAGES.contains(s))
        {
            Some(s) => stages.push(s as i8),
            None => {
                return Err(Violation::value(at(&hloc, i), "Stage should be 1 (deep), 2 (light), 3 (rem), 4 (awake), 5 (manual) or -1 (missing)")
                    .with_input(v.clone()));
            }
        }
    }
    let interval = interval.unwrap_or(DEFAULT_HYPNOGRAM_INTERVAL);
    read::in_range(interval as f64, (1.0, 86400.0), stream, "interval", &loc)?;
    if (stages.len() as i64 - 1) * interval > duration {
        return Err(Violation::value(
            hloc,
            "The hypnogram runs past bedtime_stop",
        ));
    }
    row.set("hypnogram", Cell::Stages(stages));
    row.set("hypnogram_interval_second", Cell::Int(interval));
    Ok(())
}

fn timed(
    obj: &Obj,
    loc: &[Loc],
    ctx: &Ctx,
    row: &mut Row,
    name: &str,
    start: &'static str,
    end: Option<&'static str>,
) -> Result<(), Violation> {
    let table = if name == "workout" {
        Table::Workout
    } else {
        Table::Body
    };
    let (s, _) = span(row, obj, loc, table, start, end)?;
    // The zone's name, else the reference's offset in seconds.
    let zone = match zone(obj, "time_zone", loc)? {
        Some(z) => Some(z),
        None => zone(obj, "timezone_offset", loc)?,
    };
    row.set("time_zone", Cell::opt_str(zone.map(Zone::label).as_deref()));
    row.set("timezone_offset", ctx.offset_cell(zone, utc(s)));
    let id = record_id(obj, loc, ctx, &[name, &s.to_string()])?;
    row.set("id", Cell::Str(id));
    Ok(())
}

fn activity(obj: &Obj, loc: &[Loc], ctx: &Ctx, row: &mut Row) -> Result<(), Violation> {
    let date = read::required(read::date(obj, "date", loc)?, loc, "date")?;
    row.set("date", Cell::Date(epoch_days(date)));
    let zone = zone(obj, "time_zone", loc)?;
    row.set("time_zone", Cell::opt_str(zone.map(Zone::label).as_deref()));
    if int(row, "time_zone_offset").is_none() {
        let offset = zone
            .or(ctx.fallback.map(Zone::Named))
            .map(|z| z.offset_on(date));
        row.set(
            "time_zone_offset",
            offset.map_or(Cell::Null, |o| Cell::Int(i64::from(o))),
        );
    }
    let id = derive_id(&[
        &ctx.user,
        ctx.provider,
        &ctx.source_type,
        "activity",
        &date.to_string(),
    ]);
    row.set("id", Cell::Str(id));
    Ok(())
}

fn meal(obj: &Obj, loc: &[Loc], ctx: &Ctx, row: &mut Row) -> Result<(), Violation> {
    // The day: `date`, else the day of the reference's `timestamp`.
    let date = match read::date(obj, "date", loc)? {
        Some(d) => d,
        None => read::required(read::date(obj, "timestamp", loc)?, loc, "date")?,
    };
    row.set("date", Cell::Date(epoch_days(date)));
    let name = read::string(obj, "name", loc)?.unwrap_or("");
    let id = record_id(obj, loc, ctx, &["meal", &date.to_string(), name])?;
    row.set("id", Cell::Str(id));
    Ok(())
}

fn profile(obj: &Obj, loc: &[Loc], ctx: &Ctx, row: &mut Row) -> Result<(), Violation> {
    if let Some(birth) = read::date(obj, "birth_date", loc)?
        && birth > ctx.now.date_naive()
    {
        return Err(Violation::value(
            at(loc, "birth_date"),
            "birth_date must not be in the future",
        )
        .with_input(Value::from(birth.to_string())));
    }
    for column in ["created_at", "updated_at"] {
        if micros(row, column).is_none() {
            row.set(column, Cell::Micros(ctx.now.timestamp_micros()));
        }
    }
    row.set(
        "id",
        Cell::Str(derive_id(&[&ctx.user, ctx.provider, "profile"])),
    );
    Ok(())
}
