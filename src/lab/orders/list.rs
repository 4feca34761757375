//! `GET /v3/orders`: every filter of the interface, ANDed; the sort keys and directions; pages.
//! Filters become conditions over `lab_orders`' columns with bound values only (no client text
//! in SQL), each backed by an index that starts with `team_id`.
//!
//! Bare dates: `start_date` and `updated_start_date` mean 00:00:00, `end_date` 23:59:59 (the
//! whole second, inclusive) and `updated_end_date` 00:00:00, as the interface documents; a
//! date-time is taken as given (converted to UTC).

use chrono::{DateTime, NaiveDate, Utc};
use uuid::Uuid;

use super::super::LabError;
use super::super::model::enums::{
    ActivationType, Direction, Interpretation, Low, Method, OrderKey,
};
use super::super::model::order::OrdersPage;
use super::super::page::Page;
use crate::loc;
use crate::store::metadata::lab::orders::{self as store, ListQuery, Param};
use crate::store::metadata::{MetadataStore, ts};
use crate::validation::{Invalid, Violation};

/// Query parameters as the HTTP layer decoded them.
pub trait Params {
    /// The last non-empty value of `name`.
    fn one(&self, name: &str) -> Option<&str>;
    /// Every non-empty value of a repeated `name`.
    fn many(&self, name: &str) -> Vec<&str>;
}

/// What a date bound means when it is a bare date.
#[derive(Debug, Clone, Copy)]
enum BareDate {
    StartOfDay,
    EndOfDay,
}

fn bound(raw: &str, bare: BareDate) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(raw) {
        return Some(t.with_timezone(&Utc));
    }
    if let Ok(t) = chrono::NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M:%S%.f") {
        return Some(t.and_utc());
    }
    let d = NaiveDate::parse_from_str(raw, "%Y-%m-%d").ok()?;
    let t = match bare {
        BareDate::StartOfDay => d.and_hms_micro_opt(0, 0, 0, 0)?,
        BareDate::EndOfDay => d.and_hms_micro_opt(23, 59, 59, 999_999)?,
    };
    Some(t.and_utc())
}

/// Escapes `LIKE` wildcards (`\` is the escape character).
fn like_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

struct Builder {
    q: ListQuery,
    violations: Vec<Violation>,
}

impl Builder {
    fn param(&mut self, p: Param) -> String {
        self.q.params.push(p);
        format!("${}", self.q.params.len() + 1)
    }

    fn bad(&mut self, name: &str, raw: &str, msg: String) {
        self.violations
            .push(Violation::value(loc!["query", name], msg).with_input(raw.into()));
    }

    /// `column IN (...)` over the parsed values of a repeated (or comma-separated) parameter.
    fn one_of<T: std::str::FromStr + Copy>(
        &mut self,
        params: &dyn Params,
        name: &str,
        column: &str,
        wire: fn(T) -> &'static str,
        allowed: &str,
    ) {
        let raws: Vec<String> = params
            .many(name)
            .iter()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .collect();
        if raws.is_empty() {
            return;
        }
        let mut holders = Vec::new();
        for raw in &raws {
            match raw.parse::<T>() {
                Ok(v) => {
                    let p = self.param(Param::Text(wire(v).to_owned()));
                    holders.push(p);
                }
                Err(_) => self.bad(
                    name,
                    raw,
                    format!("unknown {name} {raw:?}; expected one of: {allowed}"),
                ),
            }
        }
        if !holders.is_empty() {
            self.q
                .conditions
                .push(format!("{column} IN ({})", holders.join(", ")));
        }
    }

    fn date(&mut self, params: &dyn Params, name: &str, column: &str, op: &str, bare: BareDate) {
        let Some(raw) = params.one(name) else { return };
        match bound(raw, bare) {
            Some(t) => {
                let p = self.param(Param::Text(ts(t)));
                self.q.conditions.push(format!("{column} {op} {p}"));
            }
            None => self.bad(
                name,
                raw,
                format!("{name} must be a date (YYYY-MM-DD) or an ISO 8601 date-time"),
            ),
        }
    }

    fn uuid(&mut self, raw: &str, name: &str) -> Option<Uuid> {
        match Uuid::parse_str(raw) {
            Ok(u) => Some(u),
            Err(_) => {
                self.bad(name, raw, "Input should be a valid UUID".into());
                None
            }
        }
    }

    fn contains(&mut self, column: &str, needle: &str) {
        let p = self.param(Param::Text(format!(
            "%{}%",
            like_literal(&needle.to_lowercase())
        )));
        self.q
            .conditions
            .push(format!("{column} LIKE {p} ESCAPE '\\'"));
    }
}

/// Builds the list query from the parameters (every problem in one 422).
pub fn build(params: &dyn Params, page: Page) -> Result<ListQuery, LabError> {
    let mut b = Builder {
        q: ListQuery::default(),
        violations: Vec::new(),
    };
    if let Some(s) = params.one("search_input") {
        let lower = s.trim().to_lowercase();
        let prefix = b.param(Param::Text(format!("{}%", like_literal(&lower))));
        let inner = b.param(Param::Text(format!("%{}%", like_literal(&lower))));
        b.q.conditions.push(format!(
            "id LIKE {prefix} ESCAPE '\\' OR user_id LIKE {prefix} ESCAPE '\\' OR search_text LIKE {inner} ESCAPE '\\'"
        ));
    }
    b.date(
        params,
        "start_date",
        "created_at",
        ">=",
        BareDate::StartOfDay,
    );
    b.date(params, "end_date", "created_at", "<=", BareDate::EndOfDay);
    b.date(
        params,
        "updated_start_date",
        "updated_at",
        ">=",
        BareDate::StartOfDay,
    );
    b.date(
        params,
        "updated_end_date",
        "updated_at",
        "<=",
        BareDate::StartOfDay,
    );
    b.one_of::<Low>(params, "status", "status", Low::as_str, &Low::names());
    b.one_of::<Method>(
        params,
        "order_type",
        "method",
        Method::as_str,
        &Method::names(),
    );
    b.one_of::<ActivationType>(
        params,
        "order_activation_types",
        "activation_type",
        ActivationType::as_str,
        &ActivationType::names(),
    );
    if let Some(raw) = params.one("is_critical") {
        match raw {
            "true" | "1" => b.q.conditions.push("is_critical = 1".into()),
            "false" | "0" => b.q.conditions.push("is_critical = 0".into()),
            _ => b.bad(
                "is_critical",
                raw,
                "is_critical must be true or false".into(),
            ),
        }
    }
    if let Some(raw) = params.one("interpretation") {
        match raw.parse::<Interpretation>() {
            Ok(i) => {
                let p = b.param(Param::Text(i.as_str().to_owned()));
                b.q.conditions.push(format!("interpretation = {p}"));
            }
            Err(()) => b.bad(
                "interpretation",
                raw,
                format!(
                    "unknown interpretation {raw:?}; expected one of: {}",
                    Interpretation::names()
                ),
            ),
        }
    }
    if let Some(raw) = params.one("user_id")
        && let Some(u) = b.uuid(raw, "user_id")
    {
        let p = b.param(Param::Text(u.to_string()));
        b.q.conditions.push(format!("user_id = {p}"));
    }
    if let Some(raw) = params.one("order_transaction_id")
        && let Some(u) = b.uuid(raw, "order_transaction_id")
    {
        let p = b.param(Param::Text(u.to_string()));
        b.q.conditions.push(format!("transaction_id = {p}"));
    }
    let ids: Vec<String> = params
        .many("order_ids")
        .iter()
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect();
    if !ids.is_empty() {
        let mut holders = Vec::new();
        for raw in &ids {
            if let Some(u) = b.uuid(raw, "order_ids") {
                holders.push(b.param(Param::Text(u.to_string())));
            }
        }
        if !holders.is_empty() {
            b.q.conditions
                .push(format!("id IN ({})", holders.join(", ")));
        }
    }
    if let Some(name) = params.one("patient_name") {
        b.contains("patient_name", name);
    }
    if let Some(name) = params.one("shipping_recipient_name") {
        b.contains("recipient_name", name);
    }
    let key = match params.one("order_key") {
        None => OrderKey::CreatedAt,
        Some(raw) => raw.parse().unwrap_or_else(|()| {
            b.bad(
                "order_key",
                raw,
                format!(
                    "unknown order_key {raw:?}; expected one of: {}",
                    OrderKey::names()
                ),
            );
            OrderKey::CreatedAt
        }),
    };
    let dir = match params.one("order_direction") {
        None => Direction::Desc,
        Some(raw) => raw.parse().unwrap_or_else(|()| {
            b.bad(
                "order_direction",
                raw,
                format!("unknown order_direction {raw:?}; expected one of: asc, desc"),
            );
            Direction::Desc
        }),
    };
    if !b.violations.is_empty() {
        return Err(Invalid(b.violations).into());
    }
    let d = match dir {
        Direction::Asc => "ASC",
        Direction::Desc => "DESC",
    };
    b.q.order_by = match key {
        OrderKey::CreatedAt => format!("created_at {d}, id {d}"),
        OrderKey::PatientName => format!("patient_name {d}, id {d}"),
        OrderKey::LastStatus => format!("status {d}, created_at {d}, id {d}"),
    };
    b.q.limit = page.size;
    b.q.offset = page.offset();
    Ok(b.q)
}

/// `GET /v3/orders`.
pub async fn list(
    meta: &MetadataStore,
    team: Uuid,
    params: &(dyn Params + Sync),
    page: Page,
) -> Result<OrdersPage, LabError> {
    let query = build(params, page)?;
    let (docs, total) = store::list(&mut *meta.reader().await?, team, &query).await?;
    Ok(OrdersPage {
        orders: docs
            .iter()
            .map(|d| super::from_document(d))
            .collect::<Result<_, _>>()?,
        total,
        page: page.page,
        size: page.size,
    })
}
