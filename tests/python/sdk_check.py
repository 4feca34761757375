"""The reference `vital` SDK as a client of wearhouse (tests/it/api/sdk.rs runs this).

Usage: sdk_check.py BASE_URL API_KEY

The server runs in demo mode (its demo users have data). The SDK is built with only the base URL
and the key, as a new user would. The methods in scope are found, not listed: every method of
the SDK's raw clients whose HTTP method and path template match an operation of the server's
/openapi.json. Each has a call below; each call must return the SDK's parsed model, and that
model must hold the values the raw API answers for the same request (compared field by field,
instants as instants). Prints one JSON line: {"in_scope", "called", "passed", "failures",
"uncovered", "not_yet", ...}; exits 1 unless every method in scope was called and passed, but for
the methods listed in NOT_YET (which must be exactly the uncovered ones).
"""

import datetime as dt
import enum
import inspect
import json
import pathlib
import re
import sys
import time

import httpx
import pydantic
import vital
from vital import Vital

from sdk_surface import surface_calls

BASE, KEY = sys.argv[1], sys.argv[2]
client = Vital(api_key=KEY, base_url=BASE)
raw = httpx.Client(base_url=BASE, headers={"x-service-api-key": KEY}, timeout=60)


def served_operations():
    doc = raw.get("/openapi.json").json()
    ops = []
    for path, item in doc["paths"].items():
        for method in item:
            # A documented 501 (tag `unserved`) is not served; `surface_team::unserved` tests it.
            if method in ("get", "post", "put", "patch", "delete") and "unserved" not in item[method].get("tags", []):
                pattern = re.sub(r"\{[^}]+\}", "[^/]+", path.rstrip("/"))
                ops.append((method.upper(), re.compile("^" + pattern + "$")))
    return ops


def sdk_methods():
    """(client attribute, method name, HTTP method, example path) of every sync raw method."""
    root = pathlib.Path(vital.__file__).parent
    found = []
    for raw_file in sorted(root.glob("*/raw_client.py")):
        source = raw_file.read_text().split("class AsyncRaw")[0]
        parts = re.split(r"\n    def (\w+)\(", source)
        for name, body in zip(parts[1::2], parts[2::2]):
            m = re.search(
                r'httpx_client\.request\(\s*f?"([^"]*)",\s*(?:base_url=[^,]*,\s*)?method="(\w+)"',
                body,
            )
            if m and not name.startswith("_"):
                path = "/" + re.sub(r"\{[^}]+\}", "x", m.group(1)).rstrip("/")
                found.append((raw_file.parent.name, name, m.group(2), path))
    return found


def in_scope():
    ops = served_operations()
    return [
        (client_name, method)
        for client_name, method, http, path in sdk_methods()
        if any(http == op and rx.match(path) for op, rx in ops)
    ]


def same(model, answer, where="$"):
    """Compares a parsed SDK value with the raw JSON answer; raises on the first difference."""
    if isinstance(model, pydantic.BaseModel):
        if not isinstance(answer, dict):
            raise AssertionError(f"{where}: model {type(model).__name__} vs {answer!r}")
        fields = type(model).model_fields
        for name, info in fields.items():
            key = info.alias or name
            same(getattr(model, name), answer.get(key), f"{where}.{key}")
        for key, value in (model.model_extra or {}).items():
            same(value, answer.get(key), f"{where}.{key}")
        missing = [k for k in answer if k not in {f.alias or n for n, f in fields.items()} and k not in (model.model_extra or {})]
        if missing:
            raise AssertionError(f"{where}: members of the answer not in the model: {missing}")
    elif isinstance(model, dict):
        if not isinstance(answer, dict) or set(model) != set(answer):
            raise AssertionError(f"{where}: {model!r} vs {answer!r}")
        for key in model:
            same(model[key], answer[key], f"{where}.{key}")
    elif isinstance(model, (list, tuple)):
        if not isinstance(answer, list) or len(model) != len(answer):
            raise AssertionError(f"{where}: list of {len(model)} vs {answer!r:.200}")
        for i, (m, a) in enumerate(zip(model, answer)):
            same(m, a, f"{where}[{i}]")
    elif isinstance(model, dt.datetime):
        parsed = dt.datetime.fromisoformat(answer.replace("Z", "+00:00"))
        if parsed != model:
            raise AssertionError(f"{where}: {model} vs {answer}")
    elif isinstance(model, dt.date):
        if model.isoformat() != answer[:10]:
            raise AssertionError(f"{where}: {model} vs {answer}")
    elif isinstance(model, enum.Enum):
        if model.value != answer:
            raise AssertionError(f"{where}: {model.value!r} vs {answer!r}")
    elif isinstance(model, bool) or model is None or isinstance(model, str):
        if model != answer:
            raise AssertionError(f"{where}: {model!r} vs {answer!r}")
    elif isinstance(model, (int, float)):
        if not isinstance(answer, (int, float)) or isinstance(answer, bool) or model != answer:
            raise AssertionError(f"{where}: {model!r} vs {answer!r}")
    else:
        raise AssertionError(f"{where}: cannot compare {type(model).__name__}")


class ExpectedFailure(Exception):
    """A method whose request cannot succeed as the SDK builds it; reported, not a failure."""


def check(model, answer, non_empty=False):
    same(model, answer)
    if non_empty and not answer:
        raise AssertionError("the raw answer is empty: nothing was compared")


def demo_user(client_user_id):
    return client.user.get_by_client_user_id(client_user_id).user_id


TODAY = dt.date.today()
START = (TODAY - dt.timedelta(days=6)).isoformat()
END = (TODAY + dt.timedelta(days=1)).isoformat()
WINDOW = {"start_date": START, "end_date": END}


def summary(kind, key, user):
    getter = getattr(client, kind).get
    got = getter(user, **WINDOW)
    answer = raw.get(f"/v2/summary/{'meal' if kind == 'meal' else kind}/{user}", params=WINDOW).json()
    check(got, answer, non_empty=bool(answer[key]))
    if not answer[key]:
        raise AssertionError(f"no {kind} rows for the demo user")


SAMPLE_AT = dt.datetime.combine(TODAY - dt.timedelta(days=1), dt.time(9), dt.timezone.utc)
FAMILY = {
    "blood_pressure": "blood_pressure", "note": "note", "insulin_injection": "insulin",
    "body_temperature": "temperature", "body_temperature_delta": "temperature",
    "workout_duration": "workout_duration",
}
DISCRETE = {
    "glucose", "heartrate", "hrv", "ige", "igg", "cholesterol", "weight", "fat", "blood_oxygen",
    "electrocardiogram_voltage", "respiratory_rate", "stress_level",
}
ALIASES = {"body_weight": "weight", "body_fat": "fat"}


def sample(resource, minute=0):
    at = SAMPLE_AT + dt.timedelta(minutes=minute)
    start, end = at.isoformat(), (at + dt.timedelta(minutes=1)).isoformat()
    family = FAMILY.get(resource, "discrete" if resource in DISCRETE else "interval")
    if family == "blood_pressure":
        return {"timestamp": start, "systolic": 120, "diastolic": 80}
    if family == "discrete":
        typed = {"type": "total"} if resource == "cholesterol" else {"type": "lead_i"} if resource.startswith(("ig", "electro")) else {}
        return {"timestamp": start, "value": 36.5} | typed
    body = {"start": start, "end": end}
    if family == "note":
        return body | {"value": "felt fine", "tags": ["food"]}
    if family == "insulin":
        return body | {"value": 2, "type": "rapid_acting"}
    if family == "temperature":
        return body | {"value": 0.5 if resource.endswith("delta") else 36.5, "sensor_location": "wrist"}
    if family == "workout_duration":
        return body | {"value": 1, "intensity": "high"}
    # Interval resources count or measure; whole values suit both (counts are integers in the
    # reference's models).
    return body | {"value": 37}


def seed(user):
    """Pushes, in the reference's shapes, what the demo data lacks: a workout, a body
    measurement, one sample of every resource the SDK reads, each cholesterol kind."""
    resources = sorted({
        ALIASES.get(path.split("/x/", 1)[1].split("/")[0], path.split("/x/", 1)[1].split("/")[0])
        for c, _, _, path in sdk_methods() if c == "vitals"
    } - {"hypnogram"})
    timeseries = {r: [sample(r)] for r in resources}
    timeseries["cholesterol"] = [
        sample("cholesterol", i) | {"type": kind}
        for i, kind in enumerate(["ldl", "hdl", "total", "triglycerides"])
    ]
    start = SAMPLE_AT.isoformat()
    end = (SAMPLE_AT + dt.timedelta(minutes=45)).isoformat()
    body = {
        "provider": "withings",
        "workouts": [{
            "time_start": start, "time_end": end, "title": "Morning run",
            "sport": {"name": "Running", "slug": "running"}, "average_hr": 150, "max_hr": 181,
            "distance": 8000.5, "calories": 610.0, "hr_zones": [60, 120, 600, 900, 700, 320],
            "moving_time": 2600, "map": {"polyline": "abc", "summary_polyline": "a"},
            "provider_id": "run-1", "timezone_offset": 3600,
        }],
        "body": [{"measured_at": start, "weight": 71.5, "fat": 18.2, "water_percentage": 55.0}],
        "timeseries": timeseries,
    }
    answer = raw.post(f"/v2/user/{user}/data", json=body)
    if answer.status_code != 200:
        raise SystemExit(f"seeding failed: {answer.status_code} {answer.text}")
    return body


def calls():
    """The call of every method in scope: (client, method) -> function that raises on failure."""
    ring = demo_user("demo-ring-and-watch")
    cgm = demo_user("demo-cgm")
    pushed = seed(ring)
    state = {}

    def user_create():
        got = client.user.create(client_user_id="sdk-user-1", fallback_time_zone="Europe/London")
        state["user"] = got.user_id
        answer = raw.get(f"/v2/user/{got.user_id}").json()
        if got.user_id != answer["user_id"] or got.client_user_id != answer["client_user_id"]:
            raise AssertionError(f"{got} vs {answer}")

    def user_get():
        check(client.user.get(ring), raw.get(f"/v2/user/{ring}").json(), True)

    def user_get_all():
        check(client.user.get_all(), raw.get("/v2/user").json(), True)

    def user_resolve():
        check(client.user.get_by_client_user_id("demo-cgm"), raw.get("/v2/user/resolve/demo-cgm").json(), True)

    def user_patch():
        client.user.patch(state["user"], fallback_time_zone="America/New_York")
        answer = raw.get(f"/v2/user/{state['user']}").json()
        if answer["fallback_time_zone"]["id"] != "America/New_York":
            raise AssertionError(answer)

    def user_info_upsert():
        address = vital.Address(first_line="1 Main St", country="US", zip="94107", city="San Francisco", state="CA")
        got = client.user.upsert_user_info(
            state["user"], first_name="Ada", last_name="Lovelace", email="ada@example.com",
            phone_number="+1 415 555 0100", gender="female", dob="1990-04-01", address=address,
        )
        check(got, raw.get(f"/v2/user/{state['user']}/info/latest").json(), True)

    def user_info_latest():
        got = client.user.get_latest_user_info(state["user"])
        check(got, raw.get(f"/v2/user/{state['user']}/info/latest").json(), True)

    def user_providers():
        got = client.user.get_connected_providers(ring)
        check(got, raw.get(f"/v2/user/providers/{ring}").json(), True)

    def user_refresh():
        # The demo user's providers are demo ones (no connector): refreshed from what is stored.
        got = client.user.refresh(ring, timeout=5)
        check(got, raw.post(f"/v2/user/refresh/{ring}?timeout=5").json(), True)
        assert got.success and got.failed_sources == [], got

    def user_metrics():
        check(client.user.get_team_metrics(), raw.get("/v2/user/metrics").json(), True)

    def user_undo_delete():
        # A user deleted within the undo window comes back.
        target = raw.post("/v2/user", json={"client_user_id": "sdk-undo-1"}).json()["user_id"]
        if raw.delete(f"/v2/user/{target}").status_code != 200:
            raise AssertionError("delete failed")
        if raw.get(f"/v2/user/{target}").status_code != 404:
            raise AssertionError("deleted user still answers")
        got = client.user.undo_delete(user_id=target)
        check(got, {"success": True})
        if raw.get(f"/v2/user/{target}").status_code != 200:
            raise AssertionError("restored user does not answer")

    def user_delete():
        got = client.user.delete(state["user"])
        if got.success is not True:
            raise AssertionError(got)
        if raw.get(f"/v2/user/{state['user']}").status_code != 404:
            raise AssertionError("deleted user still answers")

    def providers():
        check(client.providers.get_all(), raw.get("/v2/providers").json(), True)

    def link_demo():
        target = client.user.create(client_user_id="sdk-demo-1").user_id
        got = client.link.connect_demo_provider(user_id=target, provider="fitbit")
        if not got.success or not got.detail:
            raise AssertionError(got)

    def aggregate():
        body = {
            "timeframe": {"type": "relative", "anchor": TODAY.isoformat(), "past": {"value": 7, "unit": "day"}},
            "queries": [{
                "select": [{"group_key": "*"}, {"func": "mean", "arg": {"sleep": "efficiency"}}],
                "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "sleep"}}],
            }],
        }
        got = client.aggregate.query_one(ring, timeframe=body["timeframe"], queries=body["queries"])
        check(got, raw.post(f"/aggregate/v1/user/{ring}/query", json=body).json(), True)

    cq = {}

    def continuous_query():
        """Registers a continuous query over the ring user's sleep (through HTTP: the SDK has no
        registration method), then waits for its evaluation; both SDK reads use it."""
        if cq:
            return cq["slug"]
        registration = {
            "slug": "sdk-daily-sleep", "title": "Daily sleep efficiency",
            "query": {
                "select": [{"group_key": "*"}, {"func": "mean", "arg": {"sleep": "efficiency"}}],
                "group_by": [{"date_trunc": {"value": 1, "unit": "day"}, "arg": {"index": "sleep"}}],
            },
        }
        answer = raw.post("/aggregate/v1/continuous_query", json=registration)
        if answer.status_code != 200:
            raise AssertionError(f"registration: {answer.status_code} {answer.text}")
        path = f"/aggregate/v1/user/{ring}/continuous_query/sdk-daily-sleep/result_table"
        deadline = time.monotonic() + 60
        while raw.get(path).status_code != 200:
            if time.monotonic() > deadline:
                raise AssertionError("the continuous query was not evaluated within a minute")
            time.sleep(0.2)
        cq["slug"] = "sdk-daily-sleep"
        return cq["slug"]

    def cq_result_table():
        slug = continuous_query()
        got = client.aggregate.get_result_table_for_continuous_query(ring, slug)
        check(got, raw.get(f"/aggregate/v1/user/{ring}/continuous_query/{slug}/result_table").json(), True)

    def cq_task_history():
        slug = continuous_query()
        got = client.aggregate.get_task_history_for_continuous_query(ring, slug, limit=10)
        answer = raw.get(f"/aggregate/v1/user/{ring}/continuous_query/{slug}/task_history",
                         params={"limit": 10}).json()
        check(got, answer, True)
        if not any(t.status == "completed" for t in got.data):
            raise AssertionError(f"no completed evaluation in {answer}")

    def priorities_get():
        got = client.team.get_source_priorities(data_type="sleep")
        check(got, raw.get("/v2/team/source/priorities", params={"data_type": "sleep"}).json(), True)

    def priorities_update():
        # The SDK's method sends neither a body nor a data_type: nothing to set. The answer is
        # a 422, which the SDK raises.
        try:
            client.team.update_source_priorities()
        except vital.core.api_error.ApiError as e:
            if e.status_code != 422:
                raise
            raise ExpectedFailure(f"the SDK sends no body and no data_type; answered 422: {e.body}") from e
        raise AssertionError("an empty priorities update succeeded")

    table = {
        ("team", "update_source_priorities"): priorities_update,
        ("user", "create"): user_create,
        ("user", "get"): user_get,
        ("user", "get_all"): user_get_all,
        ("user", "get_by_client_user_id"): user_resolve,
        ("user", "patch"): user_patch,
        ("user", "upsert_user_info"): user_info_upsert,
        ("user", "get_latest_user_info"): user_info_latest,
        ("user", "get_connected_providers"): user_providers,
        ("user", "get_team_metrics"): user_metrics,
        ("user", "refresh"): user_refresh,
        ("user", "undo_delete"): user_undo_delete,
        ("user", "delete"): user_delete,
        ("providers", "get_all"): providers,
        ("link", "connect_demo_provider"): link_demo,
        ("aggregate", "query_one"): aggregate,
        ("aggregate", "get_result_table_for_continuous_query"): cq_result_table,
        ("aggregate", "get_task_history_for_continuous_query"): cq_task_history,
        ("team", "get_source_priorities"): priorities_get,
    }
    for kind, key, user in [
        ("sleep", "sleep", ring), ("activity", "activity", ring), ("workouts", "workouts", ring),
        ("body", "body", ring), ("meal", "meals", ring),
    ]:
        table[(kind, "get")] = lambda kind=kind, key=key, user=user: summary(kind, key, user)

    def profile():
        got = client.profile.get(ring)
        check(got, raw.get(f"/v2/summary/profile/{ring}").json(), True)

    table[("profile", "get")] = profile

    def workouts():
        summary("workouts", "workouts", ring)
        got = [w for w in client.workouts.get(ring, **WINDOW).workouts if w.provider_id == "run-1"]
        sent = pushed["workouts"][0]
        if len(got) != 1:
            raise AssertionError(f"the pushed workout is not answered once: {got}")
        w = got[0]
        seen = (w.average_hr, w.max_hr, w.distance, w.hr_zones, w.moving_time, w.sport.slug, w.map_.polyline, w.timezone_offset)
        want = (sent["average_hr"], sent["max_hr"], sent["distance"], sent["hr_zones"], sent["moving_time"], "running", "abc", 3600)
        if seen != want:
            raise AssertionError(f"pushed {want}, read {seen}")

    def body():
        summary("body", "body", ring)
        got = client.body.get(ring, **WINDOW).body
        if not any(b.weight == 71.5 and b.fat == 18.2 for b in got):
            raise AssertionError(f"the pushed body measurement is not answered: {got}")

    table[("workouts", "get")] = workouts
    table[("body", "get")] = body
    return table, ring, cgm


def vitals_calls(table, ring, cgm):
    """Every timeseries method: the plain ones answer a list, the grouped ones pages."""
    paths = {name: path for c, name, _, path in sdk_methods() if c == "vitals"}
    for name, path in paths.items():
        series = path.split("/x/", 1)[1]
        method = getattr(client.vitals, name)

        def call(method=method, series=series, name=name):
            user = cgm if series.startswith("glucose") else ring
            got = method(user, **WINDOW)
            answer = raw.get(f"/v2/timeseries/{user}/{series}", params=WINDOW).json()
            check(got, answer, non_empty=series != "hypnogram" or bool(answer))
            if not answer or (isinstance(answer, dict) and not answer.get("groups")):
                raise AssertionError(f"{series}: empty answer, nothing compared")
            if name.endswith("_grouped"):
                # Follow the SDK's own cursor to the end: every page parses.
                pages = 0
                while got.next_cursor and pages < 50:
                    got = method(user, next_cursor=got.next_cursor, **WINDOW)
                    pages += 1

        table[("vitals", name)] = call


# The lab methods in the order of README §Lab testing, which main() runs them in (a step may
# need what an earlier one made): the catalogue, a lab test of our own and an order of it, area
# and centre info, the at-home phlebotomy order booked, moved and cancelled, then walked to its
# results, the walk-in order booked at a Quest centre (the SDK asks Quest's availability), moved
# and cancelled, and that order cancelled.
LAB_ORDER = [
    "get_labs", "get_markers", "get_markers_by_lab_and_provider_id", "get", "get_paginated", "create", "get_by_id", "update_lab_test",
    "get_markers_for_lab_test", "get_markers_for_order_set", "get_area_info", "get_psc_info",
    "create_order", "get_order", "get_orders", "get_order_psc_info",
    "get_phlebotomy_appointment_availability", "book_phlebotomy_appointment",
    "reschedule_phlebotomy_appointment", "get_phlebotomy_appointment",
    "get_phlebotomy_appointment_cancellation_reason", "cancel_phlebotomy_appointment",
    "simulate_order_process", "get_result_raw", "get_result_metadata",
    "get_psc_appointment_availability", "book_psc_appointment", "reschedule_psc_appointment",
    "get_psc_appointment", "get_psc_appointment_cancellation_reason", "cancel_psc_appointment",
    "cancel_order",
]
PATIENT = {
    "first_name": "Ada", "last_name": "Lovelace", "dob": "1985-12-10", "gender": "female",
    "phone_number": "+16025550123", "email": "ada@example.com",
}
ADDRESS = {"first_line": "100 N 1st Ave", "city": "Phoenix", "state": "AZ", "zip": "85004", "country": "US"}
AT_HOME = {"first_line": "100 N 1st Ave", "city": "Phoenix", "state": "AZ", "zip_code": "85004"}


def lab_fixtures():
    """A user and the orders the lab steps use, made through the raw API (as `seed` does for
    the vitals), all in 85004: an at-home phlebotomy order and a walk-in one for the
    appointments, and a phlebotomy order walked to `completed` (README's sandbox walk) for the
    results. Independent of `create_order` and `simulate_order_process`, so that their results
    do not decide the others'."""
    user = raw.post("/v2/user", json={"client_user_id": "sdk-lab-1"})
    tests = raw.get("/v3/lab_tests")
    if user.status_code != 200 or tests.status_code != 200:
        raise SystemExit(f"lab fixtures failed: {user.text} {tests.text}")
    by_method = {t["method"]: t["id"] for t in tests.json()}
    made = {"user": user.json()["user_id"]}
    for method, name in [
        ("at_home_phlebotomy", "phlebotomy_order"), ("walk_in_test", "walk_in_order"),
        ("at_home_phlebotomy", "results_order"),
    ]:
        body = {
            "user_id": made["user"], "order_set": {"lab_test_ids": [by_method[method]]},
            "patient_details": PATIENT, "patient_address": ADDRESS,
        }
        answer = raw.post("/v3/order", json=body)
        if answer.status_code != 200:
            raise SystemExit(f"lab fixture order failed: {answer.status_code} {answer.text}")
        made[name] = answer.json()["order"]["id"]
    walked = raw.post(f"/v3/order/{made['results_order']}/test", params={"final_status": "completed"})
    if walked.status_code != 200:
        raise SystemExit(f"lab fixture walk failed: {walked.status_code} {walked.text}")
    return made


def same_slots(got, answer):
    """`check` of availability slots. Every availability answer mints new single-use booking
    keys, so two asks never share one: the raw answer's key is taken as the model's when both
    have the same sandbox prefix (`sbx_confirm_` ...: the same provider behaviour)."""
    for day, raw_day in zip(got.slots, answer.get("slots", [])):
        for slot, raw_slot in zip(day.slots, raw_day.get("slots", [])):
            prefix = slot.booking_key.rsplit("_", 1)[0]
            if raw_slot.get("booking_key", "").rsplit("_", 1)[0] == prefix:
                raw_slot["booking_key"] = slot.booking_key
    check(got, answer, True)


def confirming_slots(slots, count):
    """`count` slots whose booking keys the sandbox confirms at once (`sbx_confirm_`), still
    bookable in an hour, each at another time (a reschedule must move the appointment)."""
    soon = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
    keys = []
    for day in slots.slots:
        for slot in day.slots:
            fresh = slot.start not in {k.start for k in keys}
            if slot.booking_key.startswith("sbx_confirm_") and slot.expires_at > soon and fresh:
                keys.append(slot)
                break
        if len(keys) == count:
            return keys
    raise AssertionError(f"fewer than {count} days with a confirming slot: {slots}")


def lab_calls(table):
    """Every lab method, each checked against the raw answer of its route. A step whose
    prerequisite failed fails naming it."""
    lab = client.lab_tests
    state = lab_fixtures()

    def need(name):
        if name not in state:
            raise AssertionError(f"needs {name}, which an earlier lab step did not make")
        return state[name]

    def get_labs():
        got = lab.get_labs()
        check(got, raw.get("/v3/lab_tests/labs").json(), True)
        if "quest" not in {l.slug for l in got}:
            raise AssertionError(f"no Quest lab: {got}")
        state["quest"] = next(l.id for l in got if l.slug == "quest")

    def get_markers():
        params = {"lab_id": need("quest"), "name": "glucose"}
        got = lab.get_markers(**params)
        check(got, raw.get("/v3/lab_tests/markers", params=params).json(), True)
        if not got.markers or any(m.lab_id != params["lab_id"] for m in got.markers):
            raise AssertionError(f"no Quest glucose marker, or another lab's: {got.markers}")
        state["marker"] = got.markers[0].id
        state["marker_code"] = got.markers[0].provider_id

    def get_marker_by_code():
        lab_id, code = need("quest"), need("marker_code")
        got = lab.get_markers_by_lab_and_provider_id(code, lab_id)
        check(got, raw.get(f"/v3/lab_tests/{lab_id}/markers/{code}").json(), True)
        if got.id != state["marker"] or got.provider_id != code:
            raise AssertionError(f"not the marker listed with code {code}: {got}")

    def get():
        got = lab.get()
        check(got, raw.get("/v3/lab_tests").json(), True)
        methods = {t.method.value: t for t in got}
        if not {"at_home_phlebotomy", "walk_in_test"} <= set(methods):
            raise AssertionError(f"the sandbox tests are not all listed: {sorted(methods)}")
        state["phlebotomy_test"] = methods["at_home_phlebotomy"].id
        state["walk_in_test"] = methods["walk_in_test"].id

    def get_paginated():
        got = lab.get_paginated(lab_test_limit=2)
        check(got, raw.get("/v3/lab_test", params={"lab_test_limit": 2}).json(), True)
        if len(got.data) != 2 or not got.next_cursor:
            raise AssertionError(f"a first page of 2 with a cursor was expected: {got}")
        params = {"lab_test_limit": 2, "next_cursor": got.next_cursor}
        following = lab.get_paginated(**params)
        check(following, raw.get("/v3/lab_test", params=params).json(), True)
        if {t.id for t in following.data} & {t.id for t in got.data}:
            raise AssertionError("the second page repeats the first")

    def create():
        got = lab.create(
            name="SDK glucose walk-in", method="walk_in_test", description="made by sdk_check",
            marker_ids=[need("marker")],
        )
        state["lab_test"] = got.id
        check(got, raw.get(f"/v3/lab_tests/{got.id}").json(), True)
        if got.name != "SDK glucose walk-in" or [m.id for m in got.markers or []] != [state["marker"]]:
            raise AssertionError(f"not the lab test asked for: {got}")

    def get_by_id():
        test = need("lab_test")
        got = lab.get_by_id(test)
        check(got, raw.get(f"/v3/lab_tests/{test}").json(), True)
        if got.id != test:
            raise AssertionError(got)

    def update_lab_test():
        test = need("lab_test")
        got = lab.update_lab_test(test, name="SDK glucose walk-in (renamed)")
        check(got, raw.get(f"/v3/lab_tests/{test}").json(), True)
        if got.name != "SDK glucose walk-in (renamed)":
            raise AssertionError(got)

    def get_markers_for_lab_test():
        test = need("phlebotomy_test")
        got = lab.get_markers_for_lab_test(test)
        check(got, raw.get(f"/v3/lab_tests/{test}/markers").json(), True)
        if not got.markers:
            raise AssertionError(f"no markers for the sandbox test: {got}")

    def get_markers_for_order_set():
        tests = [need("phlebotomy_test")]
        got = lab.get_markers_for_order_set(request=vital.OrderSetRequest(lab_test_ids=tests))
        answer = raw.post("/v3/lab_tests/list_order_set_markers", json={"lab_test_ids": tests}).json()
        check(got, answer, True)
        alone = lab.get_markers_for_lab_test(tests[0])
        if sorted(m.id for m in got.markers) != sorted(m.id for m in alone.markers):
            raise AssertionError("an order set of one test has other markers than the test")

    def get_area_info():
        params = {"zip_code": "85004", "radius": "25"}
        got = lab.get_area_info(**params)
        check(got, raw.get("/v3/order/area/info", params=params).json(), True)
        if got.zip_code != "85004" or not got.phlebotomy.is_served:
            raise AssertionError(f"85004 is served by phlebotomy in the sandbox: {got}")

    def get_psc_info():
        params = {"zip_code": "85004", "lab_id": need("quest"), "radius": "25"}
        got = lab.get_psc_info(**params)
        check(got, raw.get("/v3/order/psc/info", params=params).json(), True)
        if got.lab_id != params["lab_id"] or not got.patient_service_centers:
            raise AssertionError(f"no Quest centre near 85004: {got}")

    def order(test):
        got = lab.create_order(
            user_id=need("user"), patient_details=PATIENT, patient_address=ADDRESS,
            order_set=vital.OrderSetRequest(lab_test_ids=[test]), idempotency_key="sdk-lab-own",
        )
        check(got.order, raw.get(f"/v3/order/{got.order.id}").json(), True)
        if got.order.user_id != state["user"] or got.order.lab_test_ids != [test]:
            raise AssertionError(f"not the order asked for: {got.order}")
        return got.order.id

    def create_order():
        # An order of the lab test made above; a retry with the same idempotency key answers the
        # same order, not a second one.
        first = order(need("lab_test"))
        if order(state["lab_test"]) != first:
            raise AssertionError("a retried create_order made a second order")

    def get_order():
        order_id = need("phlebotomy_order")
        got = lab.get_order(order_id)
        check(got, raw.get(f"/v3/order/{order_id}").json(), True)
        if got.id != order_id:
            raise AssertionError(got)

    def get_orders():
        params = {"user_id": need("user"), "order_key": "created_at", "order_direction": "asc"}
        got = lab.get_orders(**params)
        check(got, raw.get("/v3/orders", params=params).json(), True)
        fixtures = [state["phlebotomy_order"], state["walk_in_order"], state["results_order"]]
        if [o.id for o in got.orders][:3] != fixtures:
            raise AssertionError(f"the fixture orders, oldest first, were expected: {got.orders}")

    def order_psc_info():
        order_id = need("walk_in_order")
        got = lab.get_order_psc_info(order_id, radius="50")
        check(got, raw.get(f"/v3/order/{order_id}/psc/info", params={"radius": "50"}).json(), True)
        distances = [c.distance for c in got.patient_service_centers]
        if not distances or distances != sorted(distances) or distances[-1] > 50:
            raise AssertionError(f"the centres near the order's patient, nearest first: {got}")

    def phlebotomy_availability():
        got = lab.get_phlebotomy_appointment_availability(request=vital.UsAddress(**AT_HOME))
        answer = raw.post("/v3/order/phlebotomy/appointment/availability", json=AT_HOME).json()
        same_slots(got, answer)
        state["phlebotomy_slots"] = confirming_slots(got, 2)

    def appointment_flow(kind):
        """book, reschedule, get, cancel of one kind ("phlebotomy" or "psc")."""
        path = lambda order_id: f"/v3/order/{order_id}/{kind}/appointment"  # noqa: E731
        order_of = "phlebotomy_order" if kind == "phlebotomy" else "walk_in_order"

        def book():
            order_id = need(order_of)
            slot = need(f"{kind}_slots")[0]
            got = getattr(lab, f"book_{kind}_appointment")(
                order_id, request=vital.AppointmentBookingRequest(booking_key=slot.booking_key),
            )
            check(got, raw.get(path(order_id)).json(), True)
            if got.order_id != order_id or got.status.value != "confirmed" or got.start_at != slot.start:
                raise AssertionError(f"a confirmed appointment at {slot.start} was expected: {got}")
            state[f"{kind}_appointment"] = got.id

        def reschedule():
            order_id = need(order_of)
            need(f"{kind}_appointment")
            slot = need(f"{kind}_slots")[1]
            got = getattr(lab, f"reschedule_{kind}_appointment")(
                order_id, request=vital.AppointmentRescheduleRequest(booking_key=slot.booking_key),
            )
            check(got, raw.get(path(order_id)).json(), True)
            if got.start_at != slot.start or got.status.value != "confirmed":
                raise AssertionError(f"the appointment was not moved to {slot.start}: {got}")

        def get():
            order_id = need(order_of)
            got = getattr(lab, f"get_{kind}_appointment")(order_id)
            check(got, raw.get(path(order_id)).json(), True)
            if got.id != need(f"{kind}_appointment"):
                raise AssertionError(got)

        def reasons():
            got = getattr(lab, f"get_{kind}_appointment_cancellation_reason")()
            check(got, raw.get(f"/v3/order/{kind}/appointment/cancellation-reasons").json(), True)
            state[f"{kind}_reason"] = got[0].id

        def cancel():
            order_id = need(order_of)
            need(f"{kind}_appointment")
            note = {"notes": "sdk_check"} if kind == "phlebotomy" else {"note": "sdk_check"}
            got = getattr(lab, f"cancel_{kind}_appointment")(
                order_id, cancellation_reason_id=need(f"{kind}_reason"), **note,
            )
            check(got, raw.get(path(order_id)).json(), True)
            if got.status.value != "cancelled":
                raise AssertionError(f"the appointment is not cancelled: {got}")

        table[("lab_tests", f"book_{kind}_appointment")] = book
        table[("lab_tests", f"reschedule_{kind}_appointment")] = reschedule
        table[("lab_tests", f"get_{kind}_appointment")] = get
        table[("lab_tests", f"get_{kind}_appointment_cancellation_reason")] = reasons
        table[("lab_tests", f"cancel_{kind}_appointment")] = cancel

    def simulate_order_process():
        # The SDK types final_status as an OrderStatus: the dotted `status.method.low` form.
        order_id = need("phlebotomy_order")
        got = lab.simulate_order_process(
            order_id, final_status=vital.OrderStatus.COMPLETED_AT_HOME_PHLEBOTOMY_COMPLETED,
        )
        answer = raw.get(f"/v3/order/{order_id}").json()
        check(got, answer, True)
        if answer["status"] != "completed":
            raise AssertionError(f"the order was not walked to completed: {answer['status']}")

    def get_result_raw():
        order_id = need("results_order")
        got = lab.get_result_raw(order_id)
        check(got, raw.get(f"/v3/order/{order_id}/result").json(), True)
        if got.metadata is None or not got.results:
            raise AssertionError(f"a completed order has results: {got}")

    def get_result_metadata():
        order_id = need("results_order")
        got = lab.get_result_metadata(order_id)
        results = raw.get(f"/v3/order/{order_id}/result").json()
        check(got, raw.get(f"/v3/order/{order_id}/result/metadata").json(), True)
        check(got, results["metadata"], True)

    def psc_availability():
        # The SDK always asks for Quest's centres (it sends lab=quest).
        params = {"zip_code": "85004", "radius": "25"}
        got = lab.get_psc_appointment_availability(**params)
        answer = raw.post("/v3/order/psc/appointment/availability", params=params | {"lab": "quest"}).json()
        same_slots(got, answer)
        state["psc_slots"] = confirming_slots(got, 2)

    def cancel_order():
        order_id = need("walk_in_order")
        got = lab.cancel_order(order_id)
        check(got.order, raw.get(f"/v3/order/{order_id}").json(), True)
        if got.order.id != order_id or got.order.status.value != "cancelled":
            raise AssertionError(f"the order is not cancelled: {got.order}")

    appointment_flow("phlebotomy")
    appointment_flow("psc")
    steps = {("lab_tests", name): fn for name, fn in {
        "get_labs": get_labs, "get_markers": get_markers, "get": get,
        "get_paginated": get_paginated, "create": create, "get_by_id": get_by_id,
        "update_lab_test": update_lab_test, "get_markers_for_lab_test": get_markers_for_lab_test,
        "get_markers_for_order_set": get_markers_for_order_set, "get_area_info": get_area_info,
        "get_psc_info": get_psc_info, "create_order": create_order, "get_order": get_order,
        "get_orders": get_orders, "get_order_psc_info": order_psc_info,
        "get_markers_by_lab_and_provider_id": get_marker_by_code,
        "get_result_metadata": get_result_metadata,
        "get_phlebotomy_appointment_availability": phlebotomy_availability,
        "simulate_order_process": simulate_order_process, "get_result_raw": get_result_raw,
        "get_psc_appointment_availability": psc_availability, "cancel_order": cancel_order,
    }.items()}
    table.update(steps)
    lab_steps = {name for client_name, name in table if client_name == "lab_tests"}
    if set(LAB_ORDER) != lab_steps or len(LAB_ORDER) != len(lab_steps):
        # A lab step outside LAB_ORDER would run before the steps it needs.
        raise SystemExit(f"LAB_ORDER and the lab steps differ: {sorted(set(LAB_ORDER) ^ lab_steps)}")


# Methods in scope this script does not call yet, each with why. Listed so that coverage cannot
# shrink unnoticed: the run fails if a method outside this list is uncovered, or one in it is
# covered (remove it).
NOT_YET = {}


def link_calls(table):
    """The link methods: each call goes through the SDK's raw client too, so the parsed model is
    compared with the very answer it was parsed from (a link token or code is new every call),
    and the token it made is then used the way the SDK's next calls use it."""
    target = client.user.create(client_user_id="sdk-link-1").user_id
    state = {}

    def parsed_and_raw(answer):
        # The SDK's HttpResponse keeps the httpx response it parsed only as `_response`.
        response = answer._response
        if not 200 <= response.status_code < 300:
            raise AssertionError(f"{response.status_code} {response.text}")
        check(answer.data, response.json(), True)
        return answer.data

    def token():
        got = parsed_and_raw(client.link.with_raw_response.token(user_id=target, provider="oura"))
        if not got.link_token or not got.link_web_url:
            raise AssertionError(got)
        state["token"] = got.link_token

    def providers():
        got = parsed_and_raw(client.link.with_raw_response.get_all_providers(vital_link_token=state["token"]))
        answer = raw.get("/v2/link/providers", headers={"x-link-token": state["token"]}).json()
        check(got, answer, True)
        if "oura" not in {p.slug for p in got}:
            raise AssertionError(f"oura not offered by a token made for it: {answer}")

    def oauth_link():
        got = parsed_and_raw(client.link.with_raw_response.generate_oauth_link("oura", vital_link_token=state["token"]))
        url = (got.model_extra or {}).get("oauth_url") or getattr(got, "oauth_url", None)
        if got.slug != "oura" or not url or "client_id=sdk-check-client" not in url:
            raise AssertionError(f"no authorisation URL of the configured application: {got}")

    def code_create():
        expires = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=2)
        got = parsed_and_raw(client.link.with_raw_response.code_create(user_id=target, expires_at=expires))
        if not re.fullmatch(r"sk(us|eu)[0-9a-f]{8}", got.code) or abs((got.expires_at - expires).total_seconds()) > 1:
            raise AssertionError(got)
        exchanged = raw.post("/v2/link/code/exchange", json={"code": got.code})
        if exchanged.status_code != 200:
            raise AssertionError(f"the SDK's code does not exchange: {exchanged.text}")

    def deregister():
        client.link.connect_demo_provider(user_id=target, provider="oura")
        got = parsed_and_raw(client.user.with_raw_response.deregister_provider(target, "oura"))
        if got.success is not True:
            raise AssertionError(got)
        sources = raw.get(f"/v2/user/providers/{target}").json()["providers"]
        oura = [p for p in sources if p["slug"] == "oura"]
        if not oura or oura[0]["status"] != "deregistered":
            raise AssertionError(f"oura not deregistered: {sources}")

    def password_link():
        # A token of its own (the shared one names oura); Peloton is unreachable from the test
        # server, so the link fails with a link error the SDK must parse.
        fresh = client.link.token(user_id=target).link_token
        got = parsed_and_raw(client.link.with_raw_response.connect_password_provider(
            "peloton", username="rider@example.com", password="not-sent-anywhere", vital_link_token=fresh))
        if got.connected or got.state != "error" or got.provider != "peloton" or got.error_type != "provider_api_error":
            raise AssertionError(got)

    def bulk_import():
        # Bulk import needs the team's own OAuth application; Strava has no connector, so the
        # imported connection starts no pull.
        user = client.user.create(client_user_id="sdk-bulk-1").user_id
        state["bulk_user"] = user
        app = raw.put("/v2/team/provider/strava/credentials", json={"client_id": "sdk-bulk-client", "client_secret": "sdk-bulk-secret"})
        if app.status_code != 200:
            raise AssertionError(f"team credentials: {app.status_code} {app.text}")
        recipe = vital.ConnectionRecipe(
            user_id=user, access_token="sdk-bulk-access", refresh_token="sdk-bulk-refresh",
            provider_id="strava-athlete-1", expires_at=int(dt.datetime.now().timestamp()) + 3600,
            oauth_scopes=["profile", "workouts"],
        )
        got = parsed_and_raw(client.link.with_raw_response.bulk_import(provider="strava", connections=[recipe], wait_for_completion=True))
        if got.user_ids_imported != [user] or got.user_ids_failed != []:
            raise AssertionError(f"not imported within the wait: {got}")
        sources = raw.get(f"/v2/user/providers/{user}").json()["providers"]
        if not any(p["slug"] == "strava" and p["status"] == "connected" for p in sources):
            raise AssertionError(f"no strava connection: {sources}")

    def bulk_ops():
        got = parsed_and_raw(client.link.with_raw_response.list_bulk_ops(page_size=10))
        ops = [op for op in got.data if op.provider == "strava"]
        if len(ops) != 1 or ops[0].status != "success" or (ops[0].pending, ops[0].processed) != (0, 1):
            raise AssertionError(f"the bulk import is not listed as done: {got}")

    def bulk_export():
        got = parsed_and_raw(client.link.with_raw_response.bulk_export(provider="strava"))
        rows = [(r.user_id, r.access_token, r.refresh_token, r.provider_id) for r in got.data]
        if rows != [(state["bulk_user"], "sdk-bulk-access", "sdk-bulk-refresh", "strava-athlete-1")] or got.next_token:
            raise AssertionError(f"the imported connection's tokens were expected: {got}")

    def bulk_trigger():
        # Strava has a connector: the imported connection's historical pull is scheduled (a
        # durable job; here it would reach no Strava, which the trigger does not wait for).
        user = state["bulk_user"]
        got = parsed_and_raw(client.link.with_raw_response.bulk_trigger_historical_pull(
            user_ids=[user], provider="strava", wait_for_completion=True))
        if got != {"user_ids_triggered": [user], "user_ids_failed": []}:
            raise AssertionError(f"a trigger of the one user was expected: {got}")
        op = raw.get("/v2/link/bulk_op").json()["data"][0]
        if op["type"] != "link_bulk_historical_trigger" or op["status"] != "success":
            raise AssertionError(f"the trigger's operation is not listed as done: {op}")

    def bulk_pause():
        user = state["bulk_user"]
        got = parsed_and_raw(client.link.with_raw_response.bulk_pause(user_ids=[user], provider="strava"))
        sources = raw.get(f"/v2/user/providers/{user}").json()["providers"]
        status = [p["status"] for p in sources if p["slug"] == "strava"]
        if got.get("user_ids_paused") != [user] or status != ["paused"]:
            raise AssertionError(f"the strava connection is not paused: {got} {sources}")

    def complete_mfa():
        # No LibreView sign-in waits for a code: the SDK parses the answer telling to sign in again.
        fresh = client.link.token(user_id=target).link_token
        got = parsed_and_raw(client.link.with_raw_response.complete_password_provider_mfa(
            "abbott_libreview", mfa_code="123456", vital_link_token=fresh))
        if got.connected or got.state != "error" or got.error_type != "provider_credential_error":
            raise AssertionError(got)

    def email_link():
        # The test server has no LibreLinkUp follower account: a link error the SDK must parse.
        fresh = client.link.token(user_id=target).link_token
        got = parsed_and_raw(client.link.with_raw_response.connect_email_auth_provider(
            email="patient@example.com", vital_link_token=fresh))
        if got.get("state") != "error" or got.get("error_type") != "provider_api_error":
            raise AssertionError(got)

    table[("link", "token")] = token
    table[("link", "bulk_export")] = bulk_export
    table[("link", "bulk_trigger_historical_pull")] = bulk_trigger
    table[("link", "bulk_pause")] = bulk_pause
    table[("link", "complete_password_provider_mfa")] = complete_mfa
    table[("link", "connect_email_auth_provider")] = email_link
    table[("link", "connect_password_provider")] = password_link
    table[("link", "get_all_providers")] = providers
    table[("link", "generate_oauth_link")] = oauth_link
    table[("link", "code_create")] = code_create
    table[("user", "deregister_provider")] = deregister
    table[("link", "bulk_import")] = bulk_import
    table[("link", "list_bulk_ops")] = bulk_ops
    return [
        "token", "get_all_providers", "generate_oauth_link", "bulk_import", "list_bulk_ops",
        "bulk_export", "bulk_trigger_historical_pull", "bulk_pause",
    ]


def main():
    table, ring, cgm = calls()
    vitals_calls(table, ring, cgm)
    lab_calls(table)
    link_order = link_calls(table)
    surface_calls(table, client, raw, check)
    scope = in_scope()
    # Order: creation before use, the lab flow in its own order, deletion last.
    order = {("user", "create"): 0, ("user", "upsert_user_info"): 1, ("user", "delete"): 9}
    order |= {("lab_tests", name): 6 + i / 100 for i, name in enumerate(LAB_ORDER)}
    order |= {("link", name): 4 + i / 100 for i, name in enumerate(link_order)}
    scope.sort(key=lambda m: order.get(m, 5))
    failures, uncovered, expected, called, passed = [], [], [], 0, 0
    for key in scope:
        fn = table.get(key)
        if fn is None:
            uncovered.append(".".join(key))
            continue
        called += 1
        try:
            fn()
            passed += 1
        except ExpectedFailure as e:
            expected.append({"method": ".".join(key), "reason": str(e)})
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
            failures.append({"method": ".".join(key), "error": f"{type(e).__name__}: {e}"[:600]})
    not_yet = sorted(m for m in uncovered if m in NOT_YET)
    unexpected = sorted(set(uncovered) - set(NOT_YET))
    stale = sorted(m for m in NOT_YET if m not in uncovered)
    print(json.dumps({
        "in_scope": len(scope), "called": called, "passed": passed,
        "failures": failures, "uncovered": unexpected, "not_yet": not_yet,
        "stale_not_yet": stale, "expected_failures": expected,
    }))
    sys.exit(0 if not failures and not unexpected and not stale else 1)


if __name__ == "__main__":
    main()
