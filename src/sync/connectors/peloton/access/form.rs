//! The hidden form Auth0's credentials step answers (`<form method="post" action="…/login/callback">`
//! with `<input type="hidden" name="wa|wresult|wctx" value="…">`, which a browser submits by
//! script): its action and fields, read without an HTML parser. The page is Auth0's own
//! template, so a tag-and-attribute scan is enough; values are HTML-escaped (`wctx` is JSON, its
//! quotes `&#34;`) and are unescaped here.

/// A form to submit: where, and its named fields in page order.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct HiddenForm {
    /// The form's `action` (absolute or relative to the page).
    pub action: String,
    /// The `<input>` fields that have a name, with their (unescaped) values.
    pub fields: Vec<(String, String)>,
}

// The fields hold a signed assertion of the user's sign-in: never shown.
impl std::fmt::Debug for HiddenForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.fields.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HiddenForm")
            .field("action", &self.action)
            .field("fields", &names)
            .finish()
    }
}

/// The first `<form>` of `html` with an `action`, and the named inputs after it up to its end.
pub(super) fn hidden_form(html: &str) -> Option<HiddenForm> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<form")?;
    let end = lower[start..]
        .find("</form")
        .map_or(html.len(), |e| start + e);
    let mut tags = tags(&html[start..end], &lower[start..end]);
    let form = tags.next().filter(|(name, _)| name == "form")?;
    let action = attribute(&form.1, "action").filter(|a| !a.is_empty())?;
    let fields = tags
        .filter(|(name, _)| name == "input")
        .filter_map(|(_, attrs)| {
            let name = attribute(&attrs, "name").filter(|n| !n.is_empty())?;
            Some((name, attribute(&attrs, "value").unwrap_or_default()))
        })
        .collect();
    Some(HiddenForm { action, fields })
}

/// The tags of `html` (`lower` is its lower-cased copy): lower-cased name and the raw text of
/// their attributes.
fn tags<'a>(html: &'a str, lower: &'a str) -> impl Iterator<Item = (String, String)> + 'a {
    let mut at = 0;
    std::iter::from_fn(move || {
        loop {
            let open = at + lower[at..].find('<')?;
            let close = open + tag_end(&html[open..])?;
            at = close + 1;
            let inner = &html[open + 1..close];
            let name_end = inner
                .find(|c: char| c.is_ascii_whitespace() || c == '/')
                .unwrap_or(inner.len());
            let name = inner[..name_end].to_ascii_lowercase();
            if name.is_empty() || name.starts_with('!') || name.starts_with('/') {
                continue;
            }
            return Some((name, inner[name_end..].to_owned()));
        }
    })
}

/// The offset of the `>` closing the tag that starts `text`, skipping quoted values.
fn tag_end(text: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(i),
            _ => {}
        }
    }
    None
}

/// The unescaped value of attribute `wanted` in a tag's attribute text.
fn attribute(attrs: &str, wanted: &str) -> Option<String> {
    let mut rest = attrs.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '/');
    while !rest.is_empty() {
        let name_end = rest
            .find(|c: char| c.is_ascii_whitespace() || c == '=' || c == '/')
            .unwrap_or(rest.len());
        let name = rest[..name_end].to_ascii_lowercase();
        rest = rest[name_end..].trim_start();
        let mut value = String::new();
        if let Some(after) = rest.strip_prefix('=') {
            let after = after.trim_start();
            let (raw, next) = match after.chars().next() {
                Some(q @ ('"' | '\'')) => {
                    let body = &after[1..];
                    let end = body.find(q).unwrap_or(body.len());
                    (&body[..end], body.get(end + 1..).unwrap_or(""))
                }
                _ => {
                    let end = after
                        .find(|c: char| c.is_ascii_whitespace())
                        .unwrap_or(after.len());
                    (&after[..end], &after[end..])
                }
            };
            value = unescape(raw);
            rest = next;
        }
        if name == wanted {
            return Some(value);
        }
        rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '/');
    }
    None
}

/// `text` with its character references replaced: the named ones an HTML template escapes
/// with, and numeric ones (`&#34;`, `&#x27;`). An unknown reference is kept as written.
pub(super) fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let decoded = rest.find(';').filter(|&semi| semi <= 10).and_then(|semi| {
            let reference = &rest[1..semi];
            let c = match reference {
                "quot" => Some('"'),
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "apos" => Some('\''),
                _ => {
                    let code = match reference.strip_prefix('#') {
                        Some(hex) if hex.starts_with(['x', 'X']) => {
                            u32::from_str_radix(&hex[1..], 16).ok()
                        }
                        Some(dec) => dec.parse().ok(),
                        None => None,
                    };
                    code.and_then(char::from_u32)
                }
            };
            c.map(|c| (c, semi))
        });
        match decoded {
            Some((c, semi)) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_callback_form_is_read_with_its_escaped_values() {
        let html = r#"<html><head><title>Submit This Form</title></head>
<body onload="javascript:document.forms[0].submit()">
<FORM method="post" name="hiddenform" action="https://auth.example/login/callback">
<input type="hidden" name="wa" value="wsignin1.0">
<input type="hidden" name="wresult" value="eyJ.a&amp;b">
<input type="hidden" name="wctx" value="{&#34;strategy&#34;:&#34;auth0&#34;,&#x22;x&#x22;:&quot;y > z&quot;}">
<input type='hidden' name=flag value=on />
<input type="submit" value="Continue">
<noscript><p>Script is disabled.</p></noscript></FORM>
<input type="hidden" name="outside" value="no"></body></html>"#;
        let form = hidden_form(html).unwrap();
        assert_eq!(form.action, "https://auth.example/login/callback");
        assert_eq!(
            form.fields,
            [
                ("wa".to_owned(), "wsignin1.0".to_owned()),
                ("wresult".to_owned(), "eyJ.a&b".to_owned()),
                (
                    "wctx".to_owned(),
                    r#"{"strategy":"auth0","x":"y > z"}"#.to_owned()
                ),
                ("flag".to_owned(), "on".to_owned()),
            ]
        );
        assert!(!format!("{form:?}").contains("eyJ"), "values never shown");
    }

    #[test]
    fn a_page_without_a_form_or_action_has_none() {
        assert_eq!(
            hidden_form("<html><p>Wrong email or password.</p></html>"),
            None
        );
        assert_eq!(
            hidden_form(r#"<form method="post"><input name="a"></form>"#),
            None
        );
        assert_eq!(hidden_form("<form action=\"/x\" <input"), None);
    }

    #[test]
    fn unknown_or_broken_references_are_kept() {
        assert_eq!(
            unescape("a &nbsp; b & c &#zz; &#65;"),
            "a &nbsp; b & c &#zz; A"
        );
    }
}
