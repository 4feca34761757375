//! placeholder: filled by the engine work
