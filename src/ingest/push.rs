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

use super::columns::BatchBuilder;
use super::context::{internal, source};
use super::fields::push_key;
use super::pulled::PulledBody;
use super::push_body::{BodySeed, Collected};
use super::raw;
use super::summary;
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

/// Parses and validates a whole push body (see the module docs of [`crate::ingest`]).
pub fn parse_push(
    body: &Value,
    user: &PushUser,
    now: DateTime<Utc>,
) -> Result<PushBatches, Invalid> {
    // Reading a `Value` cannot fail: only malformed JSON text can.
    let collected = BodySeed.deserialize(body).map_err(|e| json_invalid(&e))?;
    assemble(collected, user, now, Documents::Pushed)
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
    assemble(collected, user, now, Documents::Pushed)
}

/// Where a summary record's raw payload comes from (see `raw.rs`).
pub(crate) enum Documents<'a> {
    /// A pushed record is its own payload.
    Pushed,
    /// A pulled record's is the provider document beside it.
    Pulled(&'a PulledBody),
}

impl Documents<'_> {
    /// The payload of record `index` of `table`, which reads `record`.
    fn of(&self, table: Table, index: usize, record: &Value) -> Option<Value> {
        match self {
            Documents::Pushed => Some(record.clone()),
            Documents::Pulled(body) => {
                let pulled = match table {
                    Table::Profile => body.profile.as_ref(),
                    _ => body.records(table).and_then(|r| r.get(index)),
                };
                pulled.and_then(|r| r.document.clone())
            }
        }
    }
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
pub(crate) fn assemble(
    collected: Collected,
    user: &PushUser,
    now: DateTime<Utc>,
    documents: Documents<'_>,
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
        for (index, (record, rloc)) in records.into_iter().enumerate() {
            let row = summary::parse(table, record, &rloc, &ctx)?;
            let data = raw::kept(table)
                .then(|| documents.of(table, index, record))
                .flatten();
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
