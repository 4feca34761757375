//! The catalogue: labs ([`labs`]), markers ([`markers`], data in [`marker_table`]) and a team's
//! lab tests, which bundle markers of one lab for one collection method. Every team starts
//! with four sandbox lab tests, one per method, created on the team's first lab request.

pub mod labs;
mod listing;
pub mod marker_table;
pub mod markers;

pub use listing::{
    lab_test_markers, list_markers, order_set_markers, page_of, reported_biomarkers,
};

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::LabError;
use super::model::catalogue::{
    CreateLabTest, LabTest, LabTestPage, LabTestSummary, Marker, PatchLabTest,
};
use super::model::enums::{LabTestStatus, Method};
use crate::loc;
use crate::store::metadata::MetadataStore;
use crate::store::metadata::lab::lab_tests::{self as store, LabTestRow};
use crate::validation::Violation;

/// The four sandbox tests: (method, lab slug, name, LOINC codes of their markers, fasting).
const SANDBOX_TESTS: [(Method, &str, &str, &[&str], bool); 4] = [
    (
        Method::Testkit,
        "bioreference",
        "Sandbox Lipid and HbA1c Test Kit",
        &["24331-1", "4548-4"],
        true,
    ),
    (
        Method::WalkIn,
        "quest",
        "Sandbox Metabolic and Blood Count Walk-in Test",
        &["24323-8", "57021-8"],
        true,
    ),
    (
        Method::Phlebotomy,
        "labcorp",
        "Sandbox Heart and Thyroid At-home Draw",
        &["24331-1", "62292-8", "3016-3"],
        true,
    ),
    (
        Method::OnSite,
        "quest",
        "Sandbox Wellness On-site Collection",
        &["4548-4", "30522-7", "2276-4"],
        false,
    ),
];

/// A marker of `lab_id` by LOINC code.
fn marker_by_loinc(lab_id: i64, code: &str) -> Option<&'static Marker> {
    markers::all()
        .iter()
        .find(|m| m.lab_id == lab_id && m.loinc.code == code)
}

/// Creates the team's sandbox lab tests unless it has them (once per team per process).
pub async fn ensure_sandbox_tests(meta: &MetadataStore, team: Uuid) -> Result<(), LabError> {
    static SEEDED: OnceLock<Mutex<HashSet<Uuid>>> = OnceLock::new();
    let seeded = SEEDED.get_or_init(Default::default);
    if seeded.lock().map(|s| s.contains(&team)).unwrap_or(false) {
        return Ok(());
    }
    let have = store::sandbox_count(&mut *meta.reader().await?, team).await?;
    if have < 4 {
        let mut tx = meta.begin().await?;
        let now = crate::store::metadata::now();
        for (method, slug, name, codes, fasting) in SANDBOX_TESTS {
            let Some(lab) = labs::lab_by_slug(slug) else {
                continue;
            };
            let marker_ids = codes
                .iter()
                .filter_map(|c| marker_by_loinc(lab.id, c).map(|m| m.id))
                .collect();
            let row = LabTestRow {
                id: Uuid::new_v4(),
                team_id: team,
                name: name.to_owned(),
                description: format!("Sandbox {} test: results are synthetic.", method),
                method: method.as_str().to_owned(),
                lab_id: lab.id,
                fasting,
                status: LabTestStatus::Active.as_str().to_owned(),
                marker_ids,
                sandbox_method: Some(method.as_str().to_owned()),
                created_at: now,
                updated_at: now,
            };
            store::insert(&mut tx, &row).await?;
        }
        tx.commit().await?;
    }
    if let Ok(mut s) = seeded.lock() {
        s.insert(team);
    }
    Ok(())
}

/// A stored lab test as the API shows it.
pub fn render(row: &LabTestRow) -> Result<LabTest, LabError> {
    let method: Method = row
        .method
        .parse()
        .map_err(|()| LabError::Corrupt(format!("lab test method {:?}", row.method)))?;
    let status: LabTestStatus = row
        .status
        .parse()
        .map_err(|()| LabError::Corrupt(format!("lab test status {:?}", row.status)))?;
    let lab =
        labs::lab(row.lab_id).ok_or_else(|| LabError::Corrupt(format!("lab {}", row.lab_id)))?;
    let markers: Vec<Marker> = row
        .marker_ids
        .iter()
        .filter_map(|id| markers::marker(*id).cloned())
        .collect();
    let cents: f64 = markers
        .iter()
        .filter_map(|m| m.price.parse::<f64>().ok())
        .sum();
    let summary = LabTestSummary {
        id: row.id,
        slug: markers::slugify(&row.name),
        name: row.name.clone(),
        description: row.description.clone(),
        sample_type: if method == Method::Testkit {
            "dried_blood_spot".to_owned()
        } else {
            "serum".to_owned()
        },
        method,
        price: (cents * 100.0).round() / 100.0,
        is_active: status == LabTestStatus::Active,
        status,
        fasting: row.fasting,
    };
    Ok(LabTest {
        summary,
        lab,
        markers,
        auto_generated: row.sandbox_method.is_some(),
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// The longest name and description of a lab test, in characters (each must also hold
/// something other than white space).
pub struct TextLimits {
    /// `name`.
    pub name: usize,
    /// `description`.
    pub description: usize,
}

/// The limits `POST /v3/lab_tests` and `PATCH /v3/lab_tests/{id}` check.
pub const TEXT_LIMITS: TextLimits = TextLimits {
    name: 200,
    description: 2000,
};

fn check_text(violations: &mut Vec<Violation>, field: &str, value: &str, max: usize) {
    let n = value.chars().count();
    if value.trim().is_empty() || n > max {
        violations.push(
            Violation::value(
                loc!["body", field],
                format!("{field} must be 1 to {max} characters, got {n}"),
            )
            .with_input(value.into()),
        );
    }
}

/// `POST /v3/lab_tests`.
pub async fn create(
    meta: &MetadataStore,
    team: Uuid,
    req: CreateLabTest,
) -> Result<LabTest, LabError> {
    let mut violations = Vec::new();
    check_text(&mut violations, "name", &req.name, TEXT_LIMITS.name);
    check_text(
        &mut violations,
        "description",
        &req.description,
        TEXT_LIMITS.description,
    );
    let lab = match &req.lab_slug {
        Some(slug) => match labs::lab_by_slug(slug) {
            Some(l) => Some(l),
            None => {
                violations.push(
                    Violation::value(
                        loc!["body", "lab_slug"],
                        format!("unknown lab {slug:?}; expected one of: {}", labs::slugs()),
                    )
                    .with_input(slug.as_str().into()),
                );
                None
            }
        },
        None => None,
    };
    if req.marker_ids.is_empty() {
        violations.push(Violation::value(
            loc!["body", "marker_ids"],
            "marker_ids must name at least one marker",
        ));
    }
    let mut lab_id = lab.as_ref().map(|l| l.id);
    for (i, id) in req.marker_ids.iter().enumerate() {
        match markers::marker(*id) {
            None => violations.push(
                Violation::value(
                    loc!["body", "marker_ids", i],
                    format!("unknown marker {id}"),
                )
                .with_input((*id).into()),
            ),
            Some(m) => match lab_id {
                Some(l) if l != m.lab_id => violations.push(
                    Violation::value(
                        loc!["body", "marker_ids", i],
                        format!("marker {id} belongs to lab {}, not lab {l}", m.lab_id),
                    )
                    .with_input((*id).into()),
                ),
                Some(_) => {}
                None => lab_id = Some(m.lab_id),
            },
        }
    }
    if let Some(l) = lab_id.and_then(labs::lab)
        && !l.collection_methods.contains(&req.method)
    {
        violations.push(Violation::value(
            loc!["body", "method"],
            format!("lab {} does not offer {}", l.slug, req.method),
        ));
    }
    if !violations.is_empty() {
        return Err(crate::validation::Invalid(violations).into());
    }
    let now = crate::store::metadata::now();
    let row = LabTestRow {
        id: Uuid::new_v4(),
        team_id: team,
        name: req.name.trim().to_owned(),
        description: req.description,
        method: req.method.as_str().to_owned(),
        lab_id: lab_id.unwrap_or(0),
        fasting: req.fasting.unwrap_or(false),
        status: LabTestStatus::Active.as_str().to_owned(),
        marker_ids: req.marker_ids,
        sandbox_method: None,
        created_at: now,
        updated_at: now,
    };
    store::insert(&mut *meta.writer().await?, &row).await?;
    render(&row)
}

/// The team's lab test (404 for an unknown id or another team's).
pub async fn get_row(meta: &MetadataStore, team: Uuid, id: Uuid) -> Result<LabTestRow, LabError> {
    ensure_sandbox_tests(meta, team).await?;
    store::get(&mut *meta.reader().await?, team, id)
        .await?
        .ok_or(LabError::NotFound("Lab test"))
}

/// `PATCH /v3/lab_tests/{id}`.
pub async fn patch(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
    req: PatchLabTest,
) -> Result<LabTest, LabError> {
    let mut row = get_row(meta, team, id).await?;
    let mut violations = Vec::new();
    if let Some(name) = &req.name {
        check_text(&mut violations, "name", name, TEXT_LIMITS.name);
        row.name = name.trim().to_owned();
    }
    if let Some(d) = &req.description {
        check_text(&mut violations, "description", d, TEXT_LIMITS.description);
        row.description = d.clone();
    }
    if !violations.is_empty() {
        return Err(crate::validation::Invalid(violations).into());
    }
    if let Some(s) = req.status {
        row.status = s.as_str().to_owned();
    }
    row.updated_at = crate::store::metadata::now();
    store::update(&mut *meta.writer().await?, &row).await?;
    render(&row)
}

/// `GET /v3/lab_test`: cursor pages, oldest first; the cursor is the last test's id.
pub async fn list_page(
    meta: &MetadataStore,
    team: Uuid,
    limit: i64,
    cursor: Option<Uuid>,
) -> Result<LabTestPage, LabError> {
    ensure_sandbox_tests(meta, team).await?;
    let mut conn = meta.reader().await?;
    let after: Option<(DateTime<Utc>, Uuid)> = match cursor {
        None => None,
        Some(id) => {
            let row = store::get(&mut conn, team, id).await?.ok_or_else(|| {
                LabError::invalid(
                    Violation::value(loc!["query", "next_cursor"], "unknown cursor")
                        .with_input(id.to_string().into()),
                )
            })?;
            Some((row.created_at, row.id))
        }
    };
    let mut rows = store::list(&mut conn, team, after, Some(limit + 1)).await?;
    let more = rows.len() > usize::try_from(limit).unwrap_or(usize::MAX);
    rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next_cursor = if more {
        rows.last().map(|r| r.id.to_string())
    } else {
        None
    };
    Ok(LabTestPage {
        data: rows.iter().map(render).collect::<Result<_, _>>()?,
        next_cursor,
    })
}

/// `GET /v3/lab_tests` (deprecated): every lab test of the team.
pub async fn list_all(meta: &MetadataStore, team: Uuid) -> Result<Vec<LabTest>, LabError> {
    ensure_sandbox_tests(meta, team).await?;
    let rows = store::list(&mut *meta.reader().await?, team, None, None).await?;
    rows.iter().map(render).collect()
}
