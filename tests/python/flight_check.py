"""Arrow Flight SQL read the way a notebook reads it, for tests/it/engine/flight.rs: the ADBC Flight SQL
driver (no wearhouse-specific client), into pandas and Polars.

Usage: flight_check.py URI KEY OTHER_KEY

Prints one JSON object (the Rust test asserts on it):
- "views": the view names GetTables lists; "heartrate_columns": the columns of
  timeseries_heartrate's schema as GetTables answers it;
- "counts": rows of each view queried, {view: n};
- "readiness": derived_readiness per user, {user_id: [[day, sleep_score, strain_score], ...]};
- "per_user": pandas, timeseries_heartrate grouped by user: {user_id: [client_user_id, rows, mean]};
- "weekly_rows": rows of the README's weekly example;
- "polars_rows", "prepared_rows", "basic_auth_rows": the same question through Polars, a prepared
  statement, and a connection authenticated by the handshake (the key as the Basic password);
- "other_team": what OTHER_KEY's team sees of timeseries_heartrate, {user_id: [rows, max]};
- "wrong_key", "refused_write", "timeout": the errors (their messages), and "timeout_seconds",
  how long the query past the time limit took to fail.
"""

import json
import sys
import time

import adbc_driver_flightsql.dbapi as flight_sql
import polars as pl
from adbc_driver_flightsql import DatabaseOptions

uri, key, other_key = sys.argv[1], sys.argv[2], sys.argv[3]
VIEWS = ["sleep", "activity", "workouts", "body", "meal", "profile", "menstrual_cycle",
         "timeseries_heartrate", "timeseries_steps", "derived_readiness"]
READINESS = ("SELECT user_id, CAST(date AS VARCHAR) AS day, sleep_score, strain_score "
             "FROM derived_readiness ORDER BY user_id, date")
PER_USER = ("SELECT user_id, client_user_id, count(*) AS n, avg(value) AS mean "
            "FROM timeseries_heartrate GROUP BY user_id, client_user_id ORDER BY user_id")

# The README's example (README.md, "SQL from a notebook: Arrow Flight SQL").
WEEKLY = """SELECT client_user_id, date_trunc('week', "timestamp") AS week, avg(value) AS bpm
               FROM timeseries_heartrate GROUP BY 1, 2 ORDER BY 1, 2"""


def connect(k=None, **kwargs):
    db_kwargs = dict(kwargs)
    if k is not None:
        db_kwargs[DatabaseOptions.AUTHORIZATION_HEADER.value] = f"Bearer {k}"
    return flight_sql.connect(uri=uri, db_kwargs=db_kwargs)


def error_of(fn):
    try:
        fn()
    except Exception as e:  # the driver's errors carry the server's status and message
        return f"{type(e).__name__}: {e}"
    return None


report = {}
with connect(key) as conn:
    objects = conn.adbc_get_objects(depth="tables").read_all().to_pylist()
    report["views"] = sorted(
        t["table_name"]
        for catalog in objects
        for schema in catalog["catalog_db_schemas"] or []
        for t in schema["db_schema_tables"] or []
    )
    schema = conn.adbc_get_table_schema("timeseries_heartrate")
    report["heartrate_columns"] = schema.names
    with conn.cursor() as cur:
        counts = {}
        for view in VIEWS:
            cur.execute(f"SELECT count(*) AS n FROM {view}")
            counts[view] = cur.fetch_arrow_table().column("n")[0].as_py()
        report["counts"] = counts
        cur.execute(PER_USER)
        frame = cur.fetch_arrow_table().to_pandas()
        report["per_user"] = {
            row.user_id: [row.client_user_id, int(row.n), float(row.mean)]
            for row in frame.itertuples()
        }
        cur.execute(READINESS)
        readiness = {}
        for row in cur.fetch_arrow_table().to_pylist():
            readiness.setdefault(row["user_id"], []).append(
                [row["day"], row["sleep_score"], row["strain_score"]])
        report["readiness"] = readiness
        cur.execute(PER_USER)
        report["polars_rows"] = pl.from_arrow(cur.fetch_arrow_table()).height
        cur.execute(WEEKLY)
        report["weekly_rows"] = cur.fetch_arrow_table().num_rows
        cur.adbc_prepare(PER_USER)
        cur.execute(PER_USER)
        report["prepared_rows"] = cur.fetch_arrow_table().num_rows
        report["refused_write"] = error_of(
            lambda: cur.execute("CREATE TABLE leak AS SELECT * FROM timeseries_heartrate"))
        started = time.monotonic()
        report["timeout"] = error_of(lambda: (
            cur.execute("SELECT sum(value) AS s FROM range(100000000000)"),
            cur.fetch_arrow_table()))
        report["timeout_seconds"] = time.monotonic() - started

with connect(username="notebook", password=key) as conn, conn.cursor() as cur:
    cur.execute(PER_USER)
    report["basic_auth_rows"] = cur.fetch_arrow_table().num_rows

with connect(other_key) as conn, conn.cursor() as cur:
    cur.execute("SELECT user_id, count(*) AS n, max(value) AS top FROM timeseries_heartrate "
                "GROUP BY user_id")
    table = cur.fetch_arrow_table().to_pylist()
    report["other_team"] = {r["user_id"]: [r["n"], r["top"]] for r in table}


def wrong():
    with connect("not-a-key") as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM sleep")
        cur.fetch_arrow_table()


report["wrong_key"] = error_of(wrong)
print(json.dumps(report))
