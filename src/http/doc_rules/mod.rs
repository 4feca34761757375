//! The rules the handlers enforce on path and query parameters, stated in the OpenAPI document
//! from the same definitions the handlers check against (the catalogue, the resource list,
//! each list's [`IntParam`]), so a client generated from the document never sends what will be
//! refused, and a rule changed in one place changes in both.
//!
//! The macros of `utoipa::path` take literal bounds and closed Rust enums only; these rules are
//! values (the catalogue is data), so they are applied to the generated document here, once,
//! by operation and parameter name; a unit test fails when a rule's operation or parameter is
//! gone.
//!
//! What JSON Schema cannot state (one field's rule depending on another's value, or on the
//! stored state: `end_date` after `start_date`, a zip code the lab serves) is said in the
//! operation's description; such requests answer 422 (cross-field) or 400 (state).

use serde_json::Value;
use utoipa::openapi::path::{Operation, Parameter, ParameterIn};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{OpenApi, RefOr, Required, Schema};

use super::extract::IntParam;

mod body;

/// What a rule says of a parameter's values.
enum Values {
    /// An integer between the rule's bounds.
    Int(IntParam),
    /// A number in `min..=max`.
    Number(f64, f64),
    /// One of these strings.
    OneOf(Vec<String>),
    /// One of these integers.
    Ints(Vec<i64>),
    /// A list (repeated or comma-separated) of these strings.
    ListOf(Vec<String>),
    /// A string matching this pattern.
    Pattern(&'static str),
    /// A uuid.
    Uuid,
    /// A date `YYYY-MM-DD` or a date-time with an offset (the getters' bounds).
    DateOrDateTime,
}

/// One rule: the operation (method, path template), the parameter, its values, and whether it
/// is required (`None` keeps what the handler's documentation says).
struct Rule {
    method: &'static str,
    path: &'static str,
    location: ParameterIn,
    name: &'static str,
    values: Values,
    required: Option<bool>,
}

fn rule(method: &'static str, path: &'static str, name: &'static str, values: Values) -> Rule {
    Rule {
        method,
        path,
        location: ParameterIn::Query,
        name,
        values,
        required: None,
    }
}

fn path_rule(method: &'static str, path: &'static str, name: &'static str, values: Values) -> Rule {
    Rule {
        location: ParameterIn::Path,
        required: Some(true),
        ..rule(method, path, name, values)
    }
}

fn strings<'a>(values: impl IntoIterator<Item = &'a str>) -> Values {
    Values::OneOf(values.into_iter().map(str::to_owned).collect())
}

/// Every catalogue slug.
pub(super) fn catalogue_slugs() -> Vec<String> {
    crate::providers::CATALOGUE
        .iter()
        .map(|p| p.slug.to_owned())
        .collect()
}

/// The slugs of the providers that connect through OAuth.
pub(super) fn oauth_slugs() -> Vec<String> {
    crate::providers::CATALOGUE
        .iter()
        .filter(|p| crate::providers::scopes::is_oauth(p))
        .map(|p| p.slug.to_owned())
        .collect()
}

fn catalogue() -> Values {
    Values::OneOf(catalogue_slugs())
}

fn oauth_providers() -> Values {
    Values::OneOf(oauth_slugs())
}

/// `GET /v3/orders`' enumerations (`lab::orders::list`).
fn order_list_rules() -> Vec<Rule> {
    use crate::lab::model::enums::{
        ActivationType, Direction, Interpretation, Low, Method, OrderKey,
    };
    fn names<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> Vec<String> {
        all.iter().map(|v| name(*v).to_owned()).collect()
    }
    let orders = |name, values| rule("get", "/v3/orders", name, values);
    vec![
        orders("status", Values::ListOf(names(Low::ALL, Low::as_str))),
        orders(
            "order_type",
            Values::ListOf(names(Method::ALL, Method::as_str)),
        ),
        orders(
            "order_activation_types",
            Values::ListOf(names(ActivationType::ALL, ActivationType::as_str)),
        ),
        orders(
            "interpretation",
            Values::OneOf(names(Interpretation::ALL, Interpretation::as_str)),
        ),
        orders(
            "order_key",
            Values::OneOf(names(OrderKey::ALL, OrderKey::as_str)),
        ),
        orders(
            "order_direction",
            Values::OneOf(names(Direction::ALL, Direction::as_str)),
        ),
    ]
}

fn lab_ids() -> Values {
    Values::Ints(crate::lab::catalogue::labs::ids().collect())
}

/// A date-time with seconds and an offset (RFC 3339).
const DATE_TIME: &str = r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9])$";

/// The ZIP code of the lab's query parameters: exactly five digits (`lab::area::known_zip`).
const FIVE_DIGIT_ZIP: &str = "^[0-9]{5}$";

/// The providers that take an application or account on `/v2/team/provider/{provider}/
/// credentials`: OAuth providers, and e-mail providers read through a follower account.
fn credential_providers() -> Values {
    let mut slugs = oauth_slugs();
    slugs.extend(
        crate::providers::CATALOGUE
            .iter()
            .filter(|p| crate::link::email::uses_account(p.slug))
            .map(|p| p.slug.to_owned()),
    );
    Values::OneOf(slugs)
}

fn email_providers() -> Values {
    strings(
        crate::providers::CATALOGUE
            .iter()
            .filter(|p| p.auth_type == crate::providers::AuthType::Email)
            .map(|p| p.slug),
    )
}

fn password_providers() -> Values {
    strings(
        crate::providers::CATALOGUE
            .iter()
            .filter(|p| p.auth_type == crate::providers::AuthType::Password)
            .map(|p| p.slug),
    )
}

/// Every rule, grouped by the module whose handlers enforce it.
fn rules() -> Vec<Rule> {
    use Values::*;
    let lab_page = [super::lab::PAGE, super::lab::SIZE];
    let mut rules = vec![
        rule("get", "/v2/team/jobs", "page", Int(super::jobs::PAGE)),
        rule("get", "/v2/team/jobs", "size", Int(super::jobs::SIZE)),
        rule("get", "/v2/user", "offset", Int(super::users::OFFSET)),
        rule("get", "/v2/user", "limit", Int(super::users::LIMIT)),
        rule(
            "post",
            "/v2/user/refresh/{user_id}",
            "timeout",
            Number(5.0, 60.0),
        ),
        rule(
            "get",
            "/v2/link/bulk_op",
            "page_size",
            Int(super::link::bulk_import::PAGE_SIZE),
        ),
        rule(
            "get",
            "/v2/team/events",
            "limit",
            Int(super::webhooks::LIMIT),
        ),
        rule(
            "get",
            "/v2/team/webhooks/{id}/deliveries",
            "limit",
            Int(super::webhooks::LIMIT),
        ),
        rule(
            "get",
            "/v3/lab_test",
            "lab_test_limit",
            Int(super::lab::catalogue::LAB_TEST_LIMIT),
        ),
        rule("get", "/v3/lab_tests/markers", "lab_id", lab_ids()),
        rule("get", "/v3/order/psc/info", "lab_id", lab_ids()),
        rule(
            "get",
            "/v3/order/{order_id}/psc/info",
            "radius",
            OneOf(crate::lab::area::RADII.iter().map(u32::to_string).collect()),
        ),
        rule(
            "get",
            "/v3/order/{order_id}/psc/info",
            "capabilities",
            ListOf(
                crate::lab::area::order_pscs::CAPABILITIES
                    .iter()
                    .map(|c| (*c).to_owned())
                    .collect(),
            ),
        ),
        rule("get", "/v3/lab_test", "next_cursor", Uuid),
        rule("get", "/v2/link/bulk_op", "next_cursor", Uuid),
        rule("get", "/v2/team/events", "since", Pattern(DATE_TIME)),
        Rule {
            location: ParameterIn::Header,
            ..rule(
                "post",
                "/v3/order",
                "X-Idempotency-Key",
                Pattern(crate::lab::orders::idempotency::KEY_PATTERN),
            )
        },
        rule(
            "get",
            "/v2/team/jobs",
            "state",
            strings(crate::jobs::JobState::ALL.iter().map(|s| s.as_str())),
        ),
        rule(
            "get",
            "/v2/team/webhooks/{id}/deliveries",
            "status",
            strings(
                crate::store::metadata::deliveries::DeliveryStatus::ALL
                    .iter()
                    .map(|s| s.as_str()),
            ),
        ),
        Rule {
            required: Some(true),
            ..rule(
                "post",
                "/v3/order/{order_id}/test",
                "final_status",
                strings(
                    crate::lab::model::enums::Low::ALL
                        .iter()
                        .map(|s| s.as_str()),
                ),
            )
        },
        Rule {
            required: Some(true),
            ..rule(
                "post",
                "/v3/order/psc/appointment/availability",
                "lab",
                strings(crate::lab::catalogue::labs::slug_list()),
            )
        },
        rule(
            "get",
            "/v2/providers",
            "source_type",
            strings(crate::providers::SOURCE_TYPES.iter().copied()),
        ),
        rule(
            "get",
            "/v2/team/source/priorities",
            "data_type",
            strings(super::teams::DATA_TYPES),
        ),
        Rule {
            required: Some(true),
            ..rule(
                "patch",
                "/v2/team/source/priorities",
                "data_type",
                strings(super::teams::DATA_TYPES),
            )
        },
        path_rule(
            "delete",
            "/v2/user/{user_id}/{provider}",
            "provider",
            catalogue(),
        ),
        path_rule(
            "get",
            "/v2/link/oauth/callback/{provider}",
            "provider",
            catalogue(),
        ),
        path_rule(
            "get",
            "/v2/link/provider/oauth/{provider}",
            "provider",
            oauth_providers(),
        ),
        path_rule(
            "post",
            "/v2/link/provider/password/{provider}",
            "provider",
            password_providers(),
        ),
        path_rule(
            "post",
            "/v2/link/provider/password/{provider}/complete_mfa",
            "provider",
            password_providers(),
        ),
        path_rule(
            "post",
            "/v2/link/provider/email/{provider}",
            "provider",
            email_providers(),
        ),
        path_rule(
            "get",
            "/v2/timeseries/{user_id}/cholesterol/{kind}",
            "kind",
            strings(super::timeseries::CHOLESTEROL_KINDS),
        ),
    ];
    for method in ["get", "put", "delete"] {
        rules.push(path_rule(
            method,
            "/v2/team/provider/{provider}/credentials",
            "provider",
            credential_providers(),
        ));
    }
    for method in ["get", "post"] {
        rules.push(path_rule(
            method,
            "/v2/provider/{provider}/notify",
            "provider",
            strings(crate::sync::notify::NOTIFYING.iter().copied()),
        ));
    }
    for path in [
        "/v2/timeseries/{user_id}/{resource}",
        "/v2/timeseries/{user_id}/{resource}/grouped",
    ] {
        rules.push(path_rule(
            "get",
            path,
            "resource",
            strings(super::timeseries::series_names()),
        ));
    }
    for path in [
        "/v2/summary/sleep/{user_id}",
        "/v2/summary/activity/{user_id}",
        "/v2/summary/workouts/{user_id}",
        "/v2/summary/body/{user_id}",
        "/v2/summary/meal/{user_id}",
        "/v2/summary/menstrual_cycle/{user_id}",
        "/v2/timeseries/{user_id}/{resource}",
        "/v2/timeseries/{user_id}/{resource}/grouped",
        "/v2/timeseries/{user_id}/cholesterol/{kind}",
    ] {
        rules.push(rule("get", path, "start_date", DateOrDateTime));
        rules.push(rule("get", path, "end_date", DateOrDateTime));
    }
    for path in [
        "/v2/summary/sleep/{user_id}",
        "/v2/summary/activity/{user_id}",
        "/v2/summary/workouts/{user_id}",
        "/v2/summary/body/{user_id}",
        "/v2/summary/meal/{user_id}",
        "/v2/summary/profile/{user_id}",
        "/v2/summary/menstrual_cycle/{user_id}",
        "/v2/timeseries/{user_id}/{resource}",
        "/v2/timeseries/{user_id}/{resource}/grouped",
        "/v2/timeseries/{user_id}/cholesterol/{kind}",
    ] {
        rules.push(rule("get", path, "provider", catalogue()));
    }
    rules.extend(order_list_rules());
    rules.extend(surface_data_rules());
    for path in [
        "/v3/lab_tests/markers",
        "/v3/lab_tests/{lab_test_id}/markers",
        "/v3/orders",
        "/v3/lab_tests/list_order_set_markers",
    ] {
        for p in lab_page {
            rules.push(rule(
                if path.ends_with("set_markers") {
                    "post"
                } else {
                    "get"
                },
                path,
                p.name,
                Int(p),
            ));
        }
    }
    for (method, path) in [
        ("get", "/v3/order/area/info"),
        ("get", "/v3/order/psc/info"),
        ("post", "/v3/order/psc/appointment/availability"),
    ] {
        rules.push(Rule {
            required: Some(true),
            ..rule(method, path, "zip_code", Pattern(FIVE_DIGIT_ZIP))
        });
    }
    rules
}

/// The rules of issue 42's data operations (`sessions.rs`, `introspect.rs`).
fn surface_data_rules() -> Vec<Rule> {
    use Values::*;
    let mut rules = Vec::new();
    for path in [
        "/v2/summary/sleep_cycle/{user_id}",
        "/v2/summary/electrocardiogram/{user_id}",
    ] {
        rules.push(rule("get", path, "start_date", DateOrDateTime));
        rules.push(rule("get", path, "end_date", DateOrDateTime));
        rules.push(rule("get", path, "provider", catalogue()));
    }
    for path in ["/v2/introspect/resources", "/v2/introspect/historical_pull"] {
        rules.push(rule(
            "get",
            path,
            "user_limit",
            Int(super::introspect::USER_LIMIT),
        ));
        rules.push(rule("get", path, "provider", catalogue()));
        rules.push(rule("get", path, "cursor", Uuid));
        rules.push(rule("get", path, "next_cursor", Uuid));
    }
    rules
}

fn schema(values: &Values) -> Schema {
    let builder = ObjectBuilder::new();
    let builder = match values {
        Values::Int(p) => builder
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(p.min as f64))
            .maximum(Some(p.max as f64))
            .default(Some(Value::from(p.default))),
        Values::Number(min, max) => builder
            .schema_type(Type::Number)
            .minimum(Some(*min))
            .maximum(Some(*max)),
        Values::OneOf(values) => builder
            .schema_type(Type::String)
            .enum_values(Some(values.clone())),
        Values::Ints(values) => builder
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .enum_values(Some(values.clone())),
        Values::Pattern(p) => builder.schema_type(Type::String).pattern(Some(*p)),
        Values::ListOf(values) => {
            return Schema::Array(
                utoipa::openapi::schema::ArrayBuilder::new()
                    .items(
                        ObjectBuilder::new()
                            .schema_type(Type::String)
                            .enum_values(Some(values.clone())),
                    )
                    .build(),
            );
        }
        Values::Uuid => builder
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid))),
        Values::DateOrDateTime => builder
            .schema_type(Type::String)
            .pattern(Some(crate::ingest::DATE_OR_DATE_TIME_PATTERN)),
    };
    Schema::Object(builder.build())
}

fn operation<'a>(doc: &'a mut OpenApi, method: &str, path: &str) -> Option<&'a mut Operation> {
    let item = doc.paths.paths.get_mut(path)?;
    match method {
        "get" => item.get.as_mut(),
        "post" => item.post.as_mut(),
        "put" => item.put.as_mut(),
        "patch" => item.patch.as_mut(),
        "delete" => item.delete.as_mut(),
        _ => None,
    }
}

fn parameter<'a>(doc: &'a mut OpenApi, rule: &Rule) -> Option<&'a mut Parameter> {
    operation(doc, rule.method, rule.path)?
        .parameters
        .as_mut()?
        .iter_mut()
        .find(|p| p.name == rule.name && p.parameter_in == rule.location)
}

/// States every rule in `doc`; answers the rules it found no parameter or member for.
fn apply_rules(doc: &mut OpenApi) -> Vec<String> {
    let mut unmatched = body::apply(doc);
    for rule in rules() {
        match parameter(doc, &rule) {
            Some(param) => {
                param.schema = Some(RefOr::T(schema(&rule.values)));
                if let Some(required) = rule.required {
                    param.required = if required {
                        Required::True
                    } else {
                        Required::False
                    };
                }
            }
            None => unmatched.push(format!("{} {} {}", rule.method, rule.path, rule.name)),
        }
    }
    unmatched
}

/// States the rules that depend on this deployment's configuration: the getters' page `limit`,
/// capped by `--getter-max-rows`.
pub fn apply_deployment(doc: &mut OpenApi, config: &super::HttpConfig) {
    let rows = config.getter_limits.rows.max(1);
    let cap = |(_, max): (usize, usize)| i64::try_from(max.min(rows)).unwrap_or(i64::MAX);
    for (path, page) in [
        (
            "/v2/timeseries/{user_id}/{resource}",
            super::timeseries::PLAIN_PAGE,
        ),
        (
            "/v2/timeseries/{user_id}/cholesterol/{kind}",
            super::timeseries::PLAIN_PAGE,
        ),
        (
            "/v2/timeseries/{user_id}/{resource}/grouped",
            super::timeseries::GROUPED_PAGE,
        ),
    ] {
        let limit = IntParam::new("limit", cap(page), 1, cap(page));
        let rule = rule("get", path, "limit", Values::Int(limit));
        match parameter(doc, &rule) {
            Some(param) => param.schema = Some(RefOr::T(schema(&rule.values))),
            None => tracing::warn!(path, "no limit parameter to state"),
        }
    }
}

/// States the handlers' parameter rules in the document.
pub fn apply(doc: &mut OpenApi) {
    for gone in apply_rules(doc) {
        tracing::warn!(rule = %gone, "an OpenAPI parameter rule matches no operation");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_rule_finds_its_parameter() {
        let mut doc = crate::http::openapi();
        assert_eq!(super::apply_rules(&mut doc), Vec::<String>::new());
    }
}
