//! The reference's operations whose domain wearhouse does not serve (issue 42): each answers a
//! documented **501** with a JSON `detail` saying what is not served and, where there is one,
//! what to use instead, never a bare 404 or 405. They are listed from the reference's OpenAPI
//! document (`tryVital/vital-fern-api` `fern/openapi/openapi.json`, `info.version` 0.4.632, the
//! document `testdata/reference/` was taken from), in the document under the tag `unserved`.
//!
//! What is not served, and why:
//! - **insurance and payors** (`/v2/user/{user_id}/insurance...`, `/v3/insurance/...`,
//!   `/v3/payor`): orders here are client-billed; nothing is billed to an insurer;
//! - **the reference's own dashboard and hosted pages** (`/v2/team/svix/url`, the user portal
//!   URL): webhooks here are `/v2/team/webhooks`, and there is no hosted user portal;
//! - **lab operations outside the sandbox labs' wire** (compendium search and conversion, lab
//!   accounts, unmatched results, lab report parsing, test kit registration and unregistered
//!   kits, order import, on-site draws and labels, patient communication settings, ABN forms,
//!   appointment requests): there is no lab contract, no result arrives for an order placed
//!   elsewhere, no patient is messaged, and no order is billed to Medicare.
//!
//! Each takes the team key (401 without it), so an unauthenticated caller learns nothing more
//! than from any other route; other methods on these paths answer 405 with `Allow`.

use std::collections::BTreeMap;

use axum::routing::{MethodFilter, MethodRouter, on};
use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, Paths};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, Required, ResponseBuilder};
use utoipa_axum::router::OpenApiRouter;

use super::AppState;
use super::error::ApiError;
use super::extract::AuthTeam;

/// The tag of every operation listed here.
pub const TAG: &str = "unserved";

const INSURANCE: &str = "Not implemented: wearhouse bills no insurer (orders are client-billed), so it keeps no insurance, payor or diagnosis-code data.";
const SVIX: &str = "Not implemented: wearhouse has no hosted webhook dashboard; manage endpoints with /v2/team/webhooks.";
const PORTAL: &str = "Not implemented: wearhouse hosts no user portal; use a link token (POST /v2/link/token) for the hosted link page.";
const COMPENDIUM: &str = "Not implemented: wearhouse keeps one marker catalogue (GET /v3/lab_tests/markers), not per-lab compendiums to search or convert between.";
const LAB_ACCOUNT: &str = "Not implemented: wearhouse has no lab accounts; every team orders from the deployment's labs (GET /v3/lab_tests/labs).";
const UNMATCHED: &str = "Not implemented: wearhouse receives results only for its own orders, so no result is ever unmatched.";
const LAB_REPORT: &str = "Not implemented: wearhouse does not parse lab report documents.";
const TESTKIT: &str = "Not implemented: test kits are ordered with POST /v3/order (collection method testkit) and need no registration.";
const ORDER_IMPORT: &str = "Not implemented: wearhouse does not import orders placed elsewhere; create them with POST /v3/order.";
const ON_SITE: &str = "Not implemented: wearhouse serves no on-site collection (testkit, walk-in and at-home phlebotomy only).";
const COMMUNICATION: &str =
    "Not implemented: wearhouse sends no e-mail or text messages to patients.";
const ABN: &str = "Not implemented: no order here is billed to Medicare, so there is no Advance Beneficiary Notice form.";
const APPOINTMENT_REQUEST: &str = "Not implemented: appointments are booked from availability (POST /v3/order/{order_id}/phlebotomy/appointment/book), not requested.";
const RESEND: &str =
    "Not implemented: replay order events with POST /v2/team/webhooks/{id}/replay.";

/// Every unserved operation: method, path, the reference's summary, the answer's `detail`.
pub const OPERATIONS: &[(&str, &str, &str, &str)] = &[
    (
        "POST",
        "/v2/user/{user_id}/insurance",
        "Create Insurance",
        INSURANCE,
    ),
    (
        "GET",
        "/v2/user/{user_id}/insurance/latest",
        "Get Latest Insurance",
        INSURANCE,
    ),
    (
        "POST",
        "/v3/insurance/search/payor",
        "Post Insurance Payor Information",
        INSURANCE,
    ),
    (
        "GET",
        "/v3/insurance/search/payor",
        "Search Insurance Payor Information",
        INSURANCE,
    ),
    (
        "GET",
        "/v3/insurance/search/diagnosis",
        "Search Diagnosis",
        INSURANCE,
    ),
    (
        "POST",
        "/v3/insurance/validate_icd_codes",
        "Validate Icd Codes",
        INSURANCE,
    ),
    ("POST", "/v3/payor", "Create Payor", INSURANCE),
    ("GET", "/v2/team/svix/url", "Get Svix Webhook Url", SVIX),
    (
        "POST",
        "/v2/user/{user_id}/create_portal_url",
        "Create User Portal Url",
        PORTAL,
    ),
    (
        "POST",
        "/v3/compendium/search",
        "Search Compendium",
        COMPENDIUM,
    ),
    (
        "POST",
        "/v3/compendium/convert",
        "Convert Compendium",
        COMPENDIUM,
    ),
    (
        "GET",
        "/v3/lab_test/lab_account",
        "Get Team Lab Accounts",
        LAB_ACCOUNT,
    ),
    (
        "GET",
        "/v3/unmatched_result",
        "List Unmatched Results",
        UNMATCHED,
    ),
    (
        "GET",
        "/v3/unmatched_result/{raw_result_id}",
        "Get Unmatched Result",
        UNMATCHED,
    ),
    (
        "POST",
        "/v3/unmatched_result/{raw_result_id}/accept",
        "Accept Unmatched Result",
        UNMATCHED,
    ),
    (
        "POST",
        "/v3/unmatched_result/{raw_result_id}/resolve",
        "Resolve Unmatched Result",
        UNMATCHED,
    ),
    (
        "POST",
        "/lab_report/v1/parser/job",
        "Create Lab Report Parser Job",
        LAB_REPORT,
    ),
    (
        "GET",
        "/lab_report/v1/parser/job/{job_id}",
        "Get Lab Report Parser Job",
        LAB_REPORT,
    ),
    (
        "POST",
        "/v3/order/testkit/register",
        "Register Testkit",
        TESTKIT,
    ),
    ("POST", "/v3/order/testkit", "Create Testkit Order", TESTKIT),
    ("POST", "/v3/order/import", "Import Order", ORDER_IMPORT),
    (
        "PATCH",
        "/v3/order/{order_id}/draw_completed",
        "Update On Site Collection Order Draw Completed",
        ON_SITE,
    ),
    (
        "GET",
        "/v3/order/{order_id}/labels/pdf",
        "Get Order Labels",
        ON_SITE,
    ),
    (
        "GET",
        "/v3/order/{order_id}/communication_settings",
        "Get Order Communication Settings",
        COMMUNICATION,
    ),
    (
        "PATCH",
        "/v3/order/{order_id}/communication_settings",
        "Create Or Update Order Communication Settings",
        COMMUNICATION,
    ),
    ("GET", "/v3/order/{order_id}/abn_pdf", "Get Order Abn", ABN),
    (
        "POST",
        "/v3/order/{order_id}/phlebotomy/appointment/request",
        "Request Phlebotomy Appointment",
        APPOINTMENT_REQUEST,
    ),
    (
        "POST",
        "/v3/order/resend_events",
        "Resend Order Webhook",
        RESEND,
    ),
];

fn method(name: &str) -> Option<(MethodFilter, HttpMethod)> {
    match name {
        "GET" => Some((MethodFilter::GET, HttpMethod::Get)),
        "POST" => Some((MethodFilter::POST, HttpMethod::Post)),
        "PATCH" => Some((MethodFilter::PATCH, HttpMethod::Patch)),
        "PUT" => Some((MethodFilter::PUT, HttpMethod::Put)),
        "DELETE" => Some((MethodFilter::DELETE, HttpMethod::Delete)),
        _ => None,
    }
}

/// The path parameters of `path`: ids are UUIDs (as the reference states them), others text.
fn parameters(path: &str) -> Vec<utoipa::openapi::path::Parameter> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| {
            let schema = if name.ends_with("_id") {
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)))
            } else {
                ObjectBuilder::new().schema_type(Type::String)
            };
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Path)
                .required(Required::True)
                .schema(Some(schema))
                .build()
        })
        .collect()
}

/// The document of the unserved operations.
fn doc() -> OpenApi {
    let mut paths = Paths::new();
    for (name, path, summary, detail) in OPERATIONS {
        let Some((_, http)) = method(name) else {
            continue;
        };
        let answer = ResponseBuilder::new()
            .description(format!("Not served here: {detail}"))
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorDetail")))
                    .build(),
            )
            .build();
        let operation = OperationBuilder::new()
            .summary(Some(format!("{summary} (not served)")))
            .description(Some(*detail))
            .tag(TAG)
            .parameters(Some(parameters(path)))
            .response("501", answer)
            .security(SecurityRequirement::new("api_key", [""; 0]))
            .build();
        paths.add_path_operation(*path, vec![http], operation);
    }
    let mut doc = OpenApi::default();
    doc.paths = paths;
    doc
}

/// The routes of the unserved operations, with their documentation.
pub fn routes() -> OpenApiRouter<AppState> {
    let mut by_path: BTreeMap<&str, MethodRouter<AppState>> = BTreeMap::new();
    for (name, path, _, detail) in OPERATIONS {
        let Some((filter, _)) = method(name) else {
            continue;
        };
        let detail: &'static str = detail;
        let handler = move |_team: AuthTeam| async move { ApiError::NotImplemented(detail) };
        let routed = match by_path.remove(path) {
            Some(existing) => existing.on(filter, handler),
            None => on(filter, handler),
        };
        by_path.insert(path, routed);
    }
    by_path.into_iter().fold(
        OpenApiRouter::with_openapi(doc()),
        |router, (path, routed)| router.route(path, routed),
    )
}
