//! placeholder: health-data store
