//! Linking users to providers (`linking.md`): connections and their sealed credentials.
//!
//! This module owns the rules; `http::link` decodes and encodes around it. Credentials enter
//! only through the link flows and bulk import, are sealed with the deployment's
//! [`SecretKey`](crate::secret::SecretKey) before they reach the metadata store, and are never
//! logged or returned.

pub mod connections;
pub mod credentials;

use crate::secret::SecretError;
use crate::store::metadata::MetadataError;

/// Errors of the link domain.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The user has no connection to this provider.
    #[error("the user has no {0} connection")]
    ConnectionNotFound(String),
    /// Credentials could not be sealed or opened (no key, another key, a corrupt value).
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// The metadata store failed.
    #[error(transparent)]
    Metadata(#[from] MetadataError),
}
