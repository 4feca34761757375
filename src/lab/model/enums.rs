//! The closed enumerations of the lab interface: collection methods, order statuses (top and
//! low level), lab test status, marker type, interpretation, gender. Closed on input (an
//! unknown value is a 422 naming the allowed ones), as `rest-conventions.md` asks.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Declares a closed string enum with its wire names, `as_str`, `ALL` and `FromStr`.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:tt),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $wire)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire),+
                }
            }

            /// The wire names, comma-separated (for messages).
            pub fn names() -> String {
                Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
            }
        }

        impl std::str::FromStr for $name {
            type Err = ();
            fn from_str(s: &str) -> Result<Self, ()> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s).ok_or(())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use wire_enum;

wire_enum! {
    /// How the sample is collected.
    Method {
        /// A kit mailed to the patient and back.
        Testkit = "testkit",
        /// The patient walks into a patient service centre.
        WalkIn = "walk_in_test",
        /// A phlebotomist visits the patient.
        Phlebotomy = "at_home_phlebotomy",
        /// Collection at the customer's site.
        OnSite = "on_site_collection",
    }
}

wire_enum! {
    /// The low-level order status (`service-interface.md` §Order low-level status).
    Low {
        /// Ordered.
        Ordered = "ordered",
        /// Requisition created.
        RequisitionCreated = "requisition_created",
        /// Requisition bypassed.
        RequisitionBypassed = "requisition_bypassed",
        /// Kit in transit to the customer.
        TransitCustomer = "transit_customer",
        /// Kit out for delivery.
        OutForDelivery = "out_for_delivery",
        /// Kit with the customer.
        WithCustomer = "with_customer",
        /// Sample in transit to the lab.
        TransitLab = "transit_lab",
        /// Sample delivered to the lab.
        DeliveredToLab = "delivered_to_lab",
        /// Completed.
        Completed = "completed",
        /// Failure to deliver to the lab.
        FailureToDeliverToLab = "failure_to_deliver_to_lab",
        /// Failure to deliver to the customer.
        FailureToDeliverToCustomer = "failure_to_deliver_to_customer",
        /// Problem in transit to the lab.
        ProblemInTransitLab = "problem_in_transit_lab",
        /// Problem in transit to the customer.
        ProblemInTransitCustomer = "problem_in_transit_customer",
        /// Sample error.
        SampleError = "sample_error",
        /// Appointment scheduled.
        AppointmentScheduled = "appointment_scheduled",
        /// Appointment cancelled.
        AppointmentCancelled = "appointment_cancelled",
        /// Appointment pending.
        AppointmentPending = "appointment_pending",
        /// Draw completed.
        DrawCompleted = "draw_completed",
        /// Cancelled.
        Cancelled = "cancelled",
        /// Lost.
        Lost = "lost",
        /// Do not process.
        DoNotProcess = "do_not_process",
        /// Partial results.
        PartialResults = "partial_results",
        /// Awaiting registration.
        AwaitingRegistration = "awaiting_registration",
        /// Registered.
        Registered = "registered",
        /// Redraw available.
        RedrawAvailable = "redraw_available",
        /// Corrected.
        Corrected = "corrected",
        /// Lab processing blocked.
        LabProcessingBlocked = "lab_processing_blocked",
    }
}

wire_enum! {
    /// The high-level order status.
    Top {
        /// Received.
        Received = "received",
        /// Collecting the sample.
        CollectingSample = "collecting_sample",
        /// The sample is with the lab.
        SampleWithLab = "sample_with_lab",
        /// Completed.
        Completed = "completed",
        /// Cancelled.
        Cancelled = "cancelled",
        /// Failed.
        Failed = "failed",
    }
}

wire_enum! {
    /// A lab test's status.
    LabTestStatus {
        /// Orderable.
        Active = "active",
        /// Awaiting approval.
        PendingApproval = "pending_approval",
        /// Not orderable.
        Inactive = "inactive",
    }
}

wire_enum! {
    /// A marker's kind.
    MarkerType {
        /// One measured value.
        Biomarker = "biomarker",
        /// A bundle of biomarkers.
        Panel = "panel",
    }
}

wire_enum! {
    /// A result's (or an order's) interpretation.
    Interpretation {
        /// Within range.
        Normal = "normal",
        /// Outside range.
        Abnormal = "abnormal",
        /// Critically outside range.
        Critical = "critical",
        /// Not interpreted.
        Unknown = "unknown",
    }
}

wire_enum! {
    /// The patient's gender as labs take it.
    Gender {
        /// Female.
        Female = "female",
        /// Male.
        Male = "male",
        /// Other.
        Other = "other",
        /// Unknown.
        Unknown = "unknown",
    }
}

wire_enum! {
    /// An order's activation: now, or at `activate_by`.
    ActivationType {
        /// Active now.
        Current = "current",
        /// Waiting for its `activate_by` date.
        Scheduled = "scheduled",
    }
}

wire_enum! {
    /// The sort key of the order list.
    OrderKey {
        /// Creation time (default).
        CreatedAt = "created_at",
        /// The patient's name.
        PatientName = "patient_name",
        /// The low-level status.
        LastStatus = "last_status",
    }
}

wire_enum! {
    /// A sort direction.
    Direction {
        /// Ascending.
        Asc = "asc",
        /// Descending (default).
        Desc = "desc",
    }
}
