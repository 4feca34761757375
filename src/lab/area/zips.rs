//! The US ZIP code centroid table (`assets/lab/zip_centroids.csv.gz`, see the README beside
//! it), embedded in the binary and parsed once on first use, and great-circle distances.

use std::io::Read;
use std::sync::OnceLock;

use crate::lab::model::area::LngLat;

/// One ZIP code's centroid and area.
#[derive(Debug, Clone, PartialEq)]
pub struct Zip {
    /// Five digits.
    pub code: String,
    /// Centroid.
    pub point: LngLat,
    /// State (two letters).
    pub state: String,
    /// City.
    pub city: String,
    /// IANA time zone (may be empty).
    pub timezone: String,
}

const TABLE: &[u8] = include_bytes!("../../../assets/lab/zip_centroids.csv.gz");

/// Mean Earth radius in statute miles (IUGG mean radius 6371.0088 km).
pub const EARTH_RADIUS_MILES: f64 = 3958.7613;

fn parse_table() -> Vec<Zip> {
    let mut text = String::new();
    if flate2::read::GzDecoder::new(TABLE)
        .read_to_string(&mut text)
        .is_err()
    {
        tracing::error!("the embedded ZIP table does not decompress");
        return Vec::new();
    }
    let mut out = Vec::with_capacity(42_000);
    for line in text.lines().skip(1) {
        let mut f = line.split(',');
        let (Some(code), Some(lat), Some(lng), Some(state), Some(city), Some(tz)) =
            (f.next(), f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let (Ok(lat), Ok(lng)) = (lat.parse(), lng.parse()) else {
            continue;
        };
        out.push(Zip {
            code: code.to_owned(),
            point: LngLat { lng, lat },
            state: state.to_owned(),
            city: city.to_owned(),
            timezone: tz.to_owned(),
        });
    }
    out
}

/// Every ZIP code, sorted by code.
pub fn all() -> &'static [Zip] {
    static ZIPS: OnceLock<Vec<Zip>> = OnceLock::new();
    ZIPS.get_or_init(parse_table)
}

/// The ZIP code `code` (five digits; a `-NNNN` suffix is ignored).
pub fn lookup(code: &str) -> Option<&'static Zip> {
    let five = code.get(..5)?;
    let zips = all();
    zips.binary_search_by(|z| z.code.as_str().cmp(five))
        .ok()
        .and_then(|i| zips.get(i))
}

/// Whether `code` is shaped like a ZIP code: five digits, optionally `-` and four digits (the
/// rule user info's addresses follow).
pub fn is_well_formed(code: &str) -> bool {
    crate::users::info::is_valid_zip(code)
}

/// Great-circle distance in miles (haversine formula).
pub fn haversine_miles(a: LngLat, b: LngLat) -> f64 {
    let (lat1, lat2) = (a.lat.to_radians(), b.lat.to_radians());
    let dlat = lat2 - lat1;
    let dlng = (b.lng - a.lng).to_radians();
    let h = (dlat / 2.0).sin().powi(2) + lat1.cos() * lat2.cos() * (dlng / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_MILES * h.sqrt().min(1.0).asin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_loads_and_finds_real_codes() {
        assert!(all().len() > 40_000);
        let phoenix = lookup("85004").unwrap();
        assert_eq!(phoenix.state, "AZ");
        assert_eq!(phoenix.timezone, "America/Phoenix");
        assert_eq!(lookup("85004-1234").unwrap().code, "85004");
        assert!(lookup("00000").is_none());
        assert!(is_well_formed("12345-6789"));
        assert!(!is_well_formed("1234"));
        assert!(!is_well_formed("12345-678"));
    }

    #[test]
    fn haversine_matches_a_known_distance() {
        // One degree of latitude along a meridian: 2πR/360.
        let d = haversine_miles(LngLat { lng: 0.0, lat: 0.0 }, LngLat { lng: 0.0, lat: 1.0 });
        assert!((d - 69.093).abs() < 0.01, "{d}");
    }
}
