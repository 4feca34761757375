//! Every event type of `events.md`, and the one place their names are built and parsed.

use std::fmt;

use crate::schema::{RESOURCES, Table};

/// The resource names event types are built from: the summary tables under their
/// `supported_resources` names (`workouts`, not `workout`), then every timeseries resource.
pub fn resource_names() -> impl Iterator<Item = &'static str> {
    Table::ALL
        .into_iter()
        .map(|t| match t {
            Table::Workout => "workouts",
            t => t.name(),
        })
        .chain(RESOURCES.iter().map(|r| r.name))
}

fn known_resource(name: &str) -> Option<&'static str> {
    resource_names().find(|r| *r == name)
}

/// An event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// `provider.connection.created`
    ConnectionCreated,
    /// `provider.connection.error`
    ConnectionError,
    /// `historical.data.<resource>.created`: a resource's historical pull completed.
    HistoricalCreated(&'static str),
    /// `daily.data.<resource>.created`: new records.
    DailyCreated(&'static str),
    /// `daily.data.<resource>.updated`: replaced records with different content.
    DailyUpdated(&'static str),
    /// `labtest.order.created`
    OrderCreated,
    /// `labtest.order.updated`
    OrderUpdated,
    /// `labtest.appointment.created`
    AppointmentCreated,
    /// `labtest.appointment.updated`
    AppointmentUpdated,
    /// `labtest.result.critical`
    ResultCritical,
    /// `continuous_query.result_table.changed`: a user's continuous-query table changed.
    ContinuousQueryChanged,
    /// `continuous_query.fhir_observations.changed`: the changed rows of a user's continuous-query
    /// table as FHIR R4 Observations (`export_preferences.fhir_observations`).
    ContinuousQueryFhirObservations,
}

const FIXED: [(EventType, &str); 9] = [
    (EventType::ConnectionCreated, "provider.connection.created"),
    (EventType::ConnectionError, "provider.connection.error"),
    (EventType::OrderCreated, "labtest.order.created"),
    (EventType::OrderUpdated, "labtest.order.updated"),
    (EventType::AppointmentCreated, "labtest.appointment.created"),
    (EventType::AppointmentUpdated, "labtest.appointment.updated"),
    (EventType::ResultCritical, "labtest.result.critical"),
    (
        EventType::ContinuousQueryChanged,
        "continuous_query.result_table.changed",
    ),
    (
        EventType::ContinuousQueryFhirObservations,
        "continuous_query.fhir_observations.changed",
    ),
];

impl EventType {
    /// The type's name, as it appears in `event_type`.
    pub fn name(self) -> String {
        match self {
            EventType::HistoricalCreated(r) => format!("historical.data.{r}.created"),
            EventType::DailyCreated(r) => format!("daily.data.{r}.created"),
            EventType::DailyUpdated(r) => format!("daily.data.{r}.updated"),
            fixed => FIXED
                .iter()
                .find(|(t, _)| *t == fixed)
                .map_or_else(String::new, |(_, n)| (*n).to_owned()),
        }
    }

    /// The type a name stands for; `None` for anything `events.md` does not define (including
    /// the deprecated `hypnogram` events, which are never sent).
    pub fn parse(name: &str) -> Option<EventType> {
        if let Some((t, _)) = FIXED.iter().find(|(_, n)| *n == name) {
            return Some(*t);
        }
        if let Some(rest) = name.strip_prefix("historical.data.") {
            return known_resource(rest.strip_suffix(".created")?)
                .map(EventType::HistoricalCreated);
        }
        let rest = name.strip_prefix("daily.data.")?;
        if let Some(r) = rest.strip_suffix(".created") {
            return known_resource(r).map(EventType::DailyCreated);
        }
        known_resource(rest.strip_suffix(".updated")?).map(EventType::DailyUpdated)
    }

    /// Every event type.
    pub fn all() -> Vec<EventType> {
        let mut out: Vec<EventType> = FIXED.iter().map(|(t, _)| *t).collect();
        for r in resource_names() {
            out.extend([
                EventType::HistoricalCreated(r),
                EventType::DailyCreated(r),
                EventType::DailyUpdated(r),
            ]);
        }
        out
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Whether an endpoint's filter (`None`: every type) lets `name` through: an entry matches its
/// exact name, or, ending in `*`, every name starting with what precedes the `*`.
pub fn matches(filter: Option<&[String]>, name: &str) -> bool {
    let Some(patterns) = filter else { return true };
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => p == name,
    })
}

/// Whether a filter entry can match anything: a known name, or a prefix of one followed by `*`.
pub fn valid_pattern(pattern: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => EventType::all()
            .iter()
            .any(|t| t.name().starts_with(prefix)),
        None => EventType::parse(pattern).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_its_type() {
        let all = EventType::all();
        assert!(all.len() > 20);
        for t in &all {
            assert_eq!(EventType::parse(&t.name()), Some(*t), "{t}");
        }
        assert!(all.contains(&EventType::DailyCreated("sleep")));
        assert!(all.contains(&EventType::DailyUpdated("heartrate")));
        assert_eq!(EventType::parse("daily.data.hypnogram.created"), None);
        assert_eq!(EventType::parse("daily.data.workout.created"), None);
        assert_eq!(EventType::parse("daily.data.sleep.deleted"), None);
    }

    #[test]
    fn filters_match_names_and_prefixes() {
        let f = vec![
            "daily.data.*".to_owned(),
            "provider.connection.created".to_owned(),
        ];
        assert!(matches(Some(&f), "daily.data.sleep.created"));
        assert!(matches(Some(&f), "provider.connection.created"));
        assert!(!matches(Some(&f), "provider.connection.error"));
        assert!(matches(None, "anything"));
        assert!(valid_pattern("daily.*"));
        assert!(valid_pattern("*"));
        assert!(!valid_pattern("nope.*"));
        assert!(!valid_pattern("daily.data.sleep"));
    }
}
