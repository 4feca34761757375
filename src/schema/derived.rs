//! Derived tables: tables the aggregate engine computes at query time from a user's stored
//! data (`analytics.md` §2), never pushed and never stored. They have columns like the summary
//! tables of [`super::Table`] (the query language names them the same way, `{"derived_readiness":
//! "recovery_score"}`), but no folder, no record key and no ingest path: the engine's planner
//! builds their rows from the stored tables each time a query reads them.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::tables::{Column, Kind};
use super::{INGESTED_AT, utc_timestamp};

/// A derived table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Derived {
    /// Daily sleep, recovery, stress and strain scores (index `date`).
    Readiness,
}

const fn c(name: &'static str, kind: Kind) -> Column {
    Column { name, kind }
}

const READINESS: &[Column] = &[
    c("date", Kind::Date),
    c("chronotype", Kind::Str),
    c("sleep_score", Kind::Int),
    c("recovery_score", Kind::Int),
    c("recovery_zone", Kind::Str),
    c("stress_score", Kind::Int),
    c("strain_score", Kind::Float),
    c("strain_zone", Kind::Str),
];

impl Derived {
    /// Every derived table.
    pub const ALL: [Derived; 1] = [Derived::Readiness];

    /// The query-language name (`{"derived_readiness": C}`, `{"index": "derived_readiness"}`).
    pub fn name(self) -> &'static str {
        match self {
            Derived::Readiness => "derived_readiness",
        }
    }

    /// Looks a derived table up by its query-language name.
    pub fn from_name(name: &str) -> Option<Derived> {
        Derived::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The columns the query language may name.
    pub fn columns(self) -> &'static [Column] {
        match self {
            Derived::Readiness => READINESS,
        }
    }

    /// Looks a queryable column up by name.
    pub fn column(self, name: &str) -> Option<Column> {
        self.columns().iter().copied().find(|c| c.name == name)
    }

    /// The index column: a local calendar day.
    pub fn index_column(self) -> &'static str {
        "date"
    }

    /// The schema of the computed rows: the queryable columns, then the source of the night
    /// the day's scores come from (null on a day without one) and the newest ingestion time
    /// of the rows they were computed from.
    pub fn schema(self) -> SchemaRef {
        static SCHEMA: std::sync::OnceLock<SchemaRef> = std::sync::OnceLock::new();
        SCHEMA
            .get_or_init(|| {
                let mut fields: Vec<Field> = READINESS
                    .iter()
                    .map(|col| Field::new(col.name, col.kind.data_type(), col.name != "date"))
                    .collect();
                for name in super::SOURCE_COLUMNS {
                    fields.push(Field::new(name, DataType::Utf8, true));
                }
                fields.push(Field::new(INGESTED_AT, utc_timestamp(), true));
                Arc::new(Schema::new(fields))
            })
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_names_and_schema() {
        let d = Derived::from_name("derived_readiness");
        assert_eq!(d, Some(Derived::Readiness));
        let schema = Derived::Readiness.schema();
        assert_eq!(schema.field(0).name(), "date");
        assert_eq!(schema.field(0).data_type(), &DataType::Date32);
        assert!(schema.field_with_name("source_provider").is_ok());
        assert_eq!(
            Derived::Readiness.column("strain_score").map(|c| c.kind),
            Some(Kind::Float)
        );
        assert!(Derived::Readiness.column("score").is_none());
    }
}
