//! Area coverage: ZIP centroids ([`zips`]), patient service centres ([`pscs`]), phlebotomy
//! coverage, and the answers of `GET /v3/order/area/info` and `GET /v3/order/psc/info`.

pub mod import;
pub mod order_pscs;
pub mod pscs;
pub mod zips;

use std::collections::BTreeMap;

use super::LabError;
use super::catalogue::labs;
use super::model::area::{
    AreaInfo, PhlebotomyAreaInfo, PhlebotomyProviderInfo, PscAreaInfo, PscAreaInfoDetails, PscInfo,
    supported_bill_types,
};
use crate::loc;
use crate::validation::{Loc, Violation};
pub use pscs::PscIndex;

/// The radii area info accepts, in miles.
pub const RADII: [u32; 5] = [10, 20, 25, 50, 100];

/// The radius when none is given.
pub const DEFAULT_RADIUS: u32 = 25;

/// At most this many centres in a PSC list.
pub const MAX_PSCS: usize = 30;

/// The sandbox phlebotomy provider.
pub const PHLEBOTOMY_PROVIDER: &str = "sandbox_phlebotomy";

/// ZIP codes the sandbox phlebotomy provider serves by list (as the reference sandbox does).
pub const SERVED_ZIPS: [&str; 2] = ["85004", "54650"];

/// ...and by radius: (metro centre ZIP, miles).
pub const SERVED_METROS: [(&str, f64); 1] = [("85004", 10.0)];

/// A radius from its query text: one of [`RADII`], 422 otherwise.
pub fn parse_radius(raw: Option<&str>, loc: Vec<Loc>) -> Result<u32, LabError> {
    let Some(raw) = raw else {
        return Ok(DEFAULT_RADIUS);
    };
    match raw.parse::<u32>() {
        Ok(r) if RADII.contains(&r) => Ok(r),
        _ => Err(LabError::invalid(
            Violation::value(
                loc,
                format!("radius must be one of 10, 20, 25, 50, 100 (miles), got {raw:?}"),
            )
            .with_input(raw.into()),
        )),
    }
}

/// The ZIP code of a query or body: well formed (422 "malformed") and known (422 "unknown zip
/// code").
pub fn known_zip(
    raw: &str,
    loc: Vec<Loc>,
    exact_five: bool,
) -> Result<&'static zips::Zip, LabError> {
    let shaped = if exact_five {
        raw.len() == 5 && raw.bytes().all(|b| b.is_ascii_digit())
    } else {
        zips::is_well_formed(raw)
    };
    if !shaped {
        let rule = if exact_five {
            "exactly 5 digits"
        } else {
            "5 digits, optionally followed by '-' and 4 digits"
        };
        return Err(LabError::invalid(
            Violation::value(loc, format!("malformed zip code {raw:?}: expected {rule}"))
                .with_input(raw.into()),
        ));
    }
    zips::lookup(raw).ok_or_else(|| {
        LabError::invalid(
            Violation::value(loc, format!("unknown zip code {raw:?}")).with_input(raw.into()),
        )
    })
}

/// Whether the sandbox phlebotomy provider serves `zip`.
pub fn phlebotomy_serves(zip: &zips::Zip) -> bool {
    if SERVED_ZIPS.contains(&zip.code.as_str()) {
        return true;
    }
    SERVED_METROS.iter().any(|(centre, miles)| {
        zips::lookup(centre).is_some_and(|c| zips::haversine_miles(c.point, zip.point) <= *miles)
    })
}

/// Phlebotomy coverage of a ZIP code.
pub fn phlebotomy(zip: &zips::Zip) -> PhlebotomyAreaInfo {
    let served = phlebotomy_serves(zip);
    PhlebotomyAreaInfo {
        is_served: served,
        providers: if served {
            vec![PhlebotomyProviderInfo {
                name: PHLEBOTOMY_PROVIDER.to_owned(),
                tier: vec!["appointment-ready".to_owned()],
                service_types: vec!["appointment-ready".to_owned()],
            }]
        } else {
            Vec::new()
        },
    }
}

/// Lab slugs from `labs` (repeated) or the deprecated `lab`: each must be a known lab (422
/// naming the slug); none given means every lab.
pub fn lab_slugs(labs_param: &[&str], lab: Option<&str>) -> Result<Vec<String>, LabError> {
    let mut wanted: Vec<(Vec<Loc>, &str)> = labs_param
        .iter()
        .enumerate()
        .map(|(i, s)| (loc!["query", "labs", i], *s))
        .collect();
    if let Some(l) = lab {
        wanted.push((loc!["query", "lab"], l));
    }
    if wanted.is_empty() {
        return Ok(labs::labs().into_iter().map(|l| l.slug).collect());
    }
    let mut out = Vec::new();
    for (loc, slug) in wanted {
        if labs::lab_by_slug(slug).is_none() {
            return Err(LabError::invalid(
                Violation::value(
                    loc,
                    format!("unknown lab {slug:?}; expected one of: {}", labs::slugs()),
                )
                .with_input(slug.into()),
            ));
        }
        if !out.iter().any(|s| s == slug) {
            out.push(slug.to_owned());
        }
    }
    Ok(out)
}

/// `GET /v3/order/area/info` for a known ZIP code.
pub fn area_info(index: &PscIndex, zip: &zips::Zip, radius: u32, slugs: &[String]) -> AreaInfo {
    let mut central_labs = BTreeMap::new();
    for slug in slugs {
        let Some(lab) = labs::lab_by_slug(slug) else {
            continue;
        };
        let near = index.within(slug, zip.point, f64::from(radius));
        let mut capabilities: Vec<String> = Vec::new();
        for (_, p) in &near {
            for c in &p.capabilities {
                if !capabilities.contains(c) {
                    capabilities.push(c.clone());
                }
            }
        }
        capabilities.sort();
        central_labs.insert(
            slug.clone(),
            PscAreaInfo {
                patient_service_centers: PscAreaInfoDetails {
                    appointment_with_vital: !near.is_empty(),
                    within_radius: i64::try_from(near.len()).unwrap_or(i64::MAX),
                    radius: radius.to_string(),
                    capabilities,
                },
                supported_bill_types: supported_bill_types(),
                lab_id: lab.id,
            },
        );
    }
    AreaInfo {
        zip_code: zip.code.clone(),
        phlebotomy: phlebotomy(zip),
        central_labs,
    }
}

/// `GET /v3/order/psc/info`: the nearest centres of one lab within the radius.
pub fn psc_info(index: &PscIndex, zip: &zips::Zip, radius: u32, slug: &str) -> PscInfo {
    let lab_id = labs::lab_by_slug(slug).map_or(0, |l| l.id);
    let centres = index
        .within(slug, zip.point, f64::from(radius))
        .into_iter()
        .take(MAX_PSCS)
        .map(|(d, p)| pscs::render(p, d))
        .collect();
    PscInfo {
        lab_id,
        slug: slug.to_owned(),
        patient_service_centers: centres,
    }
}
