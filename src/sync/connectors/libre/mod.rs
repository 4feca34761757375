//! The FreeStyle Libre and Abbott LibreView connector, through LibreLinkUp's API (the sign-in
//! and the wire's sources are in `sync::connectors::libre::access` and `sync::connectors::libre::libreview`):
//! glucose readings of the wearer the session names.
//!
//! - `freestyle_libre` connections (the e-mail link, `link::email`) keep the deployment's
//!   follower account's session and the patient who shared with it.
//! - `abbott_libreview` connections keep the patient's own LibreView session (after its second
//!   factor) and the patient's own id as the wearer. **Assumption**: LibreView and LibreLinkUp
//!   share hosts, accounts and tickets (LibreLinkUp signs in with the LibreView account), so the
//!   patient's own graph is read at `/llu/connections/{own id}/graph`. LibreView's report
//!   download (`POST /reports`, its channel and the `window.Report` page, observed by the same
//!   clients as the second factor) is not implemented.
//!
//! - The connection's access token is a [`Session`]: the `authTicket.token` (sent as
//!   `Authorization: Bearer`), the region it is valid in, and the `account-id` header. Every
//!   call also sends the app's `product` and `version` headers. A stored token that is not a
//!   session, or a 401, is `Unauthorised` (the puller signs in again once).
//! - `GET /llu/connections` answers `{"status": 0, "data": [connection, ...]}`, the wearers the
//!   account follows: `{"patientId", "firstName", ..., "glucoseMeasurement"}`.
//! - `GET /llu/connections/{patientId}/graph` answers `{"status": 0, "data": {"connection":
//!   {..., "glucoseMeasurement"}, "activeSensors", "graphData": [reading, ...]}}`, about the
//!   last 12 hours of readings, every 5 (FreeStyle Libre 3: 1) minutes.
//! - A reading: `{"FactoryTimestamp", "Timestamp", "ValueInMgPerDl", "Value", "GlucoseUnits",
//!   "type", ...}`; `FactoryTimestamp` is the sensor's UTC time and `Timestamp` the phone's local
//!   time, both `M/D/YYYY h:mm:ss AM`.
//!
//! Normalised to the `glucose` timeseries (mmol/L, source `{"type": "automatic"}`, a CGM):
//! `timestamp` from `FactoryTimestamp`, `timezone_offset` from `Timestamp − FactoryTimestamp`
//! rounded to 15 minutes, `value` from `ValueInMgPerDl` (÷ 18.0182, 2 decimals). The latest
//! reading (`connection.glucoseMeasurement`) joins the graph's; a reading at an instant already
//! read is kept once. Readings outside the pull's window are left out.
//!
//! Decisions where the community's notes are silent:
//! - **Whose readings.** An account may follow several wearers. The connection whose
//!   `patientId` hashes to the session's `account-id` (a wearer following themselves) is the
//!   user's; else, when the account follows exactly one wearer, that one; else the pull fails
//!   as `Permanent` (it cannot tell which readings are the user's, and never guesses).
//! - **History.** LibreLinkUp serves about 12 hours, so a historical pull brings what it has
//!   and the incremental pulls (every 30 minutes) keep up from there: a FreeStyle Libre
//!   connection's history starts at its link.
//! - A body `status` other than 0 under HTTP 200 is `Permanent`, with the status named.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::sync::body::{MAX_OFFSET_SECONDS, clock_offset, mmol_per_litre, pulled};
use crate::sync::http::Api;
use crate::sync::{Connector, Pull, Pulled, Resource, SyncError, Window};
pub mod access;
pub mod libreview;
pub mod share;

use access::{Hosts, PRODUCT, Session, VERSION, account_id};

pub use access::{API_URL_ENV, DEFAULT_API_URL};

/// The largest glucose value ingest accepts, in mmol/L.
const MAX_MMOL_L: f64 = 50.0;

/// The FreeStyle Libre (or Abbott LibreView) connector.
#[derive(Debug, Clone)]
pub struct Libre {
    slug: &'static str,
    hosts: Hosts,
    http: reqwest::Client,
}

impl Libre {
    /// The `freestyle_libre` connector for LibreLinkUp at `hosts`, with its own HTTP client
    /// (30 s per request, no redirects followed).
    pub fn new(hosts: Hosts) -> Result<Libre, SyncError> {
        Ok(Libre {
            slug: "freestyle_libre",
            hosts,
            http: crate::sync::http::client()?,
        })
    }

    /// The `abbott_libreview` connector at LibreView's `hosts`.
    pub fn libreview(hosts: Hosts) -> Result<Libre, SyncError> {
        Ok(Libre {
            slug: "abbott_libreview",
            ..Libre::new(hosts)?
        })
    }

    /// The API where `session` is valid.
    fn api(&self, session: &Session) -> Result<Api, SyncError> {
        let base = self
            .hosts
            .base(session.region.as_deref())
            .ok_or(SyncError::Unauthorised)?;
        let url = url::Url::parse(&base).map_err(|e| SyncError::Permanent {
            reason: format!("invalid LibreLinkUp URL {base:?}: {e}"),
        })?;
        Ok(Api::with_client("LibreLinkUp", url, self.http.clone())
            .with_header("product", PRODUCT)
            .with_header("version", VERSION)
            .with_header("account-id", session.account_id.clone()))
    }
}

/// The `data` of a LibreLinkUp answer whose body `status` is 0.
fn data(answer: Value, path: &str) -> Result<Value, SyncError> {
    match answer.get("status").and_then(Value::as_i64) {
        Some(0) => Ok(answer.get("data").cloned().unwrap_or_default()),
        status => Err(SyncError::Permanent {
            reason: format!("LibreLinkUp answered {path} with status {status:?}"),
        }),
    }
}

/// The `patientId` of the user's own connection among those the account follows.
fn own_patient(connections: &[Value], account: &str) -> Result<String, SyncError> {
    let ids: Vec<&str> = connections
        .iter()
        .filter_map(|c| c.get("patientId").and_then(Value::as_str))
        .collect();
    if let Some(own) = ids.iter().find(|id| account_id(id) == account) {
        return Ok((*own).to_owned());
    }
    match ids.as_slice() {
        [only] => Ok((*only).to_owned()),
        _ => Err(SyncError::Permanent {
            reason: format!(
                "the LibreLinkUp account follows {} wearers, none of them itself; link an account that follows only the wearer",
                ids.len()
            ),
        }),
    }
}

#[async_trait::async_trait]
impl Connector for Libre {
    fn provider(&self) -> &'static str {
        self.slug
    }

    async fn pull(&self, stored: &str, pull: &Pull) -> Result<Pulled, SyncError> {
        let mut readings = Readings::new(self.slug);
        if pull.resources.contains(&Resource::Glucose) {
            let session = Session::decode(stored).ok_or(SyncError::Unauthorised)?;
            let api = self.api(&session)?;
            let patient = match &session.patient {
                Some(patient) => patient.clone(),
                None => {
                    let list = data(
                        api.get(&session.token, "/llu/connections", &[]).await?,
                        "/llu/connections",
                    )?;
                    own_patient(
                        list.as_array().map_or(&[], Vec::as_slice),
                        &session.account_id,
                    )?
                }
            };
            let path = format!("/llu/connections/{patient}/graph");
            let graph = data(api.get(&session.token, &path, &[]).await?, &path)?;
            if let Some(latest) = graph.pointer("/connection/glucoseMeasurement") {
                readings.add(latest, &pull.window);
            }
            for reading in graph["graphData"].as_array().map_or(&[][..], Vec::as_slice) {
                readings.add(reading, &pull.window);
            }
        }
        Ok(readings.finish())
    }
}

/// A LibreLinkUp reading, as far as it is read.
#[derive(Deserialize)]
struct Reading {
    #[serde(rename = "FactoryTimestamp")]
    factory: String,
    #[serde(rename = "Timestamp")]
    local: String,
    #[serde(rename = "ValueInMgPerDl")]
    mg_dl: f64,
}

/// `M/D/YYYY h:mm:ss AM`.
fn clock(text: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(text, "%m/%d/%Y %I:%M:%S %p").ok()
}

/// Glucose samples by instant (so the latest reading and its copy in the graph are one).
#[derive(Debug)]
pub(crate) struct Readings {
    provider: &'static str,
    samples: BTreeMap<DateTime<Utc>, Value>,
    skipped: usize,
}

impl Default for Readings {
    fn default() -> Self {
        Readings::new("freestyle_libre")
    }
}

impl Readings {
    /// No readings yet, for `provider`'s push body.
    pub(crate) fn new(provider: &'static str) -> Readings {
        Readings {
            provider,
            samples: BTreeMap::new(),
            skipped: 0,
        }
    }

    fn malformed(&mut self, why: &str) {
        tracing::warn!(
            provider = self.provider,
            resource = "glucose",
            error = why,
            "skipped a malformed provider record"
        );
        self.skipped += 1;
    }

    /// Adds one reading when it falls in `window`.
    pub(crate) fn add(&mut self, record: &Value, window: &Window) {
        let reading = match Reading::deserialize(record) {
            Ok(r) => r,
            Err(e) => return self.malformed(&e.to_string()),
        };
        let Some(at) = clock(&reading.factory).map(|t| t.and_utc()) else {
            return self.malformed("FactoryTimestamp is not M/D/YYYY h:mm:ss AM");
        };
        if !window.contains(at) {
            return;
        }
        let Some(mmol) = mmol_per_litre(reading.mg_dl, "mg/dL") else {
            return self.malformed("no value");
        };
        if !(mmol > 0.0 && mmol <= MAX_MMOL_L) {
            return self.malformed("value outside 0–50 mmol/L");
        }
        let mut sample = Map::new();
        sample.insert(
            "timestamp".into(),
            at.to_rfc3339_opts(SecondsFormat::AutoSi, true).into(),
        );
        if let Some(seconds) = clock(&reading.local).and_then(|local| clock_offset(at, local)) {
            debug_assert!(seconds.abs() <= MAX_OFFSET_SECONDS);
            sample.insert("timezone_offset".into(), seconds.into());
        }
        sample.insert("unit".into(), "mmol/L".into());
        sample.insert("value".into(), mmol.into());
        self.samples.insert(at, Value::Object(sample));
    }

    /// The push body, with the glucose series only when it received samples.
    pub(crate) fn finish(self) -> Pulled {
        pulled(
            (self.provider, "automatic"),
            Vec::new(),
            None,
            vec![(
                "glucose",
                crate::ingest::PulledSamples::Json(self.samples.into_values().collect()),
            )],
            self.skipped,
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn window() -> Window {
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        Window::new(at("2022-12-30T00:00:00Z"), at("2022-12-31T00:00:00Z")).unwrap()
    }

    #[test]
    fn readings_become_glucose_in_mmol_per_litre_with_the_phones_offset() {
        let mut r = Readings::default();
        let reading = json!({"FactoryTimestamp": "12/30/2022 4:50:40 AM",
            "Timestamp": "12/30/2022 5:50:40 AM", "type": 0, "ValueInMgPerDl": 173,
            "GlucoseUnits": 1, "Value": 173});
        r.add(&reading, &window());
        r.add(&reading, &window());
        r.add(
            &json!({"FactoryTimestamp": "12/30/2022 4:55:40 PM",
            "Timestamp": "12/30/2022 8:55:40 AM", "ValueInMgPerDl": 90}),
            &window(),
        );
        r.add(
            &json!({"FactoryTimestamp": "12/31/2022 0:00:00 AM",
            "Timestamp": "x", "ValueInMgPerDl": 90}),
            &window(),
        );
        r.add(
            &json!({"FactoryTimestamp": "1/2/2023 1:00:00 AM",
            "Timestamp": "1/2/2023 1:00:00 AM", "ValueInMgPerDl": 90}),
            &window(),
        );
        r.add(&json!({"Timestamp": "12/30/2022 5:50:40 AM"}), &window());
        let pulled = r.finish();
        assert_eq!(
            pulled.skipped, 2,
            "an unreadable time, a reading without its fields"
        );
        assert_eq!(
            pulled.body.to_json()["timeseries"]["glucose"],
            json!([
                {"timestamp": "2022-12-30T04:50:40Z", "timezone_offset": 3600, "unit": "mmol/L", "value": 9.6},
                {"timestamp": "2022-12-30T16:55:40Z", "timezone_offset": -28800, "unit": "mmol/L", "value": 4.99}
            ])
        );
        assert_eq!(pulled.body.to_json()["provider"], "freestyle_libre");
    }

    /// `testdata/providers/freestyle_libre/graph.json` is a graph answer in LibreLinkUp's
    /// shape (nine readings, one without its value, and the latest in `connection`);
    /// `graph.expected.json` the push body it must give.
    #[test]
    fn the_graph_fixture_becomes_its_expected_body() {
        let graph = crate::sync::fixture("freestyle_libre", "graph.json");
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let window = Window::new(at("2025-03-02T00:00:00Z"), at("2025-03-03T00:00:00Z")).unwrap();
        let mut readings = Readings::default();
        readings.add(&graph["data"]["connection"]["glucoseMeasurement"], &window);
        for r in graph["data"]["graphData"].as_array().unwrap() {
            readings.add(r, &window);
        }
        crate::sync::assert_fixture(
            "freestyle_libre",
            "graph",
            &readings.finish(),
            1,
            json!({"timeseries": {"glucose": 10}}),
        );
    }

    #[test]
    fn the_wearers_own_connection_is_chosen_and_a_guess_is_refused() {
        let me = "7ad66b40-ba9b-401e-9845-4f49f998cf16";
        let two = [
            json!({"patientId": "someone-else"}),
            json!({"patientId": me}),
        ];
        assert_eq!(own_patient(&two, &account_id(me)).unwrap(), me);
        let one = [json!({"patientId": "the-wearer"})];
        assert_eq!(own_patient(&one, &account_id(me)).unwrap(), "the-wearer");
        let others = [json!({"patientId": "a"}), json!({"patientId": "b"})];
        assert!(matches!(
            own_patient(&others, &account_id(me)),
            Err(SyncError::Permanent { .. })
        ));
    }
}
