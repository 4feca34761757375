//! wearhouse: a health-data service. Teams create end users, connect them to wearable and app
//! providers, receive their normalised data and run aggregate queries over it.
//!
//! Crate map:
//! - [`schema`]: the normalised tables as Arrow schemas (the contract between the parts below);
//! - [`providers`]: the provider catalogue and default priorities;
//! - [`validation`]: the shape of a rejected input, shared by every layer;
//! - [`store`]: health data (Parquet on an object store) and metadata (sqlx);
//! - [`ingest`]: push API records to Arrow batches and back, and the demo data generator;
//! - [`engine`]: the aggregate query language compiled to DataFusion plans.

pub mod engine;
pub mod ingest;
pub mod providers;
pub mod schema;
pub mod store;
pub mod validation;
