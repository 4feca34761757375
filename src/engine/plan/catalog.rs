//! The user's data as DataFusion table sources, plus the per-user settings the compiler needs
//! (fallback zone, ingestion bounds, team provider order). Built from the record batches the
//! caller hands in; the engine never knows where they came from.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::MemTable;
use datafusion::datasource::provider_as_source;
use datafusion::logical_expr::TableSource;

use crate::schema::{Dataset, Table};

use crate::engine::EngineError;

/// Per-user settings that change how queries are evaluated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserContext {
    /// The zone used for rows without their own offset (§3.2).
    pub fallback_time_zone: Option<Tz>,
    /// The first day of data the user allows to be read.
    pub ingestion_start: Option<NaiveDate>,
    /// The last day (inclusive) of data the user allows to be read.
    pub ingestion_end: Option<NaiveDate>,
    /// The team's configured provider order per data type (sleep, activity, workouts, body,
    /// meal, timeseries).
    pub team_priorities: HashMap<String, Vec<String>>,
    /// The instant the request runs at: ALIGN never carries forward past the bucket holding it
    /// (`plan/align/`). `None` bounds the spine by the window alone.
    pub now: Option<DateTime<Utc>>,
}

/// The team-priority data type of a dataset.
pub fn data_type_of(d: Dataset) -> &'static str {
    match d {
        Dataset::Table(Table::Sleep) => "sleep",
        Dataset::Table(Table::Activity) => "activity",
        Dataset::Table(Table::Workout) => "workouts",
        Dataset::Table(Table::Body) => "body",
        Dataset::Table(Table::Meal) => "meal",
        Dataset::Table(Table::Profile) => "profile",
        Dataset::Table(Table::MenstrualCycle) => "menstrual_cycle",
        Dataset::Timeseries(_) => "timeseries",
    }
}

/// The tables a plan can scan and the user's settings.
#[derive(Clone)]
pub struct Catalog {
    sources: HashMap<Dataset, Arc<dyn TableSource>>,
    /// The same batches, for the operators that read a dataset without a scan (readiness).
    batches: HashMap<Dataset, Vec<RecordBatch>>,
    /// The user's settings.
    pub user: UserContext,
    /// Whether the compiler may plan the time-bucket operator (`bucket.rs`) for queries of its
    /// shape; on by default, off only to compare it with the general plan.
    pub bucket_operator: bool,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("datasets", &self.sources.keys().collect::<Vec<_>>())
            .field("user", &self.user)
            .finish()
    }
}

/// The batches of `d` with its storage schema, checked.
fn checked(d: Dataset, batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>, EngineError> {
    let schema = d.schema();
    for b in &batches {
        let same = |a: &datafusion::arrow::datatypes::Field,
                    b: &datafusion::arrow::datatypes::Field| {
            a.name() == b.name() && a.data_type() == b.data_type()
        };
        let bs = b.schema();
        if bs.fields().len() != schema.fields().len()
            || !bs
                .fields()
                .iter()
                .zip(schema.fields())
                .all(|(a, b)| same(a, b))
        {
            let (got, want) = (b.schema(), schema.clone());
            return Err(EngineError::Internal(format!(
                "batch for {} has schema {got:?}, expected {want:?}",
                d.path()
            )));
        }
    }
    batches
        .into_iter()
        .map(|b| b.with_schema(schema.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| EngineError::internal("input batch", e))
}

/// A table source over `batches` (checked) of `d`.
fn mem_source(d: Dataset, batches: Vec<RecordBatch>) -> Result<Arc<dyn TableSource>, EngineError> {
    let table = MemTable::try_new(d.schema(), vec![batches])
        .map_err(|e| EngineError::internal("input table", e))?;
    Ok(provider_as_source(Arc::new(table)))
}

impl Catalog {
    /// A catalog over the given batches (each with its dataset's storage schema).
    pub fn new(
        user: UserContext,
        inputs: HashMap<Dataset, Vec<RecordBatch>>,
    ) -> Result<Self, EngineError> {
        let batches = inputs
            .into_iter()
            .map(|(d, b)| Ok((d, checked(d, b)?)))
            .collect::<Result<HashMap<_, _>, EngineError>>()?;
        let sources = batches
            .iter()
            .map(|(d, b)| Ok((*d, mem_source(*d, b.clone())?)))
            .collect::<Result<_, EngineError>>()?;
        Ok(Catalog {
            sources,
            batches,
            user,
            bucket_operator: true,
        })
    }

    /// The source of a dataset; an empty one when the caller handed in no batches for it.
    pub fn source(&self, d: Dataset) -> Result<Arc<dyn TableSource>, EngineError> {
        match self.sources.get(&d) {
            Some(s) => Ok(s.clone()),
            None => mem_source(d, Vec::new()),
        }
    }

    /// The batches of a dataset as its source holds them (storage schema); none when the
    /// caller handed in none.
    pub fn batches(&self, d: Dataset) -> Vec<RecordBatch> {
        self.batches.get(&d).cloned().unwrap_or_default()
    }
}
