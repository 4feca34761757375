//! The order state machine: one explicit transition table per collection method, the top-level
//! status of each low-level one, the cancellable states, and the shortest legal path between
//! two states (what `POST /v3/order/{id}/test` walks and what booking an appointment walks).
//!
//! | method | happy path |
//! |---|---|
//! | testkit | ordered → requisition_created → transit_customer → out_for_delivery → with_customer → transit_lab → delivered_to_lab → completed |
//! | walk_in_test | ordered → requisition_created → appointment_pending → appointment_scheduled → partial_results → completed |
//! | at_home_phlebotomy | ordered → requisition_created → appointment_pending → appointment_scheduled → draw_completed → partial_results → completed |
//! | on_site_collection | ordered → requisition_created → draw_completed → partial_results → completed |
//!
//! Failures and cancellations branch off as the tables below list (rendered as Markdown in
//! `assets/lab/order_states.md`, kept equal to the code by a test); `cancelled`, `failure_*`,
//! `lost`, `do_not_process`, `sample_error` and `completed` are final except that a completed
//! order can be `corrected`.

use std::collections::VecDeque;

use super::model::enums::{Low, Method, Top};
use Low::*;

/// Rows of a table: each state with the states it may move to.
type Rows = &'static [(Low, &'static [Low])];

/// One method's table, as the segments it is made of (several methods share some).
type Segments = &'static [Rows];

/// Every method starts here: an order is registered, then its requisition is made or bypassed.
const REGISTRATION: Rows = &[
    (
        Ordered,
        &[
            RequisitionCreated,
            RequisitionBypassed,
            AwaitingRegistration,
            Cancelled,
            DoNotProcess,
        ],
    ),
    (AwaitingRegistration, &[Registered, Cancelled]),
    (Registered, &[RequisitionCreated]),
];

/// The methods with an appointment book one after the requisition.
const BOOKING: Rows = &[
    (
        RequisitionCreated,
        &[
            AppointmentPending,
            AppointmentScheduled,
            Cancelled,
            DoNotProcess,
        ],
    ),
    (
        RequisitionBypassed,
        &[AppointmentPending, AppointmentScheduled, Cancelled],
    ),
    (
        AppointmentPending,
        &[AppointmentScheduled, AppointmentCancelled, Cancelled],
    ),
];

/// A cancelled appointment can be booked again.
const REBOOKING: Rows = &[(
    AppointmentCancelled,
    &[AppointmentPending, AppointmentScheduled, Cancelled],
)];

/// A sample on its way to the lab.
const TO_LAB: Rows = &[
    (TransitLab, &[DeliveredToLab, ProblemInTransitLab, Lost]),
    (
        ProblemInTransitLab,
        &[DeliveredToLab, FailureToDeliverToLab, Lost],
    ),
];

/// The methods with an appointment can draw again after a sample error.
const REDRAW: Rows = &[
    (SampleError, &[RedrawAvailable]),
    (RedrawAvailable, &[AppointmentPending, AppointmentScheduled]),
    (Completed, &[Corrected]),
];

const TESTKIT: Segments = &[
    REGISTRATION,
    &[
        (
            RequisitionCreated,
            &[TransitCustomer, Cancelled, DoNotProcess],
        ),
        (RequisitionBypassed, &[TransitCustomer, Cancelled]),
        (
            TransitCustomer,
            &[
                OutForDelivery,
                ProblemInTransitCustomer,
                FailureToDeliverToCustomer,
            ],
        ),
        (
            ProblemInTransitCustomer,
            &[OutForDelivery, FailureToDeliverToCustomer],
        ),
        (OutForDelivery, &[WithCustomer, FailureToDeliverToCustomer]),
        (WithCustomer, &[TransitLab]),
        (
            TransitLab,
            &[
                DeliveredToLab,
                ProblemInTransitLab,
                FailureToDeliverToLab,
                Lost,
            ],
        ),
        (
            ProblemInTransitLab,
            &[DeliveredToLab, FailureToDeliverToLab, Lost],
        ),
        (
            DeliveredToLab,
            &[PartialResults, Completed, SampleError, LabProcessingBlocked],
        ),
        (
            LabProcessingBlocked,
            &[PartialResults, Completed, SampleError],
        ),
        (PartialResults, &[Completed]),
        (Completed, &[Corrected]),
    ],
];

const WALK_IN: Segments = &[
    REGISTRATION,
    BOOKING,
    &[(
        AppointmentScheduled,
        &[
            PartialResults,
            Completed,
            AppointmentCancelled,
            SampleError,
            Cancelled,
        ],
    )],
    REBOOKING,
    &[(PartialResults, &[Completed, SampleError])],
    REDRAW,
];

const PHLEBOTOMY: Segments = &[
    REGISTRATION,
    BOOKING,
    &[(
        AppointmentScheduled,
        &[DrawCompleted, AppointmentCancelled, Cancelled],
    )],
    REBOOKING,
    &[(
        DrawCompleted,
        &[
            TransitLab,
            DeliveredToLab,
            PartialResults,
            Completed,
            Cancelled,
        ],
    )],
    TO_LAB,
    &[
        (DeliveredToLab, &[PartialResults, Completed, SampleError]),
        (PartialResults, &[Completed, SampleError]),
    ],
    REDRAW,
];

const ON_SITE: Segments = &[
    REGISTRATION,
    &[
        (
            RequisitionCreated,
            &[DrawCompleted, Cancelled, DoNotProcess],
        ),
        (RequisitionBypassed, &[DrawCompleted, Cancelled]),
        (
            DrawCompleted,
            &[TransitLab, DeliveredToLab, PartialResults, Completed],
        ),
    ],
    TO_LAB,
    &[
        (DeliveredToLab, &[PartialResults, Completed, SampleError]),
        (PartialResults, &[Completed, SampleError]),
        (Completed, &[Corrected]),
    ],
];

/// The transition table of a method: each state with the states it may move to, in the
/// tables' order (the happy path first).
pub fn table(method: Method) -> impl Iterator<Item = &'static (Low, &'static [Low])> + Clone {
    let segments = match method {
        Method::Testkit => TESTKIT,
        Method::WalkIn => WALK_IN,
        Method::Phlebotomy => PHLEBOTOMY,
        Method::OnSite => ON_SITE,
    };
    segments.iter().flat_map(|rows| rows.iter())
}

/// The states `from` may move to under `method` (empty for a final state).
pub fn next(method: Method, from: Low) -> &'static [Low] {
    table(method)
        .find(|(s, _)| *s == from)
        .map_or(&[], |(_, to)| *to)
}

/// Whether `from → to` is a legal transition under `method`.
pub fn can_move(method: Method, from: Low, to: Low) -> bool {
    next(method, from).contains(&to)
}

/// Whether an order in `state` may be cancelled (`lab.md` §Order states).
pub fn cancellable(method: Method, state: Low) -> bool {
    match state {
        Ordered | RequisitionCreated | RequisitionBypassed | AwaitingRegistration => true,
        AppointmentPending | AppointmentScheduled | AppointmentCancelled => {
            matches!(method, Method::WalkIn | Method::Phlebotomy)
        }
        DrawCompleted => method == Method::Phlebotomy,
        _ => false,
    }
}

/// The shortest legal path from `from` to `to` (excluding `from`, ending with `to`); `None` when
/// `to` cannot be reached. Ties break by the tables' order, so paths prefer the happy path.
pub fn path(method: Method, from: Low, to: Low) -> Option<Vec<Low>> {
    if from == to {
        return Some(Vec::new());
    }
    let mut previous: Vec<(Low, Low)> = Vec::new();
    let mut queue = VecDeque::from([from]);
    let mut seen = vec![from];
    while let Some(state) = queue.pop_front() {
        for &n in next(method, state) {
            if seen.contains(&n) {
                continue;
            }
            seen.push(n);
            previous.push((n, state));
            if n == to {
                let mut out = vec![to];
                let mut at = to;
                while let Some(&(_, p)) = previous.iter().find(|(s, _)| *s == at) {
                    if p == from {
                        break;
                    }
                    out.push(p);
                    at = p;
                }
                out.reverse();
                return Some(out);
            }
            queue.push_back(n);
        }
    }
    None
}

/// The high-level status of a low-level one.
pub fn top(state: Low) -> Top {
    match state {
        Ordered | RequisitionCreated | RequisitionBypassed | AwaitingRegistration | Registered => {
            Top::Received
        }
        TransitCustomer
        | OutForDelivery
        | WithCustomer
        | TransitLab
        | ProblemInTransitCustomer
        | ProblemInTransitLab
        | AppointmentPending
        | AppointmentScheduled
        | AppointmentCancelled
        | DrawCompleted
        | RedrawAvailable => Top::CollectingSample,
        DeliveredToLab | PartialResults | LabProcessingBlocked => Top::SampleWithLab,
        Completed | Corrected => Top::Completed,
        Cancelled | DoNotProcess => Top::Cancelled,
        FailureToDeliverToLab | FailureToDeliverToCustomer | Lost | SampleError => Top::Failed,
    }
}

/// The tables as Markdown, one section per method: each state, its top-level status, where it
/// may go, and whether the order can be cancelled there. `assets/lab/order_states.md` is this
/// text (a unit test keeps the two equal).
pub fn markdown() -> String {
    let mut out = String::from(
        "# Lab order states\n\nGenerated from `src/lab/states.rs` (`states::markdown`); a unit test \
         keeps this file equal to the code.\nStatuses are `<top>.<method>.<low>`; states without a \
         row are final.\n",
    );
    for method in Method::ALL {
        out.push_str(&format!(
            "\n## {method}\n\n| state | top | next states | cancellable |\n|---|---|---|---|\n"
        ));
        for (from, tos) in table(*method) {
            let next: Vec<&str> = tos.iter().map(|t| t.as_str()).collect();
            out.push_str(&format!(
                "| {from} | {} | {} | {} |\n",
                top(*from),
                next.join(", "),
                if cancellable(*method, *from) {
                    "yes"
                } else {
                    "no"
                }
            ));
        }
    }
    out
}

/// The full status string `<top>.<method>.<low>` of order events.
pub fn status_string(method: Method, state: Low) -> String {
    format!("{}.{}.{}", top(state), method, state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn happy_paths_are_legal() {
        let walk = |m, states: &[Low]| {
            for pair in states.windows(2) {
                assert!(
                    can_move(m, pair[0], pair[1]),
                    "{m}: {} → {}",
                    pair[0],
                    pair[1]
                );
            }
        };
        walk(
            Method::Testkit,
            &[
                Ordered,
                RequisitionCreated,
                TransitCustomer,
                OutForDelivery,
                WithCustomer,
                TransitLab,
                DeliveredToLab,
                Completed,
            ],
        );
        walk(
            Method::WalkIn,
            &[
                Ordered,
                RequisitionCreated,
                AppointmentPending,
                AppointmentScheduled,
                PartialResults,
                Completed,
            ],
        );
        walk(
            Method::Phlebotomy,
            &[
                Ordered,
                RequisitionCreated,
                AppointmentPending,
                AppointmentScheduled,
                DrawCompleted,
                PartialResults,
                Completed,
            ],
        );
    }

    #[test]
    fn paths_are_shortest_and_legal() {
        let p = path(Method::Testkit, Ordered, Completed).unwrap();
        assert_eq!(
            p,
            vec![
                RequisitionCreated,
                TransitCustomer,
                OutForDelivery,
                WithCustomer,
                TransitLab,
                DeliveredToLab,
                Completed
            ]
        );
        assert_eq!(path(Method::Testkit, Completed, Ordered), None);
        assert_eq!(path(Method::WalkIn, Ordered, DrawCompleted), None);
        for m in Method::ALL {
            for (from, tos) in table(*m) {
                for to in *tos {
                    assert_eq!(path(*m, *from, *to), Some(vec![*to]));
                }
            }
        }
    }

    #[test]
    fn the_documented_tables_are_the_code() {
        let doc = include_str!("../../assets/lab/order_states.md");
        assert!(
            doc == markdown(),
            "assets/lab/order_states.md is stale: write states::markdown() to it"
        );
    }

    #[test]
    fn no_cancellation_after_the_sample_reached_the_lab() {
        for m in Method::ALL {
            for s in [DeliveredToLab, PartialResults, Completed, TransitLab] {
                assert!(!cancellable(*m, s));
            }
            // Every cancellable state that has a table row may move to cancelled.
            for (s, tos) in table(*m) {
                if cancellable(*m, *s) {
                    assert!(tos.contains(&Cancelled), "{m}: {s} cancellable but no edge");
                }
            }
        }
        assert!(cancellable(Method::Phlebotomy, DrawCompleted));
        assert!(!cancellable(Method::WalkIn, DrawCompleted));
        assert!(!cancellable(Method::Testkit, AppointmentPending));
    }
}
