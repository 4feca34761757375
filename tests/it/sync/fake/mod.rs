//! The one configurable fake provider the sync and link suites run against: an axum server on
//! a loopback port standing in for a provider's cloud. A provider's fake (`sync/<slug>/fake_*.rs`;
//! the link suites' authorisation server, LibreView and Peloton in `link/`) is its route table
//! (the documented paths, parameters, answers and the words it refuses with) plus its
//! fixtures; what every provider's fake does alike is here:
//! - [`Gate`]: programmable faults (429 with `Retry-After`, 5xx storms, expired or revoked
//!   tokens, hangs, each provider's own) served after a number of good answers, for good or a
//!   number of times, or a sequence of them one each; the bearer-token check (one token, or
//!   those a check approves: `accepting`, `accept_when`; [`bearer_token`] for a route that
//!   checks its own kind); the request log and timeline the tests assert on;
//! - malformed records: [`Gate::malform_next`] slips a value of no record shape into the next
//!   answer that carries records, at the record lists the route table names ([`serve`]'s
//!   `records_at`), ahead of its first record;
//! - [`Pager`]: opaque next-page tokens;
//! - [`running`]: the running fake a test holds (its base URL, its gate reached through it);
//! - [`fixture`]: the documents of `testdata/providers/<dir>/`.
//!
//! It shares no code with `wearhouse::sync`: only the wire format. The sync benches include it
//! by path (`benches/sync/main.rs`), so it names nothing of the test crate.

mod gate;
mod pager;

pub use gate::{Gate, bearer_token, query_line};
pub use pager::Pager;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::Response;
use serde_json::{Value, json};

/// Declares a provider's running fake, `$name`: its base URL (`$base`, where its connector is
/// pointed) and its route table's state (`$state`, whose `gate` is its [`Gate`] of `$fault`),
/// the gate reached through it.
macro_rules! running {
    ($(#[$doc:meta])* $name:ident($state:ty, $fault:ty), base: $base:literal) => {
        $(#[$doc])*
        pub struct $name {
            #[doc = concat!("Its base URL, `", $base, "`.")]
            pub base: String,
            fake: $state,
        }

        impl std::ops::Deref for $name {
            type Target = Gate<$fault>;
            fn deref(&self) -> &Gate<$fault> {
                &self.fake.gate
            }
        }
    };
}
pub(crate) use running;

/// What a malformed record is served as: no provider's documented record shape.
pub const MALFORMED: &str = "not a record";

/// `text` escaped for an HTML element or a quoted attribute (a provider's sign-in and consent
/// pages).
pub fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&#34;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A fixture file of `testdata/providers/<dir>/`.
pub fn fixture(dir: &str, name: &str) -> Value {
    let path = format!(
        "{}/testdata/providers/{dir}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| {
        panic!("{path}: {e}");
    })
}

/// Serves `routes` on a new loopback port and answers its base, `http://127.0.0.1:<port>`.
/// `records_at`: the JSON pointers at which the provider's answers carry record lists, where
/// [`Gate::malform_next`] slips a malformed one in.
pub async fn serve<F: Copy + Send + 'static>(
    routes: Router,
    gate: &Gate<F>,
    records_at: &'static [&'static str],
) -> String {
    let app = routes.layer(middleware::from_fn_with_state(
        (gate.malformer(), records_at),
        corrupt,
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    base
}

/// When armed, slips [`MALFORMED`] in ahead of the first record of the first non-empty record
/// list of a JSON answer, and disarms.
async fn corrupt(
    State((armed, records_at)): State<(Arc<AtomicBool>, &'static [&'static str])>,
    request: Request,
    next: Next,
) -> Response {
    let response = next.run(request).await;
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !armed.load(Ordering::SeqCst) || !response.status().is_success() || !json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let mut answer: Value = serde_json::from_slice(&bytes).unwrap();
    let has_records = |p: &&&str| {
        answer
            .pointer(p)
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty())
    };
    let Some(at) = records_at.iter().find(has_records) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    if let Some(list) = answer.pointer_mut(at).and_then(Value::as_array_mut) {
        list.insert(0, json!(MALFORMED));
    }
    armed.store(false, Ordering::SeqCst);
    let mut parts = parts;
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(serde_json::to_vec(&answer).unwrap()))
}
