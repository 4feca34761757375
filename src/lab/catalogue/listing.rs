//! The marker lists: the catalogue by lab and name, a lab test's markers, an order set's
//! markers (lab tests and add-ons, each once), in the pages of the interface; and the
//! biomarkers an order reports (panels expanded).

use std::collections::HashSet;

use uuid::Uuid;

use super::super::LabError;
use super::super::model::catalogue::{Marker, MarkersPage, OrderSetMarkersRequest};
use super::super::model::enums::MarkerType;
use super::super::page::Page;
use super::{ensure_sandbox_tests, get_row, labs, markers, render};
use crate::loc;
use crate::store::metadata::MetadataStore;
use crate::store::metadata::lab::lab_tests as store;
use crate::validation::Violation;

/// One page of `markers`.
pub fn page_of(markers: Vec<Marker>, page: Page) -> MarkersPage {
    let total = i64::try_from(markers.len()).unwrap_or(i64::MAX);
    let skip = usize::try_from(page.offset()).unwrap_or(usize::MAX);
    let take = usize::try_from(page.size).unwrap_or(0);
    MarkersPage {
        markers: markers.into_iter().skip(skip).take(take).collect(),
        total,
        page: page.page,
        size: page.size,
        pages: page.pages(total),
    }
}

/// `GET /v3/lab_tests/markers`: the catalogue, optionally of one lab and by name.
pub fn list_markers(
    lab_id: Option<i64>,
    name: Option<&str>,
    page: Page,
) -> Result<MarkersPage, LabError> {
    if let Some(id) = lab_id
        && labs::lab(id).is_none()
    {
        return Err(LabError::invalid(
            Violation::value(loc!["query", "lab_id"], format!("unknown lab {id}"))
                .with_input(id.into()),
        ));
    }
    let needle = name.map(str::to_lowercase);
    let found = markers::all()
        .iter()
        .filter(|m| lab_id.is_none_or(|l| m.lab_id == l))
        .filter(|m| {
            needle
                .as_deref()
                .is_none_or(|n| m.name.to_lowercase().contains(n))
        })
        .cloned()
        .collect();
    Ok(page_of(found, page))
}

/// `GET /v3/lab_tests/{id}/markers`.
pub async fn lab_test_markers(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
    page: Page,
) -> Result<MarkersPage, LabError> {
    let row = get_row(meta, team, id).await?;
    Ok(page_of(render(&row)?.markers, page))
}

/// `POST /v3/lab_tests/list_order_set_markers`: the markers of the set's lab tests and
/// add-ons, each once, in order.
pub async fn order_set_markers(
    meta: &MetadataStore,
    team: Uuid,
    req: OrderSetMarkersRequest,
    page: Page,
) -> Result<MarkersPage, LabError> {
    ensure_sandbox_tests(meta, team).await?;
    let mut out: Vec<Marker> = Vec::new();
    let mut lab_ids = Vec::new();
    let mut conn = meta.reader().await?;
    for (i, id) in req.lab_test_ids.unwrap_or_default().into_iter().enumerate() {
        let row = store::get(&mut conn, team, id).await?.ok_or_else(|| {
            LabError::invalid(
                Violation::value(
                    loc!["body", "lab_test_ids", i],
                    format!("unknown lab test {id}"),
                )
                .with_input(id.to_string().into()),
            )
        })?;
        lab_ids.push(row.lab_id);
        out.extend(render(&row)?.markers);
    }
    let add_on = req.add_on.unwrap_or_default();
    for (i, id) in add_on
        .marker_ids
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let m = markers::marker(id).ok_or_else(|| {
            LabError::invalid(
                Violation::value(
                    loc!["body", "add_on", "marker_ids", i],
                    format!("unknown marker {id}"),
                )
                .with_input(id.into()),
            )
        })?;
        out.push(m.clone());
    }
    for (i, code) in add_on.provider_ids.unwrap_or_default().iter().enumerate() {
        let m = lab_ids
            .iter()
            .chain(labs::labs().iter().map(|l| &l.id))
            .find_map(|lab| markers::by_provider_id(*lab, code))
            .ok_or_else(|| {
                LabError::invalid(
                    Violation::value(
                        loc!["body", "add_on", "provider_ids", i],
                        format!("unknown marker provider id {code:?}"),
                    )
                    .with_input(code.as_str().into()),
                )
            })?;
        out.push(m.clone());
    }
    let mut seen = HashSet::new();
    out.retain(|m| seen.insert(m.id));
    Ok(page_of(out, page))
}

/// The biomarkers an order of these markers reports: each panel expanded to its biomarkers.
pub fn reported_biomarkers(marker_ids: &[i64]) -> Vec<&'static Marker> {
    let mut out: Vec<&'static Marker> = Vec::new();
    for id in marker_ids {
        let Some(m) = markers::marker(*id) else {
            continue;
        };
        match m.kind {
            MarkerType::Biomarker => out.push(m),
            MarkerType::Panel => out.extend(
                m.expected_results
                    .iter()
                    .filter_map(|r| markers::marker(r.id)),
            ),
        }
    }
    let mut seen = HashSet::new();
    out.retain(|m| seen.insert(m.id));
    out
}
