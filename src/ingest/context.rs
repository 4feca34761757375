//! The context every record of one push body is parsed in (its provider, source, user,
//! fallback zone and `now`), read from the body's `source` object, and the error of a batch
//! that could not be built. Its own file so that the parsers of records (`summary`, `sample`,
//! `cycle`) and of the body (`push`, `push_body`) depend on it, not on each other.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::PushUser;
use super::columns::{Cell, Row};
use super::fields::SOURCE_TYPES;
use super::zone::Zone;
use crate::loc;
use crate::providers;
use crate::validation::read::{self, at};
use crate::validation::{Loc, Violation};

/// The per-body context every record is parsed in.
pub(crate) struct Ctx<'a> {
    pub(crate) provider: &'a str,
    pub(crate) source_type: String,
    app_id: Option<String>,
    device_id: Option<String>,
    pub(crate) fallback: Option<Tz>,
    pub(crate) now: DateTime<Utc>,
    /// The user's id (hyphenated), the first part of every derived id.
    pub(crate) user: String,
}

impl Ctx<'_> {
    /// Sets the source columns and `ingested_at`.
    pub(crate) fn fill_source(&self, row: &mut Row) {
        for (column, cell) in self.source_cells() {
            row.set(column, cell);
        }
    }

    /// The derived `timezone_offset` cell: the record's own zone at `at`, else null. The user's
    /// fallback zone is deliberately not baked in: the engine applies it at query time
    /// (`aggregate-dsl.md` §3.2), so changing a user's fallback zone needs no rewrite.
    pub(crate) fn offset_cell(&self, zone: Option<Zone>, at: DateTime<Utc>) -> Cell {
        offset_cell(zone, at)
    }

    /// The source columns and `ingested_at`, the same for every record of the push.
    pub(crate) fn source_cells(&self) -> [(&'static str, Cell); 5] {
        [
            ("source_provider", Cell::Str(self.provider.to_owned())),
            ("source_type", Cell::Str(self.source_type.clone())),
            ("source_app_id", Cell::opt_str(self.app_id.as_deref())),
            ("source_device_id", Cell::opt_str(self.device_id.as_deref())),
            (
                crate::schema::INGESTED_AT,
                Cell::Micros(self.now.timestamp_micros()),
            ),
        ]
    }
}

/// A record's `timezone_offset` cell: its own zone's offset at `at`, else null.
pub(crate) fn offset_cell(zone: Option<Zone>, at: DateTime<Utc>) -> Cell {
    zone.map_or(Cell::Null, |z| Cell::Int(i64::from(z.offset_at(at))))
}

/// The context of a body: its provider, its `source` object (checked), the user and `now`.
pub(crate) fn source<'a>(
    obj: &read::Obj,
    root: &[Loc],
    provider: &'a providers::Provider,
    user: &PushUser,
    now: DateTime<Utc>,
) -> Result<Ctx<'a>, Violation> {
    let mut ctx = Ctx {
        provider: provider.slug,
        source_type: provider.default_source_type.to_owned(),
        app_id: None,
        device_id: None,
        fallback: user.fallback_time_zone,
        now,
        user: user.user_id.to_string(),
    };
    if let Some(src) = obj.get("source").filter(|v| !v.is_null()) {
        let sloc = at(root, "source");
        let src = read::object(src, &sloc)?;
        read::forbid_extra(src, &sloc, |k| matches!(k, "type" | "app_id" | "device_id"))?;
        if let Some(t) = read::string(src, "type", &sloc)? {
            read::one_of(t, SOURCE_TYPES, "type", &sloc)?;
            ctx.source_type = t.to_owned();
        }
        ctx.app_id = read::string(src, "app_id", &sloc)?.map(str::to_owned);
        ctx.device_id = read::string(src, "device_id", &sloc)?.map(str::to_owned);
    }
    Ok(ctx)
}

/// A batch that could not be built: a bug, reported at the body.
pub(crate) fn internal(e: impl std::fmt::Display) -> Violation {
    Violation::new(
        loc!["body"],
        "value_error",
        format!("could not build the batch: {e}"),
    )
}
