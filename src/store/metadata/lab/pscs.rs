//! `lab_pscs`: patient service centres imported by `wearhouse lab import-pscs`.

use sqlx::AnyConnection;

use super::super::{MetadataError, get_opt_str, get_str, now, ts};
use super::{from_json, to_json};

/// One imported centre.
#[derive(Debug, Clone, PartialEq)]
pub struct PscRecord {
    /// The lab's slug.
    pub lab_slug: String,
    /// The lab's code for it.
    pub site_code: String,
    /// Name.
    pub name: String,
    /// Street address.
    pub first_line: String,
    /// City.
    pub city: String,
    /// State.
    pub state: String,
    /// ZIP code.
    pub zip_code: String,
    /// Latitude.
    pub lat: f64,
    /// Longitude.
    pub lng: f64,
    /// Phone.
    pub phone_number: Option<String>,
    /// Capabilities.
    pub capabilities: Vec<String>,
}

/// Replaces the imported centres of every lab named in `centres` with `centres`.
pub async fn replace(conn: &mut AnyConnection, centres: &[PscRecord]) -> Result<(), MetadataError> {
    let mut labs: Vec<&str> = centres.iter().map(|p| p.lab_slug.as_str()).collect();
    labs.sort_unstable();
    labs.dedup();
    for lab in labs {
        sqlx::query("DELETE FROM lab_pscs WHERE lab_slug = $1")
            .bind(lab)
            .execute(&mut *conn)
            .await?;
    }
    let at = ts(now());
    for p in centres {
        sqlx::query(
            "INSERT INTO lab_pscs (lab_slug, site_code, name, first_line, city, state, zip_code, \
             lat, lng, phone_number, capabilities, imported_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(&p.lab_slug)
        .bind(&p.site_code)
        .bind(&p.name)
        .bind(&p.first_line)
        .bind(&p.city)
        .bind(&p.state)
        .bind(&p.zip_code)
        .bind(p.lat)
        .bind(p.lng)
        .bind(p.phone_number.clone())
        .bind(to_json(&p.capabilities))
        .bind(&at)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Every imported centre.
pub async fn all(conn: &mut AnyConnection) -> Result<Vec<PscRecord>, MetadataError> {
    let rows = sqlx::query(
        "SELECT lab_slug, site_code, name, first_line, city, state, zip_code, lat, lng, \
         phone_number, capabilities FROM lab_pscs ORDER BY lab_slug, site_code",
    )
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(PscRecord {
                lab_slug: get_str(r, "lab_slug")?,
                site_code: get_str(r, "site_code")?,
                name: get_str(r, "name")?,
                first_line: get_str(r, "first_line")?,
                city: get_str(r, "city")?,
                state: get_str(r, "state")?,
                zip_code: get_str(r, "zip_code")?,
                lat: sqlx::Row::try_get(r, "lat")?,
                lng: sqlx::Row::try_get(r, "lng")?,
                phone_number: get_opt_str(r, "phone_number")?,
                capabilities: from_json("capabilities", get_str(r, "capabilities")?)?,
            })
        })
        .collect()
}
