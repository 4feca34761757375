//! The results report (`GET /v3/order/{id}/result/pdf`): the order, patient, lab and report
//! metadata, then a table of every biomarker result (marker, result, unit, reference range,
//! interpretation), written by [`super::pdf`]. Results outside the range are flagged `H`/`L`
//! next to their value, as lab reports print them.

use super::super::model::order::{Order, OrderResults};
use super::pdf::{self, LEFT, Line, clip};

/// The table's column positions: marker, result, unit, reference range, interpretation.
const COLUMNS: [f32; 5] = [LEFT, 270.0, 340.0, 410.0, 500.0];

/// The table's header cells.
pub const HEADER: [&str; 5] = [
    "Marker",
    "Result",
    "Unit",
    "Reference range",
    "Interpretation",
];

fn lines(order: &Order, results: &OrderResults) -> Vec<Line> {
    let mut out = vec![
        Line::text(16.0, "Laboratory Results"),
        Line::blank(10.0),
        Line::text(11.0, format!("Order: {}", order.id)),
        Line::text(11.0, format!("Sample ID: {}", order.sample_id)),
    ];
    if let Some(m) = &results.metadata {
        out.extend([
            Line::text(11.0, format!("Patient: {}", m.patient)),
            Line::text(11.0, format!("Date of birth: {}   Age: {}", m.dob, m.age)),
            Line::text(11.0, format!("Laboratory: {}", m.laboratory)),
            Line::text(
                11.0,
                format!(
                    "Collected: {}   Reported: {}",
                    m.date_collected.as_deref().unwrap_or("-"),
                    m.date_reported
                ),
            ),
            Line::text(
                11.0,
                format!(
                    "Report status: {}   Overall interpretation: {}",
                    m.status,
                    m.interpretation.as_str()
                ),
            ),
        ]);
    }
    if let Some(ph) = &order.physician {
        out.push(Line::text(
            11.0,
            format!(
                "Ordering physician: {} {} (NPI {})",
                ph.first_name, ph.last_name, ph.npi
            ),
        ));
    }
    out.push(Line::blank(10.0));
    out.push(Line::row(
        10.0,
        &COLUMNS,
        HEADER.iter().map(|h| (*h).to_owned()).collect(),
    ));
    for r in &results.results {
        let flag = if r.is_above_max_range {
            " H"
        } else if r.is_below_min_range {
            " L"
        } else {
            ""
        };
        out.push(Line::row(
            9.0,
            &COLUMNS,
            vec![
                clip(&r.name, 42),
                clip(&format!("{}{flag}", r.result), 12),
                clip(r.unit.as_deref().unwrap_or(""), 12),
                clip(r.reference_range.as_deref().unwrap_or(""), 16),
                r.interpretation.as_str().to_owned(),
            ],
        ));
    }
    out
}

/// The results report of `order`.
pub fn render(order: &Order, results: &OrderResults) -> Vec<u8> {
    let sample = order.sample_id.clone();
    pdf::render(
        &lines(order, results),
        &|page, pages| format!("Page {page} of {pages} - results of sample {sample}"),
        &|_| {},
    )
}
