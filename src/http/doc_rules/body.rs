//! The rules the handlers enforce on members of JSON request bodies, stated on the request
//! models' schemas (`components.schemas`) from the same constants and lists the validation
//! reads. A member's schema keeps its type (and its `null` where the model admits one); a rule
//! only narrows what the generated model already says.

use serde_json::Value;
use utoipa::openapi::schema::{ArrayItems, Object, SchemaType, Type};
use utoipa::openapi::{OpenApi, RefOr, Schema};

use super::{catalogue_slugs, oauth_slugs};

/// What a rule narrows a member to.
pub(super) enum Narrow {
    /// One of these strings.
    OneOf(Vec<String>),
    /// An array whose items are each one of these strings.
    ItemsOneOf(Vec<String>),
    /// An array of at least this many items.
    MinItems(usize),
    /// A string matching this pattern.
    Pattern(&'static str),
    /// A string of at most this many characters holding something other than white space.
    Text(usize),
    /// An integer in `min..=max`.
    Range(i64, i64),
    /// An array whose items are each one of these integers.
    ItemsInts(Vec<i64>),
    /// An array of at most this many items.
    MaxItems(usize),
    /// An array holding no item twice.
    UniqueItems,
    /// Not `null` (the model's `Option` only tells "absent" from "present").
    NotNull(Type),
}

/// The models whose validation refuses members it does not know (`additionalProperties:
/// false`), though their Rust type does not say so.
const CLOSED: [&str; 15] = [
    "UserInfoRequest",
    "AddressRequest",
    "MedicalProxyRequest",
    "PrioritiesRequest",
    "DemoConnectRequest",
    "TestEventRequest",
    "NewKeyRequest",
    "NewEndpointRequest",
    "EndpointPatchRequest",
    "NewUserRequest",
    "NewContinuousQuery",
    "PatchContinuousQuery",
    "SchedulingPreferences",
    "DataEvents",
    "ExportPreferences",
];

/// The members the validation requires though their model's type admits absence. (An
/// address's `zip_code` may come as its alias `zip`; the document states the canonical name.)
const REQUIRED: [(&str, &str); 3] = [
    ("UserInfoRequest", "address"),
    ("MedicalProxyRequest", "address"),
    ("AddressRequest", "zip_code"),
];

/// A date `YYYY-MM-DD` in the future (stated as the years 2100 to 2999).
const FUTURE_DATE: &str = "^2[1-9][0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])$";

/// One member's rule: the request model (its schema's name), the member, the narrowing.
struct Member {
    model: &'static str,
    member: &'static str,
    narrow: Narrow,
}

fn member(model: &'static str, member: &'static str, narrow: Narrow) -> Member {
    Member {
        model,
        member,
        narrow,
    }
}

/// A date `YYYY-MM-DD` in the past (stated as 1900-01-01 to 2019-12-28: a pattern cannot follow
/// the calendar or the clock, so it promises less than the validation accepts).
const PAST_DATE: &str = "^(19[0-9]{2}|200[0-9]|201[0-9])-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])$";

/// A date `YYYY-MM-DD` (days past the 28th accepted but not promised).
const DATE: &str = "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])$";

/// Something other than white space.
const NOT_BLANK: &str = r"\S";

/// A webhook receiver this deployment accepts by default: `https`, a host name (no address
/// literal, no single-label name such as `localhost`), no port.
const WEBHOOK_URL: &str =
    r"^https://[a-z][a-z0-9-]{0,30}(\.[a-z][a-z0-9-]{0,30}){1,3}(/[A-Za-z0-9._~-]{1,40}){0,4}$";

/// A `client_user_id` that is neither an e-mail address nor a phone number (it starts with a
/// letter and holds no `@`); 1 to 256 characters.
const CLIENT_USER_ID: &str = "^[A-Za-z][A-Za-z0-9_.:-]{0,255}$";

/// A uuid, as a pattern (the generators of some clients do not read `format`).
const UUID: &str = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

/// An absolute `http` or `https` URL with a host.
const HTTP_URL: &str = r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$";

fn strings<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    values.into_iter().map(str::to_owned).collect()
}

fn event_types() -> Vec<String> {
    crate::events::EventType::all()
        .into_iter()
        .map(|t| t.name())
        .collect()
}

fn time_zones() -> Vec<String> {
    strings(chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name()))
}

fn linkable() -> Vec<String> {
    strings(
        crate::providers::CATALOGUE
            .iter()
            .filter(|p| crate::link::tokens::is_linkable(p))
            .map(|p| p.slug),
    )
}

fn demo_providers() -> Vec<String> {
    strings(
        crate::providers::CATALOGUE
            .iter()
            .filter(|p| crate::sync::connectors::demo::generator::is_demo_provider(p.slug))
            .map(|p| p.slug),
    )
}

/// Every member rule, by the module whose validation enforces it.
fn members() -> Vec<Member> {
    use Narrow::*;
    let lab_text = crate::lab::catalogue::TEXT_LIMITS;
    let (async_min, async_max, _) = crate::lab::appointments::validate::ASYNC_TIMEOUT_MS;
    let mut rules = vec![
        member("NewUserRequest", "fallback_time_zone", OneOf(time_zones())),
        member(
            "UserPatchRequest",
            "fallback_time_zone",
            OneOf(time_zones()),
        ),
        member("NewUserRequest", "fallback_birth_date", Pattern(PAST_DATE)),
        member(
            "UserPatchRequest",
            "fallback_birth_date",
            Pattern(PAST_DATE),
        ),
        member(
            "PrioritiesRequest",
            "priorities",
            ItemsOneOf(catalogue_slugs()),
        ),
        member("PrioritiesRequest", "priorities", UniqueItems),
        member("UserPatchRequest", "client_user_id", NotNull(Type::String)),
        member("AddressRequest", "zip_code", NotNull(Type::String)),
        member("CreateOrder", "activate_by", Pattern(FUTURE_DATE)),
        member(
            "ProviderCredentialsRequest",
            "client_id",
            Pattern(NOT_BLANK),
        ),
        member(
            "ProviderCredentialsRequest",
            "client_secret",
            Pattern(NOT_BLANK),
        ),
        member(
            "ProviderCredentialsRequest",
            "redirect_uri",
            Pattern(HTTP_URL),
        ),
        member("TestEventRequest", "event_type", OneOf(event_types())),
        member(
            "NewEndpointRequest",
            "event_types",
            ItemsOneOf(event_types()),
        ),
        member("NewEndpointRequest", "event_types", MinItems(1)),
        member(
            "EndpointPatchRequest",
            "event_types",
            ItemsOneOf(event_types()),
        ),
        member("EndpointPatchRequest", "event_types", MinItems(1)),
        member("LinkTokenRequest", "provider", OneOf(linkable())),
        member(
            "LinkTokenRequest",
            "filter_on_providers",
            ItemsOneOf(linkable()),
        ),
        member("LinkTokenRequest", "filter_on_providers", MinItems(1)),
        member("LinkTokenRequest", "redirect_url", Pattern(HTTP_URL)),
        member("BulkImportRequest", "provider", OneOf(oauth_slugs())),
        member("BulkImportRequest", "connections", MinItems(1)),
        member("BulkPauseRequest", "provider", OneOf(oauth_slugs())),
        member("BulkPauseRequest", "user_ids", MinItems(1)),
        member(
            "BulkPauseRequest",
            "user_ids",
            MaxItems(super::super::link::bulk_ops::MAX_USERS),
        ),
        member("BulkPauseRequest", "user_ids", UniqueItems),
        member("BulkTriggerRequest", "provider", OneOf(oauth_slugs())),
        member("BulkTriggerRequest", "user_ids", MinItems(1)),
        member(
            "BulkTriggerRequest",
            "user_ids",
            MaxItems(super::super::link::bulk_ops::MAX_USERS),
        ),
        member("BulkTriggerRequest", "user_ids", UniqueItems),
        member("BulkExportRequest", "provider", OneOf(oauth_slugs())),
        member(
            "BulkExportRequest",
            "user_ids",
            MaxItems(super::super::link::bulk_ops::MAX_USERS),
        ),
        member("DemoConnectRequest", "provider", OneOf(demo_providers())),
        member(
            "DemoConnectRequest",
            "days",
            Range(
                1,
                i64::from(crate::sync::connectors::demo::generator::MAX_DAYS),
            ),
        ),
        member("CreateLabTest", "name", Text(lab_text.name)),
        member("CreateLabTest", "description", Text(lab_text.description)),
        member("CreateLabTest", "marker_ids", MinItems(1)),
        member("PatchLabTest", "name", Text(lab_text.name)),
        member("PatchLabTest", "description", Text(lab_text.description)),
        member(
            "CancelRequest",
            "cancellation_reason_id",
            OneOf(strings(
                crate::lab::appointments::REASONS.iter().map(|r| r.0),
            )),
        ),
        member("BookRequest", "booking_key", Pattern(NOT_BLANK)),
        member(
            "BookRequest",
            "async_confirmation_timeout_millisecond",
            Range(async_min, async_max),
        ),
    ];
    let info = crate::users::info::PATTERNS;
    rules.extend([
        member("UserInfoRequest", "first_name", Pattern(info.name)),
        member("UserInfoRequest", "last_name", Pattern(info.name)),
        member("UserInfoRequest", "email", Pattern(info.email)),
        member("UserInfoRequest", "phone_number", Pattern(info.phone)),
        member("UserInfoRequest", "gender", Pattern(info.short_text)),
        member("UserInfoRequest", "dob", Pattern(PAST_DATE)),
        member("MedicalProxyRequest", "first_name", Pattern(info.name)),
        member("MedicalProxyRequest", "last_name", Pattern(info.name)),
        member(
            "MedicalProxyRequest",
            "relationship",
            Pattern(info.short_text),
        ),
        member("MedicalProxyRequest", "phone_number", Pattern(info.phone)),
        member("MedicalProxyRequest", "email", Pattern(info.email)),
        member(
            "MedicalProxyRequest",
            "household_income",
            Range(0, i64::MAX),
        ),
        member("MedicalProxyRequest", "household_size", Range(0, i64::MAX)),
        member("AddressRequest", "first_line", Text(200)),
        member("AddressRequest", "city", Text(200)),
        member("AddressRequest", "second_line", Text(200)),
        member(
            "AddressRequest",
            "state",
            OneOf(strings(crate::users::info::US_STATES.iter().copied())),
        ),
        member("AddressRequest", "zip_code", Pattern(info.zip)),
        member("AddressRequest", "zip", Pattern(info.zip)),
        member("AddressRequest", "country", OneOf(strings(["US"]))),
        member("NewUserRequest", "client_user_id", Pattern(CLIENT_USER_ID)),
        member(
            "UserPatchRequest",
            "client_user_id",
            Pattern(CLIENT_USER_ID),
        ),
        member("NewEndpointRequest", "url", Pattern(WEBHOOK_URL)),
        member("EndpointPatchRequest", "url", Pattern(WEBHOOK_URL)),
        member("LinkTokenRequest", "on_error", OneOf(strings(["redirect"]))),
        member("LinkTokenRequest", "on_close", OneOf(strings(["redirect"]))),
        member("NewKeyRequest", "name", Text(crate::keys::MAX_NAME_CHARS)),
        member(
            "RotateKeyRequest",
            "overlap_seconds",
            Range(0, crate::keys::MAX_OVERLAP_SECONDS),
        ),
        member(
            "BookRequest",
            "iana_timezone",
            OneOf(strings(
                chrono_tz::TZ_VARIANTS
                    .iter()
                    .map(|tz| tz.name())
                    .filter(|z| crate::lab::appointments::validate::is_valid_zone(z)),
            )),
        ),
        member(
            "CreateLabTest",
            "marker_ids",
            ItemsInts(
                crate::lab::catalogue::markers::all()
                    .iter()
                    .map(|m| m.id)
                    .collect(),
            ),
        ),
        member("OrderSetMarkersRequest", "lab_account_id", Pattern(UUID)),
        member("PushBody", "provider", OneOf(catalogue_slugs())),
        member("AggregateRequest", "queries", MinItems(1)),
        member(
            "AggregateRequest",
            "queries",
            MaxItems(crate::engine::Limits::default().max_queries),
        ),
        member("TeamAggregateRequest", "queries", MinItems(1)),
        member(
            "TeamAggregateRequest",
            "queries",
            MaxItems(crate::engine::Limits::default().max_queries),
        ),
        member("TeamUsers", "user_ids", MinItems(1)),
        member("TeamUsers", "user_ids", MaxItems(crate::team::MAX_SELECTED)),
        member("TeamUsers", "client_user_ids", MinItems(1)),
        member(
            "TeamUsers",
            "client_user_ids",
            MaxItems(crate::team::MAX_SELECTED),
        ),
        member("AggregateQuery", "select", MinItems(1)),
        member(
            "AggregateQuery",
            "select",
            MaxItems(crate::engine::Limits::default().max_select),
        ),
        member("UsAddress", "zip_code", Pattern(info.zip)),
        member("RelativeTimeframe", "type", OneOf(strings(["relative"]))),
        member("Period", "value", Range(1, i64::from(i32::MAX))),
        member("ConnectionRecipe", "access_token", Pattern(NOT_BLANK)),
        member("ConnectionRecipe", "refresh_token", Pattern(NOT_BLANK)),
        member("ConnectionRecipe", "provider_id", Pattern(NOT_BLANK)),
        member("ConnectionRecipe", "expires_at", Range(1, i64::MAX)),
    ]);
    for model in ["NewUserRequest", "UserPatchRequest"] {
        for date in ["ingestion_start", "ingestion_end"] {
            rules.push(member(model, date, Pattern(DATE)));
        }
    }
    rules
}

/// Narrows one schema; answers whether the rule applied to its kind of schema.
fn narrow(schema: &mut Schema, rule: &Narrow) -> bool {
    match (schema, rule) {
        (Schema::Object(o), Narrow::OneOf(values)) => {
            o.enum_values = Some(values.iter().map(|v| Value::from(v.as_str())).collect());
            true
        }
        (Schema::Object(o), Narrow::Pattern(p)) => {
            o.pattern = Some((*p).to_owned());
            true
        }
        (Schema::Object(o), Narrow::Text(max)) => {
            o.pattern = Some(NOT_BLANK.to_owned());
            o.max_length = Some(*max);
            true
        }
        (Schema::Object(o), Narrow::Range(min, max)) => {
            o.minimum = Some((*min).into());
            o.maximum = Some((*max).into());
            true
        }
        (Schema::Array(a), Narrow::MinItems(n)) => {
            a.min_items = Some(*n);
            true
        }
        (Schema::Array(a), Narrow::UniqueItems) => {
            a.unique_items = true;
            true
        }
        (Schema::Object(o), Narrow::NotNull(t)) => {
            o.schema_type = SchemaType::Type(t.clone());
            true
        }
        (Schema::Array(a), Narrow::MaxItems(n)) => {
            a.max_items = Some(*n);
            true
        }
        (Schema::Array(a), Narrow::ItemsInts(values)) => match &mut a.items {
            ArrayItems::RefOrSchema(item) => match item.as_mut() {
                RefOr::T(Schema::Object(o)) => {
                    o.enum_values = Some(values.iter().map(|v| Value::from(*v)).collect());
                    true
                }
                _ => false,
            },
            ArrayItems::False => false,
        },
        (Schema::Array(a), Narrow::ItemsOneOf(values)) => match &mut a.items {
            ArrayItems::RefOrSchema(item) => match item.as_mut() {
                RefOr::T(Schema::Object(o)) => {
                    o.enum_values = Some(values.iter().map(|v| Value::from(v.as_str())).collect());
                    true
                }
                _ => false,
            },
            ArrayItems::False => false,
        },
        // `Option<T>` of a model: `oneOf [null, T]`; narrow the `T`.
        (Schema::OneOf(one), _) => one.items.iter_mut().any(|item| match item {
            RefOr::T(s) => narrow(s, rule),
            RefOr::Ref(_) => false,
        }),
        _ => false,
    }
}

fn model<'a>(doc: &'a mut OpenApi, name: &str) -> Option<&'a mut Object> {
    match doc.components.as_mut()?.schemas.get_mut(name)? {
        RefOr::T(Schema::Object(o)) => Some(o),
        _ => None,
    }
}

/// States every member rule in `doc`; answers the rules that found no member to narrow.
pub(super) fn apply(doc: &mut OpenApi) -> Vec<String> {
    let mut unmatched = Vec::new();
    for name in CLOSED {
        match model(doc, name) {
            Some(m) => {
                m.additional_properties = Some(Box::new(
                    utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
                ));
            }
            None => unmatched.push(name.to_owned()),
        }
    }
    for (name, member) in REQUIRED {
        match model(doc, name) {
            Some(m) => {
                if !m.required.iter().any(|r| r == member) {
                    m.required.push(member.to_owned());
                }
                // Present, so not the `null` its `Option` documents either.
                if let Some(RefOr::T(Schema::OneOf(one))) = m.properties.get_mut(member) {
                    one.items.retain(|item| {
                        !matches!(item, RefOr::T(Schema::Object(o))
                            if o.schema_type == SchemaType::Type(Type::Null))
                    });
                }
            }
            None => unmatched.push(format!("{name}.{member} (required)")),
        }
    }
    for rule in members() {
        let applied = model(doc, rule.model)
            .and_then(|m| m.properties.get_mut(rule.member))
            .is_some_and(|s| match s {
                RefOr::T(schema) => narrow(schema, &rule.narrow),
                RefOr::Ref(_) => false,
            });
        if !applied {
            unmatched.push(format!("{}.{}", rule.model, rule.member));
        }
    }
    unmatched
}
