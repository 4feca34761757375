//! The rules the handlers enforce on members of JSON request bodies, stated on the request
//! models' schemas (`components.schemas`) from the same constants and lists the validation
//! reads. A member's schema keeps its type (and its `null` where the model admits one); a rule
//! only narrows what the generated model already says.

use serde_json::Value;
use utoipa::openapi::schema::{ArrayItems, Object};
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
}

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
            .filter(|p| crate::ingest::demo::is_demo_provider(p.slug))
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
        member("DemoConnectRequest", "provider", OneOf(demo_providers())),
        member(
            "DemoConnectRequest",
            "days",
            Range(1, i64::from(crate::ingest::demo::MAX_DAYS)),
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
