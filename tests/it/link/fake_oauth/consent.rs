//! The provider's own page, `GET /consent`: what the user sees before the authorisation
//! server issues a code. It names the client and the scopes asked, and its Allow button sends
//! every parameter (steering ones included) on to `/authorize`.

use axum::extract::Query;
use axum::response::Html;

use crate::sync::fake::html_escape;

/// The provider's page asking the user to allow the client: the scopes asked, and an Allow
/// button sending every parameter on to `/authorize`.
pub(super) async fn consent(Query(q): Query<Vec<(String, String)>>) -> Html<String> {
    let get = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let scopes: String = get("scope")
        .unwrap_or_default()
        .split([' ', ','])
        .filter(|s| !s.is_empty())
        .map(|s| format!("<li class=\"scope\">{}</li>", html_escape(s)))
        .collect();
    let fields: String = q
        .iter()
        .map(|(k, v)| {
            let (k, v) = (html_escape(k), html_escape(v));
            format!(r#"<input type="hidden" name="{k}" value="{v}">"#)
        })
        .collect();
    let client = html_escape(get("client_id").unwrap_or_default());
    Html(format!(
        r#"<!doctype html><html><head><title>Authorise</title></head><body>
<h1 id="consent">Allow {client} to read your data?</h1><ul id="scopes">{scopes}</ul>
<form method="get" action="/authorize">{fields}<button id="allow" type="submit">Allow</button></form>
</body></html>"#
    ))
}
