"""Writes the Polar AccessLink fixtures and the push bodies they must normalise to.

The documents follow the examples and schemas of Polar's AccessLink documentation
(www.polar.com/accesslink-api/): `exerciseHashId`, `nights`/`sleep`, `recharges`/
`nightly-recharge`, `activity-summary-with-all-samples` and `continuous-heartrate`. The
expected bodies apply the mapping of src/sync/connectors/polar/normalise.rs, written out
again here, independently of the Rust code. Run: python3 make_fixtures.py
"""
import json, re, datetime as dt

USER = "https://www.polaraccesslink.com/v3/users/2278512"
OFFSET_MIN = 120  # a wearer at +02:00 (Helsinki in winter)

exercises = [
  {"id": "Ax9Kp2Lq", "upload_time": "2025-03-01T18:40:11.000Z", "polar_user": USER, "device": "Polar Vantage V3",
   "device_id": "B4C3D2E1", "start_time": "2025-03-01T17:30:00", "start_time_utc_offset": OFFSET_MIN,
   "duration": "PT47M30S", "calories": 512, "distance": 8046.7, "heart_rate": {"average": 148, "maximum": 176},
   "training_load": 98.4, "sport": "RUNNING", "has_route": True, "detailed_sport_info": "RUNNING_ROAD",
   "fat_percentage": 41, "carbohydrate_percentage": 55, "protein_percentage": 4, "running-index": 53},
  {"id": "Bq7Rt5Mz", "upload_time": "2025-03-02T19:20:02.000Z", "polar_user": USER, "device": "Polar Vantage V3",
   "device_id": "B4C3D2E1", "start_time": "2025-03-02T18:05:00", "start_time_utc_offset": OFFSET_MIN,
   "duration": "PT1H2M", "calories": 387, "heart_rate": {"average": 112, "maximum": 149},
   "training_load": 41.0, "sport": "STRENGTH_TRAINING", "has_route": False,
   "detailed_sport_info": "STRENGTH_TRAINING"},
  {"id": "Cw3Hn8Yv", "upload_time": "2025-03-03T09:02:45.000Z", "polar_user": USER, "device": "Polar Vantage V3",
   "device_id": "B4C3D2E1", "start_time": "2025-03-03T07:15:00", "start_time_utc_offset": OFFSET_MIN,
   "duration": "PT1H30M12.6S", "calories": 655, "distance": 30120.5, "heart_rate": {"average": 118, "maximum": 161},
   "training_load": 87.2, "sport": "CYCLING", "has_route": True, "detailed_sport_info": "ROAD_BIKING"},
]

def night(date, start, end, light, deep, rem, interruptions, score):
    return {"polar_user": USER, "date": date, "sleep_start_time": start, "sleep_end_time": end,
            "device_id": "B4C3D2E1", "continuity": 3.4, "continuity_class": 3, "light_sleep": light,
            "deep_sleep": deep, "rem_sleep": rem, "unrecognized_sleep_stage": 0, "sleep_score": score,
            "total_interruption_duration": interruptions, "sleep_charge": 3, "sleep_goal": 28800,
            "sleep_rating": 0, "short_interruption_duration": interruptions - 600,
            "long_interruption_duration": 600, "sleep_cycles": 5, "group_duration_score": 92.0,
            "group_solidity_score": 74.5, "group_regeneration_score": 68.2,
            "hypnogram": {start[11:16]: 2, "01:10": 3, "02:30": 1},
            "heart_rate_samples": {"00:15": 58, "00:20": 56, "00:25": 55}}

nights = [
  night("2025-03-02", "2025-03-01T23:12:30+02:00", "2025-03-02T07:05:00+02:00", 15840, 5220, 5760, 1530, 83),
  night("2025-03-03", "2025-03-02T23:40:00+02:00", "2025-03-03T06:55:30+02:00", 14100, 4800, 5400, 1830, 76),
]

def recharge(date, hr, b2b, hrv, breathing):
    return {"polar_user": USER, "date": date, "heart_rate_avg": hr, "beat_to_beat_avg": b2b,
            "heart_rate_variability_avg": hrv, "breathing_rate_avg": breathing,
            "nightly_recharge_status": 4, "ans_charge": 1.5, "ans_charge_status": 3,
            "hrv_samples": {"00:41": hrv - 2, "00:46": hrv, "00:51": hrv + 1},
            "breathing_samples": {"00:39": breathing, "00:44": breathing, "00:49": breathing}}

recharges = [recharge("2025-03-02", 54, 1111, 48, 14.2), recharge("2025-03-03", 57, 1053, 41, 14.8)]

def activity(date, active, inactive, score, calories, active_calories, steps, distance):
    return {"start_time": f"{date}T00:00:00", "end_time": f"{date}T23:59:59", "active_duration": active,
            "inactive_duration": inactive, "daily_activity": score, "calories": calories,
            "active_calories": active_calories, "steps": steps, "inactivity_alert_count": 1,
            "distance_from_steps": distance}

activities = [
  activity("2025-03-01", "PT3H11M", "PT18H23M30S", 89.1, 2512, 783, 11234, 8764.3),
  activity("2025-03-02", "PT2H5M", "PT19H10M", 71.4, 2301, 544, 7650, 5967.0),
  activity("2025-03-03", "PT1H47M30S", "PT19H40M", 64.0, 2210, 452, 6012, 4689.4),
]

def chr_day(date, samples):
    return {"polar_user": USER, "date": date,
            "heart_rate_samples": [{"heart_rate": hr, "sample_time": t} for t, hr in samples]}

heart_rate = [
  chr_day("2025-03-01", [("06:02:08", 61), ("06:07:08", 60), ("14:32:08", 92)]),
  chr_day("2025-03-02", [("03:12:08", 52), ("12:00:08", 88)]),
  chr_day("2025-03-03", [("09:30:08", 95)]),
]

# --- the mapping, written out again -------------------------------------------------------

def iso_seconds(d):
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", d)
    h, mi, s = m.groups()
    return round(int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0))

def n(v):
    return int(v) if float(v).is_integer() else v

def body(**parts):
    b = {"provider": "polar", "source": {"type": "watch"}}
    b.update(parts)
    return b

def workout(e):
    tz = dt.timezone(dt.timedelta(minutes=e["start_time_utc_offset"]))
    start = dt.datetime.fromisoformat(e["start_time"]).replace(tzinfo=tz)
    end = start + dt.timedelta(seconds=iso_seconds(e["duration"]))
    row = {"id": e["id"], "time_start": start.isoformat(), "time_end": end.isoformat(),
           "sport": {"name": e["sport"].replace("_", " ").capitalize(), "slug": e["sport"].lower()},
           "calories": n(e["calories"])}
    if "distance" in e:
        row["distance"] = n(e["distance"])
    row["average_hr"] = e["heart_rate"]["average"]
    row["max_hr"] = e["heart_rate"]["maximum"]
    row["provider_id"] = e["id"]
    row["timezone_offset"] = e["start_time_utc_offset"] * 60
    return row

def sleep_row(nt):
    r = next(r for r in recharges if r["date"] == nt["date"])
    start = dt.datetime.fromisoformat(nt["sleep_start_time"])
    end = dt.datetime.fromisoformat(nt["sleep_end_time"])
    return {"id": nt["date"], "bedtime_start": nt["sleep_start_time"], "bedtime_stop": nt["sleep_end_time"],
            "state": "confirmed", "duration": int((end - start).total_seconds()),
            "total": nt["light_sleep"] + nt["deep_sleep"] + nt["rem_sleep"],
            "awake": nt["total_interruption_duration"], "light": nt["light_sleep"], "deep": nt["deep_sleep"],
            "rem": nt["rem_sleep"], "score": nt["sleep_score"], "hr_average": r["heart_rate_avg"],
            "average_hrv": n(r["heart_rate_variability_avg"]), "respiratory_rate": n(r["breathing_rate_avg"]),
            "timezone_offset": int(end.utcoffset().total_seconds())}

def activity_row(a):
    day = a["start_time"][:10]
    return {"id": day, "date": day, "calories_total": n(a["calories"]), "calories_active": n(a["active_calories"]),
            "steps": a["steps"], "distance": n(a["distance_from_steps"]),
            "duration_active_second": iso_seconds(a["active_duration"])}

def samples():
    out = []
    for d in heart_rate:
        for s in d["heart_rate_samples"]:
            out.append({"timestamp": f"{d['date']}T{s['sample_time']}+02:00", "timezone_offset": OFFSET_MIN * 60,
                        "unit": "bpm", "value": s["heart_rate"]})
    return out

def write(name, value):
    with open(name, "w") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")

write("exercises.json", exercises)
write("sleep.json", {"nights": nights})
write("nightly_recharge.json", {"recharges": recharges})
write("activities.json", activities)
write("continuous_heart_rate.json", heart_rate)
write("exercises.expected.json", body(workouts=[workout(e) for e in exercises]))
write("sleep.expected.json", body(sleep=[sleep_row(nt) for nt in nights]))
write("activities.expected.json", body(activity=[activity_row(a) for a in activities]))
write("continuous_heart_rate.expected.json", body(timeseries={"heartrate": samples()}))
write("webhook_exercise.json", {"event": "EXERCISE", "user_id": 2278512, "entity_id": "Ax9Kp2Lq",
      "timestamp": "2025-03-01T18:40:30Z", "url": "https://www.polaraccesslink.com/v3/exercises/Ax9Kp2Lq"})
