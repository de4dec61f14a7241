"""rooflake benchmark: ingest throughput against the ncu_report floor, memory, and query latency.

Run with ``make bench``. Prints figures; asserts nothing (timings on a shared 2-core machine are noisy).

Baseline ("floor"): the time ``ncu_report`` alone needs to load every fixture report and read every metric value
(scalar and per-instance) in one process, the least any ingest through that library can cost.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("RL_FIXTURES", ROOT.parent / "shared" / "fixtures"))
REPORTS = sorted((FIXTURES / "ncu").glob("*.ncu-rep"))
PY = sys.executable


def child(code: str) -> tuple[float, dict, float]:
    """Run ``code`` in a fresh interpreter; returns (wall seconds, its JSON output, peak RSS MB of it + children)."""
    script = textwrap.dedent(code)
    t0 = time.perf_counter()
    out = subprocess.run(
        [PY, "-c", script + "\nimport resource, json, sys\n"
         "ru = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
         "print(json.dumps({**RESULT, 'rss_mb': ru / 1024}))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return wall, res, res.pop("rss_mb")


FLOOR = """
import time, ncu_report
files = {files!r}
lossless = {lossless!r}
t0 = time.perf_counter(); n = 0
for f in files:
    ctx = ncu_report.load_report(f)
    units = {{}}
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            for name in act.metric_names():
                m = act.metric_by_name(name)
                m.value(); n += 1
                for i in range(m.num_instances()):
                    m.value(i)
                if lossless:  # what a lossless copy must also read: unit once per name, correlation ids
                    if name not in units:
                        units[name] = m.unit()
                    if m.num_instances() and m.has_correlation_ids():
                        c = m.correlation_ids()
                        for i in range(c.num_instances()):
                            c.value(i)
RESULT = {{"seconds": time.perf_counter() - t0, "values": n}}
"""

READ = """
import time
from rooflake.ingest import ncu_rep
t0 = time.perf_counter()
ncu_rep.read({file!r}, run_id="x")
RESULT = {{"seconds": time.perf_counter() - t0}}
"""

INGEST = """
import time
from rooflake.pipeline import ingest_paths
from pathlib import Path
files = [Path(f) for f in {files!r}]
t0 = time.perf_counter()
res = list(ingest_paths(files, {store!r}, force=True, workers={workers}))
RESULT = {{"seconds": time.perf_counter() - t0, "kernels": sum(r.kernels or 0 for r in res),
          "values": sum(r.metrics or 0 for r in res), "errors": [r.error for r in res if r.error],
          "worker_rss_mb": max(r.peak_rss_mb or 0 for r in res)}}
"""


def bench_ingest() -> None:
    files = [str(p) for p in REPORTS]
    mb = sum(p.stat().st_size for p in REPORTS) / 1e6
    print(f"fixtures: {len(files)} reports, {mb:.1f} MB, {os.cpu_count()} cores")
    floors = [child(FLOOR.format(files=files, lossless=False)) for _ in range(3)]
    floor = min(f[1]["seconds"] for f in floors)
    n_values = floors[0][1]["values"]
    print(
        f"floor (ncu_report reads every value, 1 process): {floor:.3f} s, {n_values} values, peak RSS {floors[0][2]:.0f} MB"
    )
    full = min(child(FLOOR.format(files=files, lossless=True))[1]["seconds"] for _ in range(3))
    print(
        f"lossless floor (+ unit once per metric name, + correlation ids of instanced metrics): {full:.3f} s"
    )
    # ncu_report caches between reports in one process (and gets units wrong doing so: rooflake reads each report
    # in a fresh process), so the floor a correct reader can reach is the fresh-process one
    fresh = sum(child(FLOOR.format(files=[f], lossless=True))[1]["seconds"] for f in files)
    read = sum(child(READ.format(file=f))[1]["seconds"] for f in files)
    print(
        f"lossless floor, a fresh process per report (sum of in-process times): {fresh:.3f} s; "
        f"rooflake's reader (ncu_rep.read -> Arrow tables) the same way: {read:.3f} s = {read / fresh:.2f}x"
    )
    with tempfile.TemporaryDirectory() as d:
        for workers in (1, os.cpu_count() or 1):
            runs = [
                child(INGEST.format(files=files, store=f"{d}/s{workers}", workers=workers)) for _ in range(3)
            ]
            best = min(runs, key=lambda r: r[1]["seconds"])
            s, res, rss = best[1]["seconds"], best[1], best[2]
            assert not res["errors"], res["errors"]
            print(
                f"ingest end to end, {workers} worker(s): {s:.3f} s = {s / fresh:.2f}x the fresh-process floor; "
                f"{mb / s:.1f} MB/s, {res['kernels'] / s:.0f} kernels/s, {res['values'] / s:.0f} metric values/s, "
                f"peak RSS: parent {rss:.0f} MB, any worker {res['worker_rss_mb']:.0f} MB"
            )
        # memory flat in the number of reports: the same reports five times over (forced re-ingest)
        for times in (1, 5):
            many = files * times
            wall, res, rss = child(INGEST.format(files=many, store=f"{d}/m", workers=os.cpu_count() or 1))
            print(
                f"ingest {len(many)} reports ({times}x the set): {res['seconds']:.2f} s, "
                f"peak RSS: parent {rss:.0f} MB, any worker {res['worker_rss_mb']:.0f} MB"
            )


def bench_query(n_runs: int = 1000) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from rooflake import queries
    from rooflake.pipeline import ingest_paths
    from rooflake.store import Store

    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "src"
        list(ingest_paths(REPORTS, src))
        dst = Path(d) / "many"
        tables = {
            t: [pq.read_table(p) for p in sorted((src / t).glob("*/part-0.parquet"))]
            for t in ("runs", "kernels", "ceilings")
        }
        for i in range(n_runs):
            rid = f"{i:016x}"
            for t, parts in tables.items():
                tab = parts[i % len(parts)]
                tab = tab.set_column(0, "run_id", pa.array([rid] * tab.num_rows, pa.string()))
                if t == "runs":
                    tab = tab.set_column(tab.schema.get_field_index("labels"), "labels",
                                         pa.array([[("copy", str(i))]], tab.schema.field("labels").type))  # fmt: skip
                out = dst / t / f"run_id={rid}"
                out.mkdir(parents=True)
                pq.write_table(tab, out / "part-0.parquet")
        (dst / "metrics").mkdir()
        store = Store(dst)
        times = []
        rows = 0
        for _ in range(20):
            t0 = time.perf_counter()
            rows = queries.execute(store, "SELECT * FROM kernel_roofline").num_rows
            times.append(time.perf_counter() - t0)
        print(
            f"rl sql 'SELECT * FROM kernel_roofline' over {n_runs} runs ({rows} rows), 20 runs in-process: "
            f"median {statistics.median(times) * 1e3:.0f} ms, min {min(times) * 1e3:.0f} ms, max {max(times) * 1e3:.0f} ms"
        )
        rl = Path(PY).with_name("rl")
        t0 = time.perf_counter()
        subprocess.run(
            [str(rl), "sql", "SELECT count(*) FROM kernel_roofline", "--store", str(dst)],
            check=True,
            capture_output=True,
        )
        print(f"the same through the rl CLI (new process, count(*)): {time.perf_counter() - t0:.2f} s")
        del pc


if __name__ == "__main__":
    bench_ingest()
    bench_query()
    print(f"bench process peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    shutil.rmtree(Path(tempfile.gettempdir()) / "nonexistent", ignore_errors=True)
