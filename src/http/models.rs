//! Types of the bodies that belong to no domain module: the error bodies of
//! `rest-conventions.md`, the demo connection's request, and the getters' schemas generated from
//! the wire map. Request models that do belong to a domain live there and are re-exported here.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::data::provider_list::ProviderEntry;
use crate::users::wire::DuplicateUser;
use crate::validation::Violation;

/// An error whose `detail` is a sentence (400, 401, 404, 406, 409, 413, 414, 429, 504).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// What went wrong.
    pub detail: String,
}

/// The 500 body: no cause, the request id to quote.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InternalError {
    /// `Internal server error`.
    pub detail: String,
    /// The request's `x-request-id`.
    pub request_id: String,
}

/// A 422: every problem found, each at its location.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ValidationError {
    /// The problems.
    pub detail: Vec<Violation>,
}

/// The 400 of a `client_user_id` already in use.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DuplicateUserError {
    /// The existing user.
    pub detail: DuplicateUser,
}

pub use crate::users::{NewUserRequest, UserPatchRequest};

/// `GET /v2/user/providers/{user_id}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserProviders {
    /// The user's connections, oldest first.
    pub providers: Vec<ProviderEntry>,
}

/// `POST /v2/link/connect/demo`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct DemoConnectRequest {
    /// The user to connect.
    pub user_id: Uuid,
    /// oura, fitbit, freestyle_libre or apple_health_kit.
    pub provider: String,
    /// Days of history, 1 to 1100 (default 90).
    #[serde(default)]
    pub days: Option<u32>,
    /// regular (default), traveller or athlete.
    #[serde(default)]
    pub persona: Option<crate::sync::connectors::demo::generator::Persona>,
}

/// Schemas generated from the getters' wire map ([`crate::ingest::wire_schema`]), named after
/// the reference's models.
macro_rules! generated {
    ($($(#[$doc:meta])* $ty:ident = $name:literal => $schema:expr;)*) => {$(
        $(#[$doc])*
        pub struct $ty;

        impl utoipa::PartialSchema for $ty {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
                utoipa::openapi::RefOr::T($schema)
            }
        }

        impl ToSchema for $ty {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed($name)
            }
        }
    )*};
}

use crate::ingest::wire_schema::{any_sample_schema, grouped_schema, summary_schema};
use crate::schema::Table;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, Type};

fn list_under(key: &str, table: Table) -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property(
                key,
                ArrayBuilder::new().items(RefOr::T(summary_schema(table))),
            )
            .required(key)
            .build(),
    )
}

generated! {
    /// `{"sleep": [...]}`.
    SleepSummaries = "ClientSleepResponse" => list_under("sleep", Table::Sleep);
    /// `{"activity": [...]}`.
    ActivitySummaries = "ClientActivityResponse" => list_under("activity", Table::Activity);
    /// `{"workouts": [...]}`.
    WorkoutSummaries = "ClientWorkoutResponse" => list_under("workouts", Table::Workout);
    /// `{"body": [...]}`.
    BodySummaries = "ClientBodyResponse" => list_under("body", Table::Body);
    /// `{"meals": [...]}`.
    MealSummaries = "ClientFacingMealResponse" => list_under("meals", Table::Meal);
    /// `{"menstrual_cycle": [...]}`: the cycles whose `period_start` is in the range.
    MenstrualCycleSummaries = "MenstrualCycleResponse" => list_under("menstrual_cycle", Table::MenstrualCycle);
    /// One profile.
    ProfileSummary = "ClientFacingProfile" => summary_schema(Table::Profile);
    /// One timeseries sample of any family.
    Sample = "TimeseriesSample" => any_sample_schema();
    /// One page of samples grouped by provider and source.
    GroupedSamples = "GroupedTimeseriesResponse" => grouped_schema();
}

/// A record schema with no member required (what a push may send).
fn loose(table: Table) -> Schema {
    match summary_schema(table) {
        Schema::Object(mut object) => {
            object.required.clear();
            Schema::Object(object)
        }
        other => other,
    }
}

fn push_body() -> Schema {
    let mut body = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("provider", ObjectBuilder::new().schema_type(Type::String))
        .property(
            "source",
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .property("type", ObjectBuilder::new().schema_type(Type::String))
                .property("app_id", ObjectBuilder::new().schema_type(Type::String))
                .property("device_id", ObjectBuilder::new().schema_type(Type::String)),
        )
        .required("provider");
    for table in [
        Table::Sleep,
        Table::Activity,
        Table::Workout,
        Table::Body,
        Table::Meal,
    ] {
        body = body.property(
            crate::ingest::push_key(table),
            ArrayBuilder::new().items(RefOr::T(loose(table))),
        );
    }
    body = body.property(
        crate::ingest::push_key(Table::MenstrualCycle),
        ArrayBuilder::new().items(RefOr::T(loose(Table::MenstrualCycle))),
    );
    body = body.property("profile", loose(Table::Profile)).property(
        "timeseries",
        crate::ingest::push_schema::push_series_schema(),
    );
    Schema::Object(body.build())
}

generated! {
    /// `POST /v2/user/{user_id}/data`: every part optional; records in the getters' shapes.
    PushBody = "PushBody" => push_body();
}

/// The push answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Pushed {
    /// The user.
    pub user_id: Uuid,
    /// Rows stored per part (push keys), timeseries per resource.
    #[schema(value_type = Object)]
    pub stored: serde_json::Value,
}

/// A period: `value` units (back from the anchor, or an ALIGN cap).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Period {
    /// 1 or more (default 1).
    pub value: Option<u32>,
    /// minute, hour, day, week, month or year.
    pub unit: PeriodUnit,
}

/// The units of a period.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum PeriodUnit {
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

/// The window the queries see (`aggregate-dsl.md` §1.1).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RelativeTimeframe {
    /// `relative` (the default).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The last day of the window.
    pub anchor: NaiveDate,
    /// How far back from the anchor.
    pub past: Period,
}

/// One query (`aggregate-dsl.md` §1.2). Expressions are objects recognised by their
/// distinguishing key (`{"sleep": "efficiency"}`, `{"func": "mean", "arg": ...}`,
/// `{"group_key": "*"}`, `{"date_trunc": {...}, "arg": {"index": "sleep"}}`, ...); §1.3 lists
/// them all. Besides the stored tables (`sleep`, `activity`, `workout`, `body`, `meal`,
/// `profile`) and `timeseries`, a query may read the derived table `derived_readiness`
/// (`analytics.md` §2), computed at query time from the stored ones: `{"derived_readiness": C}`
/// with C one of `date`, `chronotype`, `sleep_score`, `recovery_score`, `recovery_zone`
/// (`Red`, `Amber`, `Green`), `stress_score`, `strain_score`, `strain_zone` (`Low`, `Moderate`,
/// `High`, `Very High`), and `{"index": "derived_readiness"}` (the local day); one row per day,
/// its scores null until the 21 days before it hold 7 nights.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AggregateQuery {
    /// 1 to 64 output columns.
    #[schema(value_type = Vec<super::models_query::SelectExpr>)]
    pub select: Vec<serde_json::Value>,
    /// Grouping expressions (default none).
    #[schema(value_type = Option<Vec<Object>>)]
    pub group_by: Option<Vec<serde_json::Value>>,
    /// A boolean SQL expression over the rows (§2.4).
    #[serde(rename = "where")]
    pub filter: Option<String>,
    /// Fill the empty buckets of the query's `date_trunc` (`analytics.md` §1).
    pub align: Option<AggregateAlign>,
}

/// `align` (`analytics.md` §1): after grouping and aggregation, every bucket of the spine (the
/// observed range, extended by the cap) gets a row; a bucket with no source within the cap is
/// an explicit `null` in every filled column. Each column carries on its own, never across the
/// partitions of the other group keys. Needs a `date_trunc`, no `date_part`, every group key
/// selected, and a cap of at least one `date_trunc` period (else 422).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AggregateAlign {
    /// The carry operator.
    pub carry: Carry,
}

/// How an empty bucket takes a neighbouring bucket's values.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Carry {
    /// The most recent earlier non-empty bucket no older than `max_age`; the spine extends
    /// forward by `max_age`, never past the bucket holding now.
    CarryForward {
        /// The cap (null or absent: no cap).
        max_age: Option<Period>,
    },
    /// The nearest later non-empty bucket within `max_age`; the spine extends backward.
    CarryBackward {
        /// The cap (null or absent: no cap).
        max_age: Option<Period>,
    },
    /// The nearest non-empty bucket either way within `span` (counted in buckets; a tie
    /// takes the past); the spine extends both ways.
    CarryNearest {
        /// The cap (null or absent: no cap).
        span: Option<Period>,
    },
}

/// Provider priority for this request.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AggregateConfig {
    /// Provider slugs, first wins (§3.5).
    pub provider_priority_overrides: Option<Vec<String>>,
}

/// `POST /aggregate/v1/user/{user_id}/query` (`aggregate-dsl.md` §1; `instructions` is an
/// alias of `queries`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AggregateRequest {
    /// The window.
    pub timeframe: RelativeTimeframe,
    /// 1 to 32 queries, answered in order.
    pub queries: Vec<AggregateQuery>,
    /// Options.
    pub config: Option<AggregateConfig>,
}

/// `POST /aggregate/v1/team/query` (`analytics.md` §5): the per-user body, plus `users`; a
/// query's `group_by` may also hold `{"user": "user_id"}` or `{"user": "client_user_id"}`
/// (selected like any group key, as `group_key.N`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TeamAggregateRequest {
    /// The window, in each user's own floating time.
    pub timeframe: RelativeTimeframe,
    /// 1 to 32 queries, answered in order. A team query aggregates (no row-level queries), and
    /// `align` needs a user key.
    pub queries: Vec<AggregateQuery>,
    /// Options.
    pub config: Option<AggregateConfig>,
    /// The users to read (default: every live user of the team).
    pub users: Option<TeamUsers>,
}

/// Which users a team query reads: one of the two lists, 1 to 10,000 ids, each a live user of
/// the team (else 422).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TeamUsers {
    /// wearhouse's user ids.
    pub user_ids: Option<Vec<uuid::Uuid>>,
    /// The team's own user ids.
    pub client_user_ids: Option<Vec<String>>,
}

/// One query's result, column-major: `index` (the group keys) and one array per output column.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AggregateResult {
    /// Column name to its values, one per row.
    #[schema(value_type = std::collections::HashMap<String, Vec<serde_json::Value>>)]
    pub table: serde_json::Value,
}

/// The JSON answer of the aggregate endpoint.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AggregateAnswer {
    /// One per query, in order.
    pub results: Vec<AggregateResult>,
}

/// `GET /health`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
}
