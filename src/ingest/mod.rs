//! placeholder: filled by the ingest work
