import json, datetime as dt

def page(records):
    return {"records": records}

user = 10129
cycles = [
  {"id": 93845, "user_id": user, "created_at": "2025-03-02T04:30:12.114Z", "updated_at": "2025-03-02T11:02:40.351Z",
   "start": "2025-03-01T04:10:00.000Z", "end": "2025-03-02T04:25:00.000Z", "timezone_offset": "-05:00",
   "score_state": "SCORED", "score": {"strain": 12.310834, "kilojoule": 9823.5, "average_heart_rate": 71, "max_heart_rate": 162}},
  {"id": 93846, "user_id": user, "created_at": "2025-03-03T03:45:02.778Z", "updated_at": "2025-03-03T10:12:09.004Z",
   "start": "2025-03-02T04:25:00.000Z", "end": "2025-03-03T03:40:00.000Z", "timezone_offset": "-05:00",
   "score_state": "SCORED", "score": {"strain": 8.094312, "kilojoule": 8288.297, "average_heart_rate": 66, "max_heart_rate": 141}},
  {"id": 93847, "user_id": user, "created_at": "2025-03-03T03:45:30.210Z", "updated_at": "2025-03-03T03:45:30.210Z",
   "start": "2025-03-03T03:40:00.000Z", "timezone_offset": "-05:00", "score_state": "PENDING_SCORE"},
]
S1, S2, S3 = "ecfc6a15-4661-442f-a9a4-f160dd7afae8", "6f3b9d2e-1c4a-4e57-9a0b-2d8c7e51f403", "b1d5c0a7-93e4-4f0c-8d61-7a2e4c9f0b12"
sleeps = [
  {"id": S1, "cycle_id": 93845, "v1_id": 93845, "user_id": user, "created_at": "2025-03-01T11:52:44.774Z", "updated_at": "2025-03-01T12:03:10.201Z",
   "start": "2025-03-01T04:10:00.000Z", "end": "2025-03-01T11:48:30.000Z", "timezone_offset": "-05:00", "nap": False, "score_state": "SCORED",
   "score": {"stage_summary": {"total_in_bed_time_milli": 27510000, "total_awake_time_milli": 1650000, "total_no_data_time_milli": 0,
       "total_light_sleep_time_milli": 13200000, "total_slow_wave_sleep_time_milli": 6240000, "total_rem_sleep_time_milli": 6420000,
       "sleep_cycle_count": 4, "disturbance_count": 7},
     "sleep_needed": {"baseline_milli": 27395716, "need_from_sleep_debt_milli": 352230, "need_from_recent_strain_milli": 208595, "need_from_recent_nap_milli": -12312},
     "respiratory_rate": 15.8203125, "sleep_performance_percentage": 91.0, "sleep_consistency_percentage": 84.0, "sleep_efficiency_percentage": 94.00218}},
  {"id": S2, "cycle_id": 93845, "user_id": user, "created_at": "2025-03-01T19:55:01.020Z", "updated_at": "2025-03-01T19:58:41.502Z",
   "start": "2025-03-01T19:05:00.000Z", "end": "2025-03-01T19:50:00.000Z", "timezone_offset": "-05:00", "nap": True, "score_state": "SCORED",
   "score": {"stage_summary": {"total_in_bed_time_milli": 2700000, "total_awake_time_milli": 300000, "total_no_data_time_milli": 0,
       "total_light_sleep_time_milli": 1500000, "total_slow_wave_sleep_time_milli": 480000, "total_rem_sleep_time_milli": 420000,
       "sleep_cycle_count": 1, "disturbance_count": 1},
     "sleep_needed": {"baseline_milli": 0, "need_from_sleep_debt_milli": 0, "need_from_recent_strain_milli": 0, "need_from_recent_nap_milli": 0},
     "respiratory_rate": 15.2, "sleep_efficiency_percentage": 88.88889}},
  {"id": S3, "cycle_id": 93846, "user_id": user, "created_at": "2025-03-02T11:05:12.310Z", "updated_at": "2025-03-02T11:05:12.310Z",
   "start": "2025-03-02T04:25:00.000Z", "end": "2025-03-02T11:02:00.000Z", "timezone_offset": "-05:00", "nap": False, "score_state": "PENDING_SCORE"},
]
recoveries = [
  {"cycle_id": 93845, "sleep_id": S1, "user_id": user, "created_at": "2025-03-01T11:53:02.114Z", "updated_at": "2025-03-01T12:03:12.520Z",
   "score_state": "SCORED", "score": {"user_calibrating": False, "recovery_score": 67.0, "resting_heart_rate": 52.0,
     "hrv_rmssd_milli": 61.402145, "spo2_percentage": 95.6875, "skin_temp_celsius": 33.71}},
  {"cycle_id": 93846, "sleep_id": S3, "user_id": user, "created_at": "2025-03-02T11:05:30.002Z", "updated_at": "2025-03-02T11:05:30.002Z",
   "score_state": "PENDING_SCORE"},
]
W1, W2, W3 = "3c2f8a61-7b4e-4d09-8f1a-5e6d7c8b9a01", "9a7e6d5c-4b3a-4c21-8f0e-1d2c3b4a5f60", "5e4d3c2b-1a09-4f8e-8d7c-6b5a4f3e2d10"
workouts = [
  {"id": W1, "v1_id": 1043, "user_id": user, "created_at": "2025-03-01T22:50:11.000Z", "updated_at": "2025-03-01T22:58:40.000Z",
   "start": "2025-03-01T22:00:00.000Z", "end": "2025-03-01T22:47:30.000Z", "timezone_offset": "-05:00", "sport_name": "running", "sport_id": 0,
   "score_state": "SCORED", "score": {"strain": 11.2031, "average_heart_rate": 151, "max_heart_rate": 178, "kilojoule": 2510.4,
     "percent_recorded": 100.0, "distance_meter": 8046.72, "altitude_gain_meter": 46.6, "altitude_change_meter": -0.8,
     "zone_durations": {"zone_zero_milli": 60000, "zone_one_milli": 180000, "zone_two_milli": 420000, "zone_three_milli": 900000,
       "zone_four_milli": 1080000, "zone_five_milli": 210000}}},
  {"id": W2, "user_id": user, "created_at": "2025-03-03T00:35:00.000Z", "updated_at": "2025-03-03T00:41:22.000Z",
   "start": "2025-03-02T23:30:00.000Z", "end": "2025-03-03T00:30:00.000Z", "timezone_offset": "-05:00", "sport_name": "weightlifting",
   "score_state": "SCORED", "score": {"strain": 6.8, "average_heart_rate": 112, "max_heart_rate": 149, "kilojoule": 1046.0,
     "percent_recorded": 98.5, "zone_durations": {"zone_zero_milli": 600000, "zone_one_milli": 1500000, "zone_two_milli": 1080000,
       "zone_three_milli": 360000, "zone_four_milli": 60000, "zone_five_milli": 0}}},
  {"id": W3, "user_id": user, "created_at": "2025-03-03T13:45:00.000Z", "updated_at": "2025-03-03T13:45:00.000Z",
   "start": "2025-03-03T13:00:00.000Z", "end": "2025-03-03T13:40:00.000Z", "timezone_offset": "-05:00", "sport_name": "functional_fitness",
   "score_state": "UNSCORABLE"},
]
profile = {"user_id": user, "email": "jsmith123@whoop.com", "first_name": "John", "last_name": "Smith"}
body = {"height_meter": 1.8288, "weight_kilogram": 90.7185, "max_heart_rate": 200}

def dump(name, v):
    with open(name, "w") as f:
        json.dump(v, f, indent=2, ensure_ascii=False); f.write("\n")

dump("cycle.json", page(cycles)); dump("sleep.json", page(sleeps)); dump("recovery.json", page(recoveries))
dump("workout.json", page(workouts)); dump("profile_basic.json", profile); dump("body_measurement.json", body)

# ---- expected push bodies, from the mapping rules (not from the Rust code) ----
OFF = -5 * 3600
def local(utc):  # "2025-03-01T04:10:00.000Z" -> "2025-02-28T23:10:00-05:00"
    t = dt.datetime.strptime(utc, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)
    return t.astimezone(dt.timezone(dt.timedelta(seconds=OFF))).isoformat()
def num(v):
    return int(v) if float(v).is_integer() else v
def kcal(kj):
    return num(round(kj / 4.184, 2))
def base(extra):
    b = {"provider": "whoop_v2", "source": {"type": "automatic"}}; b.update(extra); return b

acts = []
for c in cycles:
    if c["score_state"] != "SCORED": continue
    t = dt.datetime.strptime(c["start"], "%Y-%m-%dT%H:%M:%S.%fZ") + dt.timedelta(seconds=OFF) + dt.timedelta(hours=12)
    s = c["score"]
    acts.append({"id": str(c["id"]), "date": t.date().isoformat(), "calories_total": kcal(s["kilojoule"]),
                 "heart_rate": {"avg_bpm": s["average_heart_rate"], "max_bpm": s["max_heart_rate"]}, "timezone_offset": OFF})
dump("cycle.expected.json", base({"activity": acts}))

rec_by_sleep = {r["sleep_id"]: r["score"] for r in recoveries if r["score_state"] == "SCORED"}
rows = []
for s in sleeps:
    r = {"id": s["id"], "bedtime_start": local(s["start"]), "bedtime_stop": local(s["end"])}
    if s["nap"]: r["type"] = "acknowledged_nap"
    r["state"] = "tentative" if s["score_state"] == "PENDING_SCORE" else "confirmed"
    if s["score_state"] == "SCORED":
        sc = s["score"]; st = sc["stage_summary"]; ms = lambda k: st[k] // 1000
        r["duration"] = ms("total_in_bed_time_milli")
        r["total"] = ms("total_light_sleep_time_milli") + ms("total_slow_wave_sleep_time_milli") + ms("total_rem_sleep_time_milli")
        r["awake"] = ms("total_awake_time_milli"); r["light"] = ms("total_light_sleep_time_milli")
        r["rem"] = ms("total_rem_sleep_time_milli"); r["deep"] = ms("total_slow_wave_sleep_time_milli")
        r["efficiency"] = num(sc["sleep_efficiency_percentage"]); r["respiratory_rate"] = num(sc["respiratory_rate"])
        if "sleep_performance_percentage" in sc: r["score"] = round(sc["sleep_performance_percentage"])
    rec = rec_by_sleep.get(s["id"])
    if rec:
        r["hr_resting"] = round(rec["resting_heart_rate"]); r["average_hrv"] = num(rec["hrv_rmssd_milli"])
        r["skin_temperature"] = num(rec["skin_temp_celsius"])
    r["timezone_offset"] = OFF
    rows.append(r)
dump("sleep.expected.json", base({"sleep": rows}))

ts = {"heartrate": [], "hrv": [], "blood_oxygen": [], "body_temperature": []}
sleep_by_id = {s["id"]: s for s in sleeps}
for r in recoveries:
    if r["score_state"] != "SCORED": continue
    s = sleep_by_id[r["sleep_id"]]; sc = r["score"]; at = local(s["end"])
    ts["heartrate"].append({"timestamp": at, "timezone_offset": OFF, "type": "resting", "unit": "bpm", "value": num(sc["resting_heart_rate"])})
    ts["hrv"].append({"timestamp": at, "timezone_offset": OFF, "unit": "ms", "value": num(sc["hrv_rmssd_milli"])})
    ts["blood_oxygen"].append({"timestamp": at, "timezone_offset": OFF, "unit": "%", "value": num(sc["spo2_percentage"])})
    ts["body_temperature"].append({"timestamp": local(s["start"]), "end": at, "timezone_offset": OFF, "sensor_location": "skin", "unit": "°C", "value": num(sc["skin_temp_celsius"])})
dump("recovery.expected.json", base({"timeseries": ts}))

wrows = []
for w in workouts:
    r = {"id": w["id"], "time_start": local(w["start"]), "time_end": local(w["end"])}
    slug = w["sport_name"]; name = slug.replace("_", " "); name = name[0].upper() + name[1:]
    r["sport"] = {"name": name, "slug": slug}
    if w["score_state"] == "SCORED":
        s = w["score"]
        r["calories"] = kcal(s["kilojoule"])
        if "distance_meter" in s: r["distance"] = num(s["distance_meter"])
        if "altitude_gain_meter" in s: r["total_elevation_gain"] = num(s["altitude_gain_meter"])
        r["average_hr"] = s["average_heart_rate"]; r["max_hr"] = s["max_heart_rate"]
        z = s["zone_durations"]
        r["hr_zones"] = [z[k] // 1000 for k in ["zone_zero_milli", "zone_one_milli", "zone_two_milli", "zone_three_milli", "zone_four_milli", "zone_five_milli"]]
    r["provider_id"] = w["id"]; r["timezone_offset"] = OFF
    wrows.append(r)
dump("workout.expected.json", base({"workouts": wrows}))

dump("body_measurement.expected.json", base({
    "body": [{"id": "body_measurement", "measured_at": "2025-03-04T00:00:00Z", "weight": num(body["weight_kilogram"])}],
    "profile": {"height": round(body["height_meter"] * 100)}}))
