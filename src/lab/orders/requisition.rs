//! The requisition PDF (`GET /v3/order/{id}/requisition/pdf`), written with `pdf-writer`:
//! patient, order, lab, physician, tests and their markers with LOINC codes, and the sample id
//! as text and as a barcode-like bar pattern (pages written by [`super::pdf`]).

use pdf_writer::Content;

use super::super::catalogue::{labs, markers};
use super::super::model::order::Order;
use super::pdf::{self, Line, PAGE_H};
use crate::store::metadata::lab::lab_tests::LabTestRow;

/// The text lines of the requisition.
fn lines(order: &Order, tests: &[LabTestRow]) -> Vec<(f32, String)> {
    let p = &order.patient_details;
    let a = &order.patient_address;
    let lab = labs::lab(order.lab_id);
    let mut out = vec![
        (16.0, "Laboratory Requisition".to_owned()),
        (10.0, String::new()),
        (11.0, format!("Order: {}", order.id)),
        (11.0, format!("Sample ID: {}", order.sample_id)),
        (
            11.0,
            format!("Created: {}", order.created_at.format("%Y-%m-%d %H:%M UTC")),
        ),
        (
            11.0,
            format!("Collection method: {}", order.lab_test.summary.method),
        ),
        (
            11.0,
            format!("Priority: {}", if order.priority { "yes" } else { "no" }),
        ),
        (10.0, String::new()),
        (12.0, "Patient".to_owned()),
        (11.0, format!("Name: {} {}", p.first_name, p.last_name)),
        (
            11.0,
            format!("Date of birth: {}   Gender: {}", p.dob, p.gender),
        ),
        (
            11.0,
            format!("Phone: {}   E-mail: {}", p.phone_number, p.email),
        ),
        (
            11.0,
            format!(
                "Address: {}{}, {}, {} {}",
                a.first_line,
                a.second_line
                    .as_deref()
                    .map(|s| format!(", {s}"))
                    .unwrap_or_default(),
                a.city,
                a.state,
                a.zip
            ),
        ),
        (10.0, String::new()),
        (12.0, "Laboratory".to_owned()),
    ];
    if let Some(l) = lab {
        out.push((
            11.0,
            format!(
                "{}, {}, {} {}",
                l.name, l.first_line_address, l.city, l.zipcode
            ),
        ));
    }
    if let Some(ph) = &order.physician {
        out.push((
            11.0,
            format!(
                "Ordering physician: {} {} (NPI {})",
                ph.first_name, ph.last_name, ph.npi
            ),
        ));
    }
    out.push((10.0, String::new()));
    out.push((12.0, "Tests".to_owned()));
    let mut ids: Vec<i64> = Vec::new();
    for t in tests {
        out.push((11.0, format!("{} ({})", t.name, t.method)));
        ids.extend(t.marker_ids.iter().copied());
    }
    ids.extend(order.add_on_marker_ids.iter().copied());
    out.push((10.0, String::new()));
    out.push((12.0, "Markers".to_owned()));
    for id in ids {
        if let Some(m) = markers::marker(id) {
            out.push((
                10.0,
                format!("{}  {}  LOINC {}", m.provider_id, m.name, m.loinc.code),
            ));
        }
    }
    out
}

/// Bars for the sample id: each character's bits as thin and wide bars, framed by guards.
fn barcode(content: &mut Content, sample: &str, x: f32, y: f32) {
    let mut at = x;
    let mut bar = |content: &mut Content, w: f32| {
        content.rect(at, y, w, 36.0);
        at += w + 1.5;
    };
    bar(content, 1.0);
    bar(content, 1.0);
    for b in sample.bytes() {
        for bit in 0..6 {
            bar(content, if (b >> bit) & 1 == 1 { 2.5 } else { 1.0 });
        }
    }
    bar(content, 1.0);
    bar(content, 1.0);
    content.fill_nonzero();
}

/// The requisition of `order` with its lab tests.
pub fn render(order: &Order, tests: &[LabTestRow]) -> Vec<u8> {
    let all: Vec<Line> = lines(order, tests)
        .into_iter()
        .map(|(size, text)| Line::text(size, text))
        .collect();
    let sample = order.sample_id.clone();
    pdf::render(
        &all,
        &|page, pages| format!("Page {page} of {pages} - sample {sample}"),
        &|content| barcode(content, &order.sample_id, 360.0, PAGE_H - 110.0),
    )
}
