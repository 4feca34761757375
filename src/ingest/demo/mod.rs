//! Demo data (placeholder while the generator is written).
