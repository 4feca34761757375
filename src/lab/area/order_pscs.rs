//! `GET /v3/order/{order_id}/psc/info`: the patient service centres of the order's lab nearest
//! the patient's address, within the radius (at most [`super::MAX_PSCS`]), optionally only
//! those offering every capability asked for.
//!
//! The order's ZIP code was checked when the order was made; one the centroid table does not
//! know (a ZIP+4 is read by its first five digits) has no centre near it, so the list is empty
//! rather than an error about a path the caller wrote correctly.

use super::super::LabError;
use super::super::catalogue::labs;
use super::super::model::area::PscInfo;
use super::super::model::order::Order;
use super::{MAX_PSCS, PscIndex, pscs, zips};
use crate::validation::{Loc, Violation};

/// The capabilities a centre can offer, as the reference names them.
pub const CAPABILITIES: [&str; 3] = [
    "stat",
    "appointment_scheduling_via_junction",
    "appointment_scheduling_with_lab",
];

/// The capabilities asked for: each one of [`CAPABILITIES`], else 422 at `loc` and its index.
pub fn parse_capabilities(raw: &[&str], loc: &[Loc]) -> Result<Vec<String>, LabError> {
    let mut violations = Vec::new();
    let mut out = Vec::new();
    for (i, c) in raw.iter().flat_map(|v| v.split(',')).enumerate() {
        if CAPABILITIES.contains(&c) {
            out.push(c.to_owned());
        } else {
            let mut at = loc.to_vec();
            at.push(Loc::from(i));
            violations.push(
                Violation::value(
                    at,
                    format!(
                        "unknown capability {c:?}; expected one of: {}",
                        CAPABILITIES.join(", ")
                    ),
                )
                .with_input(c.into()),
            );
        }
    }
    if violations.is_empty() {
        Ok(out)
    } else {
        Err(LabError::Invalid(crate::validation::Invalid(violations)))
    }
}

/// The centres for `order` (module docs).
pub fn order_psc_info(
    index: &PscIndex,
    order: &Order,
    radius: u32,
    capabilities: &[String],
) -> PscInfo {
    let slug = labs::lab(order.lab_id).map(|l| l.slug).unwrap_or_default();
    let zip: String = order.patient_address.zip.chars().take(5).collect();
    let centres = match zips::lookup(&zip) {
        None => Vec::new(),
        Some(zip) => index
            .within(&slug, zip.point, f64::from(radius))
            .into_iter()
            .filter(|(_, p)| capabilities.iter().all(|c| p.capabilities.contains(c)))
            .take(MAX_PSCS)
            .map(|(d, p)| pscs::render(p, d))
            .collect(),
    };
    PscInfo {
        lab_id: order.lab_id,
        slug,
        patient_service_centers: centres,
    }
}
