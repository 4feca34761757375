"""Runs one of the README's pandas snippets over a Parquet answer (tests/it/system/readme.rs runs this).

Usage: readme_snippet.py SNIPPET_FILE ANSWER_FILE

The snippet runs as written, with `answer_bytes` holding the answer (a gzipped tar of one Parquet
file per query). Prints one JSON line:
- "frames": every DataFrame the snippet reads with `NAME = pd.read_parquet(tar.extractfile("N.parquet"))`,
  as {NAME: {"file": "N.parquet", "table": {column: [values]}}} (instants and dates in ISO form,
  missing values null), as the snippet leaves it;
- "shown": every bare expression followed by comment lines (the output the README shows), as
  {"expr", "printed" (str of its value), "comment" (the comment lines without their "# ")}.
"""

import ast
import datetime as dt
import json
import math
import os
import re
import sys

import pandas as pd

source = open(sys.argv[1]).read()
answer_bytes = open(sys.argv[2], "rb").read()
lines = source.splitlines()
namespace = {"answer_bytes": answer_bytes}
shown = []

for node in ast.parse(source).body:
    code = ast.get_source_segment(source, node)
    if isinstance(node, ast.Expr):
        value = eval(compile(ast.Expression(node.value), "<snippet>", "eval"), namespace)
        comment = []
        for line in lines[node.end_lineno:]:
            if not line.startswith("#"):
                break
            comment.append(line[2:] if line.startswith("# ") else line[1:])
        if comment:
            shown.append({"expr": code, "printed": str(value), "comment": "\n".join(comment)})
    else:
        exec(compile(ast.Module([node], []), "<snippet>", "exec"), namespace)


def plain(value):
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if hasattr(value, "item"):  # numpy scalars
        return plain(value.item())
    return value


frames = {}
for name, file in re.findall(r'(\w+)\s*=\s*pd\.read_parquet\(tar\.extractfile\("(\d+\.parquet)"\)\)', source):
    frame = namespace[name]
    frames[name] = {
        "file": file,
        "table": {column: [plain(v) for v in frame[column].tolist()] for column in frame.columns},
    }

print(json.dumps({"frames": frames, "shown": shown}), flush=True)
# Everything is done and printed: leave without the interpreter's teardown, where pyarrow's
# thread pool at times aborts a finished process ("terminate called without an active
# exception", apache/arrow#34314).
os._exit(0)
