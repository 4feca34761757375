//! The laboratories wearhouse orders from (through the sandbox lab, see `lab.md`).

use crate::lab::model::catalogue::Lab;
use crate::lab::model::enums::Method;

/// (id, slug, name, street, city, ZIP, methods, sample types).
type LabRow = (
    i64,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [Method],
    &'static [&'static str],
);

const ALL_METHODS: &[Method] = &[
    Method::Testkit,
    Method::WalkIn,
    Method::Phlebotomy,
    Method::OnSite,
];

const LABS: &[LabRow] = &[
    (
        1,
        "quest",
        "Quest Diagnostics",
        "500 Plaza Drive",
        "Secaucus",
        "07094",
        &[Method::WalkIn, Method::Phlebotomy, Method::OnSite],
        &["serum", "urine", "arm_collector"],
    ),
    (
        2,
        "labcorp",
        "Labcorp",
        "531 South Spring Street",
        "Burlington",
        "27215",
        &[Method::WalkIn, Method::Phlebotomy, Method::OnSite],
        &["serum", "urine"],
    ),
    (
        3,
        "bioreference",
        "BioReference Laboratories",
        "481 Edward H Ross Drive",
        "Elmwood Park",
        "07407",
        ALL_METHODS,
        &["serum", "urine", "dried_blood_spot", "saliva", "stool"],
    ),
    (
        4,
        "sonora_quest",
        "Sonora Quest Laboratories",
        "1255 West Washington Street",
        "Tempe",
        "85281",
        &[Method::WalkIn, Method::Phlebotomy],
        &["serum", "urine"],
    ),
];

/// Every lab, by id.
pub fn labs() -> Vec<Lab> {
    LABS.iter().map(to_lab).collect()
}

fn to_lab(row: &LabRow) -> Lab {
    let (id, slug, name, street, city, zip, methods, samples) = *row;
    Lab {
        id,
        slug: slug.to_owned(),
        name: name.to_owned(),
        first_line_address: street.to_owned(),
        city: city.to_owned(),
        zipcode: zip.to_owned(),
        collection_methods: methods.to_vec(),
        sample_types: samples.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// The lab with this id.
pub fn lab(id: i64) -> Option<Lab> {
    LABS.iter().find(|r| r.0 == id).map(to_lab)
}

/// The lab with this slug.
pub fn lab_by_slug(slug: &str) -> Option<Lab> {
    LABS.iter().find(|r| r.1 == slug).map(to_lab)
}

/// Every lab's id.
pub fn ids() -> impl Iterator<Item = i64> {
    LABS.iter().map(|r| r.0)
}

/// Every lab's slug.
pub fn slug_list() -> impl Iterator<Item = &'static str> {
    LABS.iter().map(|r| r.1)
}

/// The slugs of every lab, for messages.
pub fn slugs() -> String {
    LABS.iter().map(|r| r.1).collect::<Vec<_>>().join(", ")
}
