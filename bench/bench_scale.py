"""rooflake benchmark, issue 15: a big compacted store in DuckDB and in Spark local mode; ingest through Spark vs the
process pool. Figures for docs/scale.md.

    python bench/bench_scale.py [N_RUNS] [--ten-k] [--no-spark] [--no-ingest] [--reports N]
    [--incremental]

The full figure for docs/scale.md: ``python bench/bench_scale.py 100000 --no-spark --reports 1000``.

- DuckDB: ``rl sql`` as a whole process over a store of ``N_RUNS`` (default 100,000) copied fixture runs in the
  layout ``rl compact`` writes (bench/stores.py ``cached_compacted``): ``count(*) FROM kernel_roofline`` and one
  run's ``kernel_roofline``, each beside a one-line DuckDB script reading the compacted kernels file (the floor:
  what any reader of that file pays). ``--ten-k``: the same two questions over 10,000 runs as ingest leaves them
  (30,000 partition files) and compacted (bench/stores.py ``cached_store``, then ``rl compact``).
- ``--incremental``: ``rl compact`` of 1,000 runs ingested after the ``N_RUNS`` store was compacted (a new
  generation beside the old one), then the count over both.
- Spark: one process (local[2]) that starts a session, registers the store (``rooflake.spark.register``), then
  counts ``kernel_roofline`` and reads one run's rows; each step timed inside it.
- Ingest (``--reports N``, default 1,000): N distinct real reports into a new store, ``rl ingest DIR --workers
  CORES`` against ``rooflake.spark.ingest`` on local[CORES] (a whole process each: Spark's start is part of its
  cost), each run once (no warm-up: minutes each at 1,000). The reports are copies of one real Nsight Systems
  SQLite export (:data:`NSYS_REPORT`, a PyTorch CNN under DLProf: 46 kernels, 82 NVTX events) that differ only
  in the SQLite header's ``user_version`` field (bytes 60-63, application-defined: SQLite and the nsys reader
  never read it; copy i holds i + 1). So each copy has its own SHA-256 (run id: no dedupe) and the same kernels,
  ranges and numbers, which the benchmark checks afterwards in both stores (every run: 46 kernels, the same
  sum of durations as the original). CPU: ``rl ingest`` and its pool are waited children; for Spark the driver
  sums the CPU of its whole process tree (JVM, Python daemon and workers) from /proc before it exits.

Whole processes, contenders in turn, medians of ``RL_BENCH_RUNS`` (default 3) after a warm-up (bench_store.pair).
Prints the load average beside the figures: the machine is shared, so read CPU seconds where wall time is waiting.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("RL_BENCH_RUNS", "3")
from bench_store import PY, RL, TABLE, pair, row, timed  # noqa: E402
from stores import CACHE, cached_compacted, cached_store, copy_store  # noqa: E402

SPARK = """
import json, sys, time
t0 = time.perf_counter()
from rooflake import spark as rs
from rooflake.store import Store
s = rs.session("local[2]"); s.sparkContext.setLogLevel("ERROR")
out = {"session_s": time.perf_counter() - t0}
t = time.perf_counter(); rs.register(s, Store(sys.argv[1])); out["register_s"] = time.perf_counter() - t
for name, q in (("count_s", "SELECT count(*) FROM kernel_roofline"),
                ("one_run_s", f"SELECT * FROM kernel_roofline WHERE run_id = '{sys.argv[2]}'")):
    for i in range(2):  # the second: after the JVM warmed up
        t = time.perf_counter(); n = s.sql(q).collect(); out[f"{name}{i}"] = time.perf_counter() - t
    out[name.replace("_s", "_rows")] = len(n) if name == "one_run_s" else n[0][0]
print(json.dumps(out))
"""

#: user + system CPU s of a process and its descendants, read from /proc just before it exits: a pool's workers
#: (children of multiprocessing's fork server, which is never waited for) and Spark's JVM and Python workers are
#: not among the waited children getrusage counts
TREE_CPU = """
import json, os
def tree_cpu(root):  # user + system CPU s of root and its descendants (waited-for children included)
    stats = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                f = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(d)] = (int(f[1]), sum(int(x) for x in f[11:15]))
    todo, total = [root], 0
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0))[1]
        todo += [c for c, (ppid, _) in stats.items() if ppid == pid]
    return total / os.sysconf("SC_CLK_TCK")

"""

SPARK_INGEST = (
    TREE_CPU
    + """
import sys, time
from rooflake import spark as rs
from rooflake.pipeline import ingest_file
s = rs.session(f"local[{sys.argv[2]}]"); s.sparkContext.setLogLevel("ERROR")
t = time.perf_counter()
paths = sorted(str(p) for p in __import__("pathlib").Path(sys.argv[3]).iterdir())
res = rs.ingest(s, paths, sys.argv[1], ingest_file)
assert all(r["status"] == "ingested" for r in res), [r for r in res if r["status"] != "ingested"][:3]
ingest_s = time.perf_counter() - t

print(json.dumps({"ingest_s": ingest_s, "tree_cpu_s": tree_cpu(os.getpid())}))
"""
)

#: the real report copied for the ingest benchmark (see the module docstring)
NSYS_REPORT = Path(os.environ.get("RL_FIXTURES", Path(__file__).resolve().parents[2] / "shared" / "fixtures"))
NSYS_REPORT = NSYS_REPORT / "nsys" / "MohanadOdema__DLProf__nsys_profile.sqlite"
#: SQLite's header field ``user_version``: 4 bytes, big-endian, at offset 60 (sqlite.org/fileformat.html)
USER_VERSION = slice(60, 64)


def make_reports(dst: Path, n: int) -> list[Path]:
    """``n`` copies of :data:`NSYS_REPORT` in ``dst`` (``report-<i>.sqlite``), copy ``i`` with ``user_version`` =
    ``i + 1``: distinct files (own SHA-256, own run id) that read as the same report."""
    data = bytearray(NSYS_REPORT.read_bytes())
    assert data[:16] == b"SQLite format 3\x00" and data[USER_VERSION] == bytes(4), "not a fresh SQLite file"
    dst.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        data[USER_VERSION] = (i + 1).to_bytes(4, "big")
        path = dst / f"report-{i:05d}.sqlite"
        path.write_bytes(data)
        out.append(path)
    return out


RL_INGEST = (
    TREE_CPU
    + """
import sys
from rooflake.cli import main
sys.argv[0] = "rl"
try:
    main()
finally:
    print(json.dumps({"tree_cpu_s": tree_cpu(os.getpid())}), file=sys.stderr)
"""
)


def tree_timed(cmd: list[str]) -> tuple[float, dict[str, float]]:
    """(wall s, the JSON its last line of stdout or stderr holds) of one run of ``cmd``."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode:
        raise RuntimeError(p.stderr[-2000:])
    last = (p.stdout.strip() or p.stderr.strip()).splitlines()[-1]
    if not last.startswith("{"):
        last = p.stderr.strip().splitlines()[-1]
    return wall, json.loads(last)


def load() -> str:
    return "load avg {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def duckdb_questions(store: Path, label: str, floor_file: Path | None) -> None:
    """count(*) and one run of kernel_roofline with ``rl sql``, beside a one-line DuckDB script on the file."""
    run = "0000000000000abc"
    qs = (
        (
            "count(*) FROM kernel_roofline",
            "SELECT count(*) FROM kernel_roofline",
            "SELECT count(*) FROM '{f}'",
        ),
        (
            "one run of kernel_roofline",
            f"SELECT * FROM kernel_roofline WHERE run_id = '{run}'",
            f"SELECT COLUMNS(*)::VARCHAR FROM '{{f}}' WHERE run_id = '{run}'",
        ),
    )
    for work, q, floor_sql in qs:
        ours_cmd = [*RL, "sql", q, "--store", str(store), "-f", "json"]
        if floor_file is None:
            (ours,) = pair(ours_cmd)
            row(f"{work}, {label} [{load()}]", ours, None, "-")
            continue
        line = f'import duckdb; duckdb.sql("{floor_sql.format(f=floor_file)}").fetchall()'
        (ours, floor) = pair(ours_cmd, [PY, "-c", line])
        goal = "<= 3 s; " if work.startswith("count") and label.startswith("100,000") else ""
        row(f"{work}, {label} [{load()}]", ours, floor, goal + "floor: one-line DuckDB on the kernels file")


def ten_k() -> None:
    t0 = time.perf_counter()
    big = cached_store(10_000)
    print(f"10,000-run store ready in {time.perf_counter() - t0:.0f} s", flush=True)
    compacted = CACHE / "runs10000-compacted"
    if not (compacted / "compacted.json").exists():
        from rooflake.store.compact import compact

        copy_store(big, compacted)
        t0 = time.perf_counter()
        r = compact(compacted)
        print(f"rl compact of 10,000 runs: {time.perf_counter() - t0:.1f} s [{load()}]", flush=True)
        print(f"  {r.files_before} -> {r.files_after} Parquet files", flush=True)
    duckdb_questions(big, "10,000 runs, not compacted", None)
    kfile = next((compacted / "kernels" / "compacted").glob("*.parquet"))
    duckdb_questions(compacted, "10,000 runs, compacted", kfile)


def add_runs(store: Path, n: int, first: int) -> None:
    """``n`` more runs in ``store`` as ingest leaves them (partitions), ids ``first`` … ``first + n - 1``
    (bench/stores.py ``make_store`` beside it, the ids then rewritten in every file)."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq
    from stores import make_store, run_id

    tmp = store.parent / f".{store.name}-add"
    shutil.rmtree(tmp, ignore_errors=True)
    for old in make_store(tmp, n):
        new = run_id(int(old, 16) + first)
        for part in tmp.glob(f"*/run_id={old}/part-0.parquet"):
            tab = pq.read_table(part)
            tab = tab.set_column(0, "run_id", pa.array([new] * tab.num_rows, pa.string()))
            out = store / part.parent.parent.name / f"run_id={new}"
            out.mkdir(parents=True)
            pq.write_table(tab, out / "part-0.parquet", compression="zstd")
    shutil.rmtree(tmp, ignore_errors=True)


def incremental(n: int, new: int = 1000) -> None:
    """``rl compact`` of ``new`` runs ingested since the ``n``-run store was compacted (a whole process, once: it
    changes the store), then count(*) of kernel_roofline over the two generations."""
    store = copy_store(cached_compacted(n), CACHE / f"runs{n}-incremental")
    add_runs(store, new, n)
    ours = timed([*RL, "compact", "--store", str(store)])
    row(f"rl compact of {new:,} new runs over {n:,} compacted (incremental) [{load()}]", ours, None, "-")
    duckdb_questions(store, f"{n + new:,} runs, two generations", None)


def spark_questions(store: Path, n: int) -> None:
    wall, cpu = timed([PY, "-c", "pass"])  # warm the interpreter's files
    t0 = time.perf_counter()
    p = subprocess.run([PY, "-c", SPARK, str(store), "0000000000000abc"], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(p.stderr[-2000:])
    r = json.loads(p.stdout.strip().splitlines()[-1])
    print(
        f"Spark local[2], {n:,} runs compacted [{load()}]: whole process {time.perf_counter() - t0:.1f} s; {r}"
    )
    for key in ("count_s", "one_run_s"):
        work = (
            f"Spark local[2] {key[:-2]} of kernel_roofline, {n:,} runs compacted (warm; cold in peer column)"
        )
        row(f"{work} [{load()}]", (r[f"{key}1"], float("nan")), (r[f"{key}0"], float("nan")), "-")


KERNEL_SUMS = "SELECT run_id, count(*) AS n, sum(duration_ns) AS t FROM kernels GROUP BY run_id"


def check_ingested(stores: list[Path], n: int) -> None:
    """Every store holds ``n`` runs, each with the kernels and total kernel time of :data:`NSYS_REPORT` itself."""
    from rooflake.pipeline import ingest_file
    from rooflake.store import Store

    with tempfile.TemporaryDirectory() as d:
        run_id = ingest_file(NSYS_REPORT, Path(d)).run_id
        ((_, k, t),) = [tuple(r.values()) for r in Store(Path(d)).query(KERNEL_SUMS).to_pylist()]
    ids = []
    for store in stores:
        rows = Store(store).query(KERNEL_SUMS).to_pylist()
        assert len(rows) == n and all((r["n"], r["t"]) == (k, t) for r in rows), (store, rows[:3])
        ids.append(sorted(r["run_id"] for r in rows))
    assert all(i == ids[0] for i in ids) and run_id not in ids[0]
    print(
        f"checked: {n} runs in each store, each {k} kernels, {t:,} ns of kernel time as the original",
        flush=True,
    )


def ingest_both(n: int) -> None:
    """``n`` distinct reports (:func:`make_reports`) through the process pool and through Spark, once each."""
    cores = str(os.cpu_count() or 1)
    with tempfile.TemporaryDirectory() as d:
        reports = Path(d) / "reports"
        make_reports(reports, n)
        pool = [PY, "-c", RL_INGEST, "ingest", str(reports), "--store", f"{d}/pool", "--workers", cores]
        pool_wall, pool_r = tree_timed(pool)
        print(
            f"rl ingest of {n} reports: {pool_wall:.1f} s ({pool_r['tree_cpu_s']:.1f} CPU) [{load()}]",
            flush=True,
        )
        spark = [PY, "-c", SPARK_INGEST, f"{d}/spark", cores, str(reports)]
        wall, r = tree_timed(spark)
        ingest = r["ingest_s"]
        print(
            f"Spark ingest of {n} reports: {wall:.1f} s ({r['tree_cpu_s']:.1f} CPU), ingest only {ingest:.1f} s",
            flush=True,
        )
        check_ingested([Path(d) / "pool", Path(d) / "spark"], n)
    row(
        f"ingest {n:,} distinct nsys SQLite reports, Spark local[{cores}] (whole process) vs rl ingest --workers {cores} [{load()}]",
        (wall, r["tree_cpu_s"]),
        (pool_wall, pool_r["tree_cpu_s"]),
        "-",
    )


def main() -> None:
    args = [a for i, a in enumerate(sys.argv[1:]) if not a.startswith("--") and sys.argv[i] != "--reports"]
    n = int(args[0]) if args else 100_000
    print(f"{os.cpu_count()} cores, {load()}; stores under {CACHE}", flush=True)
    t0 = time.perf_counter()
    store = cached_compacted(n)
    size = sum(f.stat().st_size for f in store.rglob("*.parquet"))
    print(
        f"{n:,}-run compacted store: {time.perf_counter() - t0:.0f} s to build (or cached), {size / 1e6:.1f} MB"
    )
    kfile = next((store / "kernels" / "compacted").glob("*.parquet"))
    duckdb_questions(store, f"{n:,} runs, compacted", kfile)
    if "--ten-k" in sys.argv:
        ten_k()
    if "--incremental" in sys.argv:
        incremental(n)
    if "--no-spark" not in sys.argv:
        spark_questions(store, n)
    if "--no-ingest" not in sys.argv:
        reports = sys.argv[sys.argv.index("--reports") + 1] if "--reports" in sys.argv else "1000"
        ingest_both(int(reports))
    print()
    for r in TABLE:
        print(" | ".join(r))


if __name__ == "__main__":
    main()
