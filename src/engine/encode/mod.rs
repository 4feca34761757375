//! Result encoders: column-major JSON (§4.2) and a gzipped tar of Parquet files (§4.3). Both
//! are CPU-bound; callers on an async runtime run them in `spawn_blocking`.

pub mod json;
pub mod parquet_tar;
