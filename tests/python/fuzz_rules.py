"""Schemathesis hooks for tests/it/api/schema_fuzz.rs: the cross-field rules the OpenAPI document
states in prose because JSON Schema cannot (one member's rule depending on another's value).
A generated case that breaks one is not sent: a client following the document would not send it.
Each filter names the rule it keeps; anything else generated is sent and checked."""

import schemathesis


def _both(mapping, a, b):
    return mapping is not None and mapping.get(a) not in (None, "") and mapping.get(b) not in (None, "")


def _addresses(value):
    """Every object in a body that carries both of an address's ZIP spellings."""
    if isinstance(value, dict):
        if "zip" in value and "zip_code" in value:
            yield value
        for v in value.values():
            yield from _addresses(v)
    elif isinstance(value, list):
        for v in value:
            yield from _addresses(v)


@schemathesis.hook
def filter_case(ctx, case):
    path, method = case.operation.path, case.method.upper()
    query = case.query or {}
    body = case.body if isinstance(case.body, dict) else {}
    # Getters: end_date must not be before start_date; `cursor` and its alias `next_cursor`
    # are one parameter; cursors are the server's (passed on from an answer, never made up).
    if path.startswith("/v2/summary/") or path.startswith("/v2/timeseries/"):
        start, end = query.get("start_date"), query.get("end_date")
        if start and end and str(end)[:10] < str(start)[:10]:
            return False
        if query.get("cursor") or query.get("next_cursor"):
            return False
    if query.get("next_cursor") not in (None, ""):
        return False
    # Webhook replay: until after since.
    if path.endswith("/replay") and _both(body, "since", "until") and str(body["until"]) <= str(body["since"]):
        return False
    # Link token: redirect_url with on_error / on_close "redirect".
    if path == "/v2/link/token" and ("redirect" in (body.get("on_error"), body.get("on_close"))) and not body.get("redirect_url"):
        return False
    # Undo delete: exactly one of user_id and client_user_id.
    if path == "/v2/user/undo_delete" and (query.get("user_id") in (None, "")) == (query.get("client_user_id") in (None, "")):
        return False
    # An address's `zip` is an alias of `zip_code`: both given must agree.
    if any(a["zip"] != a["zip_code"] for a in _addresses(case.body)):
        return False
    return True
