"""rooflake benchmark, Nsight Systems side: ingest + NVTX attribution of the largest fixture export and of copies
scaled to ~150k kernels, against a plain baseline: pandas ``read_sql`` of the same tables + a Python loop that
attributes each kernel to the ranges open on its launching thread. Prints figures; asserts nothing.

Two scaled copies (kernel, memcpy/memset, runtime and NVTX rows replicated with shifted timestamps and correlation
ids): the largest fixture (a PyTorch training step, ~5 NVTX ranges per kernel: range-heavy) and the power-iteration
fixture (~0.2 ranges per kernel: range-light); the issue's own copy (154k kernels, 160k ranges) lies between.
Two baselines: "minimal" reads only the columns the loop needs; "same columns" reads every column rooflake reads
(the same input work). rooflake is timed twice: read + attribution (open_export until the tables are ready: the
baseline's end point), and a full `ingest_file` (hash, read, attribution, Parquet written and published).
Every contender runs 3 times in a fresh process; the best time is shown, with the highest peak RSS of the 3.

Parquet against SQLite (issue 13): the same export as an SQLite file and as a parquetdir folder (every table written
to Parquet with its declared types, ``nsys_parquet.write_parquetdir``), each read + attributed and fully ingested in
fresh processes, side by side: the largest fixture and the range-heavy copy. ``python bench/bench_nsys.py parquetdir``
runs only that part.

Issue 14 (``python bench/bench_nsys.py big`` runs only that part): the range-heavy copy x8 (~1.2M kernels, built once
under ``$RL_BENCH_CACHE``): a full ``rl ingest`` as a whole process, its peak RSS beside the 500 MB goal and its
time beside nsys-ai's cache build (from ``$RL_NSYS_AI_PYTHON``) and the pandas baseline, each a whole process.

Run with ``make bench`` (needs pandas for the baselines; they are skipped with a note without it).
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
RANGE_LIGHT = FIXTURES / "nsys" / "brycelelbach__nsightful__tests__power_iteration__baseline.sqlite"
TARGET_KERNELS = 150_000
# the issue-14 size: the range-heavy copy x8 (~1.2M kernels, ~5.7M ranges, ~700 MB), built once and kept under
# $RL_BENCH_CACHE (default: the system temporary directory), as bench/stores.py keeps its stores
BIG_FACTOR = 8
CACHE = Path(os.environ.get("RL_BENCH_CACHE", tempfile.gettempdir())) / "rooflake-bench-stores"


def scaled_copy(src: Path, dst: Path, target: int) -> int:
    """Copy ``src`` and replicate its kernel, memcpy/memset, runtime and NVTX rows with shifted timestamps and
    correlation ids until it holds about ``target`` kernels. Returns the number of copies."""
    shutil.copyfile(src, dst)  # not the fixture's read-only mode: rows are added to the copy
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


def cached_copy(src: Path, target: int, name: str) -> Path:
    """``CACHE / name``: :func:`scaled_copy` of ``src`` to ``target`` kernels, built once (a ``.done`` file beside
    it marks a finished one)."""
    dst, done = CACHE / name, CACHE / f"{name}.done"
    if not done.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        dst.unlink(missing_ok=True)
        scaled_copy(src, dst, target)
        done.write_text("")
    return dst


BASELINE = r"""
import sqlite3, time
import pandas as pd
path = {path!r}
reads = {reads!r}
t0 = time.perf_counter()
con = sqlite3.connect(path)
df = {{name: pd.read_sql(sql, con) for name, sql in reads.items()}}
t_read = time.perf_counter() - t0
k, r, n, s = df["kernel"], df["runtime"], df["nvtx"], df["strings"]
n = n[n.eventType == 59]
names = dict(zip(s.id, s.value))
n_name = [t if t is not None else names.get(i) for t, i in zip(n.text, n.textId)]
# per thread: the time-ordered pushes, pops and kernel launches, swept once with a stack
events = {{}}
for st, en, g, nm in zip(n.start, n.end, n.globalTid, n_name):
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

MINIMAL_READS = {
    "kernel": "SELECT start, end, correlationId, globalPid, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL",
    "runtime": "SELECT start, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME",
    "nvtx": "SELECT start, end, globalTid, text, textId, eventType FROM NVTX_EVENTS WHERE eventType = 59",
    "strings": "SELECT id, value FROM StringIds",
}


def same_reads(path: Path) -> dict[str, str]:
    """SELECTs of every column rooflake's nsys reader reads, table by table (the baseline then does the same reading
    work; the loop uses the columns of MINIMAL_READS among them)."""
    from rooflake.ingest.nsys_export import SOURCES

    db = sqlite3.connect(path)
    ours = {"k_raw": "kernel", "api_raw0": "runtime", "nvtx_raw": "nvtx", "strings": "strings"}
    out = {}
    for name, (table, cols) in SOURCES.items():
        present = {r[1] for r in db.execute(f"PRAGMA table_info('{table}')")} | {"rowid"}
        if len(present) == 1:
            continue
        select = ", ".join(f'"{c}"' for c, _, _ in cols if c in present)
        out[ours.get(name, name)] = f'SELECT {select} FROM "{table}"'
    db.close()
    return out


# One reader's read + attribution in a fresh process: READER is nsys_sqlite or nsys_parquet (the same attribution
# code behind both), IMPORTS what it needs imported before the clock, as pandas is for the baseline.
_OURS = r"""
import time
import IMPORTS
from rooflake.ingest import READER
t0 = time.perf_counter()
with READER.open_export({path!r}, run_id="x") as out:
    RESULT = {{"seconds": time.perf_counter() - t0, "kernels": out["kernels"].num_rows,
              "ranges": out["ranges"].num_rows}}
    RESULT["attributed"] = out["kernels"].con.execute(
        "SELECT count(*) FROM ops_out WHERE op_kind = 'kernel' AND path_id IS NOT NULL").fetchone()[0]
"""
OURS = _OURS.replace("READER", "nsys_sqlite").replace(
    "IMPORTS", "adbc_driver_sqlite, duckdb, pyarrow.parquet"
)
OURS_PARQUET = _OURS.replace("READER", "nsys_parquet").replace("IMPORTS", "duckdb, pyarrow.parquet")

INGEST = r"""
import tempfile, time
import adbc_driver_sqlite, duckdb, pyarrow.parquet
from rooflake.pipeline import ingest_file
with tempfile.TemporaryDirectory() as d:
    t0 = time.perf_counter()
    res = ingest_file({path!r}, d)
    RESULT = {{"seconds": time.perf_counter() - t0, "kernels": res.kernels, "ranges": res.ranges}}
"""


def child(code: str) -> dict:
    script = textwrap.dedent(code) + (
        "\nimport resource, json\nRESULT['rss_mb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(json.dumps(RESULT))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def best(code: str, runs: int = 3) -> dict:
    """The fastest of ``runs`` fresh-process runs, with the highest peak RSS among them."""
    results = [child(code) for _ in range(runs)]
    ok = [r for r in results if "error" not in r]
    if not ok:
        return results[0]
    out = dict(min(ok, key=lambda r: r["seconds"]))
    out["rss_mb"] = max(r["rss_mb"] for r in ok)
    return out


def report(label: str, path: Path) -> None:
    mb = path.stat().st_size / 1e6
    ours = best(OURS.format(path=str(path)))
    full = best(INGEST.format(path=str(path)))
    if "error" in ours or "error" in full:
        print(f"{label}: rooflake failed: {ours.get('error') or full.get('error')}")
        return
    k, n = ours["kernels"], ours["ranges"]
    print(f"{label}: {mb:.0f} MB, {k} kernels, {n} ranges")
    print(
        f"  rooflake read + attribution: {ours['seconds']:.2f} s ({k / ours['seconds']:,.0f} kernels/s, "
        f"{n / ours['seconds']:,.0f} ranges/s), peak RSS {ours['rss_mb']:.0f} MB, {ours['attributed']} kernels "
        f"attributed to a push/pop range"
    )
    print(
        f"  rooflake full ingest (hash, read, attribution, Parquet): {full['seconds']:.2f} s "
        f"({mb / full['seconds']:.0f} MB/s), peak RSS {full['rss_mb']:.0f} MB"
    )
    for name, reads in (("minimal columns", MINIMAL_READS), ("same columns", same_reads(path))):
        base = best(BASELINE.format(path=str(path), reads=reads))
        if "error" in base:
            print(f"  baseline ({name}) not run: {base['error']}")
            continue
        print(
            f"  baseline ({name}: pandas read_sql + Python loop): {base['seconds']:.2f} s "
            f"({base['read_s']:.2f} s reading), peak RSS {base['rss_mb']:.0f} MB, {base['attributed']} attributed; "
            f"rooflake read + attribution {base['seconds'] / ours['seconds']:.1f}x faster, full ingest "
            f"{base['seconds'] / full['seconds']:.1f}x"
        )


def compare_parquetdir(label: str, path: Path) -> None:
    """The export ``path`` read as SQLite and as a parquetdir folder written from it: read + attribution and full
    ingest, best of 3 fresh processes each, printed side by side with the ratio."""
    from rooflake.ingest import source_bytes
    from rooflake.ingest.nsys_parquet import write_parquetdir

    with tempfile.TemporaryDirectory() as d:
        folder = Path(d) / f"{path.stem}.parquetdir"
        t0 = time.perf_counter()
        write_parquetdir(path, folder)
        print(
            f"{label}: SQLite {path.stat().st_size / 1e6:.1f} MB, parquetdir {source_bytes(folder) / 1e6:.1f} MB "
            f"(written in {time.perf_counter() - t0:.1f} s)"
        )
        print(f"  {'':<26}{'SQLite':>18}{'parquetdir':>18}{'parquetdir/SQLite':>20}")
        for what, sqlite_code, parquet_code in (
            ("read + attribution", OURS, OURS_PARQUET),
            ("full ingest", INGEST, INGEST),
        ):
            a = best(sqlite_code.format(path=str(path)))
            b = best(parquet_code.format(path=str(folder)))
            if "error" in a or "error" in b:
                print(f"  {what}: failed: {a.get('error') or b.get('error')}")
                continue
            same = (
                "same counts"
                if (a["kernels"], a["ranges"]) == (b["kernels"], b["ranges"])
                else "COUNTS DIFFER"
            )
            print(
                f"  {what:<26}{a['seconds']:>8.2f} s {a['rss_mb']:>4.0f} MB{b['seconds']:>8.2f} s {b['rss_mb']:>4.0f} MB"
                f"{b['seconds'] / a['seconds']:>13.2f}x time  ({a['kernels']} kernels, {a['ranges']} ranges, {same})"
            )


# nsys-ai (the peer, 0.3.0 measured) runs from its own interpreter, $RL_NSYS_AI_PYTHON, default a venv at
# /tmp/nsysai-venv; the pandas baseline runs with ours when pandas is installed there, else with that one. Its cache
# build attaches the export with DuckDB's sqlite extension, which DuckDB downloads; offline: `pip install nsys-ai
# pandas duckdb==1.4.4 duckdb-ext-sqlite==1.4.4.20260205` in that venv and copy the wheel's
# duckdb_ext/extensions/v1.4.4/linux_amd64/sqlite_scanner.duckdb_extension to ~/.duckdb/extensions/v1.4.4/linux_amd64/
NSYS_AI_PYTHON = os.environ.get("RL_NSYS_AI_PYTHON", "/tmp/nsysai-venv/bin/python")
# the whole-process contenders at the x8 copy: nsys-ai's cache build with its NVTX kernel map (the same attribution
# work; by default it defers the map to first use), and without it
NSYS_AI = r"""
import sys
from nsys_ai.parquet_cache import build_cache
build_cache(sys.argv[1])
"""
RL_MEMORY_GOAL_MB = 500
# how many times faster than each contender ``rl ingest`` is meant to be (issue 14); None: shown for reference.
# nsys-ai 0.3.0's default build defers its NVTX kernel map to first use: it attributes no kernel to a range, the work
# rl ingest does, so the peer is the build with the map, as every stop since the bench ran it read it
GOALS: dict[str, float | None] = {
    "nsys-ai cache + NVTX map": 2.0,
    "nsys-ai cache (map deferred)": None,
    "pandas baseline": 3.0,
}


def whole(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> dict:
    """One whole process: wall seconds, CPU seconds (user + system, its own and its children's) and peak RSS (MB)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, **(env or {})}, cwd=cwd
    )
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"error": (err.strip().splitlines() or ["failed"])[-1]}
    return {"seconds": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024}


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def _failed(results: list[dict]) -> str:
    """``" (N of M runs failed: last error)"`` when some of a contender's runs failed (their figures are left out of
    its medians), else ``""``."""
    bad = [r["error"] for r in results if "error" in r]
    return f" ({len(bad)} of {len(results)} runs failed: {bad[-1]})" if bad else ""


def big_report(runs: int = 3) -> dict[str, tuple[float, float, float]]:
    """The issue-14 figures at the range-heavy copy x8 (built once, :func:`cached_copy`): a full ``rl ingest`` as a
    whole process against nsys-ai's cache build and the pandas baseline (same columns), each a whole process,
    contenders interleaved, ``runs`` times; medians of wall and CPU time, the highest peak RSS. Prints them and
    returns contender -> (wall s, CPU s, peak RSS MB) for those that ran (bench/bench_store.py puts them in its
    final table)."""
    path = cached_copy(LARGEST, BIG_FACTOR * TARGET_KERNELS, f"nsys-range-heavy-x{BIG_FACTOR}.sqlite")
    rl = str(Path(sys.executable).with_name("rl"))
    peer_py = NSYS_AI_PYTHON if Path(NSYS_AI_PYTHON).exists() else None
    has_pandas = subprocess.run([sys.executable, "-c", "import pandas"], capture_output=True).returncode == 0
    base_py = sys.executable if has_pandas else peer_py
    base_code = textwrap.dedent(BASELINE.format(path=str(path), reads=same_reads(path)))
    with tempfile.TemporaryDirectory() as d:
        link = Path(d) / "x.sqlite"  # nsys-ai writes its cache beside the export: a link in a fresh folder
        link.symlink_to(path)
        contenders: dict[str, tuple[list[str], dict[str, str]] | None] = {
            "rl ingest": ([rl, "ingest", str(path), "--store", str(Path(d) / "store")], {}),
            "nsys-ai cache + NVTX map": (
                ([peer_py, "-c", NSYS_AI, str(link)], {"NSYS_AI_ALWAYS_BUILD_NVTX_KERNEL_MAP": "1"})
                if peer_py
                else None
            ),
            "nsys-ai cache (map deferred)": (
                ([peer_py, "-c", NSYS_AI, str(link)], {"NSYS_AI_ALWAYS_BUILD_NVTX_KERNEL_MAP": "0"})
                if peer_py
                else None
            ),
            "pandas baseline": ([base_py, "-c", base_code], {}) if base_py else None,
        }
        got: dict[str, list[dict]] = {name: [] for name in contenders}
        for _ in range(runs):
            for name, c in contenders.items():
                if c is None:
                    continue
                shutil.rmtree(link.with_suffix(".nsys-cache"), ignore_errors=True)  # each builds afresh
                shutil.rmtree(Path(d) / "store", ignore_errors=True)
                result = whole(c[0], c[1], cwd=d)
                # its claimed work, checked: the map is a file of the cache
                the_map = link.with_suffix(".nsys-cache") / "nvtx_kernel_map.parquet"
                if name == "nsys-ai cache + NVTX map" and "error" not in result and not the_map.exists():
                    result = {"error": "the run wrote no nvtx_kernel_map.parquet (the map was not built)"}
                got[name].append(result)
    load = os.getloadavg()
    print(
        f"range-heavy copy x{BIG_FACTOR} ({path.stat().st_size / 1e6:.0f} MB): whole processes, {runs} runs each "
        f"interleaved, median wall and CPU (user + sys) s, highest peak RSS; load average {load[0]:.1f} on "
        f"{os.cpu_count()} cores"
    )
    ours = [r for r in got["rl ingest"] if "error" not in r]
    if not ours:
        print(f"  rl ingest failed: {got['rl ingest'][0].get('error')}")
        return {}
    o_wall, o_cpu = _median([r["seconds"] for r in ours]), _median([r["cpu"] for r in ours])
    o_rss = max(r["rss_mb"] for r in ours)
    print(f"  {'':<30}{'wall s':>8}{'CPU s':>8}{'peak MB':>9}   rl ingest is")
    print(
        f"  {'rl ingest':<30}{o_wall:>8.1f}{o_cpu:>8.1f}{o_rss:>9.0f}   "
        f"{'within' if o_rss <= RL_MEMORY_GOAL_MB else 'OVER'} the {RL_MEMORY_GOAL_MB} MB goal"
    )
    figures = {"rl ingest": (o_wall, o_cpu, o_rss)}
    if failed := _failed(got["rl ingest"]):
        print(f"  rl ingest{failed}")
    for name, goal in GOALS.items():
        rs = [r for r in got[name] if "error" not in r]
        if contenders[name] is None or not rs:
            why = got[name][0]["error"] if got[name] else "not installed (see NSYS_AI_PYTHON)"
            print(f"  {name:<30} not run: {why}")
            continue
        wall, cpu = _median([r["seconds"] for r in rs]), _median([r["cpu"] for r in rs])
        figures[name] = (wall, cpu, max(r["rss_mb"] for r in rs))
        print(
            f"  {name:<30}{wall:>8.1f}{cpu:>8.1f}{max(r['rss_mb'] for r in rs):>9.0f}   "
            f"{wall / o_wall:.2f}x faster (wall), {cpu / o_cpu:.2f}x (CPU); "
            + (f"goal {goal:.0f}x" if goal is not None else "no goal: it maps no kernel to an NVTX range")
            + _failed(got[name])
        )
    return figures


def main() -> None:
    if sys.argv[1:] == ["big"]:
        big_report()
        return
    if sys.argv[1:] == ["parquetdir"]:
        compare_parquetdir("largest fixture", LARGEST)
        with tempfile.TemporaryDirectory() as d:
            dst = Path(d) / "range-heavy.sqlite"
            copies = scaled_copy(LARGEST, dst, TARGET_KERNELS)
            compare_parquetdir(f"range-heavy copy (x{copies})", dst)
        return
    print(
        "goals (issue 3): read + attribution >= 3x faster than the baseline, linear in size, <= 400 MB at ~150k kernels"
    )
    report("largest fixture", LARGEST)
    compare_parquetdir("largest fixture", LARGEST)
    with tempfile.TemporaryDirectory() as d:
        for name, src in (("range-heavy", LARGEST), ("range-light", RANGE_LIGHT)):
            dst = Path(d) / f"{name}.sqlite"
            t0 = time.perf_counter()
            copies = scaled_copy(src, dst, TARGET_KERNELS)
            print(f"{name} copy: {src.name} x{copies}, built in {time.perf_counter() - t0:.1f} s")
            report(f"{name} copy", dst)
            if name == "range-heavy":  # SQLite against parquetdir at ~150k kernels
                compare_parquetdir(f"{name} copy", dst)
            if name == "range-heavy":  # linear in size: half the copies
                half = Path(d) / "half.sqlite"
                scaled_copy(src, half, TARGET_KERNELS // 2)
                report(f"{name} copy at half size", half)
                half.unlink()
            dst.unlink()
    # `make bench` sets RL_BENCH_NSYS_BIG=0: the x8 comparison runs once, in bench_store.py's final table
    if os.environ.get("RL_BENCH_NSYS_BIG", "1") != "0":
        big_report()


if __name__ == "__main__":
    main()
