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

use super::columns::{BatchBuilder, Cell, Row};
use super::fields::{SOURCE_TYPES, push_key};
use super::json::{self, at};
use super::zone::Zone;
use super::{sample, summary};
use crate::loc;
use crate::providers;
use crate::schema::{Dataset, Table, resource};
use crate::validation::{Invalid, Loc, Violation};

/// What parsing needs to know about the user the data belongs to.
#[derive(Debug, Clone, Default)]
pub struct PushUser {
    /// The user's fallback zone: used for the offset of records that carry no zone.
    pub fallback_time_zone: Option<Tz>,
}

/// A validated push body: one record batch per dataset that received rows, in the order
/// sleep, activity, workout, body, meal, profile, then timeseries in body order.
#[derive(Debug, Clone, Default)]
pub struct PushBatches {
    /// The batches, each in its dataset's storage schema.
    pub batches: Vec<(Dataset, RecordBatch)>,
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
}

impl Ctx<'_> {
    /// Sets the source columns and `ingested_at`.
    pub(crate) fn fill_source(&self, row: &mut Row) {
        row.set("source_provider", Cell::Str(self.provider.to_owned()));
        row.set("source_type", Cell::Str(self.source_type.clone()));
        row.set("source_app_id", Cell::opt_str(self.app_id.as_deref()));
        row.set("source_device_id", Cell::opt_str(self.device_id.as_deref()));
        row.set(
            crate::schema::INGESTED_AT,
            Cell::Micros(self.now.timestamp_micros()),
        );
    }

    /// The derived `timezone_offset` cell: the record's own zone at `at`, else null. The user's
    /// fallback zone is deliberately not baked in: the engine applies it at query time
    /// (`aggregate-dsl.md` §3.2), so changing a user's fallback zone needs no rewrite.
    pub(crate) fn offset_cell(&self, zone: Option<Zone>, at: DateTime<Utc>) -> Cell {
        zone.map_or(Cell::Null, |z| Cell::Int(i64::from(z.offset_at(at))))
    }
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
    "timeseries",
];

fn internal(e: impl std::fmt::Display) -> Violation {
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
    let root = loc!["body"];
    let obj = json::object(body, &root)?;
    json::forbid_extra(obj, &root, |k| TOP_LEVEL.contains(&k))?;
    let slug = json::required(json::string(obj, "provider", &root)?, &root, "provider")?;
    let Some(provider) = providers::provider(slug) else {
        return Err(
            Violation::new(at(&root, "provider"), "enum", "Unknown provider slug")
                .with_input(Value::from(slug))
                .into(),
        );
    };
    let ctx = source(obj, &root, provider, user, now)?;
    let mut out = PushBatches::default();
    for table in Table::ALL {
        let key = push_key(table);
        let Some(part) = obj.get(key).filter(|v| !v.is_null()) else {
            continue;
        };
        let ploc = at(&root, key);
        let mut builder = BatchBuilder::new(table.schema());
        if table == Table::Profile {
            builder
                .push(summary::parse(table, part, &ploc, &ctx)?)
                .map_err(internal)?;
        } else {
            for (i, record) in json::array(part, &ploc)?.iter().enumerate() {
                let row = summary::parse(table, record, &at(&ploc, i), &ctx)?;
                builder.push(row).map_err(internal)?;
            }
        }
        if builder.len() > 0 {
            out.batches
                .push((Dataset::Table(table), builder.finish().map_err(internal)?));
        }
    }
    if let Some(series) = obj.get("timeseries").filter(|v| !v.is_null()) {
        let sloc = at(&root, "timeseries");
        for (name, samples) in json::object(series, &sloc)? {
            let rloc = at(&sloc, name.as_str());
            let Some(res) = resource(name) else {
                return Err(
                    Violation::new(rloc, "extra_forbidden", "Unknown timeseries resource").into(),
                );
            };
            let dataset = Dataset::Timeseries(res);
            let mut builder = BatchBuilder::new(dataset.schema());
            let keys = sample::accepted_keys(res.family);
            for (i, s) in json::array(samples, &rloc)?.iter().enumerate() {
                builder
                    .push(sample::parse(res, &keys, s, &at(&rloc, i), &ctx)?)
                    .map_err(internal)?;
            }
            if builder.len() > 0 {
                out.batches
                    .push((dataset, builder.finish().map_err(internal)?));
            }
        }
    }
    Ok(out)
}

fn source<'a>(
    obj: &json::Obj,
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
    };
    if let Some(src) = obj.get("source").filter(|v| !v.is_null()) {
        let sloc = at(root, "source");
        let src = json::object(src, &sloc)?;
        json::forbid_extra(src, &sloc, |k| matches!(k, "type" | "app_id" | "device_id"))?;
        if let Some(t) = json::string(src, "type", &sloc)? {
            json::one_of(t, SOURCE_TYPES, "type", &sloc)?;
            ctx.source_type = t.to_owned();
        }
        ctx.app_id = json::string(src, "app_id", &sloc)?.map(str::to_owned);
        ctx.device_id = json::string(src, "device_id", &sloc)?.map(str::to_owned);
    }
    Ok(ctx)
}
