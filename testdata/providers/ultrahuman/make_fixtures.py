"""Writes the Ultrahuman fixtures: daily_metrics answers (one file per kind of metric, each in
the documented `{"status", "error", "data": {"metrics": {"YYYY-MM-DD": [{"type", "object"}]},
"latest_time_zone"}}` shape) and the push bodies they must give (`<name>.expected.json`),
applying the mapping rules of `src/sync/connectors/ultrahuman/normalise.rs` independently of
the Rust code. Run it here: `python3 make_fixtures.py`."""

import datetime as dt
import json

ZONE = "Asia/Kolkata"
OFFSET = 19800  # +05:30, no summer time
TZ = dt.timezone(dt.timedelta(seconds=OFFSET))
DAYS = ["2025-03-01", "2025-03-02", "2025-03-03"]


def epoch(day, hh, mm=0, ss=0, plus_days=0):
    d = dt.date.fromisoformat(day) + dt.timedelta(days=plus_days)
    return int(dt.datetime(d.year, d.month, d.day, hh, mm, ss, tzinfo=TZ).timestamp())


def stamp(t):
    return dt.datetime.fromtimestamp(t, TZ).isoformat()


def day_start(day):
    return epoch(day, 0)


def answer(by_day):
    return {"status": 200, "error": None,
            "data": {"metrics": {d: by_day[d] for d in DAYS if d in by_day}, "latest_time_zone": ZONE}}


def series(day, title, unit, points, trend=False):
    obj = {"day_start_timestamp": day_start(day), "title": title, "unit": unit,
           "last_reading": points[-1][1],
           "values": [{"value": v, "timestamp": t} for t, v in points]}
    if trend:
        obj.update({"avg": round(sum(v for _, v in points) / len(points), 2),
                    "subtitle": "Average", "trend_title": "Within your usual range",
                    "trend_direction": "positive"})
    return obj


def body(**parts):
    out = {"provider": "ultrahuman", "source": {"type": "ring"}}
    tables = {k: v for k, v in parts.items() if k in ("sleep", "activity") and v}
    out.update(tables)
    ts = {k: v for k, v in parts.items() if k not in ("sleep", "activity") and v}
    if ts:
        out["timeseries"] = ts
    return out


def sample(t, unit, value, **extra):
    s = {"timestamp": stamp(t), "timezone_offset": OFFSET}
    s.update(extra)
    s.update({"unit": unit, "value": value})
    return s


def write(name, doc):
    with open(name, "w") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")


# --- sleep: the night ending on each day, with that day's sleep_rhr and avg_sleep_hrv -------
nights = {
    # day: (start (previous evening), end, deep, light, rem, awake, score, efficiency, temp dev, body temp, rhr, hrv)
    "2025-03-01": ((23, 5, 0, -1), (6, 41, 0, 0), 5280, 13620, 5940, 2520, 82, 91, -0.21, 35.42, 54, 48),
    "2025-03-02": ((23, 40, 0, -1), (7, 2, 0, 0), 4860, 13020, 6180, 2460, 78, 90, 0.12, 35.61, 56, 44),
    # The last night: no sleep_rhr or avg_sleep_hrv yet for the day.
    "2025-03-03": ((22, 55, 0, -1), (6, 20, 0, 0), 5520, 12480, 6300, 2400, 85, 92, -0.05, 35.5, None, None),
}
sleep_in, sleep_out = {}, []
for day, (s, e, deep, light, rem, awake, score, eff, dev, btemp, rhr, hrv) in nights.items():
    start, end = epoch(day, s[0], s[1], s[2], s[3]), epoch(day, e[0], e[1], e[2])
    asleep = deep + light + rem
    stages = [("deep_sleep", "Deep Sleep", deep), ("light_sleep", "Light Sleep", light),
              ("rem_sleep", "REM Sleep", rem), ("awake", "Awake", awake)]
    total_min = asleep // 60
    obj = {
        "bedtime_start": start, "bedtime_end": end,
        "quick_metrics": [
            {"title": "Total Sleep", "display_text": f"{total_min // 60}h {total_min % 60}m", "unit": None,
             "value": asleep, "type": "total_sleep"},
            {"title": "Sleep Efficiency", "display_text": f"{eff}%", "unit": "%", "value": eff, "type": "sleep_efficiency"},
            {"title": "Time in bed", "display_text": f"{(end - start) // 3600}h {((end - start) % 3600) // 60}m",
             "unit": None, "value": end - start, "type": "time_in_bed"},
        ],
        "sleep_stages": [{"title": title, "type": t, "percentage": round(100 * secs / (end - start)),
                          "stage_time_text": f"{secs // 3600}h {(secs % 3600) // 60}m", "stage_time": secs}
                         for t, title, secs in stages],
        "sleep_graph": {"title": "Sleep stages", "data": [
            {"start": start, "end": start + 1200, "type": "awake"},
            {"start": start + 1200, "end": end, "type": "light_sleep"}]},
        "sleep_score": {"score": score},
        "total_sleep": {"minutes": total_min, "hours": total_min // 60, "remaining_minutes": total_min % 60,
                        "seconds": asleep, "badge": {"text": "Good", "type": "positive"}},
        "sleep_efficiency": {"percentage": eff, "contributor": 88},
        "time_in_bed": {"minutes": (end - start) // 60, "hours": (end - start) // 3600,
                        "remaining_minutes": ((end - start) % 3600) // 60, "badge": {"text": "Optimal", "type": "positive"}},
        "temperature_deviation": {"celsius": dev, "contributor": 90},
        "restorative_sleep": {"percentage": round(100 * (deep + rem) / asleep), "badge": {"text": "Good", "type": "positive"}},
        "movements": {"count": 41}, "morning_alertness": {"minutes": 22}, "full_sleep_cycles": {"cycles": 4},
        "tosses_and_turns": {"count": 17},
        "average_body_temperature": {"celsius": btemp, "contributor": 86},
    }
    entries = [{"type": "sleep", "object": obj}]
    if rhr is not None:
        entries.append({"type": "sleep_rhr", "object": {"value": rhr, "day_start_timestamp": day_start(day)}})
        entries.append({"type": "avg_sleep_hrv", "object": {"value": hrv, "day_start_timestamp": day_start(day)}})
    sleep_in[day] = entries
    row = {"id": day, "bedtime_start": stamp(start), "bedtime_stop": stamp(end), "state": "confirmed",
           "duration": end - start, "total": asleep, "awake": awake, "light": light, "rem": rem, "deep": deep,
           "efficiency": eff, "score": score}
    if rhr is not None:
        row["hr_resting"] = rhr
        row["average_hrv"] = hrv
    row.update({"skin_temperature": btemp, "temperature_delta": dev, "timezone_offset": OFFSET})
    sleep_out.append(row)
write("sleep.json", answer(sleep_in))
write("sleep.expected.json", body(sleep=sleep_out))

# --- hr: readings through each day ----------------------------------------------------------
hr_points = {
    "2025-03-01": [(2, 0, 52), (8, 30, 71), (14, 0, 84), (19, 45, 77)],
    "2025-03-02": [(3, 15, 55), (9, 0, 74), (13, 30, 96), (21, 10, 69)],
    "2025-03-03": [(1, 40, 53), (7, 55, 68), (12, 5, 88)],
}
hr_in, hr_out = {}, []
for day, pts in hr_points.items():
    points = [(epoch(day, h, m), v) for h, m, v in pts]
    hr_in[day] = [{"type": "hr", "object": series(day, "Heart Rate", "bpm", points)},
                  {"type": "night_rhr", "object": series(day, "Night RHR", "bpm", points[:1], trend=True)}]
    hr_out += [sample(t, "bpm", v) for t, v in points]
write("heart_rate.json", answer(hr_in))
write("heart_rate.expected.json", body(heartrate=hr_out))

# --- hrv, temp, spo2: night readings --------------------------------------------------------
def night_series(kind, title, unit, resource, out_unit, table, trend=False, extra=None):
    doc, out = {}, []
    for day, pts in table.items():
        points = [(epoch(day, h, m), v) for h, m, v in pts]
        doc[day] = [{"type": kind, "object": series(day, title, unit, points, trend)}]
        out += [sample(t, out_unit, v, **(extra or {})) for t, v in points]
    return doc, out

hrv_in, hrv_out = night_series("hrv", "HRV", "ms", "hrv", "ms", {
    "2025-03-01": [(1, 0, 46), (3, 0, 51), (5, 0, 47.5)],
    "2025-03-02": [(1, 30, 42), (4, 0, 45.5)],
    "2025-03-03": [(0, 45, 49), (2, 45, 53), (4, 45, 50)],
}, trend=True)
write("hrv.json", answer(hrv_in))
write("hrv.expected.json", body(hrv=hrv_out))

temp_in, temp_out = night_series("temp", "Temperature", "°C", "body_temperature", "°C", {
    "2025-03-01": [(1, 0, 35.31), (4, 0, 35.52)],
    "2025-03-02": [(2, 0, 35.66), (5, 0, 35.58)],
    "2025-03-03": [(1, 30, 35.47)],
}, extra={"sensor_location": "skin"})
write("temperature.json", answer(temp_in))
write("temperature.expected.json", body(body_temperature=temp_out))

spo2_in, spo2_out = night_series("spo2", "SPO2", "%", "blood_oxygen", "%", {
    "2025-03-01": [(2, 0, 97), (5, 0, 96)],
    "2025-03-02": [(3, 0, 98)],
    "2025-03-03": [(2, 30, 96), (4, 30, 97)],
})
write("spo2.json", answer(spo2_in))
write("spo2.expected.json", body(blood_oxygen=spo2_out))

# --- steps (the day's total), with the day's indices, which nothing keeps -------------------
steps = {"2025-03-01": [(9, 0, 1840), (13, 0, 3120), (18, 0, 2415)],
         "2025-03-02": [(8, 0, 950), (12, 0, 4410), (19, 0, 3906)],
         "2025-03-03": [(10, 0, 2205), (15, 0, 1577)]}
steps_in, activity_out = {}, []
for i, (day, pts) in enumerate(steps.items()):
    points = [(epoch(day, h, m), v) for h, m, v in pts]
    total = sum(v for _, v in points)
    steps_in[day] = [
        {"type": "steps", "object": {"day_start_timestamp": day_start(day),
                                     "values": [{"value": v, "timestamp": t} for t, v in points],
                                     "subtitle": "Steps", "total": total, "avg": round(total / len(points), 1),
                                     "trend_title": "Above your average", "trend_direction": "positive"}},
        {"type": "recovery_index", "object": {"value": 71 + i, "title": "Recovery Index", "day_start_timestamp": day_start(day)}},
        {"type": "movement_index", "object": {"value": 64 - i, "title": "Movement Index", "day_start_timestamp": day_start(day)}},
        {"type": "active_minutes", "object": {"value": 38 + 5 * i, "title": "Active Minutes", "day_start_timestamp": day_start(day)}},
    ]
    activity_out.append({"id": day, "date": day, "steps": total, "timezone_offset": OFFSET})
write("steps.json", answer(steps_in))
write("steps.expected.json", body(activity=activity_out))

# --- vo2_max: one estimate a day, at the day's start ----------------------------------------
vo2 = {"2025-03-01": 44, "2025-03-02": 44.5, "2025-03-03": 45}
vo2_in, vo2_out = {}, []
for day, v in vo2.items():
    vo2_in[day] = [{"type": "vo2_max", "object": {"value": v, "title": "VO2 Max", "day_start_timestamp": day_start(day)}}]
    vo2_out.append(sample(day_start(day), "mL/kg/min", v))
write("vo2_max.json", answer(vo2_in))
write("vo2_max.expected.json", body(vo2_max=vo2_out))

# --- glucose (an M1 sensor worn two of the days), mg/dL to mmol/L to 2 decimals -------------
glucose = {"2025-03-02": [(7, 0, 92), (8, 15, 141), (12, 30, 118)],
           "2025-03-03": [(7, 0, 88), (9, 45, 126)]}
glucose_in, glucose_out = {}, []
for day, pts in glucose.items():
    points = [(epoch(day, h, m), v) for h, m, v in pts]
    glucose_in[day] = [
        {"type": "glucose", "object": series(day, "Glucose", "mg/dL", points)},
        {"type": "metabolic_score", "object": {"value": 82, "title": "Metabolic Score", "day_start_timestamp": day_start(day)}},
        {"type": "average_glucose", "object": {"value": round(sum(v for _, v in points) / len(points)), "title": "Average Glucose", "day_start_timestamp": day_start(day)}},
    ]
    glucose_out += [sample(t, "mmol/L", round(v / 18.0182, 2)) for t, v in points]
write("glucose.json", answer(glucose_in))
write("glucose.expected.json", body(glucose=glucose_out))
