//! Storage: health data as Parquet segments on an object store ([`health`]), and metadata
//! (teams, keys, users, links) in a relational database through sqlx ([`metadata`]).

pub mod health;
pub mod metadata;
