//! The marker catalogue built from [`super::marker_table`]: every lab offers every biomarker and
//! panel under its own id (`lab_id * 1000 + position`, so ids are unique across labs and stable)
//! and order code. Built once, on first use.

use std::sync::OnceLock;

use super::labs;
use super::marker_table::{BIOMARKERS, PANELS};
use crate::lab::model::catalogue::{ExpectedResult, Loinc, Marker};
use crate::lab::model::enums::MarkerType;

/// A biomarker's reference range and unit, for synthetic results.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// LOINC code.
    pub loinc: &'static str,
    /// Name.
    pub name: &'static str,
    /// Unit.
    pub unit: Option<&'static str>,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

struct Catalogue {
    markers: Vec<Marker>,
}

/// Lowercase words joined by `_`.
pub fn slugify(name: &str) -> String {
    let mut out = String::new();
    for word in name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push('_');
        }
        out.push_str(&word.to_ascii_lowercase());
    }
    out
}

fn loinc(code: &str, name: &str, unit: Option<&str>) -> Loinc {
    Loinc {
        id: code.replace('-', "").parse().unwrap_or(0),
        name: name.to_owned(),
        slug: slugify(name),
        code: code.to_owned(),
        unit: unit.map(str::to_owned),
    }
}

fn price(cents: u32) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

fn biomarker_position(code: &str) -> Option<usize> {
    BIOMARKERS.iter().position(|b| b.0 == code)
}

fn expected(lab_id: i64, position: usize) -> Option<ExpectedResult> {
    let (code, name, unit, ..) = *BIOMARKERS.get(position)?;
    Some(ExpectedResult {
        id: lab_id * 1000 + i64::try_from(position).ok()? + 1,
        name: name.to_owned(),
        slug: slugify(name),
        lab_id,
        provider_id: format!("{}-{}", lab_id, code.replace('-', "")),
        required: true,
        loinc: loinc(code, name, unit),
    })
}

fn build() -> Catalogue {
    let mut markers = Vec::new();
    for lab in labs::labs() {
        for (i, (code, name, unit, low, high, cents)) in BIOMARKERS.iter().enumerate() {
            let id = lab.id * 1000 + i64::try_from(i).unwrap_or(0) + 1;
            markers.push(Marker {
                id,
                name: (*name).to_owned(),
                slug: slugify(name),
                description: match unit {
                    Some(u) => format!("{name} (LOINC {code}); reference range {low}–{high} {u}"),
                    None => format!("{name} (LOINC {code}); qualitative"),
                },
                lab_id: lab.id,
                provider_id: format!("{}-{}", lab.id, code.replace('-', "")),
                kind: MarkerType::Biomarker,
                unit: unit.map(str::to_owned),
                price: price(*cents),
                expected_results: expected(lab.id, i).into_iter().collect(),
                loinc: loinc(code, name, *unit),
            });
        }
        for (j, (code, name, cents, parts)) in PANELS.iter().enumerate() {
            let position = BIOMARKERS.len() + j;
            markers.push(Marker {
                id: lab.id * 1000 + i64::try_from(position).unwrap_or(0) + 1,
                name: (*name).to_owned(),
                slug: slugify(name),
                description: format!("{name} (LOINC {code}): {} results", parts.len()),
                lab_id: lab.id,
                provider_id: format!("{}-{}", lab.id, code.replace('-', "")),
                kind: MarkerType::Panel,
                unit: None,
                price: price(*cents),
                expected_results: parts
                    .iter()
                    .filter_map(|p| biomarker_position(p).and_then(|i| expected(lab.id, i)))
                    .collect(),
                loinc: loinc(code, name, None),
            });
        }
    }
    Catalogue { markers }
}

fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(build)
}

/// Every marker of every lab, by id.
pub fn all() -> &'static [Marker] {
    &catalogue().markers
}

/// One marker.
pub fn marker(id: i64) -> Option<&'static Marker> {
    let markers = all();
    markers
        .binary_search_by_key(&id, |m| m.id)
        .ok()
        .and_then(|i| markers.get(i))
}

/// A marker of `lab_id` by the lab's order code.
pub fn by_provider_id(lab_id: i64, provider_id: &str) -> Option<&'static Marker> {
    all()
        .iter()
        .find(|m| m.lab_id == lab_id && m.provider_id == provider_id)
}

/// The reference range of a biomarker by LOINC code.
pub fn reference(code: &str) -> Option<Reference> {
    BIOMARKERS
        .iter()
        .find(|b| b.0 == code)
        .map(|&(loinc, name, unit, low, high, _)| Reference {
            loinc,
            name,
            unit,
            low,
            high,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// LOINC's mod-10 check digit of the code's digits.
    fn check_digit(digits: &str) -> u32 {
        let mut total = 0;
        for (i, d) in digits
            .chars()
            .rev()
            .filter_map(|c| c.to_digit(10))
            .enumerate()
        {
            total += if i % 2 == 0 {
                (d * 2) / 10 + (d * 2) % 10
            } else {
                d
            };
        }
        (10 - total % 10) % 10
    }

    #[test]
    fn every_loinc_code_has_a_valid_check_digit() {
        let codes = BIOMARKERS
            .iter()
            .map(|b| b.0)
            .chain(PANELS.iter().map(|p| p.0));
        for code in codes {
            let (digits, check) = code.split_once('-').unwrap();
            assert_eq!(check.parse::<u32>().unwrap(), check_digit(digits), "{code}");
        }
        assert_eq!(check_digit("2093"), 3);
    }

    #[test]
    fn catalogue_is_large_sorted_and_panels_resolve() {
        assert!(BIOMARKERS.len() + PANELS.len() >= 100);
        let m = all();
        assert!(m.windows(2).all(|w| w[0].id < w[1].id));
        for (code, _, _, parts) in PANELS {
            for p in *parts {
                assert!(biomarker_position(p).is_some(), "{code} names unknown {p}");
            }
        }
        let lipid = m
            .iter()
            .find(|m| m.lab_id == 1 && m.name == "Lipid Panel")
            .unwrap();
        assert_eq!(lipid.kind, MarkerType::Panel);
        assert_eq!(lipid.expected_results.len(), 6);
        assert_eq!(marker(1001).unwrap().loinc.code, "2093-3");
        assert_eq!(marker(1001).unwrap().price, "9.00");
    }
}
