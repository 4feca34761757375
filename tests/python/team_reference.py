"""Team queries (analytics.md section 5) computed independently with pandas, for
tests/it/engine/team.rs.

Reads one JSON object on stdin:
  {"users": [{"user_id": str, "zone": str, "ingestion_start": "YYYY-MM-DD" | null}, ...],
   "rows": [{"user_id": str, "provider": str, "timestamp": RFC 3339 UTC, "value": float}, ...],
   "providers": [best provider first, ...], "window": ["YYYY-MM-DD", "YYYY-MM-DD"]}
and prints, for the daily question "across the users, per local day: mean, median, count, min,
max, sum, stddev, newest and oldest heart rate", a JSON object day -> {func: value}.

Per user, as the per-user query does: each sample's day is its local (floating) day in the
user's zone, days outside the window (first and last local day) or before the user's
ingestion start are left out, and each day keeps the rows of
the best provider present that day. Then every user's kept rows are aggregated together.
"""

import json
import sys

import pandas as pd


def main():
    case = json.load(sys.stdin)
    users = {u["user_id"]: u for u in case["users"]}
    rank = {p: i for i, p in enumerate(case["providers"])}
    rows = pd.DataFrame(case["rows"])
    rows["utc"] = pd.to_datetime(rows["timestamp"], utc=True)
    rows["local"] = [
        t.tz_convert(users[u]["zone"]).tz_localize(None)
        for t, u in zip(rows["utc"], rows["user_id"])
    ]
    rows["day"] = rows["local"].dt.strftime("%Y-%m-%d")
    start = rows["user_id"].map(lambda u: users[u]["ingestion_start"] or "0000-00-00")
    first, last = case["window"]
    rows = rows[(rows["day"] >= start) & (rows["day"] >= first) & (rows["day"] <= last)]
    rows["rank"] = rows["provider"].map(rank)
    best = rows.groupby(["user_id", "day"])["rank"].transform("min")
    kept = rows[rows["rank"] == best]
    out = {}
    for day, g in kept.groupby("day"):
        by_time = g.sort_values("local")
        out[day] = {
            "mean": g["value"].mean(),
            "median": g["value"].median(),
            "count": int(g["value"].count()),
            "min": g["value"].min(),
            "max": g["value"].max(),
            "sum": g["value"].sum(),
            "stddev": g["value"].std(ddof=1) if len(g) > 1 else None,
            "newest": by_time["value"].iloc[-1],
            "oldest": by_time["value"].iloc[0],
        }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
