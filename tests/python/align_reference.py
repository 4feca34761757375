"""ALIGN (analytics.md section 1) computed independently with pandas, for tests/it/engine/align.rs.

Reads a JSON array of cases on stdin, each
  {"observations": [{"day": "YYYY-MM-DD", "provider": str, "value": float | null}, ...],
   "mode": "carry_forward" | "carry_backward" | "carry_nearest", "cap_days": int | null,
   "now_day": "YYYY-MM-DD" | null, "window": ["YYYY-MM-DD", "YYYY-MM-DD"], "partitioned": bool}
and prints the array of their aligned tables in the engine's JSON shape (column-major), for
queries selecting
the day, (the provider,) the daily mean and the daily count of one value a day.

Gap filling is pandas' own: ffill / bfill with limit = the cap in days, over each partition's
spine (the observed days, extended by the cap, inside the window, the forward extension never
past the day of "now"). carry_nearest takes the nearer of the two fills, the past on a tie.
"""

import json
import sys

import numpy as np
import pandas as pd


def fill(series, mode, cap):
    forward = series.ffill(limit=cap)
    backward = series.bfill(limit=cap)
    if mode == "carry_forward":
        return forward
    if mode == "carry_backward":
        return backward
    positions = pd.Series(np.arange(len(series)), index=series.index, dtype="float64")
    known = positions.where(series.notna())
    since = positions - known.ffill()
    until = known.bfill() - positions
    take_past = forward.notna() & (backward.isna() | (since <= until))
    return forward.where(take_past, backward)


def align(case):
    mode, cap = case["mode"], case["cap_days"]
    first_day, last_day = (pd.Timestamp(d) for d in case["window"])
    now = pd.Timestamp(case["now_day"]) if case["now_day"] else None
    obs = pd.DataFrame(case["observations"], columns=["day", "provider", "value"])
    obs["day"] = pd.to_datetime(obs["day"])
    obs["value"] = obs["value"].astype("float64")
    if not case["partitioned"]:
        obs["provider"] = ""
    rows = []
    for provider, part in obs.groupby("provider", sort=True):
        daily = part.groupby("day").agg(mean=("value", "mean"), count=("value", "count"))
        lo, hi = daily.index.min(), daily.index.max()
        if cap is not None:
            step = pd.Timedelta(days=cap)
            if mode != "carry_forward":
                lo = max(lo - step, first_day)
            if mode != "carry_backward":
                stop = last_day if now is None else min(now, last_day)
                hi = max(hi, min(hi + step, stop))
        spine = pd.date_range(lo, hi, freq="D")
        daily = daily.reindex(spine)
        mean = fill(daily["mean"], mode, cap)
        count = fill(daily["count"].astype("float64"), mode, cap)
        for day in spine:
            rows.append((day, provider, mean[day], count[day]))
    rows.sort(key=lambda r: (r[0], r[1]))

    def cell(x, as_int=False):
        if pd.isna(x):
            return None
        return int(x) if as_int else float(x)

    table = {"group_key.0": [r[0].strftime("%Y-%m-%dT%H:%M:%S") for r in rows]}
    if case["partitioned"]:
        table["group_key.1"] = [r[1] for r in rows]
    table["mean.heartrate.value"] = [cell(r[2]) for r in rows]
    table["count.heartrate.value"] = [cell(r[3], True) for r in rows]
    return {"results": [{"table": table}]}


def main():
    json.dump([align(case) for case in json.load(sys.stdin)], sys.stdout)


if __name__ == "__main__":
    main()
