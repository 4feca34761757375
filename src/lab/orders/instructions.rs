//! Collection instructions as PDFs (`GET /v3/lab_test/{lab_test_id}/collection_instruction_pdf`
//! and `GET /v3/order/{order_id}/collection_instruction_pdf`), written by [`super::pdf`]: how
//! the sample is collected for the test's method, whether to fast, where (the lab), and what
//! is measured. An order's adds the patient and the order's own tests and add-ons.
//!
//! The steps are this service's, per collection method (the sandbox labs publish none): kits
//! ship to the patient and are mailed back; walk-in tests take the requisition to one of the
//! lab's patient service centres; at-home draws happen at the booked appointment.

use super::super::catalogue::{labs, markers};
use super::super::model::order::Order;
use super::pdf::{self, Line};
use crate::store::metadata::lab::lab_tests::LabTestRow;

/// The steps of a collection method (wire name).
pub fn steps(method: &str) -> &'static [&'static str] {
    match method {
        "testkit" => &[
            "1. The kit is shipped to the patient's address; open it only when ready to collect.",
            "2. Collect the sample as the leaflet in the kit shows, and label it with the sample ID.",
            "3. Mail it back in the prepaid envelope on the day of collection (not on a Friday).",
        ],
        "walk_in_test" => &[
            "1. Find a patient service centre of the lab (GET /v3/order/{order_id}/psc/info).",
            "2. Book an appointment or walk in; bring photo ID and the printed requisition.",
            "3. The centre draws the sample and sends it to the lab the same day.",
        ],
        "at_home_phlebotomy" => &[
            "1. Book an appointment from the phlebotomy availability.",
            "2. Be at the order's address at the appointment; have photo ID ready.",
            "3. The phlebotomist draws the sample and takes it to the lab.",
        ],
        _ => &["1. The sample is collected at the customer's site and sent to the lab."],
    }
}

fn test_lines(out: &mut Vec<Line>, tests: &[&LabTestRow], add_ons: &[i64]) {
    let fasting = tests.iter().any(|t| t.fasting);
    out.push(Line::text(12.0, "Preparation"));
    out.push(Line::text(
        11.0,
        if fasting {
            "Fasting required: no food or drink but water for 8 to 12 hours before collection."
        } else {
            "No fasting required."
        },
    ));
    out.push(Line::blank(10.0));
    for t in tests {
        let lab = labs::lab(t.lab_id);
        out.push(Line::text(12.0, format!("{} ({})", t.name, t.method)));
        if let Some(l) = &lab {
            out.push(Line::text(
                11.0,
                format!(
                    "Laboratory: {}, {}, {}",
                    l.name, l.first_line_address, l.city
                ),
            ));
            out.push(Line::text(
                11.0,
                format!("Sample types: {}", l.sample_types.join(", ")),
            ));
        }
        for step in steps(&t.method) {
            out.push(Line::text(10.0, *step));
        }
        out.push(Line::text(11.0, "Measures:"));
        for id in &t.marker_ids {
            if let Some(m) = markers::marker(*id) {
                out.push(Line::text(
                    10.0,
                    format!("  {} ({})", m.name, m.provider_id),
                ));
            }
        }
        out.push(Line::blank(10.0));
    }
    if !add_ons.is_empty() {
        out.push(Line::text(11.0, "Add-on markers:"));
        for id in add_ons {
            if let Some(m) = markers::marker(*id) {
                out.push(Line::text(
                    10.0,
                    format!("  {} ({})", m.name, m.provider_id),
                ));
            }
        }
    }
}

/// The instructions of one lab test.
pub fn for_lab_test(test: &LabTestRow) -> Vec<u8> {
    let mut out = vec![
        Line::text(16.0, "Collection Instructions"),
        Line::blank(10.0),
        Line::text(11.0, format!("Lab test: {} ({})", test.name, test.id)),
        Line::blank(10.0),
    ];
    test_lines(&mut out, &[test], &[]);
    let id = test.id;
    pdf::render(
        &out,
        &|page, pages| format!("Page {page} of {pages} - lab test {id}"),
        &|_| {},
    )
}

/// The instructions of an order, with its lab tests.
pub fn for_order(order: &Order, tests: &[LabTestRow]) -> Vec<u8> {
    let p = &order.patient_details;
    let mut out = vec![
        Line::text(16.0, "Collection Instructions"),
        Line::blank(10.0),
        Line::text(11.0, format!("Order: {}", order.id)),
        Line::text(11.0, format!("Sample ID: {}", order.sample_id)),
        Line::text(11.0, format!("Patient: {} {}", p.first_name, p.last_name)),
        Line::text(
            11.0,
            format!("Collection method: {}", order.lab_test.summary.method),
        ),
        Line::blank(10.0),
    ];
    let refs: Vec<&LabTestRow> = tests.iter().collect();
    test_lines(&mut out, &refs, &order.add_on_marker_ids);
    let sample = order.sample_id.clone();
    pdf::render(
        &out,
        &|page, pages| format!("Page {page} of {pages} - sample {sample}"),
        &|_| {},
    )
}
