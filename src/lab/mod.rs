//! Laboratory testing (`spec/lab.md`): the marker catalogue and labs, a team's lab tests, area
//! coverage on real ZIP centroids, orders and their per-method state machine, results and the
//! requisition PDF, and phlebotomy / patient service centre appointments.
//!
//! - [`model`]: the wire types (serde + utoipa), request and answer alike;
//! - [`catalogue`]: labs, markers (LOINC), the team's lab tests (four sandbox tests per team);
//! - [`area`]: ZIP centroids, haversine, patient service centres, phlebotomy coverage;
//! - [`states`]: the transition table per collection method;
//! - [`orders`]: create (validation, idempotency), get, list, cancel, activation, test walks,
//!   results, requisition;
//! - [`appointments`]: availability, booking (sync and async, the wait a durable job),
//!   reschedule, cancel;
//! - [`sandbox`]: the third parties (labs, phlebotomy providers) behind traits, with the sandbox
//!   implementations this build runs.
//!
//! Every change of an order or appointment is written with its event (`labtest.order.*`,
//! `labtest.appointment.*`) in one transaction through [`crate::events::outbox`].

pub mod appointments;
pub mod area;
pub mod catalogue;
pub mod model;
pub mod orders;
pub mod page;
pub mod sandbox;
pub mod states;

use std::sync::{Arc, RwLock};

use crate::store::metadata::{MetadataError, MetadataStore};
use crate::validation::{Invalid, Violation};

/// Errors of the lab domain; the HTTP layer maps each to its status in one `match`.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// Validation failures (422).
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// An unknown id, or another team's (404); names the resource.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// Well formed but not allowed in the current state (400).
    #[error("{0}")]
    NotAllowed(String),
    /// A concurrent duplicate (409).
    #[error("{0}")]
    Conflict(String),
    /// The provider failed to confirm a synchronous booking: the interface's one 500, whose
    /// `detail` names the failure.
    #[error("{0}")]
    ProviderFailed(String),
    /// The metadata store failed.
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    /// A stored document did not decode (a bug or a hand-edited database).
    #[error("corrupt stored lab document: {0}")]
    Corrupt(String),
}

impl LabError {
    /// A single violation.
    pub fn invalid(v: Violation) -> Self {
        LabError::Invalid(Invalid(vec![v]))
    }
}

impl From<sqlx::Error> for LabError {
    fn from(e: sqlx::Error) -> Self {
        LabError::Metadata(MetadataError::Database(e))
    }
}

/// The lab domain's shared state: the patient service centre index (sandbox networks plus
/// imported centres). Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Lab {
    pscs: Arc<RwLock<Option<Arc<area::PscIndex>>>>,
}

impl Lab {
    /// The index of centres (built from the sandbox networks on first use).
    pub fn pscs(&self) -> Arc<area::PscIndex> {
        if let Ok(guard) = self.pscs.read()
            && let Some(index) = guard.as_ref()
        {
            return index.clone();
        }
        let index = Arc::new(area::PscIndex::build(Vec::new()));
        if let Ok(mut guard) = self.pscs.write() {
            return guard.get_or_insert(index).clone();
        }
        index
    }

    /// Rebuilds the index with the centres imported into `meta` (start-up).
    pub async fn load_pscs(&self, meta: &MetadataStore) -> Result<(), LabError> {
        let imported = crate::store::metadata::lab::pscs::all(&mut *meta.reader().await?).await?;
        let index = Arc::new(area::PscIndex::build(imported));
        if let Ok(mut guard) = self.pscs.write() {
            *guard = Some(index);
        }
        Ok(())
    }
}
