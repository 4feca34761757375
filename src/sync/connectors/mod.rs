//! Provider connectors, one folder per provider (issue 37): its access (OAuth specifics), its
//! pull and its normalisers, behind [`crate::sync::Connector`].

pub mod google_health;
