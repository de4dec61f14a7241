"""rooflake benchmark, issue 14: start-up, one-run queries in a big store, compaction, ncu ingest, charts.

Every figure is a whole process, timed from outside: contenders run in turn (A B A B ...), ``RUNS`` times each
after one warm-up, and the medians of wall time (and of CPU time: user + system of the process and its children)
are compared. Stores are copies of the ingested fixture runs (bench/stores.py; kept between runs under
``$RL_BENCH_CACHE``). Prints one row per figure as it goes, and at the end one table: work, rooflake, floor or peer,
ratio, goal. Asserts nothing: on a shared 2-core machine timings are noisy (read the CPU column when the machine is
loaded: wall is then mostly waiting).

Floors and peers:
- start-up: ``python -c pass`` (the interpreter alone), and a one-line DuckDB script doing the same query;
- one run of 10,000: a one-line DuckDB script reading only that run's files (its kernels, ceilings and runs parts);
- ``rl roofline``/``rl layers`` at 10,000 runs: the same command at 10 runs (the goal is a difference <= 0.3 s);
- whole history: ``count(*) FROM kernel_roofline`` over 10,000 runs after ``rl compact`` (goal <= 0.5 s), and
  before it beside a one-line DuckDB count of the kernels files (goal <= 1.3x);
- pruning: one run of ``kernel_roofline`` at 10,000 runs (rooflake's planner binding that run's files) beside a
  one-line DuckDB script leaving the pruning to DuckDB itself (hive-partitioned globs of the three tables the view
  reads, ``WHERE run_id = X``);
- ``rl compact`` of 10,000 runs: its peak RSS (goal <= 500 MB), one run (it takes minutes);
- ncu ingest: the lossless floor (``ncu_report`` reading every value, unit and correlation id), one fresh process
  per report, as many at once as cores (what a correct reader must do, see CHANGELOG), against ``rl ingest``;
- charts: ``rl report`` per chart (goal <= 0.35 s), and ``rl roofline -o x.png`` against a plain Altair +
  vl-convert script drawing the same run's kernels (bench/plain_chart.py);
- nsys ingest at the range-heavy copy x8 (1.2M kernels, 5.7M NVTX ranges): its peak RSS beside the 500 MB goal,
  its time beside nsys-ai's cache build and the pandas baseline (``bench_nsys.big_report``, 3 runs each; skipped
  with ``RL_BENCH_NSYS_BIG=0``).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stores import CACHE, REPORTS, cached_compacted, cached_store, copy_store  # noqa: E402

PY = sys.executable
RL = [PY, "-c", "import sys; from rooflake.cli import main; sys.argv[0] = 'rl'; main()"]
RUNS = int(os.environ.get("RL_BENCH_RUNS", "5"))
CORES = os.cpu_count() or 1
HERE = Path(__file__).resolve().parent
TABLE: list[tuple[str, str, str, str, str]] = []
# An installed rooflake has its modules compiled (pip compiles them on install), so every figure is taken with
# bytecode written and read: a shell that sets PYTHONDONTWRITEBYTECODE would make each process recompile rooflake
# from source (~0.04 s CPU), which no user pays. Each contender's warm-up run writes what is missing.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall s, CPU s of the process and its children) of one run of ``cmd``; its output is thrown away."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[-6:])} failed: {p.stderr.strip()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def pair(a: list[str], b: list[str] | None = None, runs: int = RUNS) -> tuple[tuple[float, float], ...]:
    """Medians ((wall, CPU) of ``a``, and of ``b``), the two run in turn after one warm-up each."""
    timed(a)
    if b:
        timed(b)
    ra, rb = [], []
    for _ in range(runs):
        ra.append(timed(a))
        if b:
            rb.append(timed(b))

    def med(rs: list[tuple[float, float]]) -> tuple[float, float]:
        return statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)

    return (med(ra), med(rb)) if b else (med(ra),)


def row(
    work: str, ours: tuple[float, float], floor: tuple[float, float] | None, goal: str, diff: bool = False
) -> None:
    """Print and keep one row: wall (CPU) of ours and of the floor, their ratio (or difference)."""
    o = f"{ours[0]:.2f} s ({ours[1]:.2f} CPU)"
    f = f"{floor[0]:.2f} s ({floor[1]:.2f} CPU)" if floor else "-"
    if floor is None:
        ratio = "-"
    elif diff:
        ratio = f"+{ours[0] - floor[0]:.2f} s (+{ours[1] - floor[1]:.2f} CPU)"
    else:
        ratio = f"{ours[0] / floor[0]:.2f}x ({ours[1] / floor[1]:.2f}x CPU)"
    TABLE.append((work, o, f, ratio, goal))
    print(f"{work}: rooflake {o}; floor/peer {f}; {ratio}; goal {goal}", flush=True)


def run_files(store: Path, run: str) -> list[str]:
    return [
        str(p)
        for t in ("kernels", "ceilings", "runs")
        if (p := store / t / f"run_id={run}" / "part-0.parquet").exists()
    ]


def bench_startup(small: Path) -> None:
    # start-up is ~0.1-0.3 s and swings with the machine by tens of ms: 15 runs each (5 read 0.14 s for 0.10)
    (ours, floor) = pair([*RL, "--help"], [PY, "-c", "pass"], runs=15)
    row("rl --help", ours, floor, "<= 0.12 s, no pyarrow/polars/pandas/duckdb")
    cols = "run_id, source_path, gpu_name, n_kernels, labels, CAST(ingested_at AS VARCHAR)"
    duck_runs = f"import duckdb; duckdb.sql(\"SELECT {cols} FROM read_parquet('{small}/runs/*/*.parquet')\").fetchall()"
    (ours, floor) = pair([*RL, "runs", "--store", str(small)], [PY, "-c", duck_runs], runs=15)
    row("rl runs (10 runs)", ours, floor, "<= 0.35 s")
    (ours, floor) = pair(
        [*RL, "sql", "select 1", "--store", str(small)],
        [PY, "-c", "import duckdb; duckdb.sql('select 1').fetchall()"],
        runs=15,
    )
    row("rl sql 'select 1'", ours, floor, "<= 0.35 s")


def bench_pruning(big: Path) -> None:
    """rooflake's planner (store/database.py: the one run's files bound) against DuckDB's own hive-partition
    pruning over globs of every partition (filter pushdown of ``run_id = X`` into the hive column). The peer is
    given its fastest form, without ``union_by_name`` (which the store needs for files of older schema versions,
    and which makes DuckDB open every file: ~14 s here)."""
    run = "0000000000000abc"
    q = f"SELECT * FROM kernel_roofline WHERE run_id = '{run}'"
    glob = " ".join(
        f"duckdb.sql(\"SELECT COLUMNS(*)::VARCHAR FROM read_parquet('{big}/{t}/*/*.parquet', hive_partitioning = "
        f"true) WHERE run_id = '{run}'\").fetchall();"
        for t in ("kernels", "ceilings", "runs")
    )
    (ours, peer) = pair(
        [*RL, "sql", q, "--store", str(big), "-f", "json"], [PY, "-c", f"import duckdb; {glob}"]
    )
    row(
        "one run of kernel_roofline, 10,000 runs: rooflake's planner (peer: DuckDB's own hive pruning, 3 tables)",
        ours,
        peer,
        "< 1x (else drop the planner)",
    )


def bench_uncompacted_count(big: Path) -> None:
    q = "SELECT count(*) FROM kernel_roofline"
    count = f"import duckdb; duckdb.sql(\"SELECT count(*) FROM read_parquet('{big}/kernels/*/*.parquet')\").fetchall()"
    (ours, floor) = pair([*RL, "sql", q, "--store", str(big), "-f", "json"], [PY, "-c", count], runs=3)
    row(
        "count(*) FROM kernel_roofline, 10,000 runs not compacted (floor: DuckDB count of the kernels files)",
        ours,
        floor,
        "<= 1.3x",
    )


def bench_compact_memory(big: Path) -> None:
    """``rl compact`` of a fresh copy of the 10,000-run store, one whole process: its peak RSS (os.wait4)."""
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        store = Path(tmp) / "store"
        copy_store(big, store)
        t0 = time.perf_counter()
        proc = subprocess.Popen([*RL, "compact", "--store", str(store)], stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"rl compact failed ({proc.returncode})")
    rss = usage.ru_maxrss / 1024
    TABLE.append(("rl compact, 10,000 runs: peak RSS", f"{rss:.0f} MB ({wall:.0f} s)", "-", "-", "<= 500 MB"))
    print(f"rl compact, 10,000 runs: peak RSS {rss:.0f} MB, {wall:.0f} s; goal <= 500 MB", flush=True)


def bench_one_run(small: Path, big: Path) -> None:
    run = "0000000000000abc"
    q = f"SELECT * FROM kernel_roofline WHERE run_id = '{run}'"
    select = "SELECT COLUMNS(*)::VARCHAR FROM '{f}'"  # text: no Python datetime objects (they need pytz)
    line = f'import duckdb; [duckdb.sql(f"{select}").fetchall() for f in {run_files(big, run)!r}]'
    (ours, floor) = pair([*RL, "sql", q, "--store", str(big), "-f", "json"], [PY, "-c", line])
    row("rl sql one run of kernel_roofline, 10,000 runs", ours, floor, "<= 2x the one-line DuckDB script")
    run = "0000000000000004"  # a copy of a run with DRAM counters (both stores have it)
    for name, args in (
        ("roofline", ["-o", f"{tempfile.gettempdir()}/rl-bench.png"]),
        ("layers", ["-f", "json"]),
    ):
        (ours, floor) = pair(
            [*RL, name, run, "--store", str(big), *args], [*RL, name, run, "--store", str(small), *args]
        )
        row(f"rl {name} RUN, 10,000 runs vs 10 runs", ours, floor, "within +0.3 s", diff=True)
    two = [run, "0000000000000007", "-f", "json"]  # two runs both stores have
    (ours, floor) = pair(
        [*RL, "compare", *two, "--store", str(big)], [*RL, "compare", *two, "--store", str(small)]
    )
    row("rl compare A B, 10,000 runs vs 10 runs", ours, floor, "within +0.3 s", diff=True)


def bench_history(big: Path, compacted: Path) -> None:
    q = "SELECT count(*) FROM kernel_roofline"
    (ours,) = pair([*RL, "sql", q, "--store", str(compacted), "-f", "json"])
    (before,) = pair([*RL, "sql", q, "--store", str(big), "-f", "json"], runs=1)
    row(
        "count(*) FROM kernel_roofline, 10,000 runs compacted (peer: not compacted)", ours, before, "<= 0.5 s"
    )
    # 100,000 runs, written directly in the layout rl compact makes (bench/stores.py: compacting 300,000 partition
    # files takes many minutes here); the floor counts the kernels file with a one-line DuckDB script
    huge = cached_compacted(100_000)
    kfile = next((huge / "kernels" / "compacted").glob("*.parquet"))
    (ours, floor) = pair(
        [*RL, "sql", q, "--store", str(huge), "-f", "json"],
        [PY, "-c", f"import duckdb; duckdb.sql(\"SELECT count(*) FROM '{kfile}'\").fetchall()"],
    )
    row(
        "count(*) FROM kernel_roofline, 100,000 runs compacted (floor: DuckDB on the file)",
        ours,
        floor,
        "<= 3 s",
    )


FLOOR = """
import sys, ncu_report
ctx = ncu_report.load_report(sys.argv[1]); units = {}
for r in range(ctx.num_ranges()):
    rng = ctx.range_by_idx(r)
    for a in range(rng.num_actions()):
        act = rng.action_by_idx(a)
        for name in act.metric_names():
            m = act.metric_by_name(name); m.value()
            for i in range(m.num_instances()):
                m.value(i)
            if name not in units:
                units[name] = m.unit()
            if m.num_instances() and m.has_correlation_ids():
                c = m.correlation_ids()
                for i in range(c.num_instances()):
                    c.value(i)
"""


# NVIDIA's own route to every value of a report, the peer of ncu ingest: ncu's CSV export of the raw page (every
# metric, base units) read by pandas, one process per report
CSV_ROUTE = """
import io, subprocess, sys
import pandas as pd
out = subprocess.run(["ncu", "--import", sys.argv[1], "--csv", "--page", "raw", "--print-units", "base"],
                     capture_output=True, check=True).stdout
pd.read_csv(io.BytesIO(out), header=[0, 1], low_memory=False)
"""
# runs a command as a child subreaper and waits for all its descendants: rl ingest's workers are children of a fork
# server, which outlives rl, so without it their CPU time would not be counted (RUSAGE_CHILDREN of the bench)
REAPER = """
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER (Linux)
rc = subprocess.call(sys.argv[1:])
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
sys.exit(rc)
"""


def bench_ingest() -> None:
    files = [str(p) for p in REPORTS]
    # the console script users run (each worker runs it again: see rooflake.pipeline.main_script_modules)
    script = Path(PY).with_name("rl")
    rl = [str(script)] if script.exists() else RL
    reap = [PY, "-c", REAPER] if sys.platform == "linux" else []

    def fanout(script: str, reports: list[str]) -> list[str]:
        """A fresh process per report running ``script``, as many at once as cores."""
        return [*reap, PY, "-c", f"import subprocess, sys, concurrent.futures as cf\nfiles = {reports!r}\n"
                f"with cf.ThreadPoolExecutor({CORES}) as ex:\n"
                f"    list(ex.map(lambda f: subprocess.run([sys.executable, '-c', {script!r}, f], check=True), files))"]  # fmt: skip

    with tempfile.TemporaryDirectory() as d:
        ours_cmd = [*reap, *rl, "ingest", *files, "--store", f"{d}/s", "--force", "--workers", str(CORES)]
        (ours, floor) = pair(ours_cmd, fanout(FLOOR, files), runs=5)
        row(
            f"ncu ingest, {len(files)} reports, {CORES} workers",
            ours,
            floor,
            "<= 1.3x the lossless floor (fresh process per report)",
        )
        opened = csv_route_reports(files)
        if not opened:
            print("ncu CSV route: skipped (needs ncu on PATH and pandas)", flush=True)
            return
        ours_cmd = [*reap, *rl, "ingest", *opened, "--store", f"{d}/c", "--force", "--workers", str(CORES)]
        (ours, peer) = pair(ours_cmd, fanout(CSV_ROUTE, opened), runs=3)
    row(
        f"ncu ingest vs ncu --csv --page raw + pandas, the {len(opened)} reports ncu opens",
        ours,
        peer,
        "<= 0.67x the CSV route (>= 1.5x faster)",
    )


def csv_route_reports(files: list[str]) -> list[str]:
    """The reports the installed ``ncu`` can export (older versions cannot open newer reports); none without ``ncu``
    on PATH or without pandas."""
    import importlib.util

    if shutil.which("ncu") is None or importlib.util.find_spec("pandas") is None:
        return []
    ok = []
    for f in files:
        p = subprocess.run(["ncu", "--import", f, "--csv", "--page", "raw"], capture_output=True)
        if p.returncode == 0 and p.stdout.count(b"\n") > 2:
            ok.append(f)
    return ok


def bench_charts(small: Path, big: Path) -> None:
    run = "0000000000000004"
    out = Path(tempfile.gettempdir()) / "rl-bench"
    plain = [PY, str(HERE / "plain_chart.py"), str(small), run, f"{out}-plain.png"]
    (ours, floor) = pair([*RL, "roofline", run, "--store", str(small), "-o", f"{out}.png"], plain)
    row("rl roofline RUN -o x.png", ours, floor, "<= 1.3x a plain Altair + vl-convert script")

    def per_chart(store: Path, ids: list[str], what: str, runs: int) -> None:
        """``rl report`` over ``ids`` of ``store`` (all its runs when empty), wall and CPU per chart drawn."""
        report = [
            *RL,
            "report",
            "--store",
            str(store),
            "--out",
            f"{out}-report",
            *sum((["--runs", r] for r in ids), []),
        ]
        (ours,) = pair(report, runs=runs)
        n = len(list(Path(f"{out}-report", "charts").glob("*.png")))
        row(f"rl report, {what}, per chart (PNG + SVG; {n} charts)", (ours[0] / n, ours[1] / n), None,
            "<= 0.35 s per chart")  # fmt: skip
        shutil.rmtree(f"{out}-report", ignore_errors=True)

    # 30 runs of the big store: the fixed costs spread as in real reports, the store's reads included
    per_chart(big, [f"{i:016x}" for i in range(30)], "30 runs of 10,000", runs=3)
    per_chart(small, [], "the 10 runs of the small store (the charts' own cost, reads cheap)", runs=5)


def bench_nsys_big() -> None:
    """The nsys rows: ``bench_nsys.big_report``'s medians (wall, CPU) and peak RSS, beside each peer's."""
    if os.environ.get("RL_BENCH_NSYS_BIG", "1") == "0":
        return
    import bench_nsys

    got = bench_nsys.big_report()
    if "rl ingest" not in got:
        return
    wall, cpu, rss = got["rl ingest"]
    work = f"nsys ingest, range-heavy copy x{bench_nsys.BIG_FACTOR} (1.2M kernels)"
    TABLE.append((f"{work}: peak RSS", f"{rss:.0f} MB", "-", "-", f"<= {bench_nsys.RL_MEMORY_GOAL_MB} MB"))
    for name, goal in bench_nsys.GOALS.items():
        if name in got:
            target = (
                f"<= {1 / goal:.2f}x ({goal:.0f}x faster)"
                if goal is not None
                else "none (maps no kernel to NVTX)"
            )
            row(f"{work} vs {name}", (wall, cpu), got[name][:2], target)


def main() -> None:
    print(
        f"{CORES} cores; stores under {CACHE}; {RUNS} runs of each command, interleaved, medians", flush=True
    )
    small, big = cached_store(10), cached_store(10_000)
    compacted = CACHE / "runs10000-compacted"
    if not (compacted / "compacted.json").exists():
        from rooflake.store.compact import compact

        copy_store(big, compacted)
        t0 = time.perf_counter()
        r = compact(compacted)
        print(
            f"rl compact of 10,000 runs: {time.perf_counter() - t0:.1f} s, {r.files_before} -> {r.files_after} files"
        )
    bench_startup(small)
    bench_one_run(small, big)
    bench_history(big, compacted)
    bench_uncompacted_count(big)
    bench_pruning(big)
    bench_compact_memory(big)
    bench_ingest()
    bench_charts(small, big)
    bench_nsys_big()
    widths = [
        max(len(r[i]) for r in [("work", "rooflake", "floor/peer", "ratio", "goal"), *TABLE])
        for i in range(5)
    ]
    print()
    for r in [("work", "rooflake", "floor/peer", "ratio", "goal"), *TABLE]:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
