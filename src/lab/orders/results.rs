//! Results: the sandbox lab's synthetic values, filled when an order reaches `partial_results`
//! (the first half of its biomarkers) or `completed` (all), and `GET /v3/order/{id}/result`.
//!
//! Values are deterministic per (sample id, LOINC code): most fall inside the reference range;
//! one in 17 lies above it (abnormal) and one in 97 far above it (critical), so tests and demos
//! meet every interpretation.

use chrono::{DateTime, Datelike, Utc};
use sha2::{Digest, Sha256};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::super::LabError;
use super::super::catalogue::{self, labs, markers};
use super::super::model::enums::{Interpretation, Low};
use super::super::model::order::{BiomarkerResult, Order, OrderResults, ResultsMetadata};
use crate::store::metadata::MetadataStore;
use crate::store::metadata::lab::{lab_tests, orders as store};

fn draw(sample: &str, loinc: &str) -> u64 {
    let digest = Sha256::digest(format!("{sample}/{loinc}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(bytes)
}

fn one(
    sample: &str,
    m: &markers::Reference,
    provider_id: &str,
    at: DateTime<Utc>,
) -> BiomarkerResult {
    let h = draw(sample, m.loinc);
    let qualitative = m.unit.is_none() && m.low == 0.0 && m.high == 0.0;
    let (result, kind, value) = if qualitative {
        ("Negative".to_owned(), "comment", None)
    } else {
        let span = m.high - m.low;
        let f = (h % 1000) as f64 / 1000.0;
        let v = if h.is_multiple_of(97) {
            m.high * 3.0 + 1.0
        } else if h.is_multiple_of(17) {
            m.high + span * 0.2 + 0.1
        } else {
            m.low + span * (0.1 + 0.8 * f)
        };
        let v = (v * 100.0).round() / 100.0;
        (format!("{v}"), "numeric", Some(v))
    };
    let above = value.is_some_and(|v| v > m.high);
    let below = value.is_some_and(|v| v < m.low);
    let interpretation = match value {
        Some(v) if v > m.high * 2.5 => Interpretation::Critical,
        _ if above || below => Interpretation::Abnormal,
        _ => Interpretation::Normal,
    };
    BiomarkerResult {
        name: m.name.to_owned(),
        slug: markers::slugify(m.name),
        result,
        result_type: kind.to_owned(),
        unit: m.unit.map(str::to_owned),
        timestamp: at,
        notes: None,
        reference_range: (!qualitative).then(|| format!("{}-{}", m.low, m.high)),
        min_range_value: (!qualitative).then_some(m.low),
        max_range_value: (!qualitative).then_some(m.high),
        is_above_max_range: above,
        is_below_min_range: below,
        interpretation,
        loinc: m.loinc.to_owned(),
        loinc_slug: markers::slugify(m.name),
        provider_id: provider_id.to_owned(),
    }
}

/// The worst interpretation of a set.
pub fn overall(results: &[BiomarkerResult]) -> Interpretation {
    if results
        .iter()
        .any(|r| r.interpretation == Interpretation::Critical)
    {
        Interpretation::Critical
    } else if results
        .iter()
        .any(|r| r.interpretation == Interpretation::Abnormal)
    {
        Interpretation::Abnormal
    } else {
        Interpretation::Normal
    }
}

/// The synthetic results of `order` in its current state (none before results).
pub async fn compute(
    conn: &mut AnyConnection,
    order: &Order,
    now: DateTime<Utc>,
) -> Result<OrderResults, LabError> {
    let partial = match order.low_level_status {
        Low::PartialResults => true,
        Low::Completed | Low::Corrected => false,
        _ => {
            return Ok(OrderResults {
                metadata: None,
                results: Vec::new(),
            });
        }
    };
    let mut marker_ids = Vec::new();
    for id in &order.lab_test_ids {
        if let Some(t) = lab_tests::get(&mut *conn, order.team_id, *id).await? {
            marker_ids.extend(t.marker_ids);
        }
    }
    marker_ids.extend(order.add_on_marker_ids.iter().copied());
    let biomarkers = catalogue::reported_biomarkers(&marker_ids);
    let keep = if partial {
        biomarkers.len().div_ceil(2)
    } else {
        biomarkers.len()
    };
    let results: Vec<BiomarkerResult> = biomarkers
        .iter()
        .take(keep)
        .filter_map(|m| {
            markers::reference(&m.loinc.code)
                .map(|r| one(&order.sample_id, &r, &m.provider_id, now))
        })
        .collect();
    let dob = order.patient_details.dob;
    let today = now.date_naive();
    let mut age = today.year() - dob.year();
    if (today.month(), today.day()) < (dob.month(), dob.day()) {
        age -= 1;
    }
    Ok(OrderResults {
        metadata: Some(ResultsMetadata {
            age: age.to_string(),
            dob: dob.to_string(),
            patient: format!(
                "{} {}",
                order.patient_details.first_name, order.patient_details.last_name
            ),
            laboratory: labs::lab(order.lab_id).map(|l| l.name).unwrap_or_default(),
            date_reported: today.to_string(),
            date_collected: Some(today.to_string()),
            specimen_number: order.sample_id.clone(),
            status: if partial { "partial" } else { "final" }.to_owned(),
            interpretation: overall(&results),
        }),
        results,
    })
}

/// Stores results.
pub async fn save(
    conn: &mut AnyConnection,
    order: &Order,
    results: &OrderResults,
) -> Result<(), LabError> {
    let json = serde_json::to_string(results).unwrap_or_default();
    store::set_results(conn, order.team_id, order.id, &json).await?;
    Ok(())
}

/// `GET /v3/order/{id}/result`: empty before the order has results.
pub async fn get(meta: &MetadataStore, team: Uuid, id: Uuid) -> Result<OrderResults, LabError> {
    let mut conn = meta.reader().await?;
    super::load(&mut conn, team, id).await?;
    match store::results(&mut conn, team, id).await? {
        None => Ok(OrderResults {
            metadata: None,
            results: Vec::new(),
        }),
        Some(json) => {
            serde_json::from_str(&json).map_err(|e| LabError::Corrupt(format!("results: {e}")))
        }
    }
}

/// The order with its stored results; before it has any (`partial_results`), refused (400)
/// naming its status: the metadata and the report exist only once a result does.
pub async fn reported(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
) -> Result<(Order, OrderResults), LabError> {
    let mut conn = meta.reader().await?;
    let order = super::load(&mut conn, team, id).await?;
    let results = match store::results(&mut conn, team, id).await? {
        Some(json) => serde_json::from_str::<OrderResults>(&json)
            .map_err(|e| LabError::Corrupt(format!("results: {e}")))?,
        None => OrderResults {
            metadata: None,
            results: Vec::new(),
        },
    };
    if results.metadata.is_none() {
        return Err(LabError::NotAllowed(format!(
            "Order {id} has no results yet (status {}); results exist from partial_results on",
            super::super::states::status_string(
                order.lab_test.summary.method,
                order.low_level_status
            )
        )));
    }
    Ok((order, results))
}
