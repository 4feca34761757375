//! The rules of `POST /v3/order` beyond its types: patient and address fields, the lab tests
//! (they exist, are active, share one method and lab), add-on markers, activation date, and
//! phlebotomy coverage of the address. Every problem is collected, so a client sees all its
//! mistakes in one 422.

use chrono::NaiveDate;

use super::super::area::{self, zips};
use super::super::catalogue::markers;
use super::super::model::enums::{LabTestStatus, Method};
use super::super::model::order::CreateOrder;
use crate::loc;
use crate::store::metadata::lab::lab_tests::LabTestRow;
use crate::users::info::{is_valid_email, is_valid_name, is_valid_phone};
use crate::validation::{Invalid, Violation};

/// What a valid request resolves to.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The lab tests, in request order.
    pub tests: Vec<LabTestRow>,
    /// Their common method.
    pub method: Method,
    /// Their common lab.
    pub lab_id: i64,
    /// Add-on marker ids.
    pub add_on: Vec<i64>,
    /// The address's ZIP code.
    pub zip: &'static zips::Zip,
}

fn fail(v: &mut Vec<Violation>, loc: Vec<crate::validation::Loc>, msg: String, input: &str) {
    v.push(Violation::value(loc, msg).with_input(input.into()));
}

/// The lab test ids of the request (`order_set.lab_test_ids` or the deprecated `lab_test_id`),
/// with the location of each.
pub fn lab_test_ids(
    req: &CreateOrder,
) -> Result<Vec<(uuid::Uuid, Vec<crate::validation::Loc>)>, Invalid> {
    match (&req.order_set, req.lab_test_id) {
        (Some(_), Some(_)) => Err(Violation::value(
            loc!["body", "lab_test_id"],
            "give either order_set or the deprecated lab_test_id, not both",
        )
        .into()),
        (None, None) => Err(Violation::new(
            loc!["body", "order_set"],
            "missing",
            "order_set (or the deprecated lab_test_id) is required",
        )
        .into()),
        (None, Some(id)) => Ok(vec![(id, loc!["body", "lab_test_id"])]),
        (Some(set), None) if set.lab_test_ids.is_empty() => Err(Violation::value(
            loc!["body", "order_set", "lab_test_ids"],
            "lab_test_ids must name at least one lab test",
        )
        .into()),
        (Some(set), None) => Ok(set
            .lab_test_ids
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, loc!["body", "order_set", "lab_test_ids", i]))
            .collect()),
    }
}

/// Checks `req` with its lab tests already looked up (`None`: not the team's).
pub fn check(
    req: &CreateOrder,
    tests: Vec<(Option<LabTestRow>, Vec<crate::validation::Loc>)>,
    today: NaiveDate,
) -> Result<Resolved, Invalid> {
    let mut v = Vec::new();
    let p = &req.patient_details;
    for (field, value) in [("first_name", &p.first_name), ("last_name", &p.last_name)] {
        if !is_valid_name(value) {
            fail(
                &mut v,
                loc!["body", "patient_details", field],
                format!("{field} must be 1 to 50 letters, spaces, hyphens, apostrophes or periods"),
                value,
            );
        }
    }
    if !is_valid_email(&p.email) {
        fail(
            &mut v,
            loc!["body", "patient_details", "email"],
            "not a valid e-mail address".into(),
            &p.email,
        );
    }
    if !is_valid_phone(&p.phone_number) {
        fail(
            &mut v,
            loc!["body", "patient_details", "phone_number"],
            "not a valid phone number (7 to 15 digits, optional leading +)".into(),
            &p.phone_number,
        );
    }
    if p.dob >= today {
        fail(
            &mut v,
            loc!["body", "patient_details", "dob"],
            "dob must be a date in the past".into(),
            &p.dob.to_string(),
        );
    }
    let a = &req.patient_address;
    for (field, value) in [("first_line", &a.first_line), ("city", &a.city)] {
        if value.trim().is_empty() || value.chars().count() > 200 {
            fail(
                &mut v,
                loc!["body", "patient_address", field],
                format!("{field} must be 1 to 200 characters"),
                value,
            );
        }
    }
    if let Some(r) = &a.receiver_name
        && (r.trim().is_empty() || r.chars().count() > 100)
    {
        fail(
            &mut v,
            loc!["body", "patient_address", "receiver_name"],
            "receiver_name must be 1 to 100 characters".into(),
            r,
        );
    }
    if a.state.len() != 2 || !a.state.bytes().all(|b| b.is_ascii_uppercase()) {
        fail(
            &mut v,
            loc!["body", "patient_address", "state"],
            "state must be two capital letters".into(),
            &a.state,
        );
    }
    if a.country != "US" {
        fail(
            &mut v,
            loc!["body", "patient_address", "country"],
            "country must be \"US\": labs serve US addresses only".into(),
            &a.country,
        );
    }
    let zip = match area::known_zip(&a.zip, loc!["body", "patient_address", "zip"], false) {
        Ok(z) => {
            if z.state != a.state && a.state.len() == 2 {
                fail(
                    &mut v,
                    loc!["body", "patient_address", "zip"],
                    format!("zip code {} is in {}, not {}", z.code, z.state, a.state),
                    &a.zip,
                );
            }
            Some(z)
        }
        Err(super::super::LabError::Invalid(Invalid(mut e))) => {
            v.append(&mut e);
            None
        }
        Err(_) => None,
    };
    if let Some(phy) = &req.physician
        && (phy.npi.len() != 10 || !phy.npi.bytes().all(|b| b.is_ascii_digit()))
    {
        fail(
            &mut v,
            loc!["body", "physician", "npi"],
            "npi must be 10 digits".into(),
            &phy.npi,
        );
    }
    if let Some(date) = req.activate_by
        && date < today
    {
        fail(
            &mut v,
            loc!["body", "activate_by"],
            "activate_by must be today or a later date".into(),
            &date.to_string(),
        );
    }
    let mut method: Option<Method> = None;
    let mut lab_id: Option<i64> = None;
    let mut found = Vec::new();
    for (row, at) in tests {
        let Some(row) = row else {
            v.push(Violation::value(at, "unknown lab test"));
            continue;
        };
        if row.status != LabTestStatus::Active.as_str() {
            v.push(Violation::value(
                at.clone(),
                format!("lab test {} is {}, not active", row.id, row.status),
            ));
        }
        let m: Option<Method> = row.method.parse().ok();
        match (method, m) {
            (Some(first), Some(m)) if first != m => v.push(Violation::value(
                at.clone(),
                format!("lab tests must share one collection method: {first} and {m}"),
            )),
            (None, m) => method = m,
            _ => {}
        }
        match lab_id {
            Some(l) if l != row.lab_id => v.push(Violation::value(
                at.clone(),
                format!(
                    "lab tests must be of one lab: lab {l} and lab {}",
                    row.lab_id
                ),
            )),
            None => lab_id = Some(row.lab_id),
            _ => {}
        }
        found.push(row);
    }
    if let (Some(asked), Some(m)) = (req.collection_method, method)
        && asked != m
    {
        v.push(Violation::value(
            loc!["body", "collection_method"],
            format!("collection_method {asked} differs from the lab tests' method {m}"),
        ));
    }
    let mut add_on = Vec::new();
    let add = req
        .order_set
        .as_ref()
        .and_then(|s| s.add_on.clone())
        .unwrap_or_default();
    for (i, id) in add.marker_ids.unwrap_or_default().into_iter().enumerate() {
        match markers::marker(id) {
            Some(m) if lab_id.is_none_or(|l| l == m.lab_id) => add_on.push(id),
            Some(m) => v.push(Violation::value(
                loc!["body", "order_set", "add_on", "marker_ids", i],
                format!(
                    "marker {id} belongs to lab {}, not the lab tests' lab",
                    m.lab_id
                ),
            )),
            None => v.push(Violation::value(
                loc!["body", "order_set", "add_on", "marker_ids", i],
                format!("unknown marker {id}"),
            )),
        }
    }
    if method == Some(Method::Phlebotomy)
        && let Some(z) = zip
        && !area::phlebotomy_serves(z)
    {
        fail(
            &mut v,
            loc!["body", "patient_address", "zip"],
            format!("zip code {} is not served by at-home phlebotomy", z.code),
            &a.zip,
        );
    }
    match (v.is_empty(), method, lab_id, zip) {
        (true, Some(method), Some(lab_id), Some(zip)) => Ok(Resolved {
            tests: found,
            method,
            lab_id,
            add_on,
            zip,
        }),
        _ if v.is_empty() => {
            Err(Violation::value(loc!["body"], "the order names no usable lab test").into())
        }
        _ => Err(Invalid(v)),
    }
}
