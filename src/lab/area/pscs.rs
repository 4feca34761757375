//! Patient service centres: each lab's sandbox network (deterministic, at real ZIP centroids)
//! or the centres a deployment imported (`wearhouse lab import-pscs`), held in memory as one
//! list per lab, and the radius queries over them.
//!
//! Sandbox network: a lab has a centre at every ZIP code whose number leaves the lab's residue
//! modulo its spacing (quest 0 mod 12, labcorp 5 mod 12, bioreference 7 mod 40, sonora_quest 1
//! mod 3 within Arizona), so the network is spread like the population of ZIP codes and is the
//! same on every machine. A centre offers `stat` when its ZIP number is divisible by 3.

use std::collections::HashMap;

use super::zips::{self, haversine_miles};
use crate::lab::catalogue::labs;
use crate::lab::model::area::{LabLocation, LabLocationMetadata, LngLat};
use crate::store::metadata::lab::pscs::PscRecord;

/// One centre.
#[derive(Debug, Clone, PartialEq)]
pub struct Psc {
    /// The lab's slug.
    pub lab_slug: String,
    /// The lab's code for it.
    pub site_code: String,
    /// Name.
    pub name: String,
    /// Street address.
    pub first_line: String,
    /// City.
    pub city: String,
    /// State.
    pub state: String,
    /// ZIP code.
    pub zip_code: String,
    /// Point.
    pub location: LngLat,
    /// Phone.
    pub phone_number: Option<String>,
    /// Capabilities (`stat`, ...).
    pub capabilities: Vec<String>,
}

/// Every lab's centres.
#[derive(Debug, Clone, Default)]
pub struct PscIndex {
    by_lab: HashMap<String, Vec<Psc>>,
}

fn sandbox_rule(slug: &str) -> Option<(u32, u32, Option<&'static str>)> {
    match slug {
        "quest" => Some((12, 0, None)),
        "labcorp" => Some((12, 5, None)),
        "bioreference" => Some((40, 7, None)),
        "sonora_quest" => Some((3, 1, Some("AZ"))),
        _ => None,
    }
}

/// The sandbox network of one lab.
pub fn sandbox_network(slug: &str) -> Vec<Psc> {
    let Some(lab) = labs::lab_by_slug(slug) else {
        return Vec::new();
    };
    let Some((spacing, residue, state)) = sandbox_rule(slug) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for z in zips::all() {
        let Ok(n) = z.code.parse::<u32>() else {
            continue;
        };
        if n % spacing != residue || state.is_some_and(|s| s != z.state) {
            continue;
        }
        let mut capabilities = vec!["appointment_scheduling_with_lab".to_owned()];
        if n % 3 == 0 {
            capabilities.insert(0, "stat".to_owned());
        }
        out.push(Psc {
            lab_slug: slug.to_owned(),
            site_code: format!("{}-{}", slug.to_ascii_uppercase(), z.code),
            name: format!("{} - {}", lab.name, z.city),
            first_line: format!("{} Main Street", 100 + n % 900),
            city: z.city.clone(),
            state: z.state.clone(),
            zip_code: z.code.clone(),
            location: z.point,
            phone_number: Some(format!("+1555{:07}", n)),
            capabilities,
        });
    }
    out
}

impl From<PscRecord> for Psc {
    fn from(r: PscRecord) -> Psc {
        Psc {
            lab_slug: r.lab_slug,
            site_code: r.site_code,
            name: r.name,
            first_line: r.first_line,
            city: r.city,
            state: r.state,
            zip_code: r.zip_code,
            location: LngLat {
                lng: r.lng,
                lat: r.lat,
            },
            phone_number: r.phone_number,
            capabilities: r.capabilities,
        }
    }
}

impl PscIndex {
    /// Every lab's sandbox network, replaced per lab by `imported` centres where a lab has any.
    pub fn build(imported: Vec<PscRecord>) -> PscIndex {
        let mut by_lab: HashMap<String, Vec<Psc>> = HashMap::new();
        for psc in imported.into_iter().map(Psc::from) {
            by_lab.entry(psc.lab_slug.clone()).or_default().push(psc);
        }
        for lab in labs::labs() {
            by_lab
                .entry(lab.slug.clone())
                .or_insert_with(|| sandbox_network(&lab.slug));
        }
        PscIndex { by_lab }
    }

    /// The centres of `slug` within `radius` miles of `from`, nearest first, with distances.
    pub fn within(&self, slug: &str, from: LngLat, radius: f64) -> Vec<(f64, &Psc)> {
        let Some(all) = self.by_lab.get(slug) else {
            return Vec::new();
        };
        // A degree of latitude is ~69 miles: a cheap box before the trigonometry.
        let lat_span = radius / 69.0 + 0.01;
        let mut out: Vec<(f64, &Psc)> = all
            .iter()
            .filter(|p| (p.location.lat - from.lat).abs() <= lat_span)
            .map(|p| (haversine_miles(from, p.location), p))
            .filter(|(d, _)| *d <= radius)
            .collect();
        out.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then_with(|| a.1.site_code.cmp(&b.1.site_code))
        });
        out
    }

    /// A centre by site code.
    pub fn site(&self, slug: &str, site_code: &str) -> Option<&Psc> {
        self.by_lab
            .get(slug)?
            .iter()
            .find(|p| p.site_code == site_code)
    }
}

/// A centre as the API shows it, `distance` miles away.
pub fn render(psc: &Psc, distance: f64) -> LabLocation {
    LabLocation {
        metadata: LabLocationMetadata {
            name: psc.name.clone(),
            state: psc.state.clone(),
            city: psc.city.clone(),
            zip_code: psc.zip_code.clone(),
            first_line: psc.first_line.clone(),
            second_line: None,
            phone_number: psc.phone_number.clone(),
        },
        distance: distance.round() as i64,
        site_code: psc.site_code.clone(),
        location: psc.location,
        capabilities: psc.capabilities.clone(),
        supported_bill_types: crate::lab::model::area::supported_bill_types(),
    }
}
