//! A dataset is what the store keeps in one folder per user: a summary table, or one timeseries
//! resource. It knows its schema, its time column and the key that makes a re-ingested record
//! replace the old one (`aggregate-dsl.md` §3.7).

use datafusion::arrow::datatypes::SchemaRef;

use super::{Resource, Table, resource, timeseries_schema};

/// A summary table or one timeseries resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dataset {
    /// A summary table.
    Table(Table),
    /// The samples of one timeseries resource.
    Timeseries(Resource),
}

impl Dataset {
    /// The folder name under the user's directory: `sleep`, ..., `timeseries/heartrate`.
    pub fn path(self) -> String {
        match self {
            Dataset::Table(t) => t.name().to_owned(),
            Dataset::Timeseries(r) => format!("timeseries/{}", r.name),
        }
    }

    /// The dataset of a [`Dataset::path`].
    pub fn from_path(path: &str) -> Option<Dataset> {
        match path.split_once('/') {
            None => Table::from_name(path).map(Dataset::Table),
            Some(("timeseries", name)) => resource(name).map(Dataset::Timeseries),
            Some(_) => None,
        }
    }

    /// The storage schema.
    pub fn schema(self) -> SchemaRef {
        match self {
            Dataset::Table(t) => t.schema(),
            Dataset::Timeseries(r) => timeseries_schema(r.family),
        }
    }

    /// The column segments are sorted and pruned by: the index column of a table (an instant,
    /// or a `Date32` day for activity and meal), the sample `timestamp` of a resource.
    pub fn time_column(self) -> &'static str {
        match self {
            Dataset::Table(t) => t.index_column(),
            Dataset::Timeseries(_) => "timestamp",
        }
    }

    /// The columns whose values identify a record: a newer record with the same key replaces
    /// the older one. Summaries are keyed by (provider, id) (ingest derives activity ids from
    /// provider, source type and date, and profile ids from the provider); samples by
    /// (provider, source type, timestamp) within their resource.
    pub fn key_columns(self) -> &'static [&'static str] {
        match self {
            Dataset::Table(_) => &["source_provider", "id"],
            Dataset::Timeseries(_) => &["source_provider", "source_type", "timestamp"],
        }
    }
}
