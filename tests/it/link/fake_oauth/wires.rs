//! The token answers of providers whose token endpoint speaks a wire of its own: Polar
//! AccessLink's (no refresh token, the user as `x_user_id`) and Withings' (`action=requesttoken`,
//! the answer in a `{"status", "body"}` envelope).

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Form, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Value, json};

use super::{CLIENT_ID, CLIENT_SECRET, Fake, token};

/// Issues an access token as Polar's token endpoint does: long-lived, no refresh token, no
/// `scope`, the user as `x_user_id` (a long).
pub(super) fn polar_issue(fake: &Fake, account: &str) -> Response {
    let access = format!("fake-access-{}", uuid::Uuid::new_v4().simple());
    fake.issued.lock().unwrap().push(access.clone());
    let user: i64 = account.parse().unwrap_or(0);
    Json(json!({
        "access_token": access,
        "token_type": "bearer",
        "expires_in": 31_535_999,
        "x_user_id": user,
    }))
    .into_response()
}

/// The token endpoint in Withings' wire (see the module's doc).
pub(super) async fn withings_token(
    State(fake): State<Fake>,
    Form(mut form): Form<HashMap<String, String>>,
) -> Response {
    let envelope = |status: i64, body: Value| Json(json!({"status": status, "body": body}));
    if form.remove("action").as_deref() != Some("requesttoken") {
        return envelope(503, json!({})).into_response();
    }
    let client = (form.remove("client_id"), form.remove("client_secret"));
    if client != (Some(CLIENT_ID.to_owned()), Some(CLIENT_SECRET.to_owned())) {
        return envelope(503, json!({})).into_response();
    }
    let mut headers = HeaderMap::new();
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
    headers.insert("authorization", format!("Basic {basic}").parse().unwrap());
    let answer = token(State(fake), headers, Form(form)).await;
    let ok = answer.status().is_success();
    let bytes = http_body_util::BodyExt::collect(answer.into_body())
        .await
        .unwrap()
        .to_bytes();
    let mut body: Value = serde_json::from_slice(&bytes).unwrap_or(json!({}));
    if !ok {
        return envelope(503, json!({})).into_response();
    }
    if let Some(user) = body.as_object_mut().and_then(|b| b.remove("user_id")) {
        body["userid"] = user;
    }
    envelope(0, body).into_response()
}
