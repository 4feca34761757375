//! The OpenAPI schemas of the query language's list-column expressions (`analytics.md` §3):
//! the scalar-output subquery and the select items that admit it. The other expression objects
//! of `aggregate-dsl.md` §1.3 stay open objects (their closed sets are long and checked by the
//! validation; the golden and differential suites cover them).

use serde::Serialize;
use utoipa::openapi::schema::{AnyOfBuilder, ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

/// The functions of an aggregate or a subquery (`aggregate-dsl.md` §3.6).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum AggregateFunc {
    Mean,
    Min,
    Max,
    Sum,
    Count,
    Median,
    Stddev,
    Oldest,
    Newest,
}

/// What a subquery reduces: `arg` null counts the elements (`count` only);
/// `{"<list column>": "<field>"}` (optionally with `"field_for": "<table>"`) reduces a struct
/// field; `{"element": true}` reduces the elements of a list of scalars.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SubquerySelect {
    /// The reducing function.
    pub func: AggregateFunc,
    /// null, `{"<list column>": "<field>"}` or `{"element": true}`.
    #[schema(value_type = Option<Object>)]
    pub arg: Option<serde_json::Value>,
}

/// `{"unnest": {"<table>": "<list column>"}}`: the list column whose elements the subquery
/// reads (`menstrual_cycle`'s ten entry lists, `sleep`'s `hypnogram` stage codes).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UnnestExpr {
    /// `{"menstrual_cycle": "basal_body_temperature"}`, `{"sleep": "hypnogram"}`, ...
    #[schema(value_type = std::collections::HashMap<String, String>)]
    pub unnest: serde_json::Value,
}

/// A scalar-output subquery (`analytics.md` §3): reduces one list column per row to one value,
/// named `<func>.<list>`, `<func>.<list>.<field>` or `<func>.<list>.element`. In a grouped
/// query it is the `arg` of an outer aggregate (`mean.mean.basal_body_temperature.value`).
/// A list column is never selected directly (422).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScalarOutputSubqueryExpr {
    /// The reduction.
    pub select: SubquerySelect,
    /// The list column.
    pub from: UnnestExpr,
    /// A predicate over the element's fields (`element` for a list of scalars), in the WHERE
    /// language of `aggregate-dsl.md` §2.4.
    #[serde(rename = "where")]
    pub filter: Option<String>,
}

/// An aggregate whose `arg` is a subquery: the outer aggregate of a grouped query.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AggregateOverSubqueryExpr {
    /// The outer function.
    pub func: AggregateFunc,
    /// The subquery it aggregates.
    pub arg: ScalarOutputSubqueryExpr,
}

/// A select item: any expression object of `aggregate-dsl.md` §1.3, a scalar-output subquery,
/// or an aggregate over one.
pub struct SelectExpr;

impl PartialSchema for SelectExpr {
    fn schema() -> RefOr<Schema> {
        let reference = |name: &str| RefOr::Ref(utoipa::openapi::Ref::from_schema_name(name));
        RefOr::T(Schema::AnyOf(
            AnyOfBuilder::new()
                .item(reference("ScalarOutputSubqueryExpr"))
                .item(reference("AggregateOverSubqueryExpr"))
                .item(ObjectBuilder::new().schema_type(Type::Object))
                .description(Some(
                    "An expression object (aggregate-dsl.md §1.3), a scalar-output subquery over a list column, or an aggregate over one",
                ))
                .build(),
        ))
    }
}

impl ToSchema for SelectExpr {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("SelectExpr")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((
            ScalarOutputSubqueryExpr::name().into(),
            ScalarOutputSubqueryExpr::schema(),
        ));
        <ScalarOutputSubqueryExpr as ToSchema>::schemas(schemas);
        schemas.push((
            AggregateOverSubqueryExpr::name().into(),
            AggregateOverSubqueryExpr::schema(),
        ));
        <AggregateOverSubqueryExpr as ToSchema>::schemas(schemas);
    }
}
