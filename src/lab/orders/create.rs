//! `POST /v3/order`: the request checked ([`super::validate`]) against the team's user and lab
//! tests, accepted by the lab, and written with its `labtest.order.created` event.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::super::LabError;
use super::super::catalogue::{self, labs};
use super::super::model::catalogue::{LabTest, LabTestSummary};
use super::super::model::enums::{ActivationType, LabTestStatus, Low, Method};
use super::super::model::order::{
    CreateOrder, Order, OrderDetails, OrderDetailsData, OrderEvent, OrderLabTest, OrderResponse,
    OrderTransaction, Shipment, TransactionOrder,
};
use super::super::sandbox::{LabProvider, SandboxLab};
use super::super::states;
use super::{order_event, to_row, validate};
use crate::events::{EventType, outbox};
use crate::store::metadata::MetadataStore;
use crate::store::metadata::lab::{lab_tests, orders as store, physicians};

fn sample_id() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..10)
        .map(|_| char::from(b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789"[rng.gen_range(0..32)]))
        .collect()
}

/// `POST /v3/order`.
pub async fn create(
    meta: &MetadataStore,
    team: Uuid,
    req: CreateOrder,
) -> Result<OrderResponse, LabError> {
    catalogue::ensure_sandbox_tests(meta, team).await?;
    let user = meta.user(team, req.user_id).await?.ok_or_else(|| {
        LabError::invalid(
            crate::validation::Violation::value(
                crate::loc!["body", "user_id"],
                "unknown user: no user of this team has this id",
            )
            .with_input(req.user_id.to_string().into()),
        )
    })?;
    let ids = validate::lab_test_ids(&req)?;
    let mut found = Vec::new();
    {
        let mut conn = meta.reader().await?;
        for (id, at) in ids {
            found.push((lab_tests::get(&mut conn, team, id).await?, at));
        }
    }
    let now = crate::store::metadata::now();
    let resolved = validate::check(&req, found, now.date_naive())?;
    if !SandboxLab.accepts(resolved.lab_id) {
        return Err(LabError::NotAllowed(format!(
            "lab {} does not accept orders",
            resolved.lab_id
        )));
    }
    let tests = resolved
        .tests
        .iter()
        .map(catalogue::render)
        .collect::<Result<Vec<_>, _>>()?;
    let order = new_order(team, &req, &resolved, &tests, now);
    let mut tx = meta.begin().await?;
    store::insert(&mut tx, &to_row(&order)).await?;
    if let Some(ph) = &order.physician {
        let row = physicians::PhysicianRow {
            first_name: ph.first_name.clone(),
            last_name: ph.last_name.clone(),
            npi: ph.npi.clone(),
        };
        physicians::note(&mut tx, team, &row, now).await?;
    }
    if order.activation_type == ActivationType::Scheduled
        && let Some(date) = order.activate_by
    {
        super::activation::enqueue(&mut tx, team, order.id, date).await?;
    }
    let created = order_event(EventType::OrderCreated, &user, &order);
    outbox::enqueue(&mut tx, team, &[created], now).await?;
    tx.commit().await?;
    // Deliveries and the activation job start at once in this process.
    meta.jobs_wake().notify_waiters();
    Ok(OrderResponse {
        order,
        status: "success".to_owned(),
        message: "Order submitted".to_owned(),
    })
}

/// The markers of a set of lab tests, each once, in the tests' order.
fn set_markers(tests: &[LabTest]) -> Vec<crate::lab::model::catalogue::Marker> {
    let mut seen = std::collections::HashSet::new();
    tests
        .iter()
        .flat_map(|t| t.markers.iter())
        .filter(|m| seen.insert(m.id))
        .cloned()
        .collect()
}

fn new_order(
    team: Uuid,
    req: &CreateOrder,
    resolved: &validate::Resolved,
    tests: &[LabTest],
    now: DateTime<Utc>,
) -> Order {
    let id = Uuid::new_v4();
    let method = resolved.method;
    let names: Vec<&str> = resolved.tests.iter().map(|t| t.name.as_str()).collect();
    let descriptions: Vec<&str> = resolved
        .tests
        .iter()
        .map(|t| t.description.as_str())
        .collect();
    let scheduled = req.activate_by.is_some_and(|d| d > now.date_naive());
    let mut address = req.patient_address.clone();
    if address.receiver_name.is_none() {
        address.receiver_name = Some(format!(
            "{} {}",
            req.patient_details.first_name, req.patient_details.last_name
        ));
    }
    let lab_name = labs::lab(resolved.lab_id)
        .map(|l| l.name)
        .unwrap_or_default();
    let mut order = Order {
        id,
        team_id: team,
        user_id: req.user_id,
        patient_details: req.patient_details.clone(),
        patient_address: address,
        lab_test: OrderLabTest {
            summary: LabTestSummary {
                id: tests.first().map(|t| t.summary.id).unwrap_or_default(),
                slug: tests
                    .first()
                    .map(|t| t.summary.slug.clone())
                    .unwrap_or_default(),
                name: names.join(" + "),
                description: descriptions.join(" "),
                sample_type: tests
                    .first()
                    .map(|t| t.summary.sample_type.clone())
                    .unwrap_or_default(),
                method,
                price: (tests.iter().map(|t| t.summary.price).sum::<f64>() * 100.0).round() / 100.0,
                is_active: tests.first().is_some_and(|t| t.summary.is_active),
                status: tests
                    .first()
                    .map_or(LabTestStatus::Active, |t| t.summary.status),
                fasting: tests.iter().any(|t| t.summary.fasting),
            },
            lab: tests.first().map(|t| t.lab.clone()),
            markers: Some(set_markers(tests)),
        },
        lab_test_ids: resolved.tests.iter().map(|t| t.id).collect(),
        add_on_marker_ids: resolved.add_on.clone(),
        lab_id: resolved.lab_id,
        details: OrderDetails {
            kind: method,
            data: OrderDetailsData {
                id: Uuid::new_v4(),
                shipment: (method == Method::Testkit).then(|| Shipment {
                    id: Uuid::new_v4(),
                    outbound_tracking_number: None,
                    outbound_tracking_url: None,
                    inbound_tracking_number: None,
                    inbound_tracking_url: None,
                    outbound_courier: None,
                    inbound_courier: None,
                    notes: None,
                    created_at: now,
                    updated_at: now,
                }),
                appointment_id: None,
                created_at: now,
                updated_at: now,
            },
        },
        sample_id: sample_id(),
        notes: format!("Ordered from {lab_name}"),
        created_at: now,
        updated_at: now,
        status: states::top(Low::Ordered),
        low_level_status: Low::Ordered,
        events: vec![OrderEvent {
            id: 1,
            created_at: now,
            status: states::status_string(method, Low::Ordered),
        }],
        last_event: None,
        priority: req.priority.unwrap_or(false),
        activate_by: req.activate_by,
        activation_type: if scheduled {
            ActivationType::Scheduled
        } else {
            ActivationType::Current
        },
        physician: req.physician.clone(),
        health_insurance: req.health_insurance.clone(),
        health_insurance_id: None,
        requisition_form_url: None,
        shipping_details: None,
        consents: req.consents.clone().unwrap_or_default(),
        interpretation: None,
        is_critical: false,
        has_abn: false,
        origin: "initial".to_owned(),
        order_transaction: OrderTransaction {
            id: Uuid::new_v4(),
            status: "active".to_owned(),
            orders: vec![TransactionOrder {
                id,
                created_at: now,
                updated_at: now,
                low_level_status: Low::Ordered,
                low_level_status_created_at: now,
                origin: "initial".to_owned(),
            }],
        },
    };
    order.note_last_event();
    order
}
