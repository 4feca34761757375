"""The SDK calls of the reference surface that landed after sdk_check.py's first tables: the
session-derived reads (sleep cycles, session streams, electrocardiograms, menstrual cycles),
devices, introspection, the team's own reads, sign-in tokens and the raw summaries (each
payload exactly as pushed).

Each call goes through the SDK as a new user would and is compared field by field with the
raw answer of the same request (`check`); each also asserts what the answer must hold, so an
empty or wrong answer that parses still fails. The data they read is pushed first, to a user of
their own (`sdk-surface-1`), in the reference's push shapes.
"""

import datetime as dt


def surface_calls(table, client, raw, check):
    """Adds the calls to `table` ((client, method) -> function raising on failure)."""
    user = raw.post("/v2/user", json={"client_user_id": "sdk-surface-1"}).json()["user_id"]
    day = dt.date.today() - dt.timedelta(days=2)
    window = {"start_date": day.isoformat(), "end_date": (day + dt.timedelta(days=1)).isoformat()}
    night = dt.datetime.combine(day, dt.time(1), dt.timezone.utc)
    run = night + dt.timedelta(hours=10)

    def at(instant, value, **extra):
        return {"timestamp": instant.isoformat(), "value": value} | extra

    ring = {
        "provider": "oura", "source": {"type": "ring", "device_id": "sdk-ring-1"},
        "sleep": [{
            "bedtime_start": night.isoformat(),
            "bedtime_stop": (night + dt.timedelta(minutes=30)).isoformat(),
            "sleep_stream": {"hypnogram": [4, 2, 2, 1, 1, 3], "interval": 300},
        }],
        "workouts": [{
            "id": "sdk-run-1", "time_start": run.isoformat(),
            "time_end": (run + dt.timedelta(minutes=10)).isoformat(),
            "sport": {"name": "Running", "slug": "running"},
        }],
        "activity": [{"date": day.isoformat(), "steps": 4321, "calories_total": 2100.5}],
        "body": [{"measured_at": (night + dt.timedelta(hours=8)).isoformat(), "weight": 70.25}],
        "profile": {"height": 181, "sex": "female"},
        "timeseries": {
            "heartrate": [at(night + dt.timedelta(minutes=10), 55.0), at(run + dt.timedelta(minutes=5), 150.0)],
            "electrocardiogram_voltage": [
                at(run + dt.timedelta(milliseconds=100 * i), 0.1 * i, type="lead_1") for i in range(10)
            ],
        },
    }
    cycle = {
        "provider": "apple_health_kit",
        "menstrual_cycle": [{
            "period_start": (day - dt.timedelta(days=20)).isoformat(),
            "period_end": (day - dt.timedelta(days=16)).isoformat(),
            "menstrual_flow": [{"date": (day - dt.timedelta(days=20)).isoformat(), "flow": "heavy"}],
        }],
    }
    for body in (ring, cycle):
        answer = raw.post(f"/v2/user/{user}/data", json=body)
        if answer.status_code != 200:
            raise SystemExit(f"surface seeding failed: {answer.status_code} {answer.text}")

    def raw_get(path, **params):
        answer = raw.get(path, params=params)
        if answer.status_code != 200:
            raise AssertionError(f"{path}: {answer.status_code} {answer.text}")
        return answer.json()

    def session_id(kind, key):
        rows = raw_get(f"/v2/summary/{kind}/{user}", **window)[key]
        if len(rows) != 1:
            raise AssertionError(f"one pushed {kind} session was expected: {rows}")
        return rows[0]["id"]

    def sleep_cycle():
        got = client.sleep_cycle.get(user, **window)
        check(got, raw_get(f"/v2/summary/sleep_cycle/{user}", **window), True)
        if [c.sleep_id for c in got.sleep_cycle] != [session_id("sleep", "sleep")]:
            raise AssertionError(f"one cycle of the pushed night was expected: {got}")

    def sleep_stream():
        sleep = session_id("sleep", "sleep")
        got = client.sleep.get_stream_by_sleep_id(sleep)
        answer = raw_get(f"/v2/timeseries/sleep/{sleep}/stream")
        check(got, answer, True)
        if [s.value for s in got.heartrate or []] != [55.0]:
            raise AssertionError(f"the night's one heart rate was expected: {answer}")

    def workout_stream():
        workout = session_id("workouts", "workouts")
        got = client.workouts.get_by_workout_id(workout)
        answer = raw_get(f"/v2/timeseries/workouts/{workout}/stream")
        check(got, answer, True)
        if [round(v) for v in answer.get("heartrate") or []] != [150]:
            raise AssertionError(f"the run's one heart rate was expected: {answer}")

    def electrocardiogram():
        got = client.electrocardiogram.get(user, **window)
        check(got, raw_get(f"/v2/summary/electrocardiogram/{user}", **window), True)
        counts = [e.voltage_sample_count for e in got.electrocardiogram]
        if counts != [10]:
            raise AssertionError(f"one recording of 10 samples was expected: {got}")

    def menstrual_cycle():
        params = {"start_date": (day - dt.timedelta(days=30)).isoformat(), "end_date": window["end_date"]}
        got = client.menstrual_cycle.get(user, **params)
        check(got, raw_get(f"/v2/summary/menstrual_cycle/{user}", **params), True)
        if [c.period_start for c in got.menstrual_cycle] != [cycle["menstrual_cycle"][0]["period_start"]]:
            raise AssertionError(f"the pushed cycle was expected: {got}")

    def devices():
        got = client.user.get_devices(user)
        check(got, raw_get(f"/v2/user/{user}/device"), True)
        if "sdk-ring-1" not in {d.device_id for d in got}:
            raise AssertionError(f"the pushed ring is not a device: {got}")

    def device():
        listed = raw_get(f"/v2/user/{user}/device")
        ring_id = next(d["id"] for d in listed if d.get("device_id") == "sdk-ring-1")
        got = client.user.get_device(user, ring_id)
        check(got, raw_get(f"/v2/user/{user}/device/{ring_id}"), True)
        if got.id != ring_id or got.provider != "oura":
            raise AssertionError(got)

    def resources():
        # Introspection follows connections' pulls; pushed data has none, so a demo user.
        demo = raw_get("/v2/user/resolve/demo-ring-and-watch")["user_id"]
        got = client.introspect.get_user_resources(user_id=demo)
        check(got, raw_get("/v2/introspect/resources", user_id=demo), True)
        if [u.user_id for u in got.data] != [demo] or not got.data[0].provider:
            raise AssertionError(f"only the asked user, with its providers, was expected: {got}")

    def historical_pulls():
        # The demo users' connections were pulled at start-up.
        got = client.introspect.get_user_historical_pulls(user_limit=2)
        answer = raw_get("/v2/introspect/historical_pull", user_limit=2)
        check(got, answer, True)
        if len(got.data) != 2 or not got.next_cursor:
            raise AssertionError(f"a first page of two users with a cursor was expected: {answer}")

    def team_id():
        return raw_get(f"/v2/user/{user}")["team_id"]

    def team():
        team = team_id()
        got = client.team.get(team)
        check(got, raw_get(f"/v2/team/{team}"), True)
        if got.id != team:
            raise AssertionError(got)

    def physicians():
        team = team_id()
        got = client.team.get_physicians(team)
        check(got, raw_get(f"/v2/team/{team}/physicians"))

    def users_search():
        got = client.team.get_user_by_id(query_id="sdk-surface")
        check(got, raw_get("/v2/team/users/search", query_id="sdk-surface"), True)
        if [u.user_id for u in got] != [user]:
            raise AssertionError(f"the search for sdk-surface finds its one user: {got}")

    def sign_in_token():
        # Each call mints a new token: the parsed model is compared with its own raw answer.
        answer = client.user.with_raw_response.get_user_sign_in_token(user)
        check(answer.data, answer._response.json(), True)
        exchanged = raw.post("/v2/link/code/exchange", json={"code": answer.data.sign_in_token})
        if answer.data.user_id != user or exchanged.status_code != 200:
            raise AssertionError(f"the SDK's sign-in token does not exchange: {exchanged.text}")

    def raw_summary(kind):
        def call():
            got = getattr(client, kind).get_raw(user, **window)
            answer = raw_get(f"/v2/summary/{kind}/{user}/raw", **window)
            check(got, answer, True)
            if [r["data"] for r in answer[kind]] != ring[kind]:
                raise AssertionError(f"the {kind} payloads are not what was pushed: {answer}")
        return call

    def raw_profile():
        got = client.profile.get_raw(user)
        answer = raw_get(f"/v2/summary/profile/{user}/raw")
        check(got, answer, True)
        if answer["profile"]["data"] != ring["profile"]:
            raise AssertionError(f"the profile payload is not what was pushed: {answer}")

    def raw_devices():
        got = client.devices.get_raw(user)
        answer = raw_get(f"/v2/summary/devices/{user}/raw")
        check(got, answer, True)
        if {"type": "ring", "device_id": "sdk-ring-1"} not in [d["data"] for d in answer["devices"]]:
            raise AssertionError(f"the pushed ring's source is not a raw device: {answer}")

    table.update({
        ("sleep", "get_raw"): raw_summary("sleep"),
        ("activity", "get_raw"): raw_summary("activity"),
        ("workouts", "get_raw"): raw_summary("workouts"),
        ("body", "get_raw"): raw_summary("body"),
        ("profile", "get_raw"): raw_profile,
        ("devices", "get_raw"): raw_devices,
        ("sleep_cycle", "get"): sleep_cycle,
        ("sleep", "get_stream_by_sleep_id"): sleep_stream,
        ("workouts", "get_by_workout_id"): workout_stream,
        ("electrocardiogram", "get"): electrocardiogram,
        ("menstrual_cycle", "get"): menstrual_cycle,
        ("user", "get_devices"): devices,
        ("user", "get_device"): device,
        ("introspect", "get_user_resources"): resources,
        ("introspect", "get_user_historical_pulls"): historical_pulls,
        ("team", "get"): team,
        ("team", "get_physicians"): physicians,
        ("team", "get_user_by_id"): users_search,
        ("user", "get_user_sign_in_token"): sign_in_token,
    })
