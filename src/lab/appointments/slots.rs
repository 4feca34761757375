//! Availability: slots of the next three days at the provider's hours (local time of the
//! area), each with a fresh single-use booking key bound to the appointment type and team and
//! expiring one hour before the slot.

use chrono::{DateTime, Duration, NaiveDate, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::super::LabError;
use super::super::area::{self, PscIndex, zips};
use super::super::model::appointment::{
    AppointmentLocation, AppointmentType, Availability, DaySlots, TimeSlot, UsAddress,
};
use super::super::model::area::LngLat;
use super::super::sandbox::Scheduler;
use crate::loc;
use crate::store::metadata::MetadataStore;
use crate::store::metadata::lab::booking_keys::{self, BookingKey};

/// Days offered.
pub const DAYS: i64 = 3;

/// What a booking key stands for (stored with it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlotRecord {
    /// Start.
    pub start: DateTime<Utc>,
    /// End.
    pub end: DateTime<Utc>,
    /// Where (the patient's address, or the centre's).
    pub address: UsAddress,
    /// Point.
    pub location: LngLat,
    /// Time zone.
    pub timezone: String,
    /// PSC site code.
    pub site_code: Option<String>,
    /// PSC lab.
    pub lab_slug: Option<String>,
}

fn zone(z: &zips::Zip) -> chrono_tz::Tz {
    z.timezone.parse().unwrap_or(chrono_tz::UTC)
}

fn new_key(prefix: &str) -> String {
    format!("{prefix}{}", Uuid::new_v4().simple())
}

/// One slot: its local hour, start and end (UTC).
type Slot = (u32, DateTime<Utc>, DateTime<Utc>);

/// The days after `today` (local) with a slot per hour.
fn day_slots(tz: chrono_tz::Tz, today: NaiveDate, hours: &[u32]) -> Vec<(NaiveDate, Vec<Slot>)> {
    (1..=DAYS)
        .filter_map(|d| today.checked_add_signed(Duration::days(d)))
        .map(|day| {
            let slots = hours
                .iter()
                .filter_map(|h| {
                    let local = day.and_hms_opt(*h, 0, 0)?;
                    let start = tz
                        .from_local_datetime(&local)
                        .earliest()?
                        .with_timezone(&Utc);
                    Some((*h, start, start + Duration::hours(1)))
                })
                .collect();
            (day, slots)
        })
        .collect()
}

struct Issued {
    keys: Vec<BookingKey>,
}

impl Issued {
    #[allow(clippy::too_many_arguments)]
    fn slot(
        &mut self,
        team: Uuid,
        kind: AppointmentType,
        prefix: &str,
        record: SlotRecord,
        price: f64,
    ) -> TimeSlot {
        let key = new_key(prefix);
        let expires_at = record.start - Duration::hours(1);
        let slot = TimeSlot {
            booking_key: key.clone(),
            start: record.start,
            end: record.end,
            expires_at,
            price,
            is_priority: false,
            num_appointments_available: 1,
        };
        self.keys.push(BookingKey {
            key,
            team_id: team,
            kind: kind.as_str().to_owned(),
            slot: serde_json::to_string(&record).unwrap_or_default(),
            expires_at,
            used_at: None,
        });
        slot
    }
}

/// `POST /v3/order/phlebotomy/appointment/availability`: slots at the address (400 when no
/// provider serves its ZIP code).
pub async fn phlebotomy(
    meta: &MetadataStore,
    scheduler: &dyn Scheduler,
    team: Uuid,
    address: UsAddress,
) -> Result<Availability, LabError> {
    let zip = area::known_zip(&address.zip_code, loc!["body", "zip_code"], false)?;
    if !area::phlebotomy_serves(zip) {
        return Err(LabError::NotAllowed(format!(
            "zip code {} is not served by at-home phlebotomy",
            zip.code
        )));
    }
    let tz = zone(zip);
    let now = crate::store::metadata::now();
    let today = now.with_timezone(&tz).date_naive();
    let mut issued = Issued { keys: Vec::new() };
    let mut days = Vec::new();
    for (day, slots) in day_slots(tz, today, scheduler.hours()) {
        let slots = slots
            .into_iter()
            .map(|(h, start, end)| {
                let record = SlotRecord {
                    start,
                    end,
                    address: address.clone(),
                    location: zip.point,
                    timezone: tz.name().to_owned(),
                    site_code: None,
                    lab_slug: None,
                };
                issued.slot(
                    team,
                    AppointmentType::Phlebotomy,
                    scheduler.key_prefix(h),
                    record,
                    0.0,
                )
            })
            .collect();
        days.push(DaySlots {
            location: None,
            date: day.to_string(),
            slots,
        });
    }
    booking_keys::insert(&mut *meta.writer().await?, &issued.keys, now).await?;
    Ok(Availability {
        slots: days,
        timezone: Some(tz.name().to_owned()),
    })
}

/// Centres a PSC availability covers.
pub const PSC_SITES: usize = 3;

/// `POST /v3/order/psc/appointment/availability?lab=&zip_code=&radius=`: slots of the nearest
/// centres of the lab within the radius.
pub async fn psc(
    meta: &MetadataStore,
    scheduler: &dyn Scheduler,
    index: &PscIndex,
    team: Uuid,
    lab: &str,
    zip: &'static zips::Zip,
    radius: u32,
) -> Result<Availability, LabError> {
    let tz = zone(zip);
    let now = crate::store::metadata::now();
    let today = now.with_timezone(&tz).date_naive();
    let mut issued = Issued { keys: Vec::new() };
    let mut days = Vec::new();
    for (distance, site) in index
        .within(lab, zip.point, f64::from(radius))
        .into_iter()
        .take(PSC_SITES)
    {
        let address = UsAddress {
            first_line: site.first_line.clone(),
            second_line: None,
            city: site.city.clone(),
            state: site.state.clone(),
            zip_code: site.zip_code.clone(),
            unit: None,
            access_notes: None,
        };
        let location = AppointmentLocation {
            location: site.location,
            distance: distance.round() as i64,
            address: address.clone(),
            code: site.site_code.clone(),
            name: site.name.clone(),
            iana_timezone: Some(tz.name().to_owned()),
        };
        for (day, slots) in day_slots(tz, today, scheduler.hours()) {
            let slots = slots
                .into_iter()
                .map(|(h, start, end)| {
                    let record = SlotRecord {
                        start,
                        end,
                        address: address.clone(),
                        location: site.location,
                        timezone: tz.name().to_owned(),
                        site_code: Some(site.site_code.clone()),
                        lab_slug: Some(lab.to_owned()),
                    };
                    issued.slot(
                        team,
                        AppointmentType::PatientServiceCenter,
                        scheduler.key_prefix(h),
                        record,
                        0.0,
                    )
                })
                .collect();
            days.push(DaySlots {
                location: Some(location.clone()),
                date: day.to_string(),
                slots,
            });
        }
    }
    booking_keys::insert(&mut *meta.writer().await?, &issued.keys, now).await?;
    Ok(Availability {
        slots: days,
        timezone: Some(tz.name().to_owned()),
    })
}
