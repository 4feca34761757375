"""Reads an aggregate answer's gzipped tar of N.parquet with pyarrow and pandas and checks each
member against the JSON answer of the same request: member names, column names and order, Arrow
types (aggregate-dsl.md section 4.3) and every value.

usage: check_parquet_tarball.py ANSWER.tar.gz ANSWER.json
Exits non-zero with a message naming the first difference.
"""

import io
import json
import math
import os
import sys
import tarfile

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def same(json_value, arrow_type, py_value):
    if json_value is None:
        return py_value is None or (isinstance(py_value, float) and math.isnan(py_value))
    if pa.types.is_timestamp(arrow_type):
        expected = pd.Timestamp(json_value.replace("Z", "+00:00"))
        got = pd.Timestamp(py_value)
        if arrow_type.tz is None:
            return expected.tz is None and got == expected
        return expected.tz is not None and got == expected
    if pa.types.is_date32(arrow_type):
        return py_value.isoformat() == json_value
    if pa.types.is_floating(arrow_type):
        return math.isclose(py_value, json_value, rel_tol=1e-12, abs_tol=1e-12)
    return py_value == json_value


def main(tar_path, json_path):
    answer = json.load(open(json_path))
    results = answer["results"]
    with tarfile.open(tar_path, mode="r:gz") as archive:
        members = archive.getmembers()
        names = [m.name for m in members]
        if names != [f"{i}.parquet" for i in range(len(results))]:
            fail(f"members {names} for {len(results)} results")
        for member, result in zip(members, results):
            data = archive.extractfile(member).read()
            table = pq.read_table(io.BytesIO(data))
            frame = pd.read_parquet(io.BytesIO(data))
            columns = list(result["table"].keys())
            if table.column_names != columns or list(frame.columns) != columns:
                fail(f"{member.name}: columns {table.column_names} / {list(frame.columns)}, JSON {columns}")
            for name in columns:
                arrow_type = table.schema.field(name).type
                expected = result["table"][name]
                got = table.column(name).to_pylist()
                if len(got) != len(expected) or len(frame[name]) != len(expected):
                    fail(f"{member.name}.{name}: {len(got)} rows, JSON {len(expected)}")
                if name.startswith("count.") and not pa.types.is_int64(arrow_type):
                    fail(f"{member.name}.{name}: counts must be int64, got {arrow_type}")
                for row, (e, g) in enumerate(zip(expected, got)):
                    if not same(e, arrow_type, g):
                        fail(f"{member.name}.{name}[{row}]: parquet {g!r} ({arrow_type}), JSON {e!r}")
            print(f"{member.name}: {table.num_rows} rows, {len(columns)} columns match")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
    # Every file matched (a mismatch exits 1 above). Leave without the interpreter's teardown:
    # pyarrow's native thread pools can abort it ("terminate called without an active
    # exception", seen once in three CI runs) after the check has passed.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
