"""Writes the Google Health API fixtures of this folder and the push bodies they must give.

Run here with `python3 make_fixtures.py`. The responses follow the discovery document of
`health:v4` (schemas ListDataPointsResponse, DataPoint, Sleep, SleepSummary, HeartRate,
HeartRateVariability, OxygenSaturation, Weight, BodyFat, Height, DailyRollUpDataPointsResponse,
Identity); the expected bodies apply the mapping rules of `src/sync/connectors/google_health/`
independently of the Rust code.
"""

import json
from datetime import datetime, timedelta, timezone

USER = "4k2Zq9hT"
OFFSET = -5 * 3600  # the wearer is at -05:00
ZONE = timezone(timedelta(seconds=OFFSET))
DUR = f"{OFFSET}s"


def z(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def utc(dt):
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def local(dt):
    return dt.astimezone(ZONE).isoformat()


def num(v):
    return int(v) if float(v).is_integer() else v


def civil(dt):
    d = dt.astimezone(ZONE)
    return {"date": {"year": d.year, "month": d.month, "day": d.day},
            "time": {"hours": d.hour, "minutes": d.minute}}


def source(form="WATCH"):
    return {"recordingMethod": "PASSIVELY_MEASURED", "platform": "FITBIT",
            "device": {"formFactor": form, "manufacturer": "Google", "displayName": "Pixel Watch 3"}}


def sample_time(t):
    return {"physicalTime": utc(t), "utcOffset": DUR, "civilTime": civil(t)}


def write(name, value):
    with open(name, "w") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")


def page(points):
    return {"dataPoints": points, "nextPageToken": ""}


def body(**parts):
    out = {"provider": "google_health", "source": {"type": "watch"}}
    series = parts.pop("timeseries", None)
    out.update(parts)
    if series:
        out["timeseries"] = series
    return out


# --- sleep -----------------------------------------------------------------------------
def stages(start, plan):
    out, t = [], start
    for kind, minutes in plan:
        end = t + timedelta(minutes=minutes)
        out.append({"startTime": utc(t), "startUtcOffset": DUR, "endTime": utc(end),
                    "endUtcOffset": DUR, "type": kind})
        t = end
    return out


def summarise(plan):
    totals = {}
    counts = {}
    for kind, minutes in plan:
        totals[kind] = totals.get(kind, 0) + minutes
        counts[kind] = counts.get(kind, 0) + 1
    return [{"type": k, "minutes": str(totals[k]), "count": str(counts[k])} for k in totals]


NIGHT_PLAN = [("AWAKE", 12), ("LIGHT", 60), ("DEEP", 42), ("LIGHT", 50), ("REM", 30),
              ("AWAKE", 20), ("LIGHT", 68), ("DEEP", 40), ("REM", 62), ("AWAKE", 24),
              ("LIGHT", 50)]
NAP_PLAN = [("AWAKE", 2), ("ASLEEP", 30), ("RESTLESS", 3), ("ASLEEP", 18), ("AWAKE", 2)]

sleeps = []
for ident, start, plan, kind, meta in [
    ("8675309001", z("2025-03-01T04:10:00Z"), NIGHT_PLAN, "STAGES",
     {"nap": False, "processed": True, "stagesStatus": "SUCCEEDED", "manuallyEdited": False}),
    ("8675309002", z("2025-03-01T19:30:00Z"), NAP_PLAN, "CLASSIC",
     {"nap": True, "processed": True, "stagesStatus": "REJECTED_NAP", "manuallyEdited": False}),
]:
    minutes = sum(m for _, m in plan)
    end = start + timedelta(minutes=minutes)
    asleep = sum(m for k, m in plan if k in ("LIGHT", "DEEP", "REM", "ASLEEP"))
    awake = sum(m for k, m in plan if k == "AWAKE")
    sleeps.append({
        "name": f"users/{USER}/dataTypes/sleep/dataPoints/{ident}",
        "dataSource": source(),
        "sleep": {
            "interval": {"startTime": utc(start), "startUtcOffset": DUR, "endTime": utc(end),
                         "endUtcOffset": DUR, "civilStartTime": civil(start),
                         "civilEndTime": civil(end)},
            "type": kind,
            "metadata": meta,
            "stages": stages(start, plan),
            "summary": {"minutesInSleepPeriod": str(minutes), "minutesAsleep": str(asleep),
                        "minutesAwake": str(awake), "minutesToFallAsleep": str(plan[0][1]),
                        "minutesAfterWakeUp": "0", "stagesSummary": summarise(plan)},
            "createTime": utc(end + timedelta(minutes=5)),
            "updateTime": utc(end + timedelta(minutes=40)),
        },
    })
# A night Google is still processing: no stages yet, a partial summary.
start, end = z("2025-03-02T04:25:00Z"), z("2025-03-02T11:02:00Z")
sleeps.append({
    "name": f"users/{USER}/dataTypes/sleep/dataPoints/8675309003",
    "dataSource": source(),
    "sleep": {
        "interval": {"startTime": utc(start), "startUtcOffset": DUR, "endTime": utc(end),
                     "endUtcOffset": DUR, "civilStartTime": civil(start), "civilEndTime": civil(end)},
        "type": "CLASSIC",
        "metadata": {"nap": False, "processed": False, "manuallyEdited": False},
        "summary": {"minutesInSleepPeriod": "397", "minutesAsleep": "371", "minutesAwake": "26"},
        "createTime": utc(end + timedelta(minutes=3)),
        "updateTime": utc(end + timedelta(minutes=3)),
    },
})
sleeps.reverse()  # newest first, as the API orders them
write("sleep.json", page(sleeps))


def sleep_row(point):
    s = point["sleep"]
    i = s["interval"]
    start, end = z(i["startTime"]), z(i["endTime"])
    span = int((end - start).total_seconds())
    row = {"id": point["name"].rsplit("/", 1)[1], "bedtime_start": local(start),
           "bedtime_stop": local(end)}
    if s["metadata"].get("nap"):
        row["type"] = "acknowledged_nap"
    row["state"] = "tentative" if s["metadata"].get("processed") is False else "confirmed"
    row["duration"] = span
    m = s["summary"]
    if "minutesAsleep" in m:
        total = int(m["minutesAsleep"]) * 60
        row["total"] = total
        row["efficiency"] = num(round(total * 100 / span, 2))
    if "minutesAwake" in m:
        row["awake"] = int(m["minutesAwake"]) * 60
    if s["type"] == "STAGES":
        for st, key in [("LIGHT", "light"), ("DEEP", "deep"), ("REM", "rem")]:
            for entry in m.get("stagesSummary", []):
                if entry["type"] == st:
                    row[key] = int(entry["minutes"]) * 60
    if "minutesToFallAsleep" in m:
        row["latency"] = int(m["minutesToFallAsleep"]) * 60
    row["timezone_offset"] = OFFSET
    return row


write("sleep.expected.json", body(sleep=[sleep_row(p) for p in sleeps]))

# --- samples ---------------------------------------------------------------------------
def sample_point(member, t, fields, name=None):
    point = {}
    if name:
        point["name"] = name
    point["dataSource"] = source()
    point[member] = dict(fields, sampleTime=sample_time(t))
    return point


hr = [sample_point("heartRate", z(t), {"beatsPerMinute": str(b),
                                        "metadata": {"motionContext": ctx, "sensorLocation": "WRIST"}})
      for t, b, ctx in [("2025-03-03T14:02:00Z", 88, "ACTIVE"), ("2025-03-02T09:00:00Z", 57, "SEDENTARY"),
                        ("2025-03-01T22:15:00Z", 64, "SEDENTARY"), ("2025-03-01T12:00:05Z", 71, "SEDENTARY")]]
write("heart_rate.json", page(hr))
hrv = [sample_point("heartRateVariability", z(t), f) for t, f in [
    ("2025-03-02T10:30:00Z", {"rootMeanSquareOfSuccessiveDifferencesMilliseconds": 41.6,
                              "standardDeviationMilliseconds": 55.0}),
    ("2025-03-02T08:00:00Z", {"standardDeviationMilliseconds": 61.2}),
    ("2025-03-01T10:30:00Z", {"rootMeanSquareOfSuccessiveDifferencesMilliseconds": 38.0})]]
write("heart_rate_variability.json", page(hrv))
spo2 = [sample_point("oxygenSaturation", z(t), {"percentage": p}) for t, p in [
    ("2025-03-02T09:40:00Z", 95.2), ("2025-03-01T09:40:00Z", 97.0), ("2025-03-01T07:10:00Z", 96.5)]]
write("oxygen_saturation.json", page(spo2))


def series_of(points, member, key, unit):
    out = []
    for p in points:
        s = p[member]
        if key not in s:
            continue
        t = z(s["sampleTime"]["physicalTime"])
        v = float(s[key])
        out.append({"timestamp": local(t), "timezone_offset": OFFSET, "unit": unit, "value": num(v)})
    return out


write("samples.expected.json", body(timeseries={
    "heartrate": series_of(hr, "heartRate", "beatsPerMinute", "bpm"),
    "hrv": series_of(hrv, "heartRateVariability", "rootMeanSquareOfSuccessiveDifferencesMilliseconds", "ms"),
    "blood_oxygen": series_of(spo2, "oxygenSaturation", "percentage", "%"),
}))

# --- weight, body fat, height ----------------------------------------------------------
scale = {"recordingMethod": "ACTIVELY_MEASURED", "platform": "FITBIT",
         "device": {"formFactor": "SCALE", "manufacturer": "Fitbit", "displayName": "Aria Air"}}
weights = [
    {"name": f"users/{USER}/dataTypes/weight/dataPoints/w-1740986700",
     "dataSource": scale, "weight": {"weightGrams": 62950.0, "sampleTime": sample_time(z("2025-03-03T07:05:00Z"))}},
    {"dataSource": dict(scale, recordingMethod="MANUAL"),
     "weight": {"weightGrams": 63200.0, "notes": "after run", "sampleTime": sample_time(z("2025-03-01T12:45:12Z"))}},
]
fats = [
    {"dataSource": scale, "bodyFat": {"percentage": 24.3, "sampleTime": sample_time(z("2025-03-02T12:00:00Z"))}},
    {"dataSource": scale, "bodyFat": {"percentage": 24.1, "sampleTime": sample_time(z("2025-03-01T12:45:12Z"))}},
]
write("weight.json", page(weights))
write("body_fat.json", page(fats))
fat_at = {f["bodyFat"]["sampleTime"]["physicalTime"]: f["bodyFat"]["percentage"] for f in fats}
rows, wseries = [], []
for w in weights:
    t = w["weight"]["sampleTime"]["physicalTime"]
    kg = round(w["weight"]["weightGrams"] / 10) / 100
    ident = w["name"].rsplit("/", 1)[1] if "name" in w else f"weight-{int(z(t).timestamp() * 1000)}"
    row = {"id": ident, "measured_at": local(z(t)), "weight": num(kg)}
    if t in fat_at:
        row["fat"] = num(fat_at[t])
    rows.append(row)
    wseries.append({"timestamp": local(z(t)), "timezone_offset": OFFSET, "unit": "kg", "value": num(kg)})
fseries = [{"timestamp": local(z(f["bodyFat"]["sampleTime"]["physicalTime"])), "timezone_offset": OFFSET,
            "unit": "%", "value": num(f["bodyFat"]["percentage"])} for f in fats]
write("body.expected.json", body(body=rows, timeseries={"weight": wseries, "fat": fseries}))

height = {"dataSource": dict(scale, recordingMethod="MANUAL", device={}),
          "height": {"heightMillimeters": "1778", "sampleTime": sample_time(z("2024-11-20T18:00:00Z"))}}
write("height.json", page([height]))
write("height.expected.json", body(profile={"height": round(1778 / 10)}))

# --- daily roll-ups --------------------------------------------------------------------
def day(d):
    return {"date": {"year": 2025, "month": 3, "day": d}}


def rollup(member, values):
    return {"rollupDataPoints": [
        {"civilStartTime": day(d), "civilEndTime": day(d + 1), **({member: v} if v else {})}
        for d, v in values]}


steps = rollup("steps", [(1, {"countSum": "8123"}), (2, {"countSum": "11406"}), (3, {"countSum": "2950"})])
distance = rollup("distance", [(1, {"millimetersSum": "6091000"}), (2, {"millimetersSum": "8554500"}),
                               (3, {"millimetersSum": "2212500"})])
total = rollup("totalCalories", [(1, {"kcalSum": 2211.4}), (2, {"kcalSum": 2498.25}), (3, {"kcalSum": 1702.0})])
active = rollup("activeEnergyBurned", [(1, {"kcalSum": 512.6}), (2, {"kcalSum": 801.333}), (3, None)])
write("rollup_steps.json", steps)
write("rollup_distance.json", distance)
write("rollup_total_calories.json", total)
write("rollup_active_energy_burned.json", active)
activity = []
for d in (1, 2, 3):
    row = {}
    s = steps["rollupDataPoints"][d - 1]
    row["steps"] = int(s["steps"]["countSum"])
    row["distance"] = num(int(distance["rollupDataPoints"][d - 1]["distance"]["millimetersSum"]) / 1000)
    row["calories_total"] = num(round(total["rollupDataPoints"][d - 1]["totalCalories"]["kcalSum"] * 100) / 100)
    a = active["rollupDataPoints"][d - 1].get("activeEnergyBurned")
    if a:
        row["calories_active"] = num(round(a["kcalSum"] * 100) / 100)
    row["date"] = f"2025-03-0{d}"
    activity.append(row)
write("activity.expected.json", body(activity=activity))

write("identity.json", {"name": "users/me/identity", "healthUserId": USER, "legacyUserId": "BX7T2Q"})
