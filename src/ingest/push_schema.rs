//! The OpenAPI schema of the push body's `timeseries` member, one sample schema per resource,
//! generated from what the push parser reads: the members it accepts (`sample::accepted_keys`,
//! no others), the ones it requires (`sample_rules`, the table the parser checks), the unit it
//! allows and the value ranges it checks. A getter's sample schema (`render::wire_schema`) describes
//! what is answered instead, where `unit` is always present and `type` may be null.
//!
//! A required member with an alias (`timestamp` or `start` on interval families, a note's
//! `content` or `value`) cannot be listed in `required`: the item is then
//! `allOf: [<the object>, {anyOf: [{required: [timestamp]}, {required: [start]}]}]`, one
//! `anyOf` per such member. A member given as `null` counts as left out, so only optional
//! members are nullable.

use serde_json::Value;
use utoipa::openapi::schema::{
    AdditionalProperties, AllOfBuilder, AnyOfBuilder, ArrayBuilder, ObjectBuilder, SchemaType, Type,
};
use utoipa::openapi::{RefOr, Schema};

use super::fields::sample_range;
use super::json_schema::{instant, nullable_array, number, string};
use super::sample::{MAX_DURATION, accepted_keys};
use super::sample_rules::{self, Required};
use crate::schema::{Family, RESOURCES, Resource};

/// A number within `(lo, hi)`, the bounds stated where finite.
fn bounded(nullable: bool, (lo, hi): (f64, f64)) -> ObjectBuilder {
    number(nullable)
        .minimum(lo.is_finite().then_some(lo))
        .maximum(hi.is_finite().then_some(hi))
}

/// The schema of member `key` of a pushed `resource` sample.
fn member(resource: Resource, key: &str, nullable: bool) -> Schema {
    let values = sample_range(resource.name, resource.unit);
    let object = match key {
        "timestamp" | "end" => instant(nullable),
        "start" => instant(nullable)
            .description(Some("Alias of timestamp; equal to it when both are given")),
        "timezone_offset" => {
            let mut types = vec![Type::Integer, Type::String];
            if nullable {
                types.push(Type::Null);
            }
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter(types))
                .description(Some(
                    "Seconds east of UTC, or a zone: +HH:MM, Z or an IANA name",
                ))
        }
        "duration" => bounded(nullable, (0.0, MAX_DURATION))
            .description(Some("Seconds; end − timestamp when end is given")),
        "unit" => {
            let mut allowed = vec![Value::from(resource.unit)];
            if nullable {
                allowed.push(Value::Null);
            }
            string(nullable)
                .enum_values(Some(allowed))
                .description(Some("The resource's unit, the only one accepted"))
        }
        "value" if resource.family == Family::Note => {
            string(nullable).description(Some("Alias of content; equal to it when both are given"))
        }
        "value" | "systolic" | "diastolic" => bounded(nullable, values),
        "tags" if nullable => return Schema::Array(nullable_array(string(false)).build()),
        "tags" => return Schema::Array(ArrayBuilder::new().items(string(false)).build()),
        _ => string(nullable),
    };
    Schema::Object(object.build())
}

/// `{anyOf: [{required: [name]}, ...]}`: one of a required member's names is given.
fn one_of_names(rule: &Required) -> Schema {
    let mut any_of = AnyOfBuilder::new().description(Some(format!(
        "{} is required, under one of its names",
        rule.field
    )));
    for name in rule.names() {
        any_of = any_of.item(
            ObjectBuilder::new()
                .schema_type(SchemaType::AnyValue)
                .required(name),
        );
    }
    Schema::AnyOf(any_of.build())
}

/// The schema of one pushed sample of `resource` (see the module docs).
pub fn push_sample_schema(resource: Resource) -> Schema {
    let rules = sample_rules::required(resource);
    let is_required = |key: &str| rules.iter().any(|r| r.names().any(|n| n == key));
    let mut object = ObjectBuilder::new()
        .schema_type(Type::Object)
        .additional_properties(Some(AdditionalProperties::FreeForm(false)));
    for key in accepted_keys(resource.family) {
        let schema = member(resource, &key, !is_required(&key));
        object = object.property(key, schema);
    }
    let mut aliased = Vec::new();
    for rule in &rules {
        if rule.aliases.is_empty() {
            object = object.required(rule.field);
        } else {
            aliased.push(one_of_names(rule));
        }
    }
    if aliased.is_empty() {
        return Schema::Object(object.build());
    }
    let mut all_of = AllOfBuilder::new().item(object);
    for alternatives in aliased {
        all_of = all_of.item(alternatives);
    }
    Schema::AllOf(all_of.build())
}

/// The push body's `timeseries` member: per resource name, a list of its samples; no other
/// member.
pub fn push_series_schema() -> Schema {
    let mut object = ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(
            "Samples per timeseries resource, each in the shape its getter answers",
        ))
        .additional_properties(Some(AdditionalProperties::FreeForm(false)));
    for resource in RESOURCES {
        object = object.property(
            resource.name,
            ArrayBuilder::new().items(RefOr::T(push_sample_schema(*resource))),
        );
    }
    Schema::Object(object.build())
}
