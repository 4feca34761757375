"""Distributed Flight SQL read through the ADBC driver, for tests/it/engine/distributed.rs.

Usage:
  distributed_check.py compare DIST_URI ONE_URI KEY
      Runs QUERIES against an API node with workers (DIST_URI) and one without (ONE_URI), and
      prints one JSON object: {"answers": {name: [dist_rows, one_rows]}, "plans": {"dist": text,
      "one": text, "dist_six_hours": text, "one_six_hours": text}} (rows as lists of values;
      plans are EXPLAIN ANALYZE's plan of LOOP_QUERY and of the six-hour query, as run).
  distributed_check.py loop URI KEY SECONDS
      Runs LOOP_QUERY back to back for SECONDS, printing one JSON line per answer as it ends:
      {"t": epoch seconds, "rows": [...]} or {"t": ..., "error": message}.
"""

import json
import sys
import time

import adbc_driver_flightsql.dbapi as flight_sql
from adbc_driver_flightsql import DatabaseOptions

# Heart-rate values are whole numbers: sums, means and medians are exact in any order of
# addition, so a distributed answer must equal the one-node answer exactly.
QUERIES = {
    "per_user": """SELECT user_id, client_user_id, count(*) AS n, sum(value) AS total,
                          min(value) AS low, max(value) AS high, avg(value) AS mean
                     FROM timeseries_heartrate GROUP BY 1, 2 ORDER BY 1""",
    "across": """SELECT count(*) AS n, count(DISTINCT user_id) AS users, sum(value) AS total,
                        median(value) AS med, max("timestamp") AS last
                   FROM timeseries_heartrate""",
    "daily": """SELECT date_trunc('day', "timestamp") AS day, count(*) AS n, avg(value) AS mean
                  FROM timeseries_heartrate GROUP BY 1 ORDER BY 1""",
    "in_workouts": """SELECT h.client_user_id, count(*) AS n, max(h.value) AS high
                        FROM timeseries_heartrate h JOIN workouts w
                          ON h.user_id = w.user_id AND h."timestamp" >= w.session_start
                         AND h."timestamp" < w.session_end
                       GROUP BY 1 ORDER BY 1""",
    "six_hours": """SELECT client_user_id, count(*) AS n, sum(value) AS total
                      FROM timeseries_heartrate
                     WHERE "timestamp" >= '2025-02-02T00:00:00Z'
                       AND "timestamp" < TIMESTAMP '2025-02-02 06:00:00'
                     GROUP BY 1 ORDER BY 1""",
    "top3": """SELECT client_user_id, max(value) AS high FROM timeseries_heartrate
                GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 3""",
}
LOOP_QUERY = QUERIES["per_user"]


def connect(uri, key):
    return flight_sql.connect(
        uri=uri, db_kwargs={DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {key}"}
    )


def rows(cur, sql):
    cur.execute(sql)
    table = cur.fetch_arrow_table()
    return [[str(v) if not isinstance(v, (int, float, str, type(None))) else v
             for v in row.values()] for row in table.to_pylist()]


def plan(cur, sql):
    cur.execute("EXPLAIN ANALYZE " + sql)
    return "\n".join(row["plan"] for row in cur.fetch_arrow_table().to_pylist())


def compare(dist_uri, one_uri, key):
    answers = {name: [] for name in QUERIES}
    plans = {}
    for which, uri in (("dist", dist_uri), ("one", one_uri)):
        with connect(uri, key) as conn, conn.cursor() as cur:
            for name, sql in QUERIES.items():
                answers[name].append(rows(cur, sql))
            plans[which] = plan(cur, LOOP_QUERY)
            plans[which + "_six_hours"] = plan(cur, QUERIES["six_hours"])
    print(json.dumps({"answers": answers, "plans": plans}))


def loop(uri, key, seconds):
    end = time.time() + seconds
    while time.time() < end:
        try:
            with connect(uri, key) as conn, conn.cursor() as cur:
                got = rows(cur, LOOP_QUERY)
            print(json.dumps({"t": time.time(), "rows": got}), flush=True)
        except Exception as e:  # the driver's errors carry the server's status and message
            print(json.dumps({"t": time.time(), "error": f"{type(e).__name__}: {e}"}),
                  flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "compare":
        compare(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "loop":
        loop(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        sys.exit(f"unknown mode {mode!r}")
