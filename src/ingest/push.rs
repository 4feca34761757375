//! The push body as a whole: provider and source, then every part, into one record batch per
//! dataset. One bad record rejects the whole body.
//!
//! Decisions where the spec is silent:
//! - `provider` is required and must be a catalogue slug; `source` is optional, its `type`
//!   defaults to the provider's default source type and must be a known source type.
//! - `profile` is one object (not a list); `timeseries` maps resource names to sample lists.
//! - Empty parts produce no batch; [`PushBatches::counts`] lists the rows per part.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use datafusion::arrow::record_batch::RecordBatch;
use serde_json::Value;

use serde::de::DeserializeSeed;

use super::columns::{BatchBuilder, Cell, Row};
use super::fields::{SOURCE_TYPES, push_key};
use super::push_body::{BodySeed, Collected};
use super::raw;
use super::summary;
use super::zone::Zone;
use crate::loc;
use crate::providers;
use crate::schema::{Dataset, Table};
use crate::validation::read::{self, at};
use crate::validation::{Invalid, Loc, Violation};

/// What parsing needs to know about the user the data belongs to.
#[derive(Debug, Clone, Default)]
pub struct PushUser {
    /// The user's fallback zone: used for the offset of records that carry no zone.
    pub fallback_time_zone: Option<Tz>,
    /// The user's id: part of every id ingest derives, so two users' records with the same
    /// content never share an id (nil where no user is known: the CLI's demo files).
    pub user_id: uuid::Uuid,
    /// Whether the body is a connector's (a pull): its records may carry their provider
    /// document under [`super::raw::PAYLOAD_MEMBER`] (see `raw.rs`).
    pub pulled: bool,
}

/// A validated push body: one record batch per dataset that received rows, in the order
/// sleep, activity, workout, body, meal, profile, then timeseries in body order.
#[derive(Debug, Clone, Default)]
pub struct PushBatches {
    /// The batches, each in its dataset's storage schema.
    pub batches: Vec<(Dataset, RecordBatch)>,
    /// The provider slug the body named.
    pub provider: String,
    /// The raw payload of each summary record, in body order (see `raw.rs`).
    pub raw: Vec<super::raw::RawPayload>,
}

impl PushBatches {
    /// Rows per part, for the push response: `{"sleep": 2, "timeseries": {"heartrate": 300}}`
    /// (push keys, so `workouts` and `meals`; parts without rows are left out).
    pub fn counts(&self) -> Value {
        let mut tables = serde_json::Map::new();
        let mut series: BTreeMap<&str, usize> = BTreeMap::new();
        for (dataset, batch) in &self.batches {
            match dataset {
                Dataset::Table(t) => {
                    tables.insert(push_key(*t).to_owned(), Value::from(batch.num_rows()));
                }
                Dataset::Timeseries(r) => *series.entry(r.name).or_default() += batch.num_rows(),
            }
        }
        if !series.is_empty() {
            tables.insert(
                "timeseries".to_owned(),
                serde_json::to_value(series).unwrap_or_default(),
            );
        }
        Value::Object(tables)
    }

    /// Total rows over every batch.
    pub fn total_rows(&self) -> usize {
        self.batches.iter().map(|(_, b)| b.num_rows()).sum()
    }
}

/// The per-body context every record is parsed in.
pub(crate) struct Ctx<'a> {
    pub(crate) provider: &'a str,
    pub(crate) source_type: String,
    app_id: Option<String>,
    device_id: Option<String>,
    pub(crate) fallback: Option<Tz>,
    pub(crate) now: DateTime<Utc>,
    /// The user's id (hyphenated), the first part of every derived id.
    pub(crate) user: String,
}

impl Ctx<'_> {
    /// Sets the source columns and `ingested_at`.
    pub(crate) fn fill_source(&self, row: &mut Row) {
        for (column, cell) in self.source_cells() {
            row.set(column, cell);
        }
    }

    /// The derived `timezone_offset` cell: the record's own zone at `at`, else null. The user's
    /// fallback zone is deliberately not baked in: the engine applies it at query time
    /// (`aggregate-dsl.md` §3.2), so changing a user's fallback zone needs no rewrite.
    pub(crate) fn offset_cell(&self, zone: Option<Zone>, at: DateTime<Utc>) -> Cell {
        offset_cell(zone, at)
    }

    /// The source columns and `ingested_at`, the same for every record of the push.
    pub(crate) fn source_cells(&self) -> [(&'static str, Cell); 5] {
        [
            ("source_provider", Cell::Str(self.provider.to_owned())),
            ("source_type", Cell::Str(self.source_type.clone())),
            ("source_app_id", Cell::opt_str(self.app_id.as_deref())),
            ("source_device_id", Cell::opt_str(self.device_id.as_deref())),
            (
                crate::schema::INGESTED_AT,
                Cell::Micros(self.now.timestamp_micros()),
            ),
        ]
    }
}

/// A record's `timezone_offset` cell: its own zone's offset at `at`, else null.
pub(crate) fn offset_cell(zone: Option<Zone>, at: DateTime<Utc>) -> Cell {
    zone.map_or(Cell::Null, |z| Cell::Int(i64::from(z.offset_at(at))))
}

const TOP_LEVEL: &[&str] = &[
    "provider",
    "source",
    "sleep",
    "activity",
    "workouts",
    "body",
    "meals",
    "profile",
    "menstrual_cycle",
    "timeseries",
];

/// A batch that could not be built: a bug, reported at the body.
pub(crate) fn internal(e: impl std::fmt::Display) -> Violation {
    Violation::new(
        loc!["body"],
        "value_error",
        format!("could not build the batch: {e}"),
    )
}

/// Parses and validates a whole push body (see the module docs of [`crate::ingest`]).
pub fn parse_push(
    body: &Value,
    user: &PushUser,
    now: DateTime<Utc>,
) -> Result<PushBatches, Invalid> {
    // Reading a `Value` cannot fail: only malformed JSON text can.
    let collected = BodySeed.deserialize(body).map_err(|e| json_invalid(&e))?;
    assemble(collected, user, now)
}

/// Parses and validates a push body from its JSON text in one pass, without building a JSON
/// tree of the whole body (see `push_body.rs`): memory stays near the size of the Arrow
/// batches. Malformed JSON is a `json_invalid` violation at `["body", <column>]`.
pub fn parse_push_json(
    body: &[u8],
    user: &PushUser,
    now: DateTime<Utc>,
) -> Result<PushBatches, Invalid> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let collected = BodySeed
        .deserialize(&mut de)
        .and_then(|c| de.end().map(|()| c))
        .map_err(|e| json_invalid(&e))?;
    assemble(collected, user, now)
}

/// The violation of malformed JSON text, as the HTTP layer's JSON extractor reports it.
fn json_invalid(e: &serde_json::Error) -> Violation {
    Violation::new(
        loc!["body", e.column()],
        "json_invalid",
        format!("JSON decode error: {e}"),
    )
}

/// Validates what the pass collected, in the order a whole-tree parse checks it: the body,
/// provider and source, the summary parts, then the timeseries in body order.
fn assemble(
    collected: Collected,
    user: &PushUser,
    now: DateTime<Utc>,
) -> Result<PushBatches, Invalid> {
    let root = loc!["body"];
    let (head, series) = match collected {
        Collected::Object { head, series } => (head, series),
        Collected::Other(value) => {
            return Err(read::object(&value, &root)
                .err()
                .unwrap_or_else(|| Violation::value(root, "Input should be an object"))
                .into());
        }
    };
    let obj = &head;
    read::forbid_extra(obj, &root, |k| TOP_LEVEL.contains(&k))?;
    let slug = read::required(read::string(obj, "provider", &root)?, &root, "provider")?;
    let Some(provider) = providers::provider(slug) else {
        return Err(
            Violation::new(at(&root, "provider"), "enum", "Unknown provider slug")
                .with_input(Value::from(slug))
                .into(),
        );
    };
    let ctx = source(obj, &root, provider, user, now)?;
    let mut out = PushBatches {
        provider: provider.slug.to_owned(),
        ..PushBatches::default()
    };
    for table in Table::ALL {
        let key = push_key(table);
        let Some(part) = obj.get(key).filter(|v| !v.is_null()) else {
            continue;
        };
        let ploc = at(&root, key);
        let mut builder = BatchBuilder::new(table.schema());
        let records: Vec<(&Value, Vec<Loc>)> = if table == Table::Profile {
            vec![(part, ploc.clone())]
        } else {
            read::array(part, &ploc)?
                .iter()
                .enumerate()
                .map(|(i, r)| (r, at(&ploc, i)))
                .collect()
        };
        for (record, rloc) in records {
            let (stripped, data) = if raw::kept(table) {
                raw::split(record, user.pulled)
            } else {
                (None, None)
            };
            let row = summary::parse(table, stripped.as_ref().unwrap_or(record), &rloc, &ctx)?;
            if let Some(data) = data {
                out.raw
                    .push(raw::payload(table, &row, provider.slug, data, now));
            }
            builder.push(row).map_err(internal)?;
        }
        if builder.len() > 0 {
            out.batches
                .push((Dataset::Table(table), builder.finish().map_err(internal)?));
        }
    }
    let shared = ctx.source_cells();
    for part in series.transpose()?.unwrap_or_default() {
        let (res, builder) = part.samples?;
        if builder.len() > 0 {
            let batch = builder.finish_with(&shared).map_err(internal)?;
            out.batches.push((Dataset::Timeseries(res), batch));
        }
    }
    Ok(out)
}

fn source<'a>(
    obj: &read::Obj,
    root: &[Loc],
    provider: &'a providers::Provider,
    user: &PushUser,
    now: DateTime<Utc>,
) -> Result<Ctx<'a>, Violation> {
    let mut ctx = Ctx {
        provider: provider.slug,
        source_type: provider.default_source_type.to_owned(),
        app_id: None,
        device_id: None,
        fallback: user.fallback_time_zone,
        now,
        user: user.user_id.to_string(),
    };
    if let Some(src) = obj.get("source").filter(|v| !v.is_null()) {
        let sloc = at(root, "source");
        let src = read::object(src, &sloc)?;
        read::forbid_extra(src, &sloc, |k| matches!(k, "type" | "app_id" | "device_id"))?;
        if let Some(t) = read::string(src, "type", &sloc)? {
            read::one_of(t, SOURCE_TYPES, "type", &sloc)?;
            ctx.source_type = t.to_owned();
        }
        ctx.app_id = read::string(src, "app_id", &sloc)?.map(str::to_owned);
        ctx.device_id = read::string(src, "device_id", &sloc)?.map(str::to_owned);
    }
    Ok(ctx)
}
