//! The third parties wearhouse cannot reach here, behind one trait per kind, and the sandbox
//! implementations this build runs.
//!
//! **Phlebotomy / PSC scheduling** ([`Scheduler`]): the sandbox offers slots at 08:00, 09:00,
//! 10:00 and 11:00 local time on each of the next three days. The slot's hour decides how the
//! provider answers a booking, and its booking key says so in its prefix:
//!
//! | hour | key prefix | the provider... |
//! |---|---|---|
//! | 08:00 | `sbx_confirm_` | confirms 200 ms after the booking |
//! | 09:00 | `sbx_delay_` | confirms 3 s after the booking |
//! | 10:00 | `sbx_fail_` | refuses 200 ms after the booking |
//! | 11:00 | `sbx_never_` | never answers |
//!
//! So tests and `serve --demo` pick the path they want (sync confirmed: an 08:00 slot; sync
//! failed → 500: a 10:00 slot; async pending → confirmed: a 09:00 slot with a 1 s synchronous
//! window; async pending → cancelled at its timeout: an 11:00 slot). A synchronous booking whose
//! provider does not answer within [`SYNC_PROVIDER_LIMIT`] fails like a refusal.
//!
//! **Labs** ([`LabProvider`]): the sandbox lab accepts every order and reports the
//! deterministic synthetic results of `orders::results`.

use chrono::{DateTime, Duration, Utc};

/// How long a synchronous booking waits for a provider that does not answer.
pub const SYNC_PROVIDER_LIMIT: Duration = Duration::seconds(10);

/// How a provider will answer a booking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Confirms this long after the booking.
    ConfirmAfter(Duration),
    /// Refuses this long after the booking.
    FailAfter(Duration),
    /// Never answers.
    Never,
}

impl Plan {
    /// When the answer arrives for a booking made at `at`, and whether it is a refusal.
    pub fn answer(self, at: DateTime<Utc>) -> (Option<DateTime<Utc>>, bool) {
        match self {
            Plan::ConfirmAfter(d) => (Some(at + d), false),
            Plan::FailAfter(d) => (Some(at + d), true),
            Plan::Never => (None, false),
        }
    }
}

/// An appointment provider (phlebotomy or a lab's PSC scheduling).
pub trait Scheduler: Send + Sync {
    /// The provider's name as appointments show it.
    fn name(&self) -> &'static str;
    /// The local hours of the day it offers slots at.
    fn hours(&self) -> &'static [u32];
    /// The booking key prefix of a slot starting at `hour`.
    fn key_prefix(&self, hour: u32) -> &'static str;
    /// How it will answer a booking made with `key`.
    fn plan(&self, key: &str) -> Plan;
}

/// The sandbox scheduler (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct SandboxScheduler;

const PREFIXES: [(u32, &str); 4] = [
    (8, "sbx_confirm_"),
    (9, "sbx_delay_"),
    (10, "sbx_fail_"),
    (11, "sbx_never_"),
];

impl Scheduler for SandboxScheduler {
    fn name(&self) -> &'static str {
        super::area::PHLEBOTOMY_PROVIDER
    }

    fn hours(&self) -> &'static [u32] {
        &[8, 9, 10, 11]
    }

    fn key_prefix(&self, hour: u32) -> &'static str {
        PREFIXES
            .iter()
            .find(|(h, _)| *h == hour)
            .map_or("sbx_confirm_", |(_, p)| *p)
    }

    fn plan(&self, key: &str) -> Plan {
        if key.starts_with("sbx_delay_") {
            Plan::ConfirmAfter(Duration::seconds(3))
        } else if key.starts_with("sbx_fail_") {
            Plan::FailAfter(Duration::milliseconds(200))
        } else if key.starts_with("sbx_never_") {
            Plan::Never
        } else {
            Plan::ConfirmAfter(Duration::milliseconds(200))
        }
    }
}

/// A laboratory.
pub trait LabProvider: Send + Sync {
    /// Whether the lab accepts a new order of its catalogue (the sandbox accepts every one).
    fn accepts(&self, lab_id: i64) -> bool;
}

/// The sandbox lab.
#[derive(Debug, Clone, Copy, Default)]
pub struct SandboxLab;

impl LabProvider for SandboxLab {
    fn accepts(&self, lab_id: i64) -> bool {
        super::catalogue::labs::lab(lab_id).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_prefixes_decide_the_plan() {
        let s = SandboxScheduler;
        for &h in s.hours() {
            let key = format!("{}abc", s.key_prefix(h));
            let expected = match h {
                8 => Plan::ConfirmAfter(Duration::milliseconds(200)),
                9 => Plan::ConfirmAfter(Duration::seconds(3)),
                10 => Plan::FailAfter(Duration::milliseconds(200)),
                _ => Plan::Never,
            };
            assert_eq!(s.plan(&key), expected);
        }
    }
}
