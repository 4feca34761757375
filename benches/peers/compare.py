#!/usr/bin/env python3
"""Peer comparison: wearhouse's aggregate query engine against Polars and DuckDB.

Generates seeded heart-rate scenarios, loads them into a wearhouse server through the columnar
push, asks each scenario's aggregate query over HTTP, computes the same answers with Polars and
DuckDB in memory, checks that the three agree and prints median timings. See README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import math
import os
import queue
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import requests

SEED = 20250101
START = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
START_US = int(START.timestamp()) * 1_000_000
CHUNK_ROWS = 500_000
REL_TOL = 1e-9
FUNCS = ("mean", "min", "max", "count", "newest")

# aggregate-dsl.md §3.5 and data-model.md "Default provider priority": the source type decides
# first, then the provider (no overrides and no team order are set in this benchmark).
SOURCE_TYPE_PRIORITY = [
    "lab", "automatic", "watch", "ring", "chest_strap", "scale", "cuff", "fingerprick",
    "manual_scan", "phone", "app", "multiple_sources", "unknown",
]
DEFAULT_PROVIDER_PRIORITY = [
    "oura", "whoop_v2", "garmin", "polar", "withings", "fitbit", "ultrahuman", "apple_health_kit",
    "health_connect", "samsung_health", "freestyle_libre", "dexcom_v3", "abbott_libreview",
    "google_fit", "strava", "wahoo", "peloton", "zwift", "eight_sleep", "renpho", "omron",
    "ihealth", "cronometer", "manual",
]


def source_rank(provider: str, source_type: str) -> tuple:
    """Sort key of a (provider, source type) pair, best first (aggregate-dsl.md §3.5)."""
    t = SOURCE_TYPE_PRIORITY.index(source_type) if source_type in SOURCE_TYPE_PRIORITY else None
    p = DEFAULT_PROVIDER_PRIORITY.index(provider) if provider in DEFAULT_PROVIDER_PRIORITY else None
    type_key = (0, t, "") if t is not None else (1, 0, source_type)
    prov_key = (0, p, "") if p is not None else (1, 0, provider)
    return type_key + prov_key


# --------------------------------------------------------------------------------------------
# Scenarios and data


@dataclass(frozen=True)
class Source:
    provider: str
    source_type: str
    period_s: int  # one sample every period_s seconds
    stream: int  # seed stream of the values


OURA_MIN = Source("oura", "ring", 60, 1)
APPLE_MIN = Source("apple_health_kit", "watch", 60, 2)
OURA_SEC = Source("oura", "ring", 1, 3)
APPLE_SEC = Source("apple_health_kit", "watch", 1, 4)


@dataclass(frozen=True)
class Scenario:
    name: str
    sources: tuple  # of Source; one wearhouse user per distinct tuple
    unit: str  # date_trunc unit: "day" or "hour"
    label: str

    @property
    def priority(self) -> bool:
        return len(self.sources) > 1


SCENARIOS = {
    "S1": Scenario("S1", (OURA_MIN,), "day", "1/min, 1 source, daily"),
    "S2": Scenario("S2", (OURA_MIN,), "hour", "1/min, 1 source, hourly"),
    "S3": Scenario("S3", (OURA_SEC,), "hour", "1/s, 1 source, hourly"),
    "S4": Scenario("S4", (OURA_MIN, APPLE_MIN), "day", "1/min, 2 sources, daily, priority"),
    "S5": Scenario("S5", (OURA_SEC, APPLE_SEC), "hour", "1/s, 2 sources, hourly, priority"),
}


def generate(source: Source, days: int) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic samples of one source: (timestamps in µs since the epoch, float64 bpm)."""
    n = days * 86_400 // source.period_s
    ts = START_US + np.arange(n, dtype=np.int64) * (source.period_s * 1_000_000)
    rng = np.random.default_rng([SEED, source.stream])
    seconds = np.arange(n, dtype=np.float64) * source.period_s
    daily = 62.0 + 10.0 * np.sin(2.0 * np.pi * (seconds / 86_400.0 - 0.3))
    offset = 1.5 if source.source_type == "watch" else 0.0
    noise = rng.normal(0.0, 4.0, n)
    bursts = np.where(rng.random(n) < 0.02, rng.uniform(20.0, 70.0, n), 0.0)
    values = np.round(np.clip(daily + offset + noise + bursts, 35.0, 210.0), 2)
    return ts, values


class Data:
    """Generated samples per source, made once per run."""

    def __init__(self, days: int):
        self.days = days
        self._cache: dict[Source, tuple[np.ndarray, np.ndarray]] = {}

    def get(self, source: Source) -> tuple[np.ndarray, np.ndarray]:
        if source not in self._cache:
            self._cache[source] = generate(source, self.days)
        return self._cache[source]


# --------------------------------------------------------------------------------------------
# wearhouse


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A `wearhouse serve --demo` process on a fresh data directory."""

    def __init__(self, binary: str, client: str, startup_timeout: float = 120.0):
        self.data_dir = tempfile.mkdtemp(prefix="wearhouse-peers-")
        port = free_port()
        cmd = [binary, "serve", "--demo", "--listen", f"127.0.0.1:{port}",
               "--data-dir", self.data_dir]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        self.key = self.base = None
        deadline = time.monotonic() + startup_timeout
        while self.key is None or self.base is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stop()
                sys.exit("wearhouse did not print its key and address in time:\n"
                         + "".join(self.log[-40:]))
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self.stop()
                sys.exit("wearhouse exited during start-up:\n" + "".join(self.log[-40:]))
            if m := re.search(r"demo team API key: (\S+)", line):
                self.key = m.group(1)
            if m := re.search(r"listening on (http://\S+)", line):
                self.base = m.group(1).rstrip("/")
        self.session = requests.Session()
        self.session.headers["x-service-api-key"] = self.key
        # The timed queries: the standard library's HTTP/1.1 client on one kept-alive
        # connection, whose own cost per request is a fraction of `requests`' (see README.md).
        self.conn = None
        if client == "http.client":
            url = urllib.parse.urlsplit(self.base)
            self.conn = http.client.HTTPConnection(url.hostname, url.port)

    def wait_idle(self, limit_s: float = 600.0) -> float:
        """Waits until the server's background work after the loads (compaction, announcing
        the pushes' events) is done: its CPU time grows by under 2 % of a second over a second.
        Timing while it runs would measure every system against that load. Answers the wait."""
        def cpu_seconds() -> float:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        t0 = time.monotonic()
        before = cpu_seconds()
        while time.monotonic() - t0 < limit_s:
            time.sleep(1.0)
            now = cpu_seconds()
            if now - before < 0.02:
                break
            before = now
        return time.monotonic() - t0

    def memory(self) -> tuple[int, int]:
        """The server process's resident set now and at its peak (`VmRSS`, `VmHWM`), bytes."""
        fields = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    fields[key] = int(rest.split()[0]) * 1024  # the kernel reports kB
        return fields["VmRSS"], fields["VmHWM"]

    def _drain(self) -> None:
        for line in self.proc.stdout:
            self.log.append(line)
            if len(self.log) > 200:
                del self.log[:100]
            self.lines.put(line)
        self.lines.put(None)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def create_user(self, client_user_id: str) -> str:
        r = self.session.post(f"{self.base}/v2/user/", json={"client_user_id": client_user_id})
        check_response(r, "create user")
        return r.json()["user_id"]

    def push(self, user_id: str, source: Source, ts: np.ndarray, values: np.ndarray) -> None:
        url = f"{self.base}/v2/user/{user_id}/data"
        params = {"resource": "heartrate", "provider": source.provider,
                  "source_type": source.source_type}
        headers = {"content-type": "application/vnd.apache.arrow.stream"}
        for lo in range(0, len(ts), CHUNK_ROWS):
            hi = min(lo + CHUNK_ROWS, len(ts))
            table = pa.table({
                "timestamp": pa.array(ts[lo:hi], type=pa.timestamp("us", tz="UTC")),
                "value": pa.array(values[lo:hi], type=pa.float64()),
            })
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            body = sink.getvalue().to_pybytes()
            r = self.session.post(url, params=params, headers=headers, data=body)
            check_response(r, f"push {source.provider} rows {lo}..{hi}")
            stored = r.json().get("stored", {}).get("timeseries", {}).get("heartrate")
            if stored != hi - lo:
                sys.exit(f"push {source.provider} rows {lo}..{hi}: stored {stored!r}, "
                         f"expected {hi - lo}: {r.text[:500]}")

    def query(self, user_id: str, body: bytes) -> Reply:
        """One aggregate request, its whole answer read (not decoded)."""
        path = f"/aggregate/v1/user/{user_id}/query"
        headers = {"content-type": "application/json", "x-service-api-key": self.key}
        if self.conn is not None:
            self.conn.request("POST", path, body=body, headers=headers)
            r = self.conn.getresponse()
            return Reply(r.status, r.read())
        r = self.session.post(self.base + path, data=body, headers=headers)
        return Reply(r.status_code, r.content)


@dataclass
class Reply:
    """An HTTP answer: status and body."""
    status: int
    body: bytes

    def check(self, what: str) -> None:
        if not 200 <= self.status < 300:
            sys.exit(f"{what}: HTTP {self.status}: {self.body[:2000]!r}")

    def json(self):
        return json.loads(self.body)


def check_response(r: requests.Response, what: str) -> None:
    if not r.ok:
        sys.exit(f"{what}: HTTP {r.status_code}: {r.text[:2000]}")


def query_body(scenario: Scenario, days: int) -> bytes:
    anchor = (START + dt.timedelta(days=days - 1)).date().isoformat()
    arg = {"timeseries": "heartrate", "field": "value"}
    body = {
        # [anchor - past, anchor + 1 day): past = days - 1 covers exactly the generated days;
        # with --days 1 the window starts a day early, where there is no data.
        "timeframe": {"anchor": anchor, "past": {"value": max(days - 1, 1), "unit": "day"}},
        "queries": [{
            "select": [{"group_key": 0}] + [{"func": f, "arg": arg} for f in FUNCS],
            "group_by": [{"date_trunc": {"value": 1, "unit": scenario.unit},
                          "arg": {"index": "timeseries"}}],
        }],
    }
    return json.dumps(body).encode()


def wearhouse_answer(r: Reply) -> dict:
    r.check("aggregate query")
    table = r.json()["results"][0]["table"]
    return {
        "bucket": table["group_key.0"],
        **{f: table[f"{f}.heartrate.value"] for f in FUNCS},
    }


# --------------------------------------------------------------------------------------------
# Peers: the rows in memory, floating time = UTC (no timezone_offset, no fallback zone)


def rank_rows(sources: tuple) -> list[tuple[str, str, int]]:
    ordered = sorted({(s.provider, s.source_type) for s in sources}, key=lambda p: source_rank(*p))
    return [(p, t, i) for i, (p, t) in enumerate(ordered)]


def peer_frame(sources: tuple, data: Data) -> pl.DataFrame:
    frames = []
    for s in sources:
        ts, values = data.get(s)
        frames.append(pl.DataFrame({
            "ts": pl.Series(ts).cast(pl.Datetime("us")),
            "value": values,
            "provider": pl.repeat(s.provider, len(ts), dtype=pl.String, eager=True),
            "source_type": pl.repeat(s.source_type, len(ts), dtype=pl.String, eager=True),
        }))
    return pl.concat(frames, rechunk=True)


class PolarsPeer:
    def __init__(self, df: pl.DataFrame, scenario: Scenario):
        self.df = df
        self.scenario = scenario
        self.every = "1d" if scenario.unit == "day" else "1h"
        self.ranks = pl.DataFrame(rank_rows(scenario.sources),
                                  schema=["provider", "source_type", "prio"], orient="row")

    def run(self) -> pl.DataFrame:
        v = pl.col("value")
        aggs = [v.mean().alias("mean"), v.min().alias("min"), v.max().alias("max"),
                v.count().alias("count"), v.get(pl.col("ts").arg_max()).alias("newest")]
        bucket = pl.col("ts").dt.truncate(self.every).alias("bucket")
        lf = self.df.lazy()
        if not self.scenario.priority:
            return lf.group_by(bucket).agg(aggs).sort("bucket").collect()
        # §3.5: aggregate per (bucket, source), keep the best-ranked source of each bucket.
        per_source = lf.group_by(bucket, "provider", "source_type").agg(aggs)
        return (per_source.join(self.ranks.lazy(), on=["provider", "source_type"])
                .filter(pl.col("prio") == pl.col("prio").min().over("bucket"))
                .select("bucket", *FUNCS).sort("bucket").collect())

    @staticmethod
    def answer(out: pl.DataFrame) -> dict:
        return {"bucket": [d.strftime("%Y-%m-%dT%H:%M:%S") for d in out["bucket"].to_list()],
                **{f: out[f].to_list() for f in FUNCS}}


class DuckPeer:
    def __init__(self, df: pl.DataFrame, scenario: Scenario):
        self.con = duckdb.connect()
        self.con.register("rows_in", df.to_arrow())
        self.con.execute("CREATE TABLE hr AS SELECT ts::TIMESTAMP AS ts, value::DOUBLE AS value, "
                         "provider::VARCHAR AS provider, source_type::VARCHAR AS source_type "
                         "FROM rows_in")
        self.con.unregister("rows_in")
        self.con.execute("CREATE TABLE ranks (provider VARCHAR, source_type VARCHAR, prio INT)")
        self.con.executemany("INSERT INTO ranks VALUES (?, ?, ?)", rank_rows(scenario.sources))
        unit = scenario.unit
        aggs = ("avg(value) AS mean, min(value) AS min, max(value) AS max, "
                "count(value) AS count, arg_max(value, ts) AS newest")
        if not scenario.priority:
            self.sql = (f"SELECT date_trunc('{unit}', ts) AS bucket, {aggs} "
                        f"FROM hr GROUP BY 1 ORDER BY 1")
        else:
            self.sql = (
                f"WITH per_source AS (SELECT date_trunc('{unit}', ts) AS bucket, provider, "
                f"source_type, {aggs} FROM hr GROUP BY ALL) "
                f"SELECT bucket, mean, min, max, count, newest "
                f"FROM per_source JOIN ranks USING (provider, source_type) "
                f"QUALIFY prio = min(prio) OVER (PARTITION BY bucket) ORDER BY bucket")

    def run(self) -> dict:
        return self.con.execute(self.sql).fetchnumpy()

    @staticmethod
    def answer(out: dict) -> dict:
        buckets = np.datetime_as_string(np.asarray(out["bucket"], dtype="datetime64[s]"))
        return {"bucket": [str(b) for b in buckets],
                **{f: np.asarray(out[f]).tolist() for f in FUNCS}}


# --------------------------------------------------------------------------------------------
# Checking


def compare(scenario: str, name: str, ref: dict, other: dict) -> None:
    """Fail loudly unless `other` answers like `ref` (wearhouse)."""
    problems = []
    if ref["bucket"] != other["bucket"]:
        a, b = set(ref["bucket"]), set(other["bucket"])
        problems.append(f"bucket keys differ: {len(ref['bucket'])} vs {len(other['bucket'])} "
                        f"rows; only wearhouse: {sorted(a - b)[:5]}; only {name}: "
                        f"{sorted(b - a)[:5]}; first rows {ref['bucket'][:3]} vs "
                        f"{other['bucket'][:3]}")
    else:
        for f in FUNCS:
            for i, (x, y) in enumerate(zip(ref[f], other[f])):
                if f == "count":
                    ok = x == y and int(x) == x
                elif x is None or y is None:
                    ok = x is None and (y is None or (isinstance(y, float) and math.isnan(y)))
                else:
                    ok = abs(x - y) <= REL_TOL * max(abs(x), abs(y))
                if not ok:
                    problems.append(f"{f} at {ref['bucket'][i]}: wearhouse {x!r}, {name} {y!r}")
                    if len(problems) >= 10:
                        break
    if problems:
        sys.exit(f"MISMATCH in {scenario}, wearhouse vs {name}:\n  " + "\n  ".join(problems))


# --------------------------------------------------------------------------------------------
# Main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="S1,S2,S3,S4,S5")
    ap.add_argument("--days", type=int, default=90)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--binary", default="target/release/wearhouse")
    ap.add_argument("--client", choices=("http.client", "requests"), default="http.client",
                    help="the HTTP client of the timed queries")
    args = ap.parse_args()
    names = [s.strip().upper() for s in args.scenarios.split(",") if s.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown or not names:
        ap.error(f"unknown scenarios {unknown}; choose from {', '.join(SCENARIOS)}")
    if args.days < 1 or args.runs < 1:
        ap.error("--days and --runs must be at least 1")
    if not (os.path.isfile(args.binary) and os.access(args.binary, os.X_OK)):
        ap.error(f"no executable wearhouse binary at {args.binary} (build with "
                 f"`cargo build --release` or pass --binary)")
    scenarios = [SCENARIOS[n] for n in names]

    print(f"wearhouse {args.binary}; Polars {pl.__version__}; DuckDB {duckdb.__version__}; "
          f"{args.days} days from {START.date()}; {args.runs} runs; scenarios {','.join(names)}; "
          f"queries sent with {args.client}",
          flush=True)
    data = Data(args.days)
    server = Server(args.binary, args.client)
    try:
        # Load: one wearhouse user per distinct source set (S1 and S2 share one).
        users: dict[tuple, str] = {}
        arrow_bytes = 0  # the pushed rows' Arrow size: timestamp and value, 16 bytes a row
        for sc in scenarios:
            if sc.sources in users:
                continue
            t0 = time.perf_counter()
            user = server.create_user(f"peers-{'+'.join(f'{s.provider}@{s.period_s}s' for s in sc.sources)}")
            rows = 0
            for s in sc.sources:
                ts, values = data.get(s)
                server.push(user, s, ts, values)
                rows += len(ts)
                arrow_bytes += ts.nbytes + values.nbytes
            users[sc.sources] = user
            print(f"  loaded {rows:,} rows for {sc.name} into wearhouse in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)

        waited = server.wait_idle()
        print(f"  waited {waited:.0f} s for the server's background work after the loads",
              flush=True)

        results = []
        for sc in scenarios:
            user = users[sc.sources]
            body = query_body(sc, args.days)
            df = peer_frame(sc.sources, data)
            polars_peer, duck_peer = PolarsPeer(df, sc), DuckPeer(df, sc)

            # Check once (also the warm-up): the three answers must agree.
            ref = wearhouse_answer(server.query(user, body))
            compare(sc.name, "Polars", ref, PolarsPeer.answer(polars_peer.run()))
            compare(sc.name, "DuckDB", ref, DuckPeer.answer(duck_peer.run()))
            print(f"  {sc.name}: {len(df):,} rows, {len(ref['bucket'])} buckets, "
                  f"answers agree", flush=True)

            times = {"wearhouse": [], "Polars": [], "DuckDB": []}
            for _ in range(args.runs):
                t0 = time.perf_counter()
                r = server.query(user, body)  # the whole request, body read
                times["wearhouse"].append(time.perf_counter() - t0)
                r.check(f"{sc.name} aggregate query")
                t0 = time.perf_counter()
                polars_peer.run()
                times["Polars"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                duck_peer.run()
                times["DuckDB"].append(time.perf_counter() - t0)
            # wearhouse alone, back to back: the peers' multi-threaded runs between its requests
            # leave it cold caches, and more so where they are slower (S4, S5), so the cost of
            # priority (S4/S1, S5/S3) is taken from these runs.
            times["alone"] = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                r = server.query(user, body)
                times["alone"].append(time.perf_counter() - t0)
                r.check(f"{sc.name} aggregate query")
            med = {k: statistics.median(v) * 1000.0 for k, v in times.items()}
            results.append((sc, med, server.memory()))
            duck_peer.con.close()
            del df, polars_peer, duck_peer
    finally:
        server.stop()

    print()
    header = (f"{'scenario':<40} {'wearhouse ms':>13} {'Polars ms':>10} {'DuckDB ms':>10} "
              f"{'best peer':>10} {'wh/best':>8} {'wh alone ms':>12}")
    print(header)
    print("-" * len(header))
    med_by = {}
    for sc, med, _ in results:
        best = min(("Polars", "DuckDB"), key=lambda k: med[k])
        med_by[sc.name] = med
        print(f"{sc.name + ' ' + sc.label:<40} {med['wearhouse']:>13.2f} {med['Polars']:>10.2f} "
              f"{med['DuckDB']:>10.2f} {best:>10} {med['wearhouse'] / med[best]:>8.2f} "
              f"{med['alone']:>12.2f}")
    pairs = [("S4", "S1"), ("S5", "S3")]
    parts = [f"{on}/{off} = {med_by[on]['alone'] / med_by[off]['alone']:.2f} alone "
             f"({med_by[on]['wearhouse'] / med_by[off]['wearhouse']:.2f} interleaved)"
             for on, off in pairs if on in med_by and off in med_by]
    if parts:
        print(f"wearhouse priority on / off (twice the rows): {'; '.join(parts)}")
    mib = 1 << 20
    print(f"wearhouse server memory, the rows of every scenario loaded "
          f"({arrow_bytes / mib:,.0f} MiB as Arrow: timestamp and value):")
    for sc, _, (rss, peak) in results:
        print(f"  after {sc.name}: RSS {rss / mib:,.0f} MiB ({rss / arrow_bytes:.2f}x the data), "
              f"peak {peak / mib:,.0f} MiB ({peak / arrow_bytes:.2f}x)")
    print(f"medians of {args.runs} interleaved runs; {args.days} days; answers checked "
          f"(bucket keys and counts equal, floats within {REL_TOL:g} relative)")


if __name__ == "__main__":
    main()
