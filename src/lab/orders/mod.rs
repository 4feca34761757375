//! Orders: create (with [`validate`] and [`idempotency`]), get, cancel, activation date (and
//! [`activation`] on that date), the sandbox walk along legal transitions, results
//! ([`results`]), the requisition PDF ([`requisition`]) and the list ([`list`]). Every status
//! change appends an order event, updates `updated_at` and emits `labtest.order.updated` in the
//! same transaction.

pub mod activation;
mod create;
pub mod idempotency;
pub mod instructions;
pub mod list;
pub mod pdf;
pub mod requisition;
pub mod result_pdf;
pub mod results;
pub mod transactions;
pub mod validate;

pub use create::create;

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;
use uuid::Uuid;

use super::LabError;
use super::model::enums::{ActivationType, Interpretation, Low};
use super::model::order::{Order, OrderEvent, PatchOrder};
use super::states;
use crate::events::{Event, EventType, EventUser, outbox};
use crate::store::metadata::lab::{lab_tests, orders as store};
use crate::store::metadata::{MetadataStore, User};

/// `data` of `labtest.result.critical`.
#[derive(Debug, Clone, serde::Serialize)]
struct CriticalResult {
    order_id: Uuid,
    sample_id: String,
    interpretation: Interpretation,
}

/// The row of an order (its document and the list's columns).
pub fn to_row(o: &Order) -> store::OrderRow {
    let patient = format!(
        "{} {}",
        o.patient_details.first_name, o.patient_details.last_name
    )
    .to_lowercase();
    let recipient = o
        .patient_address
        .receiver_name
        .clone()
        .unwrap_or_default()
        .to_lowercase();
    store::OrderRow {
        id: o.id,
        team_id: o.team_id,
        user_id: o.user_id,
        method: o.lab_test.summary.method.as_str().to_owned(),
        status: o.low_level_status.as_str().to_owned(),
        search_text: format!("{patient}|{recipient}|{}", o.patient_details.dob),
        patient_name: patient,
        recipient_name: recipient,
        activation_type: o.activation_type.as_str().to_owned(),
        interpretation: o.interpretation.map(|i| i.as_str().to_owned()),
        is_critical: o.is_critical,
        transaction_id: o.order_transaction.id,
        document: serde_json::to_string(o).unwrap_or_default(),
        created_at: o.created_at,
        updated_at: o.updated_at,
    }
}

/// Decodes a stored document.
pub fn from_document(doc: &str) -> Result<Order, LabError> {
    let mut order: Order =
        serde_json::from_str(doc).map_err(|e| LabError::Corrupt(format!("order document: {e}")))?;
    // Documents written before `last_event` existed lack it.
    order.note_last_event();
    Ok(order)
}

/// The event of an order change.
pub fn order_event(kind: EventType, user: &User, order: &Order) -> Event {
    Event::new(kind, Some(EventUser::of(user)), order)
}

/// Moves `order` along `steps` (each must be legal from the one before), recording an event per
/// step; the caller writes the order and the returned events.
pub fn apply_steps(
    order: &mut Order,
    steps: &[Low],
    now: DateTime<Utc>,
) -> Result<usize, LabError> {
    let method = order.lab_test.summary.method;
    for &to in steps {
        let from = order.low_level_status;
        if !states::can_move(method, from, to) {
            return Err(LabError::NotAllowed(format!(
                "an order of method {method} cannot move from {from} to {to}"
            )));
        }
        let id = i64::try_from(order.events.len()).unwrap_or(i64::MAX) + 1;
        order.events.push(OrderEvent {
            id,
            created_at: now,
            status: states::status_string(method, to),
        });
        order.note_last_event();
        order.low_level_status = to;
        order.status = states::top(to);
        order.updated_at = now;
        for t in &mut order.order_transaction.orders {
            if t.id == order.id {
                t.low_level_status = to;
                t.low_level_status_created_at = now;
                t.updated_at = now;
            }
        }
    }
    Ok(steps.len())
}

/// The order as it stood `back` steps before its last event: events, statuses and the
/// transaction's entry rewound (results and other fields as they are now).
fn snapshot(order: &Order, back: usize) -> Order {
    let mut at = order.clone();
    if back == 0 {
        return at;
    }
    at.events.truncate(at.events.len().saturating_sub(back));
    at.note_last_event();
    let low = at
        .events
        .last()
        .and_then(|e| e.status.rsplit('.').next())
        .and_then(|l| l.parse::<Low>().ok())
        .unwrap_or(at.low_level_status);
    at.low_level_status = low;
    at.status = states::top(low);
    for t in &mut at.order_transaction.orders {
        if t.id == at.id {
            t.low_level_status = low;
        }
    }
    at
}

/// Writes a changed order and one `labtest.order.updated` per step, in `conn`'s transaction.
pub async fn save_changed(
    conn: &mut AnyConnection,
    user: &User,
    order: &Order,
    steps: usize,
    now: DateTime<Utc>,
) -> Result<usize, LabError> {
    store::update(&mut *conn, &to_row(order)).await?;
    // One event per step, each carrying the order as it stood after that step (the outbox
    // keeps their order); a change without a step is one event of the order as it is.
    let events: Vec<Event> = (1..=steps.max(1))
        .map(|k| {
            let at = snapshot(order, steps.max(1) - k);
            order_event(EventType::OrderUpdated, user, &at)
        })
        .collect();
    Ok(outbox::enqueue(conn, order.team_id, &events, now)
        .await?
        .deliveries)
}

/// The team's order (404 for an unknown id or another team's).
pub async fn get(meta: &MetadataStore, team: Uuid, id: Uuid) -> Result<Order, LabError> {
    load(&mut *meta.reader().await?, team, id).await
}

/// [`get`] on a connection (a transaction's, to change it).
pub async fn load(conn: &mut AnyConnection, team: Uuid, id: Uuid) -> Result<Order, LabError> {
    let doc = store::document(conn, team, id)
        .await?
        .ok_or(LabError::NotFound("Order"))?;
    from_document(&doc)
}

/// The order and its lab tests (for the requisition).
pub async fn with_tests(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
) -> Result<(Order, Vec<lab_tests::LabTestRow>), LabError> {
    let mut conn = meta.reader().await?;
    let order = load(&mut conn, team, id).await?;
    let mut tests = Vec::new();
    for t in &order.lab_test_ids {
        if let Some(row) = lab_tests::get(&mut conn, team, *t).await? {
            tests.push(row);
        }
    }
    Ok((order, tests))
}

/// The order's user (it exists: users are removed with their orders' team data).
async fn owner(meta: &MetadataStore, order: &Order) -> Result<User, LabError> {
    meta.user(order.team_id, order.user_id)
        .await?
        .ok_or(LabError::NotFound("User"))
}

/// Runs `change` on the team's order inside a transaction, then writes it and its events.
/// `change` answers how many status steps it made (0: a change without a status step, still
/// one `labtest.order.updated`).
pub async fn modify<F>(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
    change: F,
) -> Result<Order, LabError>
where
    F: FnOnce(&mut Order, DateTime<Utc>) -> Result<usize, LabError>,
{
    let existing = get(meta, team, id).await?;
    let user = owner(meta, &existing).await?;
    let mut tx = meta.begin().await?;
    let mut order = load(&mut tx, team, id).await?;
    let now = crate::store::metadata::now();
    let before = order.low_level_status;
    let steps = change(&mut order, now)?;
    order.updated_at = now;
    let mut filled = None;
    if order.low_level_status != before
        && matches!(order.low_level_status, Low::PartialResults | Low::Completed)
    {
        let r = results::compute(&mut tx, &order, now).await?;
        order.interpretation = r.metadata.as_ref().map(|m| m.interpretation);
        order.is_critical = order.interpretation == Some(Interpretation::Critical);
        filled = Some(r);
    }
    let mut deliveries = save_changed(&mut tx, &user, &order, steps, now).await?;
    if let Some(r) = &filled {
        results::save(&mut tx, &order, r).await?;
        if order.is_critical {
            let data = CriticalResult {
                order_id: order.id,
                sample_id: order.sample_id.clone(),
                interpretation: Interpretation::Critical,
            };
            let critical = Event::new(EventType::ResultCritical, Some(EventUser::of(&user)), &data);
            deliveries += outbox::enqueue(&mut tx, team, &[critical], now)
                .await?
                .deliveries;
        }
    }
    tx.commit().await?;
    if deliveries > 0 {
        meta.jobs_wake().notify_waiters();
    }
    Ok(order)
}

/// `POST /v3/order/{id}/cancel`: only from a cancellable state (400 naming the state).
pub async fn cancel(meta: &MetadataStore, team: Uuid, id: Uuid) -> Result<Order, LabError> {
    modify(meta, team, id, |order, now| {
        let (method, state) = (order.lab_test.summary.method, order.low_level_status);
        if !states::cancellable(method, state) {
            return Err(LabError::NotAllowed(format!(
                "an order in state {state} cannot be cancelled"
            )));
        }
        apply_steps(order, &[Low::Cancelled], now)
    })
    .await
}

/// `PATCH /v3/order/{id}`: a scheduled order's activation date (today or later; today
/// activates it).
pub async fn patch(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
    req: PatchOrder,
) -> Result<Order, LabError> {
    let order = modify(meta, team, id, |order, now| {
        if order.activation_type != ActivationType::Scheduled {
            return Err(LabError::NotAllowed(
                "only a scheduled order's activate_by can change; this order is current".into(),
            ));
        }
        if req.activate_by < now.date_naive() {
            return Err(LabError::invalid(
                crate::validation::Violation::value(
                    crate::loc!["body", "activate_by"],
                    "activate_by must be today or a later date",
                )
                .with_input(req.activate_by.to_string().into()),
            ));
        }
        order.activate_by = Some(req.activate_by);
        if req.activate_by <= now.date_naive() {
            order.activation_type = ActivationType::Current;
        }
        Ok(0)
    })
    .await?;
    if order.activation_type == ActivationType::Scheduled {
        activation::enqueue_now(meta, team, id, req.activate_by).await?;
    }
    Ok(order)
}

/// `POST /v3/order/{id}/test?final_status=`: walks the order along the shortest legal path to
/// `target`, one event per step (400 when `target` cannot be reached from the current state).
pub async fn walk(
    meta: &MetadataStore,
    team: Uuid,
    id: Uuid,
    target: Low,
) -> Result<Order, LabError> {
    modify(meta, team, id, |order, now| {
        let (method, from) = (order.lab_test.summary.method, order.low_level_status);
        let path = states::path(method, from, target).ok_or_else(|| {
            LabError::NotAllowed(format!(
                "no legal path for a {method} order from {from} to {target}"
            ))
        })?;
        if path.is_empty() {
            return Err(LabError::NotAllowed(format!(
                "the order is already {target}"
            )));
        }
        apply_steps(order, &path, now)
    })
    .await
}
