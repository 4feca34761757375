//! placeholder: metadata store
