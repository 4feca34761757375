#!/usr/bin/env python3
"""Writes the Garmin fixtures of this folder: documents in the Health API's and Activity API's
documented shapes, and the push bodies the connector must make of them (the mapping stated in
`src/sync/connectors/garmin/normalise.rs`, applied here independently of the Rust code).

Run from anywhere: `python3 make_fixtures.py`. Deterministic: the same files every time."""

import json
import os
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
OFFSET = 3600  # the wearer's device is at +01:00
ZONE = timezone(timedelta(seconds=OFFSET))
USER = "d3315b1072421d0dd7c8f6b8e1de4df8"


def local(y, m, d, h=0, mi=0, s=0):
    """Unix seconds of a local device time at +01:00."""
    return int(datetime(y, m, d, h, mi, s, tzinfo=ZONE).timestamp())


def stamp(seconds, offset=OFFSET):
    """RFC 3339 in the record's own offset, as the connector renders instants."""
    return datetime.fromtimestamp(seconds, timezone(timedelta(seconds=offset))).isoformat()


def num(v):
    """Integral values as integers, as the connector writes them."""
    return int(v) if float(v).is_integer() else v


def write(name, value):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(value, f, indent=2)
        f.write("\n")


def body(parts, series=None):
    out = {"provider": "garmin", "source": {"type": "watch"}}
    out.update(parts)
    if series:
        out["timeseries"] = series
    return out


def sorted_samples(mapping):
    return sorted(((int(k), v) for k, v in mapping.items()), key=lambda kv: kv[0])


# Daily summaries (`/wellness-api/rest/dailies`): two full days and one synced mid-day.
dailies = [
    {"summaryId": "x3c2f1a-67c24d70-15180", "calendarDate": "2025-03-01",
     "activityType": "GENERIC", "startTimeInSeconds": local(2025, 3, 1),
     "startTimeOffsetInSeconds": OFFSET, "durationInSeconds": 86400, "steps": 9120,
     "distanceInMeters": 7011.5, "activeTimeInSeconds": 4980, "activeKilocalories": 512,
     "bmrKilocalories": 1690, "moderateIntensityDurationInSeconds": 1500,
     "vigorousIntensityDurationInSeconds": 900, "floorsClimbed": 11,
     "minHeartRateInBeatsPerMinute": 48, "averageHeartRateInBeatsPerMinute": 62,
     "maxHeartRateInBeatsPerMinute": 151, "restingHeartRateInBeatsPerMinute": 52,
     "timeOffsetHeartRateSamples": {"0": 58, "15": 59, "30": 61, "3600": 55},
     "averageStressLevel": 31, "maxStressLevel": 76, "stressQualifier": "balanced",
     "bodyBatteryChargedValue": 61, "bodyBatteryDrainedValue": 58, "stepsGoal": 8000},
    {"summaryId": "x3c2f1a-67c39ef0-15180", "calendarDate": "2025-03-02",
     "activityType": "GENERIC", "startTimeInSeconds": local(2025, 3, 2),
     "startTimeOffsetInSeconds": OFFSET, "durationInSeconds": 86400, "steps": 14388,
     "distanceInMeters": 11270.25, "activeTimeInSeconds": 7320, "activeKilocalories": 905,
     "bmrKilocalories": 1688, "moderateIntensityDurationInSeconds": 2460,
     "vigorousIntensityDurationInSeconds": 2220, "floorsClimbed": 7,
     "minHeartRateInBeatsPerMinute": 47, "averageHeartRateInBeatsPerMinute": 61,
     "maxHeartRateInBeatsPerMinute": 168, "restingHeartRateInBeatsPerMinute": 51,
     "timeOffsetHeartRateSamples": {"900": 57, "43200": 104, "43215": 121},
     "averageStressLevel": 27, "maxStressLevel": 88, "stressQualifier": "balanced"},
    {"summaryId": "x3c2f1a-67c4f070-a8c0", "calendarDate": "2025-03-03",
     "activityType": "GENERIC", "startTimeInSeconds": local(2025, 3, 3),
     "startTimeOffsetInSeconds": OFFSET, "durationInSeconds": 43200, "steps": 3150,
     "distanceInMeters": 2402.0, "activeTimeInSeconds": 1800, "activeKilocalories": 166,
     "bmrKilocalories": 845, "moderateIntensityDurationInSeconds": 600,
     "vigorousIntensityDurationInSeconds": 0, "floorsClimbed": 2,
     "minHeartRateInBeatsPerMinute": 50, "averageHeartRateInBeatsPerMinute": 61,
     "maxHeartRateInBeatsPerMinute": 97,
     "timeOffsetHeartRateSamples": {"0": 60, "900": 64}},
]


def activity_row(d):
    samples = [v for _, v in sorted_samples(d["timeOffsetHeartRateSamples"])]
    hr = {"min_bpm": d["minHeartRateInBeatsPerMinute"], "max_bpm": d["maxHeartRateInBeatsPerMinute"]}
    if "restingHeartRateInBeatsPerMinute" in d:
        hr["resting_bpm"] = d["restingHeartRateInBeatsPerMinute"]
    hr["avg_bpm"] = num(round(sum(samples) / len(samples), 2))
    return {
        "id": d["calendarDate"], "date": d["calendarDate"],
        "calories_total": d["activeKilocalories"] + d["bmrKilocalories"],
        "calories_active": d["activeKilocalories"], "steps": d["steps"],
        "distance": num(d["distanceInMeters"]), "floors_climbed": d["floorsClimbed"],
        "duration_active_second": d["activeTimeInSeconds"],
        "medium": num(d["moderateIntensityDurationInSeconds"] / 60),
        "high": num(d["vigorousIntensityDurationInSeconds"] / 60),
        "heart_rate": hr, "timezone_offset": d["startTimeOffsetInSeconds"],
    }


def heart_rate(d):
    return [{"timestamp": stamp(d["startTimeInSeconds"] + k), "timezone_offset": OFFSET,
             "unit": "bpm", "value": num(v)}
            for k, v in sorted_samples(d["timeOffsetHeartRateSamples"])]


write("dailies.json", dailies)
write("dailies.expected.json", body({"activity": [activity_row(d) for d in dailies]}))
write("heart_rate.expected.json",
      body({}, {"heartrate": [s for d in dailies for s in heart_rate(d)]}))

# Sleep summaries (`/wellness-api/rest/sleeps`): a final night with its levels, SpO2, breathing
# and score, and a tentative one without them.
night = local(2025, 3, 1, 23, 10)
levels = [("light", 0, 3600), ("deep", 3600, 7200), ("rem", 7200, 9000), ("awake", 9000, 9300),
          ("light", 9300, 15900), ("deep", 15900, 17700), ("rem", 17700, 21600),
          ("light", 21600, 24600), ("awake", 24600, 25200)]
levels_map = {}
for kind, a, b in levels:
    # Garmin's ranges: the next range starts one second after a range's end.
    end = night + b if b == 25200 else night + b - 1
    levels_map.setdefault(kind, []).append({"startTimeInSeconds": night + a, "endTimeInSeconds": end})
sleeps = [
    {"summaryId": "x3c2f1a-67c38818-6270", "calendarDate": "2025-03-02",
     "startTimeInSeconds": night, "startTimeOffsetInSeconds": OFFSET,
     "durationInSeconds": 25200, "unmeasurableSleepInSeconds": 0,
     "deepSleepDurationInSeconds": 5400, "lightSleepDurationInSeconds": 13200,
     "remSleepInSeconds": 5700, "awakeDurationInSeconds": 900, "sleepLevelsMap": levels_map,
     "validation": "ENHANCED_FINAL",
     "timeOffsetSleepRespiration": {"60": 14.2, "120": 14.6, "3600": 13.9},
     "timeOffsetSleepSpo2": {"0": 95, "60": 96, "3600": 94, "7200": 97},
     "overallSleepScore": {"value": 84, "qualifierKey": "GOOD"},
     "sleepScores": {"totalDuration": {"qualifierKey": "GOOD"}, "stress": {"qualifierKey": "EXCELLENT"}}},
    {"summaryId": "x3c2f1a-67c3e1c0-5460", "calendarDate": "2025-03-03",
     "startTimeInSeconds": local(2025, 3, 2, 23, 40), "startTimeOffsetInSeconds": OFFSET,
     "durationInSeconds": 21600, "unmeasurableSleepInSeconds": 0,
     "deepSleepDurationInSeconds": 4200, "lightSleepDurationInSeconds": 12600,
     "remSleepInSeconds": 3900, "awakeDurationInSeconds": 900, "validation": "AUTO_TENTATIVE"},
]
STAGE = {"deep": 1, "light": 2, "rem": 3, "awake": 4}


def sleep_row(s):
    start, span = s["startTimeInSeconds"], s["durationInSeconds"]
    deep, light, rem = (s["deepSleepDurationInSeconds"], s["lightSleepDurationInSeconds"],
                        s["remSleepInSeconds"])
    row = {"id": s["summaryId"], "bedtime_start": stamp(start), "bedtime_stop": stamp(start + span),
           "state": "tentative" if s["validation"].endswith("TENTATIVE") else "confirmed",
           "duration": span, "total": deep + light + rem, "awake": s["awakeDurationInSeconds"],
           "light": light, "deep": deep, "rem": rem, "timezone_offset": OFFSET}
    if "overallSleepScore" in s:
        row["score"] = s["overallSleepScore"]["value"]
    if s.get("timeOffsetSleepRespiration"):
        values = list(s["timeOffsetSleepRespiration"].values())
        row["respiratory_rate"] = num(round(sum(values) / len(values), 2))
    if s.get("sleepLevelsMap"):
        stages = []
        for t in range(start, start + span, 60):
            found = [STAGE[k] for k, ranges in s["sleepLevelsMap"].items()
                     for r in ranges if r["startTimeInSeconds"] <= t <= r["endTimeInSeconds"]]
            stages.append(found[0] if found else -1)
        row["sleep_stream"] = {"hypnogram": stages, "interval": 60}
    return row


def spo2(s):
    return [{"timestamp": stamp(s["startTimeInSeconds"] + k), "timezone_offset": OFFSET,
             "unit": "%", "value": num(v)}
            for k, v in sorted_samples(s.get("timeOffsetSleepSpo2", {}))]


write("sleeps.json", sleeps)
write("sleeps.expected.json", body({"sleep": [sleep_row(s) for s in sleeps]},
                                   {"blood_oxygen": [x for s in sleeps for x in spo2(s)]}))

# Activity summaries (`/wellness-api/rest/activities`): a run and a ride.
activities = [
    {"summaryId": "10298872631", "activityId": 10298872631, "activityName": "Morning Run",
     "activityType": "RUNNING", "startTimeInSeconds": local(2025, 3, 1, 7, 30),
     "startTimeOffsetInSeconds": OFFSET, "durationInSeconds": 2935, "distanceInMeters": 8012.4,
     "activeKilocalories": 598, "averageHeartRateInBeatsPerMinute": 152,
     "maxHeartRateInBeatsPerMinute": 176, "averageSpeedInMetersPerSecond": 2.73,
     "maxSpeedInMetersPerSecond": 3.91, "totalElevationGainInMeters": 41.2, "steps": 7780,
     "averageRunCadenceInStepsPerMinute": 159.0, "deviceName": "Forerunner 965"},
    {"summaryId": "10301120980", "activityId": 10301120980, "activityName": "Lunch Ride",
     "activityType": "ROAD_BIKING", "startTimeInSeconds": local(2025, 3, 2, 12, 5),
     "startTimeOffsetInSeconds": OFFSET, "durationInSeconds": 3720, "distanceInMeters": 24180.0,
     "activeKilocalories": 655, "averageHeartRateInBeatsPerMinute": 138,
     "maxHeartRateInBeatsPerMinute": 165, "averageSpeedInMetersPerSecond": 6.5,
     "totalElevationGainInMeters": 210.0, "deviceName": "Edge 840"},
]


def workout_row(a):
    start = a["startTimeInSeconds"]
    kind = a["activityType"]
    words = kind.lower().replace("_", " ")
    row = {"id": a["summaryId"], "time_start": stamp(start),
           "time_end": stamp(start + a["durationInSeconds"]), "title": a["activityName"],
           "sport": {"name": words[0].upper() + words[1:], "slug": kind.lower()},
           "calories": a["activeKilocalories"], "distance": num(a["distanceInMeters"]),
           "average_hr": a["averageHeartRateInBeatsPerMinute"],
           "max_hr": a["maxHeartRateInBeatsPerMinute"],
           "total_elevation_gain": num(a["totalElevationGainInMeters"]),
           "average_speed": num(a["averageSpeedInMetersPerSecond"])}
    if "maxSpeedInMetersPerSecond" in a:
        row["max_speed"] = num(a["maxSpeedInMetersPerSecond"])
    if "steps" in a:
        row["steps"] = a["steps"]
    row["provider_id"] = str(a["activityId"])
    row["timezone_offset"] = OFFSET
    return row


write("activities.json", activities)
write("activities.expected.json", body({"workouts": [workout_row(a) for a in activities]}))

# Body composition summaries (`/wellness-api/rest/bodyComps`): an Index scale weigh-in and a
# weight entered by hand.
body_comps = [
    {"summaryId": "x3c2f1a-67c2a350", "measurementTimeInSeconds": local(2025, 3, 1, 7, 5, 12),
     "measurementTimeOffsetInSeconds": OFFSET, "muscleMassInGrams": 31210,
     "boneMassInGrams": 3120, "bodyWaterInPercent": 57.3, "bodyFatInPercent": 19.6,
     "bodyMassIndex": 23.4, "weightInGrams": 74350},
    {"summaryId": "x3c2f1a-67c54580", "measurementTimeInSeconds": local(2025, 3, 3, 7, 2, 40),
     "measurementTimeOffsetInSeconds": OFFSET, "weightInGrams": 74100},
]


def body_row(b):
    row = {"id": b["summaryId"], "measured_at": stamp(b["measurementTimeInSeconds"]),
           "weight": num(b["weightInGrams"] / 1000)}
    if "bodyFatInPercent" in b:
        row["fat"] = num(b["bodyFatInPercent"])
    if "bodyWaterInPercent" in b:
        row["water_percentage"] = num(b["bodyWaterInPercent"])
    if "bodyMassIndex" in b:
        row["body_mass_index"] = num(b["bodyMassIndex"])
    if "muscleMassInGrams" in b:
        row["muscle_mass_percentage"] = num(round(b["muscleMassInGrams"] / b["weightInGrams"] * 100, 2))
    if "boneMassInGrams" in b:
        row["bone_mass_percentage"] = num(round(b["boneMassInGrams"] / b["weightInGrams"] * 100, 2))
    return row


write("body_comps.json", body_comps)
write("body_comps.expected.json", body({"body": [body_row(b) for b in body_comps]}))

# Stress details (`/wellness-api/rest/stressDetails`), with the documented negative codes.
stress = [
    {"summaryId": "x3c2f1a-67c24d70-stress", "calendarDate": "2025-03-01",
     "startTimeInSeconds": local(2025, 3, 1), "startTimeOffsetInSeconds": OFFSET,
     "durationInSeconds": 86400,
     "timeOffsetStressLevelValues": {"0": 18, "180": 51, "360": -1, "540": 29, "720": -2, "900": 76},
     "timeOffsetBodyBatteryValues": {"0": 55, "180": 56}},
    {"summaryId": "x3c2f1a-67c39ef0-stress", "calendarDate": "2025-03-02",
     "startTimeInSeconds": local(2025, 3, 2), "startTimeOffsetInSeconds": OFFSET,
     "durationInSeconds": 86400, "timeOffsetStressLevelValues": {"0": 22, "180": 35, "360": -3}},
]


def stress_samples(s):
    return [{"timestamp": stamp(s["startTimeInSeconds"] + k), "timezone_offset": OFFSET,
             "unit": "0-100", "value": num(v)}
            for k, v in sorted_samples(s["timeOffsetStressLevelValues"]) if 1 <= v <= 100]


write("stress_details.json", stress)
write("stress_details.expected.json",
      body({}, {"stress_level": [x for s in stress for x in stress_samples(s)]}))

# A ping (Health API §4.2, the OAuth 2.0 form: no userAccessToken, a pull token in the URL).
write("ping_dailies.json", {"dailies": [{
    "userId": USER,
    "callbackURL": "https://apis.garmin.com/wellness-api/rest/dailies?uploadStartTimeInSeconds="
                   f"{local(2025, 3, 2, 8)}&uploadEndTimeInSeconds={local(2025, 3, 2, 8) + 3}"
                   "&token=ping-pull-token"}]})
