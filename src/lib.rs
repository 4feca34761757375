//! wearhouse: a health-data service. Teams create end users, connect them to wearable and app
//! providers, receive their normalised data and run aggregate queries over it.
//!
//! Crate map:
//! - [`schema`]: the normalised tables as Arrow schemas (the contract between the parts below);
//! - [`providers`]: the provider catalogue and default priorities.

pub mod providers;
pub mod schema;
